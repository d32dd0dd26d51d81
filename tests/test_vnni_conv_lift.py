"""conv2d_nhwc_vnni.c to cuda / hip (issue 15): detensorize keeps a VNNI accumulator that is only
summed as one uint32_t (passes/lowering/x86_dot_sum.py), joins the 64-byte chunk loop with its
masked tail (passes/lowering/chunk_tail.py), so the cache pass reads the plain contraction;
tensorize maps the 8-bit contraction to __builtin_amdgcn_mfma_i32_16x16x16i8 on hip and __dp4a
over the shared tiles on cuda (uint8 A offset by 128, the column sums of B added back). Each form
verifies exactly (int32)."""
import pytest

from xpiler.api import migrate
from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import detensorize
from xpiler.passes.lowering import chunk_tail
from xpiler.passes.lowering.common import Names
from xpiler.printers import print_program

from conftest import EXAMPLES
from test_pass_cache import verify

SRC = EXAMPLES / "conv2d_nhwc" / "conv2d_nhwc_vnni.c"
MFMA_I8 = "__builtin_amdgcn_mfma_i32_16x16x16i8"


def test_summed_vnni_accumulator_is_one_uint32_and_the_tail_joins():
    low = detensorize.apply(parse_file(SRC), entry="conv2d_nhwc_vnni", target="cuda")
    f = low.func("conv2d_nhwc_vnni")
    acc = [n for n in walk(f) if isinstance(n, N.Decl) and n.name == "acc"]
    assert len(acc) == 1 and isinstance(acc[0].type, N.Scalar) and acc[0].type.dtype == "uint32"
    # no lane arrays, no mask, one loop over Cin reading the inputs in place
    assert not [n for n in walk(f) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)]
    text = print_program(low, "c")
    assert not any(isinstance(n, N.Var) and n.name == "tail" for n in walk(f))
    loops = [n for n in walk(f) if isinstance(n, N.For) and isinstance(n.hi, N.Var) and n.hi.name == "Cin"]
    assert len(loops) == 1
    assert "acc += (uint32_t)((int32_t)px[" in text and "out[co] = (int32_t)acc;" in text
    v = verify(low, SRC, dialect="c", launch={})
    assert v.verified, v.failures[:1]


LANES_READ = """#include <immintrin.h>
#include <stdint.h>
void k(const uint8_t *a, const int8_t *b, int32_t *o, int n) {
    __m512i acc = _mm512_setzero_si512();
    for (int c = 0; c < n; ++c) {
        __m512i x = _mm512_loadu_si512((const void *)(a + 64 * c));
        __m512i y = _mm512_loadu_si512((const void *)(b + 64 * c));
        acc = _mm512_dpbusd_epi32(acc, x, y);
    }
    _mm512_storeu_si512((void *)o, acc);
}
"""


def test_accumulator_whose_lanes_are_stored_keeps_its_lanes():
    low = detensorize.apply(parse_text(LANES_READ, "c", "k.c"), entry="k", target="cuda")
    acc = [n for n in walk(low.func("k")) if isinstance(n, N.Decl) and n.name == "acc"]
    assert isinstance(acc[0].type, N.Array)       # 16 lanes: each one is observed


SPLIT = """void f(const int *x, int *y, int X) {
    int F = X / 8;
    int R = X % 8;
    int s = 0;
    for (int c = 0; c < F; ++c) {
        for (int l = 0; l < 8; ++l) {
            s += x[8 * c + l];
        }
    }
    if (R) {
        for (int l2 = 0; l2 < 8; ++l2) {
            if (l2 < R) {
                s += x[8 * F + l2];
            }
        }
    }
    y[0] = s;
}
"""


def _join(text):
    p = parse_text(text, "c", "f.c")
    f = p.func("f")
    return print_program(p.with_(items=tuple(it.with_(body=chunk_tail.join(f, f.body, Names(p))) if it is f else it
                                             for it in p.items)), "c")


def test_chunk_loop_and_tail_join_into_one_loop():
    out = _join(SPLIT)
    assert "i1 < X" in out and "s += x[xpd_i1];" in out and "if (R)" not in out


@pytest.mark.parametrize("change", [
    ("if (l2 < R)", "if (l2 <= R)"),               # one more element than the tail has
    ("s += x[8 * F + l2]", "s += x[8 * F + l2 + 1]"),  # the tail reads other elements
    ("int s = 0;", "int s = 0; F = 2;"),           # F no longer X / 8
    ("int R = X % 8;", "int R = X % 4;"),           # not the same split
    ("s += x[8 * c + l];", "s += x[8 * c + l] + l;"),  # l used alone
])
def test_chunk_tail_join_refuses(change):
    out = _join(SPLIT.replace(*change))
    assert "if (R)" in out


@pytest.mark.parametrize("to,want", [("cuda", "__dp4a("), ("hip", MFMA_I8)])
def test_vnni_conv_migrates_on_chip_and_verifies(to, want, tmp_path):
    r = migrate(SRC, to=to, outdir=tmp_path / "o", perf=False)
    assert r.verified and "emu:simt-cpu" in r.verdict.substrate
    assert "__shared__" in r.code and "__syncthreads()" in r.code and want in r.code


@pytest.mark.parametrize("to,instr,swap", [
    ("hip", MFMA_I8, ("((int)xp_a, (int)xp_bv,", "((int)xp_bv, (int)xp_a,")),
    ("cuda", "__dp4a", ("(xp_kk + xp_e) * 16 + xp_tx]", "(xp_kk + 3 - xp_e) * 16 + xp_tx]"))])
def test_int8_matrix_forms_need_their_column_sum_correction(to, instr, swap):
    """The hip MFMA / cuda __dp4a forms verify exactly; without the `128 * colsum` term of the uint8
    offset, or with the lane's bytes taken in another order, the same run fails."""
    from xpiler.migration.driver import _launch_to_spec
    from xpiler.passes import binding, cache, tensorize
    from xpiler.spec import load_spec
    from _simt_tile_util import verify as simt_verify
    e = "conv2d_nhwc_vnni"
    p = detensorize.apply(parse_file(SRC), entry=e, target=to)
    p, _ = binding.apply(p, entry=e, target=to)
    q, _ = cache.apply(p, entry=e, target=to)
    t, launch = tensorize.apply(q, entry=e, target=to)
    launch = _launch_to_spec(launch, load_spec(str(SRC) + ".toml"), [x.name for x in t.func(e).params])
    text = print_program(t, to)
    assert instr in text and "128u * xp_cs" in text and swap[0] in text
    assert simt_verify(t, SRC, to, launch).verified
    for old, new in ((" + 128u * xp_cs", ""), swap):
        bad = parse_text(text.replace(old, new), to, "bad" + (".hip" if to == "hip" else ".cu"))
        assert not simt_verify(bad, SRC, to, launch).verified, old
