"""tensorize (BANG pools): a task-bound nest computing a 2-D NHWC pool becomes NRAM tiles +
__bang_max/min/sum/avgpool; nests whose function or layout differ are left alone."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import bang_pool as BP

from test_pass_cache import bind_first_loop, bound, verify


def ops_of(prog, entry):
    return sorted({n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)
                   and n.name.startswith("__bang_")})


@pytest.mark.parametrize("op,instr", [("maxpool2d", "__bang_maxpool"), ("minpool2d", "__bang_minpool"),
                                      ("sumpool2d", "__bang_sumpool"), ("avgpool2d", "__bang_avgpool")])
def test_c_pool_nests_become_pool_ops_and_verify(op, instr):
    src, entry, p = bound(op)
    assert tensorize.applied_ops(p, entry, target="bang") == sorted([instr, "__bang_write_zero"])
    r = tensorize.apply(p, entry=entry, target="bang")
    assert instr in ops_of(r, entry)
    # the original nest stays as the fallback for shapes whose window does not fit the tile
    assert any(isinstance(n, N.If) and n.else_ is not None for n in walk(r.func(entry)))
    v = verify(r, src)
    assert v.verified, v.failures[:1]


FLAT = """
void k(const float* input, float* output, int N, int H, int W, int C, int KH, int KW, int stride) {
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int total = N * Ho * Wo * C;
    for (int idx = 0; idx < total; idx++) {
        int c = idx % C;
        int t = idx / C;
        int ow = t % Wo;
        t = t / Wo;
        int oh = t % Ho;
        int n = t / Ho;
        const float* win = input + ((n * H + oh * stride) * W + ow * stride) * C + c;
        INIT
        for (int kh = 0; kh < KH; kh++) {
            for (int kw = 0; kw < KW; kw++) {
                float v = win[(kh * W + kw) * C];
                UPDATE
            }
        }
        output[OUT] = RESULT;
    }
}
"""


def _flat(init="float acc = win[0];", update="acc = fmaxf(acc, v);", out="idx", result="acc"):
    text = FLAT.replace("INIT", init).replace("UPDATE", update).replace("OUT", out).replace("RESULT", result)
    p = bind_first_loop(parse_text(text, "c", "k.c"), "k")
    return p, p.func("k")


def test_flat_simt_index_is_split_into_digits():
    p, f = _flat()
    pool = BP.analyse(p, f)
    assert pool.kind == "max" and pool.inp == "input" and pool.out == "output"
    assert pool.text["sw"] == "(stride)" and pool.text["a_kw"] == "(C)"
    p, f = _flat(init="float acc = 0.0f;", update="acc += v;", result="acc / (float)(KH * KW)")
    assert BP.analyse(p, f).kind == "avg"


@pytest.mark.parametrize("kw,why", [
    # max from 0 is not the max of the window (negative windows)
    (dict(init="float acc = 0.0f;"), "first element"),
    # a product is no pool
    (dict(init="float acc = 1.0f;", update="acc *= v;"), "accumulator update"),
    (dict(init="float acc = 1.0f;", update="acc = acc * v;"), "max, min or +"),
    # the average computed as a product with the reciprocal rounds differently
    (dict(init="float acc = 0.0f;", update="acc += v;", result="acc * (1.0f / (float)(KH * KW))"), "stored other"),
    # the divisor is not the window size
    (dict(init="float acc = 0.0f;", update="acc += v;", result="acc / (float)(KH * KH)"), "stored other"),
    # output not dense (a gap of one element per pixel)
    (dict(out="(idx / C) * (C + 1) + idx % C"), "dense"),
    # a max plus one
    (dict(update="acc = fmaxf(acc, v) + 1.0f;"), "max, min or +"),
])
def test_refused_nests(kw, why):
    p, f = _flat(**kw)
    with pytest.raises(BP.NotPool) as e:
        BP.analyse(p, f)
    assert why in e.value.why
    try:
        assert not any("pool" in o for o in tensorize.applied_ops(p, "k", target="bang"))
    except PassError as err:
        assert err.code == "XP4002"


def test_swapped_window_loops_are_refused():
    # kw outer, kh inner: the inner loop's stride is a row, not a pixel, so the sum order would change
    text = FLAT.replace("INIT", "float acc = 0.0f;").replace("UPDATE", "acc += v;").replace(
        "OUT", "idx").replace("RESULT", "acc")
    text = text.replace("for (int kh = 0; kh < KH; kh++) {", "for (int kw = 0; kw < KW; kw++) {X", 1)
    text = text.replace("            for (int kw = 0; kw < KW; kw++) {", "            for (int kh = 0; kh < KH; kh++) {")
    text = text.replace("{X", "{")
    p = bind_first_loop(parse_text(text, "c", "k.c"), "k")
    with pytest.raises(BP.NotPool) as e:
        BP.analyse(p, p.func("k"))
    assert "multiple" in e.value.why


def test_index_from_a_modified_parameter_is_refused():
    p, f = _flat(init="C = C + 0; float acc = win[0];")
    with pytest.raises(BP.NotPool):
        BP.analyse(p, f)
