"""tensorize(target="c", micro=...) on an int8 contraction: the register-tiled AVX-512 VNNI form
(passes/patterns/x86_gemm_i8.py) -- produced for the int8 gemm sources, verified (spec + derived
boundary instances), caught when it is wrong, refused with its reason for what it cannot take."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import x86_gemm_i8 as XG8
from xpiler.printers import print_program

from test_pass_cache import ROOT, verify

GEMM = ROOT / "examples" / "wild" / "gemm"

# what `xpiler migrate examples/wild/gemm/gemm_int8_flat.cu --to c` reads the kernel as, before
# tensorize (the flat one-thread-per-output loop, bound to OpenMP)
FLAT = """#include <stdint.h>
void gemm_s8s32(const int8_t *restrict A, const int8_t *restrict B, int32_t *restrict C, int M, int N, int K) {
    #pragma omp parallel for
    for (int idx = 0; idx < M * N; ++idx) {
        int m = idx / N;
        int n = idx % N;
        int32_t acc = 0;
        for (int k = 0; k < K; ++k) {
            acc += (int32_t)A[m * K + k] * (int32_t)B[k * N + n];
        }
        C[idx] = acc;
    }
}
"""

# uint8 A x int8 B with the signature of examples/gemm/gemm_vnni.c (its spec: A in 0..255, K up to 520)
U8S8 = """#include <stdint.h>
void gemm_vnni(const uint8_t* A, const int8_t* B, int32_t* C, int M, int N, int K) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int32_t acc = 0;
            for (int k = 0; k < K; k++) acc += (int)A[i * K + k] * B[k * N + j];
            C[i * N + j] = acc;
        }
}
"""


def intrinsics(prog, entry):
    return {n.name for n in walk(prog.func(entry)) if isinstance(n, N.Intrinsic)}


def accumulators(prog, entry):
    return {n.name for n in walk(prog.func(entry)) if isinstance(n, N.Decl) and n.name.startswith("xq_c")
            and getattr(n.type, "name", "") == "__m512i"}


@pytest.mark.parametrize("params", [
    {"micro": "6x32", "kc": 256},
    # every edge: 8-deep k slices (K = 45, 256: a partial 4-group in the last slice), 48-column
    # blocks, 10-row blocks with a partial 5-row panel, 3 zmm per row
    {"micro": "5x48", "kc": 8, "mc": 10, "nc": 48, "amx": False},     # (the AMX variant: test_amx_int8.py)
])
def test_int8_flat_source_becomes_the_vnni_form_and_verifies(params):
    p = parse_text(FLAT, "c", "gemm_int8_flat.c")
    r = tensorize.apply(p, entry="gemm_s8s32", target="c", **params)
    ops = intrinsics(r, "gemm_s8s32")
    assert {"_mm512_dpbusd_epi32", "_mm512_set1_epi32", "_mm512_sub_epi32", "_mm512_mask_storeu_epi32"} <= ops
    mr, nr = (int(x) for x in params["micro"].split("x"))
    assert len(accumulators(r, "gemm_s8s32")) == mr * nr // 16
    v = verify(r, GEMM / "gemm_int8_flat.cu", dialect="c", launch={})
    assert v.verified, v.failures[:1]
    # with the AMX variant (x86_gemm_amx.py) both XP_USE_AMX builds, each native or emulated
    assert [s.split("[")[0] in ("hw:cpu-avx512vnni", "hw:cpu-amx", "emu:simde-cpu")
            for s in v.substrate.split(" + ")] == [True] * (1 + params.get("amx", True)), v.substrate
    assert any(i.startswith("boundary") for i in v.instances)


def test_unsigned_a_needs_no_correction_and_verifies():
    p = parse_text(U8S8, "c", "gemm_vnni.c")
    r = tensorize.apply(p, entry="gemm_vnni", target="c", micro="4x64", kc=128, amx=False)
    ops = intrinsics(r, "gemm_vnni")
    assert "_mm512_dpbusd_epi32" in ops and "_mm512_sub_epi32" not in ops
    v = verify(r, ROOT / "examples" / "gemm" / "gemm_vnni.c", dialect="c", launch={})
    assert v.verified, v.failures[:1]


def test_a_wrong_correction_fails_verification():
    # the same output without "- 128 * column sums": the tests must catch it
    p = parse_text(FLAT, "c", "gemm_int8_flat.c")
    r = tensorize.apply(p, entry="gemm_s8s32", target="c", micro="6x32", kc=256, amx=False)
    text = print_program(r, "c")
    assert "_mm512_slli_epi32(xq_s0, 7)" in text
    bad = parse_text(text.replace("_mm512_slli_epi32(xq_s0, 7)", "_mm512_slli_epi32(xq_s0, 6)"), "c", "bad.c")
    v = verify(bad, GEMM / "gemm_int8_flat.cu", dialect="c", launch={})
    assert not v.verified and "wrong (exact compare)" in v.failures[0].message


def test_verifies_under_simde(monkeypatch):
    from conftest import skip_without_simde
    skip_without_simde()
    monkeypatch.setenv("XPILER_C_SUBSTRATE", "simde")
    p = parse_text(FLAT, "c", "gemm_int8_flat.c")
    r = tensorize.apply(p, entry="gemm_s8s32", target="c", micro="5x48", kc=8, mc=10, nc=48, amx=False)
    v = verify(r, GEMM / "gemm_int8_flat.cu", dialect="c", launch={})
    assert v.verified and v.substrate == "emu:simde-cpu", v.failures[:1]


def test_default_plan_to_c_uses_the_vnni_form(tmp_path):
    from xpiler.api import migrate
    r = migrate(GEMM / "gemm_int8_flat.cu", to="c", outdir=tmp_path / "o", perf=False)
    assert r.verified
    assert "_mm512_dpbusd_epi32" in r.code and "xq_bp" in r.code
    assert any(s.pass_name == "tensorize" and s.params.get("micro") for s in r.steps)


def test_candidates_offer_the_int8_tiles():
    p = parse_text(FLAT, "c", "gemm_int8_flat.c")
    tiles = [(c["micro"], c["kc"]) for c in tensorize.candidates(p, "c") if "micro" in c]
    assert tiles == list(XG8.CHOICES)


MM = """#include <stdint.h>
void mm(const {TA}* A, const {TB}* B, {TC}* C, int M, int N, int K) {{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {{
            {ACC} acc = 0;
            for (int k = 0; k < K; k++) {UPD};
            C[i * N + j] = acc;
        }}
}}"""
PLAIN = "acc += A[i * K + k] * B[k * N + j]"


def refusal(TA="int8_t", TB="int8_t", TC="int32_t", ACC="int32_t", UPD=PLAIN, **params):
    p = parse_text(MM.format(TA=TA, TB=TB, TC=TC, ACC=ACC, UPD=UPD), "c", "mm.c")
    with pytest.raises(PassError) as e:
        tensorize.apply(p, entry="mm", target="c", **(params or {"micro": "6x32", "kc": 256}))
    return e.value


def test_the_plain_kernel_is_taken():
    p = parse_text(MM.format(TA="int8_t", TB="int8_t", TC="int32_t", ACC="int32_t", UPD=PLAIN), "c", "mm.c")
    assert "_mm512_dpbusd_epi32" in intrinsics(tensorize.apply(p, entry="mm", target="c", micro="6x32", kc=256), "mm")


def test_refuses_a_saturating_running_sum():
    e = refusal(UPD="{ int32_t t = acc + A[i * K + k] * B[k * N + j]; acc = t > 1000 ? 1000 : t; }")
    assert "clamped in the k loop" in e.why and "without saturating" in e.why


@pytest.mark.parametrize("acc", ["int16_t", "int64_t"])
def test_refuses_an_accumulator_that_is_not_int32(acc):
    e = refusal(ACC=acc)
    assert e.code == "XP4001" and f"the accumulator is {acc[:-2]}, not int32" in e.why


def test_refuses_a_narrowing_conversion_of_the_product():
    e = refusal(UPD="acc += (int8_t)(A[i * K + k] * B[k * N + j])")
    assert e.code == "XP4001" and "conversion to int8" in e.why


def test_refuses_unsigned_b_and_wider_operands_and_float_c():
    assert "B is uint8 and A int8" in refusal(TB="uint8_t").why
    e = refusal(TA="int32_t", TB="int32_t")
    assert "non-float contraction" in e.why and "int8 / uint8 A times int8 B" in e.why
    assert "C is float32, not int32" in refusal(TC="float").why


def test_refuses_a_zero_point_in_the_operand():
    e = refusal(UPD="acc += (A[i * K + k] - 3) * B[k * N + j]")
    assert "transformed before the product" in e.why


@pytest.mark.parametrize("params,words", [
    ({"micro": "6x32", "kc": 250}, "multiple of 4"),
    ({"micro": "6x32", "kc": 2048, "mc": 192}, "bytes"),
    ({"micro": "16x64"}, "zmm registers"),
])
def test_bad_parameters_are_xp4210(params, words):
    e = refusal(**params)
    assert e.code == "XP4210" and words in e.why
