"""tensorize (BANG convolution): a task-bound nest computing a valid channels-last 2-D convolution
with a [Cout][KH][KW][Cin] filter becomes NRAM input tiles + the filter in WRAM + __bang_conv;
nests whose layout, summation order or function differ are left alone."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import index_poly as A
from xpiler.passes.patterns import bang_conv as BC

from test_pass_cache import bind_first_loop, bound, verify


def ops_of(prog, entry):
    return sorted({n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)
                   and n.name.startswith("__bang_")})


def test_c_conv2d_nhwc_becomes_bang_conv_and_verifies():
    src, entry, p = bound("conv2d_nhwc")
    assert tensorize.applied_ops(p, entry, target="bang") == ["__bang_conv"]
    r = tensorize.apply(p, entry=entry, target="bang")
    assert "__bang_conv" in ops_of(r, entry)
    f = r.func(entry)
    assert {n.name: n.scope for n in walk(f) if isinstance(n, N.Decl) and n.scope in ("nram", "wram")} == \
        {"xp_c_in": "nram", "xp_c_out": "nram", "xp_c_filt": "wram"}
    # the original nest stays as the fallback for shapes that do not fit
    assert any(isinstance(n, N.If) and n.else_ is not None for n in walk(f))
    v = verify(r, src)
    assert v.verified, v.failures[:1]


FLAT = """
void k(const float* input, const float* weight, float* output, int N, int H, int W, int Cin, int Cout,
       int KH, int KW, int stride) {
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    long total = (long)N * Ho * Wo * Cout;
    for (long idx = 0; idx < total; idx++) {
        int co = (int)(idx % Cout);
        long pix = idx / Cout;
        int wo = (int)(pix % Wo);
        int ho = (int)((pix / Wo) % Ho);
        int n = (int)(pix / ((long)Wo * Ho));
        const float* patch = input + (((long)n * H + ho * stride) * W + wo * stride) * Cin;
        const float* w = weight + WOFF;
        INIT
        for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
                const float* px = patch + ((long)kh * W + kw) * Cin;
                const float* pw = w + PW;
                for (int ci = 0; ci < Cin; ++ci)
                    UPDATE
            }
        output[OUT] = RESULT;
    }
}
"""


def _flat(woff="(long)co * KH * KW * Cin", pw="(kh * KW + kw) * Cin", init="float acc = 0.0f;",
          update="acc += px[ci] * pw[PWI];", pwi="ci", out="idx", result="acc"):
    text = FLAT.replace("WOFF", woff).replace("PW", pw).replace("INIT", init).replace(
        "UPDATE", update.replace("PWI", pwi)).replace("OUT", out).replace("RESULT", result)
    p = bind_first_loop(parse_text(text, "c", "k.c"), "k")
    return p, p.func("k")


def test_flat_simt_index_with_a_product_divisor_is_a_conv():
    p, f = _flat()
    c = BC.analyse(p, f)
    assert (c["inp"], c["wgt"], c["out"]) == ("input", "weight", "output")
    assert c["sw"] == "(stride)" and c["a_kw"] == "(Cin)" and c["pos"][-1] == "(N)"
    # operands in the other order are the same convolution
    p, f = _flat(update="acc = acc + pw[ci] * px[ci];")
    assert BC.analyse(p, f)["inp"] == "input"
    assert tensorize.applied_ops(p, "k", target="bang") == ["__bang_conv"]


@pytest.mark.parametrize("kw,why", [
    # a filter laid out [Cout][Cin][KH][KW]: not the instruction's layout
    (dict(woff="(long)co * KH * KW * Cin", pw="kh * KW + kw", pwi="ci * KH * KW"), "filter"),
    # the sum does not start at 0
    (dict(init="float acc = 1.0f;"), "start at 0"),
    # not a multiply-accumulate
    (dict(update="acc += px[ci] * pw[ci] + 1.0f;"), "acc + x * y"),
    (dict(update="acc = fmaxf(acc, px[ci] * pw[ci]);"), "acc + x * y"),
    # the result is scaled before the store
    (dict(result="acc * 2.0f"), "transformed"),
    # output not dense (one gap element per pixel)
    (dict(out="(idx / Cout) * (Cout + 1) + idx % Cout"), "dense"),
])
def test_refused_nests(kw, why):
    p, f = _flat(**kw)
    with pytest.raises(BC.NotConv) as e:
        BC.analyse(p, f)
    assert why in e.value.why
    try:
        assert "__bang_conv" not in tensorize.applied_ops(p, "k", target="bang")
    except PassError as err:
        assert err.code == "XP4002"


def test_window_loops_in_another_order_are_refused():
    # ci outside kh/kw sums in another order than the instruction
    text = """
void k(const float* input, const float* weight, float* output, int H, int W, int Cin, int Cout, int KH, int KW) {
    int Ho = H - KH + 1;
    int Wo = W - KW + 1;
    for (int r = 0; r < Ho; r++)
        for (int wo = 0; wo < Wo; wo++)
            for (int co = 0; co < Cout; co++) {
                float acc = 0.0f;
                for (int ci = 0; ci < Cin; ci++)
                    for (int kh = 0; kh < KH; kh++)
                        for (int kw = 0; kw < KW; kw++)
                            acc += input[((r + kh) * W + wo + kw) * Cin + ci] * weight[((co * KH + kh) * KW + kw) * Cin + ci];
                output[(r * Wo + wo) * Cout + co] = acc;
            }
}
"""
    p = bind_first_loop(parse_text(text, "c", "k.c"), "k")
    with pytest.raises(BC.NotConv):
        BC.analyse(p, p.func("k"))


def test_product_divisor_split_only_against_a_known_divisor():
    from xpiler.frontend import parse_text as pt
    def exprs(body):
        f = pt("void g(int t, int A, int B) { int x = " + body + "; }", "c").func("g")
        return [f.body.stmts[0].init]
    # t % A and t / (A * B): the product is split into (t / A) / B
    new, divs = A.mixed_radix(exprs("t % A + t / A % B * 7 + t / (A * B)"), "t", "d")
    assert [A._txt(d) for d in divs] == ["A", "B"]
    # either factor may be the known one
    new, divs = A.mixed_radix(exprs("t % B + t / (A * B)"), "t", "d")
    assert [A._txt(d) for d in divs] == ["B", "A"]
    # no division by A or B alone: the product stays one divisor, and mixing it with C is refused
    with pytest.raises(A.NotAffine):
        A.mixed_radix(exprs("t % C + t / (A * B)"), "t", "d")


def test_depthwise_planes_reload_their_filter_per_row_and_verify():
    src, entry, p = bound("depthwise_conv2d")
    assert tensorize.applied_ops(p, entry, target="bang") == ["__bang_conv"]
    r = tensorize.apply(p, entry=entry, target="bang")
    f = r.func(entry)
    row = next(n for n in walk(f) if isinstance(n, N.For) and n.var == "xp_c_row")
    # the plane's KH x KW filter goes to WRAM inside the row loop (it depends on the channel)
    assert any(isinstance(n, N.Intrinsic) and n.name == "__memcpy" and n.args[3].name == "GDRAM2WRAM"
               for n in walk(row.body))
    v = verify(r, src)
    assert v.verified, v.failures[:1]


DW = """
void k(const float* input, const float* weight, float* output, int N, int C, int H, int W, int KH, int KW) {
    int Ho = H - KH + 1;
    int Wo = W - KW + 1;
    for (int plane = 0; plane < N * C; ++plane) {
        int c = plane % C;
        for (int ho = 0; ho < Ho; ++ho)
            for (int wo = 0; wo < Wo; ++wo) {
                float acc = 0.0f;
                for (int kh = 0; kh < KH; ++kh)
                    for (int kw = 0; kw < KW; ++kw)
                        acc += input[(long)plane * H * W + (ho + kh) * W + wo + kw] * weight[FILT];
                output[OUT] = acc;
            }
    }
}
"""


@pytest.mark.parametrize("filt,out,why", [
    ("c * KH * KW + kh * KW + kw", "((long)plane * Ho + ho) * Wo + wo", None),
    # a filter that moves with the output pixel is not one filter per row
    ("c * KH * KW + kh * KW + kw + wo", "((long)plane * Ho + ho) * Wo + wo", "no operand"),
    # the window read transposed ([KW][KH] filter)
    ("c * KH * KW + kw * KH + kh", "((long)plane * Ho + ho) * Wo + wo", "no operand"),
    # output rows with a gap (not dense)
    ("c * KH * KW + kh * KW + kw", "((long)plane * Ho + ho) * (Wo + 1) + wo", "no operand"),
])
def test_depthwise_forms(filt, out, why):
    p = bind_first_loop(parse_text(DW.replace("FILT", filt).replace("OUT", out), "c", "k.c"), "k")
    if why is None:
        assert BC.analyse(p, p.func("k"))["per_row"]
        return
    with pytest.raises(BC.NotConv) as e:
        BC.analyse(p, p.func("k"))
    assert why in e.value.why


def test_flattened_window_row_is_a_one_channel_conv():
    # conv2d_nhwc.hip's spelling: kw and ci fused into one loop over KW*Cin contiguous elements
    text = """
void k(const float* input, const float* weight, float* output, int N, int H, int W, int Cin, int Cout,
       int KH, int KW, int stride) {
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    for (int pix = 0; pix < N * Ho * Wo; ++pix) {
        int wo = pix % Wo;
        int ho = pix / Wo % Ho;
        int n = pix / (Wo * Ho);
        for (int co = 0; co < Cout; ++co) {
            float sum = 0.0f;
            for (int kh = 0; kh < KH; ++kh) {
                const float* xrow = input + (((long)n * H + ho * stride + kh) * W + wo * stride) * Cin;
                const float* wrow = weight + ((long)co * KH + kh) * KW * Cin;
                for (int j = 0; j < KW * Cin; ++j)
                    sum += xrow[j] * wrow[j];
            }
            output[(long)pix * Cout + co] = sum;
        }
    }
}
"""
    p = bind_first_loop(parse_text(text, "c", "k.c"), "k")
    c = BC.analyse(p, p.func("k"))
    assert c["CI"] == "(1)" and c["a_kw"] == "(1)" and not c["per_row"]
    assert c["KW"].replace(" ", "") in ("(Cin*KW)", "(KW*Cin)") and c["sw"].replace(" ", "") in (
        "(Cin*stride)", "(stride*Cin)")


def test_conv1d_channels_become_the_window_rows_and_verify():
    # [N][Cin][L] data, [Cout][Cin][KW] filter, summed ci then k: per (n, co) row one 1-channel
    # image [Cin][L] with a window of all Cin rows, the row's filter reloaded per row
    src, entry, p = bound("conv1d")
    c = BC.analyse(p, p.func(entry))
    assert c["KH"] == "(Cin)" and c["CI"] == "(1)" and c["Co"] == "(1)" and c["per_row"]
    r = tensorize.apply(p, entry=entry, target="bang")
    v = verify(r, src)
    assert v.verified, v.failures[:1]


def test_conv2d_nchw_window_rows_are_channel_kernel_rows_and_verify():
    # [N][Cin][H][W] data, [Cout][Cin][KH][KW] filter, summed ci, kh, kw: per output row (ho, co, n)
    # the (ci, kh) pairs are the Cin*KH rows of a one-channel window (tile row m = (m / KH, m % KH)),
    # the filter read as [Cout][Cin*KH][KW][1]: the same sum in the nest's order
    src, entry, p = bound("conv2d_nchw")
    c = BC.analyse(p, p.func(entry))
    assert c["KH"] == "(Cin * KH)" and c["KW"] == "(KW)" and c["CI"] == "(1)" and c["Co"] == "(1)" and c["per_row"]
    assert "(H * W) * (xp_c_kh / ((KH)))" in c["in_base"] and "(W) * (xp_c_kh % ((KH)))" in c["in_base"]
    r = tensorize.apply(p, entry=entry, target="bang")
    assert "__bang_conv" in ops_of(r, entry)
    v = verify(r, src)
    assert v.verified and v.substrate == "emu:bang-cpu", v.failures[:1]


NCHW_KW_OUTER = """
void k(const float* input, const float* weight, float* output, int Cin, int H, int W, int Cout, int KH, int KW) {
    int Ho = H - KH + 1;
    int Wo = W - KW + 1;
    for (int co = 0; co < Cout; co++)
        for (int ho = 0; ho < Ho; ho++)
            for (int wo = 0; wo < Wo; wo++) {
                float acc = 0.0f;
                for (int ci = 0; ci < Cin; ci++)
                    for (int kw = 0; kw < KW; kw++)
                        for (int kh = 0; kh < KH; kh++)
                            acc += input[(ci * H + ho + kh) * W + wo + kw] * weight[((co * Cin + ci) * KH + kh) * KW + kw];
                output[(co * Ho + ho) * Wo + wo] = acc;
            }
}
"""


def test_conv2d_nchw_summed_in_another_order_is_refused():
    # kw outside kh: the instruction would sum kh before kw
    p = bind_first_loop(parse_text(NCHW_KW_OUTER, "c", "k.c"), "k")
    with pytest.raises(BC.NotConv):
        BC.analyse(p, p.func("k"))
