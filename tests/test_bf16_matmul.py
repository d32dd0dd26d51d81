"""bfloat16 contraction -> c (passes/patterns/x86_gemm_bf16.py, x86_gemm_bf16_amx.py): the emulated vdpbf16ps
and tdpbf16ps (xpiler/runtime/c/simde/) against a numpy model of Intel's numerics, each guarded path
in the printed output, and the dpbf16 build verifying where a wrong pair packing fails."""
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.passes import tensorize
from xpiler.platforms.c import SIMDE_WRAPPER, simde_available
from xpiler.platforms.prelude import c_has_bf16, prepare_c
from xpiler.printers import print_program
from xpiler.spec import load_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels
from xpiler.verify.variants import guards

ROOT = Path(__file__).resolve().parent.parent
GEMM = ROOT / "examples" / "gemm"
needs_emulator = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("g++") and simde_available()),
                                    reason="needs gcc, g++ and SIMD Everywhere (libsimde-dev)")

# the contraction untile leaves of gemm_bf16.cu (c dialect)
PLAIN = """void gemm_bf16(const __bf16 *A, const __bf16 *B, float *C, int M, int N, int K) {
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k)
                acc += (float)A[i * K + k] * (float)B[k * N + j];
            C[i * N + j] = acc;
        }
    }
}
"""

# lane / tile cases, as bf16 bit patterns: (c, x_even, y_even, x_odd, y_odd)
ONE, M_ONE = 0x3F80, 0xBF80
CASES = [
    (1.0, 0x3080, ONE, M_ONE, ONE),     # order: odd first 1 - 1 + 2^-30 = 2^-30; even first (1 + 2^-30) - 1 = 0
    (0.0, 0x0001, 0x7F00, 0, 0),        # a denormal input times 2^127: 0 under DAZ, 0.0156 without
    (0.0, 0x1C80, 0x1C80, 0, 0),        # 2^-70 * 2^-70 = 2^-140, a float denormal: flushed (FTZ)
    (0.25, 0x4040, 0xC000, 0x3E00, 0x4100),
]


def _f(bits):
    return np.array([bits], np.uint32).__lshift__(16).view(np.float32)[0]


def _model(c, pairs, daz_ftz=True):
    """float FMA steps (exact in float64 for these operands, then rounded to float32) with DAZ / FTZ."""
    tiny = np.float32(2.0 ** -126)

    def z(v):
        return np.float32(0.0) if daz_ftz and abs(v) < tiny else np.float32(v)
    acc = z(np.float32(c))
    for x, y in pairs:
        acc = z(np.float32(np.float64(z(_f(x))) * np.float64(z(_f(y))) + np.float64(acc)))
    return acc


PROGRAM = r"""
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
static const float C0[%(n)d] = {%(c)s};
static const uint16_t X[%(n)d * 2] = {%(x)s}, Y[%(n)d * 2] = {%(y)s};
int main(void) {
    /* vdpbf16ps: lane j of C0 with the pairs (X[2j], X[2j+1]) . (Y[2j], Y[2j+1]) */
    uint16_t xa[32] = {0}, ya[32] = {0};
    float c[16] = {0}, out[16];
    memcpy(xa, X, sizeof X); memcpy(ya, Y, sizeof Y); memcpy(c, C0, sizeof C0);
    __m512 r = _mm512_dpbf16_ps(_mm512_loadu_ps(c), (__m512bh)_mm512_loadu_si512((const void *)xa),
                                (__m512bh)_mm512_loadu_si512((const void *)ya));
    _mm512_storeu_ps(out, r);
    printf("dp");
    for (int j = 0; j < %(n)d; ++j) printf(" %%a", out[j]);
    printf("\n");
    /* tdpbf16ps: C tile %(n)d rows x 1 float, A tile %(n)d rows x 1 pair, B tile 1 pair x 1 column:
       row m: C0[m] + X[2m] * Y[2m] + X[2m+1] * Y[2m+1] with B's pair taken from row m's Y */
    unsigned char cfg[64];
    memset(cfg, 0, 64);
    cfg[0] = 1;
    cfg[16] = 4; cfg[48] = %(n)d;     /* tile 0: C */
    cfg[18] = 4; cfg[49] = %(n)d;     /* tile 1: A */
    cfg[20] = 4; cfg[50] = 1;         /* tile 2: B */
    _tile_loadconfig(cfg);
    printf("tile");
    for (int m = 0; m < %(n)d; ++m) {
        float cm = C0[m], o;
        _tile_loadd(0, &cm, 4); _tile_loadd(1, X + 2 * m, 4); _tile_loadd(2, Y + 2 * m, 4);
        _tile_dpbf16ps(0, 1, 2);
        _tile_stored(0, &o, 4);
        printf(" %%a", o);
    }
    printf("\n");
    _tile_release();
    return 0;
}
"""


@needs_emulator
def test_emulated_dpbf16_and_tile_dpbf16ps_follow_intels_numerics():
    rng = np.random.default_rng(5)
    cases = list(CASES)
    for _ in range(8):      # ordinary values: a bf16 from [-2, 2) with 4 significant bits, a float c
        b = [int(0x3C00 + rng.integers(0, 0x400) | (rng.integers(0, 2) << 15)) & 0xFFF0 for _ in range(4)]
        cases.append((float(np.float32(rng.uniform(-4, 4))), *b))
    n = len(cases)
    src = PROGRAM % dict(n=n, c=", ".join(f"{float(c)!r}f" for c, *_ in cases),
                         x=", ".join(f"{xe}, {xo}" for _, xe, ye, xo, yo in cases),
                         y=", ".join(f"{ye}, {yo}" for _, xe, ye, xo, yo in cases))
    tmp = Path(tempfile.mkdtemp(prefix="xp-bf16-"))
    (tmp / "t.c").write_text(src)
    subprocess.run(["gcc", "-O1", f"-I{SIMDE_WRAPPER}", "-mavx2", "-mfma", "t.c", "-o", "t", "-lm"], cwd=tmp,
                   check=True, capture_output=True)
    out = subprocess.run([str(tmp / "t")], capture_output=True, text=True, check=True).stdout.splitlines()
    got = {ln.split()[0]: [float.fromhex(v) for v in ln.split()[1:]] for ln in out}
    dp = [_model(c, [(xo, yo), (xe, ye)]) for c, xe, ye, xo, yo in cases]       # odd element first
    tile = [_model(c, [(xe, ye), (xo, yo)]) for c, xe, ye, xo, yo in cases]     # even element first
    np.testing.assert_array_equal(np.float32(got["dp"]), np.float32(dp))
    np.testing.assert_array_equal(np.float32(got["tile"]), np.float32(tile))
    # the special cases say what they test: order, DAZ, FTZ
    assert dp[0] == 2.0 ** -30 and tile[0] == 0.0
    assert dp[1] == 0.0 and _model(0.0, [(0x0001, 0x7F00)], daz_ftz=False) > 0.01
    assert dp[2] == 0.0 and _model(0.0, [(0x1C80, 0x1C80)], daz_ftz=False) > 0


def _tensorized(amx=True):
    p = parse_text(PLAIN, "c", "gemm_bf16.c")
    return print_program(tensorize.apply(p, entry="gemm_bf16", target="c", micro="6x32", kc=256, amx=amx), "c")


@pytest.fixture(scope="module")
def text():
    return _tensorized()


def test_the_output_has_each_guarded_path(text):
    assert guards(text) == ["XP_USE_AVX512BF16", "XP_USE_AMX"]
    assert "#if defined(__AVX512BF16__)\n#define XP_USE_AVX512BF16 1" in text
    assert "#if defined(__AMX_BF16__) && defined(__AMX_TILE__)\n#define XP_USE_AMX 1" in text
    body = text[text.index("gemm_bf16("):]
    at = 0
    for s in ("#if XP_USE_AMX", "_tile_loadconfig", "_tile_dpbf16ps(", "_tile_release", "#else", "#endif",
              "#if XP_USE_AVX512BF16", "_mm512_dpbf16_ps(", "#else", "_mm512_fmadd_ps(", "#endif"):
        at = body.index(s, at) + len(s)      # each in this order (ValueError: missing or out of order)
    assert "_tile_dpbssd" not in body and "__bf16" not in body.split("{", 1)[1]    # bits read as uint16_t
    ops = tensorize.applied_ops(parse_text(PLAIN, "c", "k.c"), "gemm_bf16", target="c", micro="6x32", kc=256)
    assert ops[0] == "_mm512_dpbf16_ps" and "_tile_dpbf16ps" in ops
    plain = _tensorized(amx=False)
    assert guards(plain) == ["XP_USE_AVX512BF16"] and "_tile_" not in plain


def test_gcc_without_bf16_builds_the_text_as_cxx_with_the_shim():
    prep = prepare_c(PLAIN, "k.c")
    if c_has_bf16():
        assert prep.cxx is None and "xp_bf16.h" not in prep.text
    else:
        assert "__bf16" in prep.cxx and '#include "xp_bf16.h"' in prep.text.split("#line 1")[0]
    assert prepare_c(PLAIN.replace("__bf16", "float").replace("(float)", ""), "k.c").cxx is None


def _verify(text, tmp: Path):
    """``text`` on one ragged shape (K odd, M and N past one register tile), one seed, no sanitizer."""
    sp = load_spec(str(GEMM / "gemm_bf16.cu.toml"))
    cs = sp.with_dialect("c", sp.entry, {})
    ref, fn = sp.reference.split(":")
    cs.reference = f"{(GEMM / ref).resolve()}:{fn}"
    cs.shapes = [{"name": "ragged", "M": 13, "N": 37, "K": 45}]
    path = tmp / "cand.c"
    path.write_text(text)
    cs.path = path.with_name("cand.c.toml")
    cs.path.write_text(spec_to_toml(cs))
    return compare_kernels(path, load_spec(cs.path), instances=["ragged"], seeds=(2,), sanitize=False,
                           derive_boundaries=False)


def _one_build(text, avx512bf16):
    """The text fixed to one build: the dpbf16 path (1) or the widening path (0), no AMX."""
    fixed = text.replace("#ifndef XP_USE_AVX512BF16", "#if 0", 1).replace("#ifndef XP_USE_AMX", "#if 0", 1)
    return f"#define XP_USE_AVX512BF16 {avx512bf16}\n#define XP_USE_AMX 0\n" + fixed


@needs_emulator
def test_the_dpbf16_build_verifies_and_a_wrong_pair_packing_fails(text):
    v = _verify(_one_build(text, 1), Path(tempfile.mkdtemp(prefix="xp-bf16-v-")))
    assert v.verified, v.failures[:1]
    # A's pair words with the halves swapped: each lane multiplies A[2q+1] by B[2q] -- must fail
    good = "(uint32_t)xh_src[2 * xh_q] | (2 * xh_q + 1 < xh_kc ? (uint32_t)xh_src[2 * xh_q + 1] << 16 : 0u)"
    bad = "(uint32_t)xh_src[2 * xh_q] << 16 | (2 * xh_q + 1 < xh_kc ? (uint32_t)xh_src[2 * xh_q + 1] : 0u)"
    assert text.count(good) == 1
    w = _verify(_one_build(text.replace(good, bad), 1), Path(tempfile.mkdtemp(prefix="xp-bf16-bad-")))
    assert not w.verified


def test_cuda_to_hip_spells_bf16_for_rocm5_and_6():
    from xpiler.frontend import parse_file
    from xpiler.passes import binding
    prog = binding.apply(parse_file(str(GEMM / "gemm_bf16.cu")), entry="gemm_bf16", target="hip", mode="retarget")
    hip = print_program(prog[0] if isinstance(prog, tuple) else prog, "hip")
    assert "#include <hip/hip_bfloat16.h>" in hip and "const hip_bfloat16 *A" in hip
    assert "__bfloat162float" not in hip and "(float)A[row * K + ka]" in hip
    assert "__bf16" not in hip and "hip_bf16.h" not in hip
