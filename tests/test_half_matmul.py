"""Half x half -> float contractions (what WMMA / MFMA f16 sources become after detensorize and
untile) on the two targets without a half gemm of their own in this project before:

* bang: cache stages the half rhs in WRAM and tensorize writes ``__bang_matmul`` in its documented
  (float dst, half lhs, half rhs) form (passes/patterns/rows.py);
* c: the register-tiled AVX-512 gemm packs half panels widened to float (``_mm512_cvtph_ps``)
  and runs the float micro-kernel (passes/patterns/x86_gemm.py).

Each verified against gemm_wmma.cu's spec (its reference and the WMMA source itself)."""
import os

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache, tensorize
from xpiler.passes.base import PassError
from xpiler.printers import print_program

from test_pass_cache import ROOT, bind_first_loop, verify

WMMA = ROOT / "examples" / "gemm" / "gemm_wmma.cu"

# the plain contraction untile leaves of gemm_wmma.cu (c dialect: half is _Float16)
HALF_MM = """void gemm_wmma(const {TA} *A, const {TB} *B, {TC} *C, int M, int N, int K) {{
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {{
            {ACC} acc = 0.0f;
            for (int k = 0; k < K; ++k) acc += {a} * {b};
            C[i * N + j] = acc;
        }}
}}
"""
OK = dict(TA="_Float16", TB="_Float16", TC="float", ACC="float", a="(float)A[i * K + k]", b="(float)B[k * N + j]")


def half_mm(**change):
    return parse_text(HALF_MM.format(**{**OK, **change}), "c", "mm.c")


def intrinsics(prog, entry="gemm_wmma"):
    return {n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)}


# ------------------------------------------------------------------------------------------ c
@pytest.mark.parametrize("params", [
    {"micro": "6x32", "kc": 256},
    # every edge: 7-deep k slices, several 48-column blocks, 10-row blocks with a partial panel
    {"micro": "5x48", "kc": 7, "mc": 10, "nc": 48},
])
def test_half_contraction_to_c_packs_widened_panels_and_verifies(params):
    r = tensorize.apply(half_mm(), entry="gemm_wmma", target="c", **params)
    ops = intrinsics(r)
    assert {"_mm512_cvtph_ps", "_mm256_maskz_loadu_epi16", "_mm512_fmadd_ps", "_mm512_set1_ps"} <= ops
    text = print_program(r, "c")
    # the panels are float, the matrices stay half
    assert "const _Float16 *xg_A" in text and "float *xg_bp" in text and "(float)xg_src[xg_k]" in text
    assert tensorize.applied_ops(half_mm(), "gemm_wmma", target="c", **params)[-2:] == \
        ["_mm512_cvtph_ps", "_mm256_maskz_loadu_epi16"]
    v = verify(r, WMMA, dialect="c", launch={})
    assert v.verified, v.failures[:1]
    assert v.substrate == "hw:cpu-avx512vnni" or v.substrate.startswith("emu:")
    assert any(i.startswith("boundary") for i in v.instances)


def test_half_b_panels_never_load_past_the_end_of_b():
    # a masked 16-bit load folded into the conversion faulted on masked-off halves past B's end on
    # an Intel host (gcc 13): every 16-bit load of B is now a full run, a partial run is copied
    r = tensorize.apply(half_mm(), entry="gemm_wmma", target="c", micro="5x48", kc=7, mc=10, nc=48)
    calls = [n for n in walk(r.func("gemm_wmma")) if isinstance(n, N.Intrinsic)
             and n.name == "_mm256_maskz_loadu_epi16"]
    assert calls and all(isinstance(c.args[0], N.Const) and c.args[0].value == 0xFFFF for c in calls)
    assert "xg_h0[16]" in print_program(r, "c")


def test_half_a_with_float_b_converts_a_only():
    r = tensorize.apply(half_mm(TB="float", b="B[k * N + j]"), entry="gemm_wmma", target="c", micro="6x32", kc=256)
    text = print_program(r, "c")
    assert "(float)xg_src[xg_k]" in text and "const float *xg_B" in text
    assert "_mm512_cvtph_ps" not in text


def test_half_to_c_verifies_under_simde(monkeypatch):
    from xpiler.platforms import c as CP
    if not CP.simde_available() and not os.environ.get("CI"):
        pytest.skip("SIMD Everywhere headers not installed")
    monkeypatch.setenv("XPILER_C_SUBSTRATE", "simde")
    r = tensorize.apply(half_mm(), entry="gemm_wmma", target="c", micro="6x32", kc=40, nc=64)
    v = verify(r, WMMA, dialect="c", launch={})
    assert v.verified and v.substrate == "emu:simde-cpu", v.failures[:1]


def _c_refusal(**change):
    with pytest.raises(PassError) as e:
        tensorize.apply(half_mm(**change), entry="gemm_wmma", target="c", micro="6x32", kc=256)
    return e.value


def test_c_refuses_a_half_product_not_widened_to_float():
    # _Float16 * _Float16 is a half product (rounded to half) before the float sum
    e = _c_refusal(a="A[i * K + k]", b="B[k * N + j]")
    assert "not widened to float" in e.why


def test_c_refuses_a_half_result():
    e = _c_refusal(TC="_Float16")
    assert "non-float contraction" in e.why and "C is float16" in e.why


# ------------------------------------------------------------------------------------------ bang
BANG_LAUNCH = {"dim": [4, 1, 1], "func_type": "block"}


def staged(prog):
    return cache.apply(bind_first_loop(prog, "gemm_wmma"), entry="gemm_wmma", target="bang")


def scopes(prog):
    return {n.name: (n.scope, n.type.elem.dtype) for n in walk(prog.func("gemm_wmma"))
            if isinstance(n, N.Decl) and isinstance(n.type, N.Array) and n.scope in ("nram", "wram")}


def test_half_contraction_to_bang_is_matmul_float_half_half_and_verifies():
    q = staged(half_mm())
    # the half rhs goes to WRAM (it is read widened in the accumulated product)
    assert scopes(q) == {"A_nram": ("nram", "float16"), "B_wram": ("wram", "float16"),
                         "C_nram": ("nram", "float32")}
    r = tensorize.apply(q, entry="gemm_wmma", target="bang")
    call = next(n for n in walk(r.func("gemm_wmma")) if isinstance(n, N.Intrinsic) and n.name == "__bang_matmul")
    assert [a.name for a in call.args[:3]] == ["C_nram", "A_nram", "B_wram"]
    v = verify(r, WMMA, dialect="bang", launch=BANG_LAUNCH)
    assert v.verified and v.substrate == "emu:bang-cpu", v.failures[:1]


@pytest.mark.parametrize("change", [
    # a half product (rounded to half) summed in float: not the instruction's exact products
    dict(a="A[i * K + k]", b="B[k * N + j]"),
    # one operand widened, the other a half load
    dict(b="B[k * N + j]"),
    # a half accumulator rounds every partial sum to half
    dict(ACC="_Float16"),
    # half A with float B: no such operand form
    dict(TB="float"),
])
def test_bang_takes_only_the_documented_widened_form(change):
    q = staged(half_mm(**change))
    with pytest.raises(PassError) as e:
        tensorize.apply(q, entry="gemm_wmma", target="bang")
    assert e.value.code == "XP4002"


def test_a_half_scale_factor_stays_in_nram():
    """Only an operand of an accumulated product goes to WRAM: a half row-invariant factor of a
    plain product (a norm's gain) is read by vector ops, which cannot read WRAM."""
    text = """void gemm_wmma(const float *X, const _Float16 *G, float *Y, int M, int N, int K) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            Y[i * N + j] = X[i * N + j] * (float)G[j];
}
"""
    q = cache.apply(bind_first_loop(parse_text(text, "c", "s.c"), "gemm_wmma"), entry="gemm_wmma", target="bang")
    assert all(scope == "nram" for scope, _ in scopes(q).values())


# ------------------------------------------------------------------------------------------ plans
@pytest.mark.parametrize("dst,needle", [("bang", "__bang_matmul(C_nram, A_nram, B_wram"),
                                        # (c: also test_half_contraction_to_c_packs_widened_panels_and_verifies)
                                        pytest.param("c", "_mm512_cvtph_ps", marks=pytest.mark.long)])
def test_default_plan_from_half_mfma_uses_the_matrix_form(tmp_path, dst, needle):
    from xpiler.api import migrate
    r = migrate(ROOT / "examples" / "gemm" / "gemm_mfma_f16.hip", to=dst, outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert needle in r.code
