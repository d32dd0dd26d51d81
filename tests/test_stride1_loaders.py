"""Loaders that follow the operand's stride-1 index (cuda, 2026-12-05, helper 74).

* The wide register-blocked form (passes/patterns/simt_regtile.py ``body_wide``) stages B
  k-fastest when B's index is proven ``f(b, j, k) == f(b, j, 0) + k`` (simt_kparts.k_contiguous):
  conv2d_nhwc's weight [Cout][KH][KW][Cin]. gemm's ``B[k*N + j]`` keeps the column-fastest loader.
* The per-row form (depthwise, passes/patterns/simt_tile.py ``rowvec_split_body``) reads the input
  through a row part per column and a per-slice table of k offsets: no division per tap.
Both verified on the SIMT emulator (every spec instance: stride 2 and 3, odd sizes); the
broken variants below show the tests can fail."""
from dataclasses import replace

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.passes import cache
from xpiler.passes.patterns import simt_kparts as KP
from xpiler.passes.patterns import simt_regtile as RT
from xpiler.passes.patterns import simt_tile as ST
from xpiler.printers import print_program

from _simt_tile_util import bound, verify


def _launch(launch):
    # the launch speaks of the kernel's parameters; the specs name the stride S
    return dict(launch, grid=[g.replace("stride", "S") if isinstance(g, str) else g for g in launch["grid"]])


def _wide(op, dialect="cuda"):
    src, entry, p = bound(op, dialect)
    q, launch = cache.apply(p, entry=entry, target=dialect, **cache.WIDE_DEFAULT)
    ct, _ = cache.plan_simt(p, entry, "auto", False, cache.NAME, simple=False)
    return src, ct, q, _launch(launch)


def test_k_contiguity_is_proven_from_the_index():
    """nhwc's weight is stride 1 along k; gemm's B[k*N + j] is not, its A[i*K + k] is; a B given
    transposed (B[j*K + k]) is."""
    _, ct, _, _ = _wide("conv2d_nhwc")
    assert KP.k_contiguous(ct, "B")
    _, g, _, _ = _wide("gemm")
    assert not KP.k_contiguous(g, "B") and KP.k_contiguous(g, "A")
    j, k = N.Var("xp_j"), N.Var("xp_k")
    bt = N.BinOp("+", N.BinOp("*", j, g.K), k)
    assert KP.k_contiguous(replace(g, b_idx=bt), "B")
    assert RT.b_by_k(replace(g, b_idx=bt), "cuda") and not RT.b_by_k(replace(g, b_idx=bt), "hip")


def test_nhwc_weight_is_loaded_k_fastest_and_verifies():
    src, ct, q, launch = _wide("conv2d_nhwc")
    text = print_program(q, "cuda")
    assert "__shared__ __align__(16) float xp_Bs[1088];" in text           # 16 x (64 + 4)
    assert "xp_Bs[xp_r * 68 + xp_c] = xp_pb[xp_u];" in text
    assert "const int xp_r = (xp_tid + xp_u * 256) % 16;" in text           # k = t % BK
    assert "((const float4 *)xp_Bs)[xp_kk * 17 + xp_tx + xp_v * 16]" in text
    assert "weight[xp_rb[xp_u] + (xp_k0 + 16 + xp_r)]" in text              # unit split, per column
    v = verify(q, src, "cuda", launch)
    assert v.verified, v.failures[:1]


def test_a_b_slice_stored_untransposed_is_caught():
    """The inner product reads B k-major: storing the k-fastest loads column-major gives other
    products (the test can fail)."""
    src, ct, q, launch = _wide("conv2d_nhwc")
    text = print_program(q, "cuda")
    bad = text.replace("xp_Bs[xp_r * 68 + xp_c] = xp_pb[xp_u];", "xp_Bs[xp_c * 17 + xp_r] = xp_pb[xp_u];")
    assert bad != text
    assert not verify(parse_text(bad, "cuda", "bad.cu"), src, "cuda", launch, instances=["base"]).verified


def test_gemm_and_hip_keep_the_column_fastest_b_loader():
    _, _, q, _ = _wide("gemm")
    text = print_program(q, "cuda")
    assert "xp_Bs[xp_tid + xp_u * 256] = xp_pb[xp_u];" in text and "float xp_Bs[1024];" in text
    _, _, qh, _ = _wide("conv2d_nhwc", "hip")
    assert "xp_Bs[xp_r * 68 + xp_c]" not in print_program(qh, "hip")


def _depthwise(dialect="cuda", cols=None):
    src, entry, p = bound("depthwise_conv2d", dialect)
    ct, T = cache.plan_simt(p, entry, "auto", False, cache.NAME)
    q = ST.rebuild(p, ct, ST.rowvec_body(ct, dialect, T, cols))
    return src, ct, q, _launch(ST.launch_rowvec(ct, dialect, T, cols))


def test_depthwise_taps_do_no_division():
    src, ct, q, launch = _depthwise()
    assert ST.rowvec_split(ct, "cuda") == KP.Split("B", "table", "xp_j")
    text = print_program(q, "cuda")
    assert f"input[xp_rp[xp_q] + xp_Kt[xp_kk]]" in text and "__shared__ long xp_Kt[256];" in text
    assert launch["grid"][0] == f"(((H - KH) / S + 1) * ((W - KW) / S + 1) + {256 * ST.ROWVEC_COLS - 1}) " \
                                f"/ {256 * ST.ROWVEC_COLS}"
    v = verify(q, src, "cuda", launch)
    assert v.verified, v.failures[:1]


def test_depthwise_four_columns_per_thread_verify():
    src, ct, q, launch = _depthwise(cols=4)
    assert "float xp_acc[4];" in print_program(q, "cuda")
    v = verify(q, src, "cuda", launch)
    assert v.verified, v.failures[:1]


def test_a_wrong_depthwise_table_is_caught():
    """A k offset of one tap off by one element is not verified (the test can fail)."""
    src, ct, q, launch = _depthwise()
    text = print_program(q, "cuda")
    bad = text.replace("__syncthreads();\n", "if (xp_t == 4) xp_Kt[4] += 1;\n__syncthreads();\n", 1)
    assert bad != text
    assert not verify(parse_text(bad, "cuda", "bad.cu"), src, "cuda", launch, instances=["base"]).verified


def test_depthwise_on_hip_takes_the_split_form_and_verifies():
    """hip gets the same division-free tap loop as cuda (two columns per thread, the k-offset
    table in LDS), launched over half as many column blocks, and it verifies."""
    src, ct, q, launch = _depthwise("hip")
    assert ST.rowvec_split(ct, "hip") is not None
    text = print_program(q, "hip")
    assert "xp_Kt[xp_kk]" in text and "long xp_rp[2];" in text
    assert launch["grid"][0].endswith("/ 512")
    v = verify(q, src, "hip", launch)
    assert v.verified, v.failures[:1]


def _gemm_tt(prefetch=True):
    """tests/simt_inputs/gemm_tt.c (A stored [K][M], B stored [N][K]) in the wide default form."""
    from xpiler.frontend import parse_file
    from xpiler.passes import binding
    from _simt_tile_util import ROOT
    src = ROOT / "tests" / "simt_inputs" / "gemm_tt.c"
    p, _ = binding.apply(parse_file(src), entry="gemm_tt", target="cuda")
    q, launch = cache.apply(p, entry="gemm_tt", target="cuda", **dict(cache.WIDE_DEFAULT, prefetch=prefetch))
    ct, _ = cache.plan_simt(p, "gemm_tt", "auto", False, cache.NAME, simple=False)
    return src, ct, q, launch


def test_transposed_operands_are_loaded_along_their_stride_1_index_and_verify():
    """A[k*M + i] is loaded row-fastest, B[j*K + k] k-fastest; both forms verify on every spec
    instance (odd sizes, K past one slice)."""
    for pf in (True, False):
        src, ct, q, launch = _gemm_tt(pf)
        assert RT.a_by_i(ct, "cuda") and RT.b_by_k(ct, "cuda")
        assert not RT.a_by_i(ct, "hip") and not KP.r_contiguous(_wide("gemm")[1], "A")
        text = print_program(q, "cuda")
        t = "(xp_tid + xp_u * 256)" if pf else "xp_t"
        assert f"const int xp_r = {t} % 64;" in text and f"const int xp_c = {t} / 64;" in text     # A
        assert f"const int xp_r = {t} % 16;" in text and f"const int xp_c = {t} / 16;" in text     # B
        v = verify(q, src, "cuda", launch)
        assert v.verified, v.failures[:1]


def test_a_transposed_a_read_as_k_major_is_caught():
    """Swapping A's row and k in the row-fastest loader stages other elements (the test can fail)."""
    src, ct, q, launch = _gemm_tt()
    text = print_program(q, "cuda")
    bad = text.replace("const int xp_r = (xp_tid + xp_u * 256) % 64;", "const int xp_r = (xp_tid + xp_u * 256) / 16;")
    assert bad != text
    assert not verify(parse_text(bad, "cuda", "bad.cu"), src, "cuda", launch, instances=["base"]).verified
