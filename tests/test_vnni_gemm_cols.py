"""gemm_vnni.c to the plain contraction (issue 15): detensorize writes the VNNI column block as a
column loop (passes/lowering/x86_dot_cols.py), forwarding reads the packed B in range without
its guard and index arithmetic (passes/forward.py) and joins the (q, r) loop pair into one k loop
(passes/radix_join.py), so that cache / tensorize see ``acc += a[k] * B[k * N + j]``. Each step
is checked on its own, with the shapes each condition refuses."""
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize, forward, radix_join
from xpiler.printers import print_program

from conftest import EXAMPLES
from test_pass_cache import verify

SRC = EXAMPLES / "gemm" / "gemm_vnni.c"


def lowered(text=None):
    p = parse_file(SRC) if text is None else parse_text(text, "c", "gemm_vnni.c")
    return detensorize.apply(p, entry="gemm_vnni", target="cuda")


def test_column_block_is_a_column_loop_and_verifies():
    low = lowered()
    f = low.func("gemm_vnni")
    assert not [n for n in walk(f) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)]
    acc = [n for n in walk(f) if isinstance(n, N.Decl) and n.name == "acc"]
    assert len(acc) == 1 and acc[0].type.dtype == "uint32"
    j0 = [n for n in walk(f) if isinstance(n, N.For) and n.var == "j0"]
    assert len(j0) == 1 and j0[0].step.value == 1
    text = print_program(low, "c")
    assert "memcpy" not in text and "a4" not in text and "C[(long)i * N + j0] = (int32_t)acc;" in text
    assert "< kr ? a[4 * q + " in text
    v = verify(low, SRC, dialect="c", launch={})
    assert v.verified, v.failures[:1]


def test_forwarding_then_joining_gives_the_plain_k_loop_and_verifies():
    low = lowered()
    out = forward.forward_temporaries(low, low.func("gemm_vnni"))
    f = out.func("gemm_vnni")
    ks = [n for n in walk(f) if isinstance(n, N.For) and isinstance(n.hi, N.Var) and n.hi.name == "K"]
    assert len(ks) == 1
    body = print_program(out, "c").split(f"for (int {ks[0].var} = 0;")[1].split("}")[0]
    assert "Bp" not in body and "%" not in body and "/" not in body and "?" not in body
    assert f"a[{ks[0].var}]" in body and f"B[(long)(int){ks[0].var} * N + (int)j0]" in body
    v = verify(out, SRC, dialect="c", launch={})
    assert v.verified, v.failures[:1]


ORIG = open(SRC).read()


@pytest.mark.parametrize("edit", [
    # blocks of 8 columns with a 16-lane mask: lanes 8..15 overlap the next block
    ("j0 += 16", "j0 += 8"),
    # a mask that is not the first nj lanes
    ("((1u << nj) - 1u)", "((1u << nj) - 2u)"),
    # B read with a column stride other than one 4-byte group per lane
    ("Bp + ((long)q * N + j0) * 4)", "Bp + ((long)q * N + 2 * j0) * 4)"),
    # the column count not min(N - j0, 16)
    ("(N - j0 < 16) ? N - j0 : 16", "(N - j0 < 15) ? N - j0 : 15"),
])
def test_column_block_refusals_keep_the_lanes(edit):
    src = ORIG.replace(*edit)
    assert src != ORIG
    f = lowered(src).func("gemm_vnni")
    acc = [n for n in walk(f) if isinstance(n, N.Decl) and n.name == "acc"]
    assert acc and isinstance(acc[0].type, N.Array)        # the 16-lane lowering


PAIR = """#include <stdint.h>
void k(const uint8_t *x, const int8_t *y, int32_t *o, int K) {
    const int Kq = (K + 3) / 4;
    uint32_t acc = 0u;
    for (int q = 0; q < Kq; ++q) {
        const int kr = K - 4 * q < 4 ? K - 4 * q : 4;
        for (int r = 0; r < 4; ++r)
            acc += (uint32_t)((int32_t)(r < kr ? x[4 * q + r] : (uint8_t)0) * (int32_t)(4 * q + r < K ? y[4 * q + r] : (int8_t)0));
    }
    o[0] = (int32_t)acc;
}
"""


def joined(text):
    p = parse_text(text, "c", "k.c")
    f = p.func("k")
    return print_program(p.with_(items=tuple(radix_join.join_all(f, f) if it is f else it for it in p.items)), "c")


def test_digit_pair_joins_under_its_guard():
    text = joined(PAIR)
    assert "for (int xp_k1 = 0; xp_k1 < K; ++xp_k1)" in text
    assert "acc += (uint32_t)((int32_t)x[xp_k1] * (int32_t)y[xp_k1]);" in text
    assert "kr" not in text and "?" not in text


@pytest.mark.parametrize("edit", [
    # the guards hold for k < K - 1 on one side and k < K on the other: not one bound
    ("r < kr ?", "r < kr - 1 ?"),
    # too few groups: Kq = K / 4 leaves k in [4 * Kq, K) out of the pair's range
    ("(K + 3) / 4", "K / 4"),
    # a float sum: adding the 0 of a failed guard is not the identity for -0.0
    ("uint32_t acc = 0u;", "float acc = 0.0f;"),
    # r read outside 4 * q + r
    ("x[4 * q + r]", "x[4 * q + r + r]"),
    # no guard at all: nothing says where the sum ends
    ("(r < kr ? x[4 * q + r] : (uint8_t)0) * (int32_t)(4 * q + r < K ? y[4 * q + r] : (int8_t)0)",
     "x[4 * q + r] * (int32_t)y[4 * q + r]"),
])
def test_digit_pair_refusals(edit):
    src = PAIR.replace(*edit)
    assert src != PAIR
    assert "xp_k1" not in joined(src)


def test_float_factor_is_not_joined():
    src = PAIR.replace("const int8_t *y", "const float *y").replace("(int8_t)0", "0")
    assert "xp_k1" not in joined(src)


IN_RANGE = """#include <stdint.h>
#include <stdlib.h>
void k(const int8_t* B, int32_t* C, int N, int K)
{
    const int Kq = (K + 3) / 4;
    int8_t* P = (int8_t*)malloc((size_t)Kq * N * 4);
    if (P == NULL)
        return;
    for (int q = 0; q < Kq; ++q)
        for (int j = 0; j < N; ++j)
            for (int r = 0; r < 4; ++r) {
                const int k = 4 * q + r;
                P[((long)q * N + j) * 4 + r] = k < K ? B[(long)k * N + j] : (int8_t)0;
            }
    for (int j = 0; j < N; ++j) {
        int32_t s = 0;
        for (int q = 0; q < Kq; ++q)
            for (int r = 0; r < R_HI; ++r)
                s += P[((long)q * N + j) * 4 + r];
        C[j] = s;
    }
    free(P);
}
"""


@pytest.mark.parametrize("hi, in_range", [("4", True), ("3", False)])
def test_forwarded_read_in_range_needs_no_division(hi, in_range):
    p = parse_text(IN_RANGE.replace("R_HI", hi), "c", "k.c")
    out = forward.forward_temporaries(p, p.func("k"))
    text = print_program(out, "c")
    assert "P" not in {n.name for n in walk(out.func("k")) if isinstance(n, N.Var)}
    read = text.split("s += ")[1].split(";")[0]
    assert ("%" not in read and "/" not in read) == in_range
    assert "B[" in read


@pytest.mark.parametrize("to, want", [("cuda", "__dp4a("), ("hip", "__builtin_amdgcn_mfma_i32_16x16x16i8(")])
def test_gemm_vnni_migrates_on_chip_and_verifies(to, want, tmp_path):
    from xpiler.api import migrate
    r = migrate(SRC, to=to, outdir=tmp_path / "o", perf=False)
    assert r.verified and "emu:simt-cpu" in r.verdict.substrate
    assert "__shared__" in r.code and "__syncthreads()" in r.code and want in r.code
