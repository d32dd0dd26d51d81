"""Forwarding of packed temporaries (passes/forward.py) as binding's fallback, and the refusals
that keep binding's original diagnostic."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, forward
from xpiler.passes.base import PassError
from xpiler.printers import print_program

EX = Path(__file__).resolve().parents[1] / "examples"

PACK = """#include <stdint.h>
#include <stdlib.h>
void k(const int8_t* B, int32_t* C, int M, int N, int K)
{
    const int Kq = (K + 3) / 4;
    int8_t* P = (int8_t*)malloc((size_t)Kq * N * 4);
    if (P == NULL)
        return;
    for (int q = 0; q < Kq; ++q) {
        for (int j = 0; j < N; ++j) {
            for (int r = 0; r < 4; ++r) {
                const int k = 4 * q + r;
                P[((long)q * N + j) * 4 + r] = k < K ? B[(long)k * N + j] : (int8_t)0;
            }
        }
    }
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            int32_t s = 0;
            for (int q = 0; q < Kq; ++q) {
                s += ((const int32_t*)(P + ((long)q * N + j) * 4))[0] + P[((long)q * N + j) * 4 + i % 4];
            }
            C[(long)i * N + j] = s;
        }
    }
    free(P);
}
"""


def prog(text):
    return parse_text(text, "c", "k.c")


def names(p):
    return {n.name for n in walk(p.func("k")) if isinstance(n, N.Var)} | \
        {n.func for n in walk(p.func("k")) if isinstance(n, N.Call)}


def test_packed_temporary_is_forwarded_and_one_nest_bound():
    p = prog(PACK)
    with pytest.raises(PassError):                 # the two nests alone cannot be bound
        binding._plan_device(p, p.func("k"), "cuda", None, 256, None, None, 4, "union1", False)
    for target in ("cuda", "hip", "bang"):
        out, launch = binding.apply(prog(PACK), entry="k", target=target)
        used = names(out)
        assert "P" not in used and "malloc" not in used and "free" not in used
        tops = [s for s in out.func("k").body.stmts if isinstance(s, N.For)]
        assert len(tops) == 1 and tops[0].var == "i" and tops[0].binding in ("global.x", "global.y", "taskId")
        text = print_program(out)
        assert "B[" in text and "<< 24" in text            # int32 read assembled from 4 forwarded bytes


def test_forward_returns_none_without_temporary():
    p = prog(PACK.replace("P[((long)q * N + j) * 4 + r] =", "C[((long)q * N + j) * 4 + r] ="))
    assert forward.forward_temporaries(p, p.func("k")) is None


@pytest.mark.parametrize("edit", [
    # not a bijection onto [0, Kq*N*4): two (j, r) pairs share an element
    ("P[((long)q * N + j) * 4 + r] =", "P[((long)q * N + j) * 3 + r] ="),
    # the packed value reads a buffer the kernel writes later
    ("k < K ? B[(long)k * N + j]", "k < K ? C[(long)k * N + j]"),
    # the temporary is written again after the nest
    ("    free(P);", "    P[0] = 1;\n    free(P);"),
    # the temporary escapes into a call
    ("    free(P);", "    memset(P, 0, 4);\n    free(P);"),
    # a read before the nest
    ("    for (int q = 0; q < Kq; ++q) {\n        for (int j = 0; j < N; ++j) {\n            for (int r",
     "    C[0] = P[0];\n    for (int q = 0; q < Kq; ++q) {\n        for (int j = 0; j < N; ++j) {\n            for (int r"),
    # a bound that the kernel changes
    ("    if (P == NULL)", "    N = N + 0;\n    if (P == NULL)"),
    # a loop variable declared outside the nest (its final value stays visible)
    ("    for (int q = 0; q < Kq; ++q) {\n        for (int j = 0; j < N; ++j) {\n            for (int r",
     "    int q;\n    for (q = 0; q < Kq; ++q) {\n        for (int j = 0; j < N; ++j) {\n            for (int r"),
    # the innermost body does more than one store
    ("                const int k = 4 * q + r;", "                const int k = 4 * q + r;\n                C[0] = 1;"),
])
def test_refused_temporaries_keep_the_binding_error(edit):
    src = PACK.replace(*edit)
    assert src != PACK
    p = prog(src)
    assert forward.forward_temporaries(p, p.func("k")) is None
    with pytest.raises(PassError) as ei:
        binding.apply(p, entry="k", target="cuda")
    assert ei.value.code == "XP4001"


def test_gemm_vnni_migrates_to_cuda(tmp_path):
    from xpiler.migration.driver import migrate
    r = migrate(EX / "gemm" / "gemm_vnni.c", "cuda", outdir=tmp_path / "out", jobs=1)
    assert r.verified


MEMCPY = """#include <stdint.h>
#include <string.h>
void m(const uint8_t* x, int32_t* y, int n)
{
    for (int i = 0; i < n; ++i) {
        int32_t t = 0;
        memcpy(&t, x + 4 * i, 4);
        y[i] = t;
    }
}
"""


def test_memcpy_source_is_only_read():
    out, _ = binding.apply(prog(MEMCPY), entry="m", target="cuda")
    assert [l.binding for l in walk(out.func("m")) if isinstance(l, N.For)] == ["global.x"]
    # the destination is still written at an unknown element: refused
    bad = MEMCPY.replace("memcpy(&t, x + 4 * i, 4);\n        y[i] = t;", "memcpy(y + i, x, 8);")
    with pytest.raises(PassError) as ei:
        binding.apply(prog(bad), entry="m", target="cuda")
    assert ei.value.code == "XP4001" and "'y'" in ei.value.why
