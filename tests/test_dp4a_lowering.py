"""cuda __dp4a in sources (kernels from elsewhere): the registry entry's semantics (signed and
unsigned overloads, negative bytes, wrap-around), detensorize's scalar lowering
(passes/lowering/dp4a.py) compiled and run against those semantics on every byte pair and on
wrapping accumulators, the refusals, and the wild example gemm_int8_dp4a.cu migrated to c, hip
and bang, verified."""
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from xpiler.api import migrate
from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import walk
from xpiler.passes import detensorize
from xpiler.passes.base import PassError
from xpiler.printers import printer_for

from conftest import ROOT

WILD = ROOT / "examples" / "wild" / "gemm" / "gemm_int8_dp4a.cu"


def _oracle(a, b, c, unsigned):
    """Independent of the registry: numpy byte views of the little-endian words."""
    bt = np.uint8 if unsigned else np.int8
    x = np.asarray(a, np.uint32).view(bt).reshape(-1, 4).astype(np.int64)
    y = np.asarray(b, np.uint32).view(bt).reshape(-1, 4).astype(np.int64)
    s = (np.asarray(c, np.uint32).astype(np.int64) + (x * y).sum(1)) % 2**32
    return s.astype(np.uint32)


def _words(rng, n):
    return rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)


def test_registered_for_cuda_with_both_overloads():
    d = REGISTRY["__dp4a"]
    assert d.dialects == ("cuda",) and d.category == "dot" and d.accepts(3) and not d.accepts(2)
    # bytes 0x01, 0x7f, 0xff, 0x80: signed 1, 127, -1, -128; unsigned 1, 127, 255, 128
    w = np.int64(0x80FF7F01)
    assert int(d.semantics(w, w, 0)) == 1 + 127 * 127 + 1 + 128 * 128
    assert int(d.semantics(w, w, 0, unsigned=True)) == 1 + 127 * 127 + 255 * 255 + 128 * 128
    # negative products: 0xff (-1) times 0x02
    assert int(d.semantics(0xFF, 0x02, 5)) == 3
    # wrap-around of the 32-bit sum in both forms
    assert int(d.semantics(0x7F, 0x7F, 2**31 - 1)) == -(2**31) + 127 * 127 - 1
    assert int(d.semantics(0xFF, 0xFF, 2**32 - 1, unsigned=True)) == 255 * 255 - 1
    rng = np.random.default_rng(61)
    a, b, c = _words(rng, 4096), _words(rng, 4096), _words(rng, 4096)
    for u in (False, True):
        got = np.asarray(d.semantics(a, b, c, unsigned=u)).astype(np.uint32)
        assert np.array_equal(got, _oracle(a, b, c, u))


SRC = """
__device__ int dot_s(int a, int b, int c) { return __dp4a(a, b, c); }
__device__ unsigned dot_u(unsigned a, unsigned b, unsigned c) { return __dp4a(a, b, c); }
__global__ void k(const int *a, const int *b, int *d, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = dot_s(a[i], b[i], d[i]) + (int)dot_u((unsigned)a[i], (unsigned)b[i], 0u);
}
"""


def _lowered_returns():
    prog = parse_text(SRC, "cuda", "k.cu")
    assert any(isinstance(n, N.Intrinsic) and n.name == "__dp4a" for n in walk(prog))
    low = detensorize.apply(prog, entry="k", target="c")
    assert not any(isinstance(n, (N.Intrinsic, N.Call)) and "__dp4a" in str(getattr(n, "name", getattr(n, "func", "")))
                   for n in walk(low))
    pr = printer_for("c")
    out = {}
    for f in ("dot_s", "dot_u"):
        ret = [n for n in walk(low.func(f)) if isinstance(n, N.Return)]
        out[f] = pr.expr(ret[0].value)
    return out


def test_lowering_is_exact_on_every_byte_pair_and_wraps():
    """The lowered expressions, compiled by gcc, equal the semantics for all 65536 byte pairs in
    each of the four positions (the other bytes random) and for accumulators that wrap."""
    ex = _lowered_returns()
    assert "int8_t" in ex["dot_s"] and "0xffu" in ex["dot_u"]
    rng = np.random.default_rng(5)
    pairs = np.arange(65536, dtype=np.uint32)
    a, b = [], []
    for e in range(4):
        ra, rb = _words(rng, 65536), _words(rng, 65536)
        mask = np.uint32(~(0xFF << (8 * e)) & 0xFFFFFFFF)
        a.append((ra & mask) | ((pairs & 0xFF) << np.uint32(8 * e)))
        b.append((rb & mask) | ((pairs >> np.uint32(8)) << np.uint32(8 * e)))
    a, b = np.concatenate(a), np.concatenate(b)
    n = a.size
    c = _words(rng, n)
    c[::3] = np.uint32(0x7FFFFFFF)            # wraps past INT_MAX on positive sums
    c[1::3] = np.uint32(0x80000000)           # and below INT_MIN on negative ones
    prog = f"""#include <stdint.h>
#include <stdio.h>
static int dot_s(int a, int b, int c) {{ return {ex['dot_s']}; }}
static unsigned dot_u(unsigned a, unsigned b, unsigned c) {{ return {ex['dot_u']}; }}
int main(void) {{
    unsigned a, b, c;
    while (fread(&a, 4, 1, stdin) == 1 && fread(&b, 4, 1, stdin) == 1 && fread(&c, 4, 1, stdin) == 1) {{
        int s = dot_s((int)a, (int)b, (int)c);
        unsigned u = dot_u(a, b, c);
        fwrite(&s, 4, 1, stdout);
        fwrite(&u, 4, 1, stdout);
    }}
    return 0;
}}
"""
    d = Path(tempfile.mkdtemp(prefix="xp-dp4a-"))
    (d / "t.c").write_text(prog)
    subprocess.run(["gcc", "-O2", "-fsanitize=undefined", "-fno-sanitize-recover=all", "-o", str(d / "t"),
                    str(d / "t.c")], check=True)
    inp = np.stack([a, b, c], 1).astype("<u4").tobytes()
    r = subprocess.run([str(d / "t")], input=inp, capture_output=True, check=True)
    got = np.frombuffer(r.stdout, "<u4").reshape(n, 2)
    assert np.array_equal(got[:, 0], _oracle(a, b, c, False))
    assert np.array_equal(got[:, 1], _oracle(a, b, c, True))
    sem = REGISTRY["__dp4a"].semantics
    assert np.array_equal(got[:, 0].view(np.int32), np.asarray(sem(a, b, c)))


@pytest.mark.parametrize("body,why", [
    ("unsigned u, int b, int c) { return __dp4a(u, b, c); }", "mixed is ambiguous"),
    ("long a, long b, long c) { return __dp4a(a, b, c); }", "other/unknown"),
    ("int *p, int b, int c) { return __dp4a(*p++, b, c); }", "evaluated four times"),
])
def test_refused_when_the_overload_or_the_operands_do_not_fit(body, why):
    src = "__device__ int f(" + body + "\n__global__ void k(int *o) { o[0] = 0; }\n"
    prog = parse_text(src, "cuda", "k.cu")
    with pytest.raises(PassError) as ei:
        detensorize.apply(prog, entry="k", target="c")
    assert why in str(ei.value)


def test_same_dialect_keeps_dp4a():
    prog = parse_text(SRC, "cuda", "k.cu")
    with pytest.raises(PassError):
        detensorize.apply(prog, entry="k", target="cuda")
    assert detensorize.candidates(prog, "cuda") == [{"target": "cuda", "keep_native": False}]


@pytest.mark.parametrize("to,substrate", [("c", "c-host"), ("hip", "emu:simt-cpu"),
                                          ("bang", "emu:bang-cpu")])
def test_wild_dp4a_gemm_migrates_and_verifies(to, substrate, tmp_path):
    if substrate == "c-host":   # native AVX-512 VNNI where the CPU has it, else SIMD Everywhere
        from xpiler.platforms.c import CPlatform
        substrate = CPlatform().substrate()
    r = migrate(WILD, to=to, outdir=tmp_path / "o", perf=False)
    assert r.verified and substrate in r.verdict.substrate, [str(d) for d in r.diagnostics][:2]
    assert "__dp4a(" not in r.code and "int8_t" in r.code
