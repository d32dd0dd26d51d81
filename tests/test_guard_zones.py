"""The harness's guard zones around array arguments (runtime/common/xp_job.h, XP4280;
docs/verification.md, "Guard zones").

gcc's AddressSanitizer does not instrument AVX-512 masked stores, so a store one lane past an
output array used to pass the test (the planted mutant `if (xg_mr > 3)` -> `>= 3` of the
register-tiled gemm stored a whole row past C). The zones catch such writes; an instrumented
overrun is still reported by AddressSanitizer as out-of-bounds (XP2105)."""
import shutil
from pathlib import Path

import pytest

from xpiler.platforms.c import cpu_flags
from xpiler.sandbox import classify_asan
from xpiler.verify import test_kernel as verify

ROOT = Path(__file__).resolve().parent.parent
HAS_AVX512 = "avx512f" in cpu_flags()

TAIL_ONE_TOO_MANY = r"""
#include <immintrin.h>
void relu(const float* x, float* y, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_max_ps(_mm512_loadu_ps(x + i), _mm512_setzero_ps()));
    __mmask16 in = (__mmask16)((1u << (n - i)) - 1u);
    __mmask16 out = (__mmask16)((1u << (n - i + 1)) - 1u);   /* one lane too many */
    _mm512_mask_storeu_ps(y + i, out, _mm512_max_ps(_mm512_maskz_loadu_ps(in, x + i), _mm512_setzero_ps()));
}
"""
BEFORE_START = r"""
#include <immintrin.h>
void relu(const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    _mm512_mask_storeu_ps(y - 16, (__mmask16)0x8000u, _mm512_setzero_ps());   /* y[-1] = 0 */
}
"""
SCALAR_PAST_END = r"""
void relu(const float* x, float* y, int n) {
    for (int i = 0; i <= n; ++i) y[i] = i < n && x[i] > 0.0f ? x[i] : 0.0f;
}
"""


def _kernel(tmp_path, text, name="relu.c"):
    k = tmp_path / name
    k.write_text(text)
    shutil.copy(ROOT / "examples" / "relu" / "relu.c.toml", tmp_path / (name + ".toml"))
    shutil.copy(ROOT / "examples" / "relu" / "ref.py", tmp_path / "ref.py")
    return k


@pytest.mark.skipif(not HAS_AVX512, reason="needs AVX-512 on this CPU (the masked store must run natively)")
def test_masked_store_past_the_end_is_caught(tmp_path):
    v = verify(_kernel(tmp_path, TAIL_ONE_TOO_MANY), seeds=(0,))
    assert not v.verified
    f = v.failures[0]
    assert f.code == "XP4280", f.message
    assert "after it were written" in f.message and "argument 1" in f.message


@pytest.mark.skipif(not HAS_AVX512, reason="needs AVX-512 on this CPU (the masked store must run natively)")
def test_masked_store_before_the_start_is_caught(tmp_path):
    v = verify(_kernel(tmp_path, BEFORE_START), seeds=(0,))
    assert not v.verified
    assert v.failures[0].code == "XP4280"
    assert "before it were written" in v.failures[0].message and "bytes -4..-1" in v.failures[0].message


def test_instrumented_overrun_is_still_out_of_bounds(tmp_path):
    v = verify(_kernel(tmp_path, SCALAR_PAST_END), seeds=(0,))
    assert not v.verified
    assert v.failures[0].code == "XP2105", v.failures[0].message


def test_use_after_poison_is_out_of_bounds():
    rep = classify_asan("==1==ERROR: AddressSanitizer: use-after-poison on address 0x6020000000f0 at pc 0x1 bp 0x2 "
                        "sp 0x3\nWRITE of size 4 at 0x6020000000f0 thread T0\n")
    assert rep is not None and rep.kind == "out-of-bounds"


def test_the_correct_kernel_still_verifies():
    v = verify(ROOT / "examples" / "relu" / "relu_avx512.c", seeds=(0,))
    assert v.verified, v.summary()
