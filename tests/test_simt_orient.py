"""The cache pass reads a contraction the way round its memory layout asks
(passes/patterns/simt_orient.py): conv2d_nchw in the loop order of conv2d_nchw.mlu's lifted nest
(pixels outside channels, taps outside input channels) becomes the same implicit GEMM as
conv2d_nchw.c (rows = output channels, k = (ci, kh, kw), the weight stride 1 along k), and
verifies (emu:simt-cpu); orders that are already right are kept."""
from pathlib import Path

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.passes import binding, cache, tensorize
from xpiler.passes.patterns import common as U
from xpiler.passes.patterns import simt_kparts as KP
from xpiler.passes.patterns import simt_orient as SO
from xpiler.passes.patterns import simt_tile as ST
from xpiler.printers import print_program, printer_for

from _simt_tile_util import ROOT, bound, verify

ROWS = ROOT / "tests" / "simt_inputs" / "conv2d_nchw_rows.c"
REF = ROOT / "examples" / "conv2d_nchw" / "conv2d_nchw.c"


def _rows_bound(target="cuda"):
    p, _ = binding.apply(parse_file(ROWS), entry="conv2d_nchw", target=target)
    return p


def _spec_launch(launch):
    # the launch speaks of the kernel's parameters; the spec names the stride S
    return dict(launch, grid=[g.replace("stride", "S") if isinstance(g, str) else g for g in launch["grid"]])


def _ct(p, entry="conv2d_nchw"):
    return ST.analyse(p, U.kernel_func(p, entry), wider=True)


def test_pixel_rows_read_as_the_c_source():
    pr = printer_for("cuda").expr
    ct, want = _ct(_rows_bound()), _ct(bound("conv2d_nchw", "cuda")[2])
    assert (ct.A, ct.B, ct.C) == (want.A, want.B, want.C) == ("weight", "input", "output")
    assert (pr(ct.M), pr(ct.N_), pr(ct.batch)) == (pr(want.M), pr(want.N_), pr(want.batch)) == ("Cout", "Ho * Wo", "N")
    # the reduction runs over (ci, kh, kw): the weight's K elements of a row are consecutive
    assert pr(ct.K) == "Cin * KH * KW"
    assert KP.k_contiguous(ct, "A") and KP.k_contiguous(want, "A")


def test_pixel_rows_wide_form_loads_like_the_c_source_and_verifies():
    p = _rows_bound()
    q, launch = cache.apply(p, entry="conv2d_nchw", target="cuda", **cache.WIDE_DEFAULT)
    text = print_program(q, "cuda")
    # the weight is read at row part + k (no table), the input through the k table, and the
    # output's fast index (threadIdx.x's columns) is the pixel
    assert "weight[xp_ra[xp_u] + (" in text and "xp_ktA" not in text and "input[xp_rb + xp_ktB[" in text
    assert "output[(((long)xp_b * Cout + xp_i) * Ho + xp_j / Wo) * Wo + xp_j % Wo]" in text
    v = verify(q, REF, "cuda", _spec_launch(launch))
    assert v.verified and "emu:simt-cpu" in v.substrate, v.failures[:1]


def test_pixel_rows_hip_mfma_has_the_weight_as_a_and_verifies():
    # hip (the default plan's LDS tiles + MFMA): the weight tile is A (rows Cout), the pixels the
    # columns of the output store
    p, _ = cache.apply(_rows_bound("hip"), entry="conv2d_nchw", target="hip", tile=16)
    q, launch = tensorize.apply(p, entry="conv2d_nchw", target="hip")
    text = print_program(q, "hip")
    assert "__builtin_amdgcn_mfma_f32_16x16x4f32" in text
    assert "xp_As[xp_t] = (xp_row0 + xp_r < Cout && " in text and "? weight[" in text
    assert "output[(((long)xp_b * Cout + xp_r) * Ho + xp_c / Wo) * Wo + xp_c % Wo]" in text
    v = verify(q, REF, "hip", _spec_launch(launch))
    assert v.verified and "emu:simt-cpu" in v.substrate, v.failures[:1]


def test_orders_that_are_right_are_kept():
    pr = printer_for("cuda").expr
    # conv2d_nhwc: the output channel is stride 1 in C, the taps and channels already row-major
    _, entry, p = bound("conv2d_nhwc", "cuda")
    ct = _ct(p, entry)
    assert (ct.A, ct.B, pr(ct.M), pr(ct.N_), pr(ct.K)) == ("input", "weight", "Ho * Wo", "Cout", "KH * KW * Cin")
    # gemm: C[i * N + j]
    _, entry, p = bound("gemm", "cuda")
    ct = _ct(p, entry)
    assert (ct.A, ct.B) == ("A", "B")


GEMM_CT = """
void gemm_ct(const float *A, const float *B, float *C, int M, int N, int K) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k)
                acc += A[(long)i * K + k] * B[(long)k * N + j];
            C[(long)j * M + i] = acc;
        }
}
"""


def test_a_result_stored_transposed_is_read_transposed():
    p, _ = binding.apply(parse_text(GEMM_CT, "c", "gemm_ct.c"), entry="gemm_ct", target="cuda")
    ct = _ct(p, "gemm_ct")
    pr = printer_for("cuda").expr
    assert (ct.A, ct.B, pr(ct.M), pr(ct.N_)) == ("B", "A", "N", "M")
    # C's column (threadIdx.x's fast index) is the source's row i, stride 1
    assert pr(ct.c_idx) == "(long)xp_i * M + xp_j" and pr(ct.a_idx) == "(long)xp_k * N + xp_i"


def _v(name):
    return N.Var(name)


def _e(text):
    """An integer expression of the c parser (names are free)."""
    p = parse_text(f"int f(int a) {{ return {text}; }}", "c", "e.c")
    return p.func("f").body.stmts[0].value


def test_reduction_order_makes_an_operand_stride_1_or_keeps_it():
    loopvars = {"p", "q", "ci", "co", "n", "ho", "wo"}
    chain = [("p", _v("KH")), ("q", _v("KW")), ("ci", _v("Cin"))]
    nchw_w = _e("((co * Cin + ci) * KH + p) * KW + q")
    nchw_x = _e("((n * Cin + ci) * H + ho + p) * W + wo + q")
    nhwc_w = _e("((co * KH + p) * KW + q) * Cin + ci")
    assert [v for v, _ in SO.reduction_order(chain, [nchw_x, nchw_w], loopvars)] == ["ci", "p", "q"]
    # already stride 1 for one operand: kept
    assert SO.reduction_order(chain, [nchw_x, nhwc_w], loopvars) is chain
    # no order makes either operand stride 1 (the input alone): kept
    assert SO.reduction_order(chain, [nchw_x, nchw_x], loopvars) is chain
    # a loop variable under a division: not read, kept
    assert SO.reduction_order(chain, [_e("(ci * KH * KW + p * KW + q) / 2"), nchw_w], loopvars) is chain
