// leaky_relu_avx512_mask.cpp: y = x >= 0 ? x : slope * x with AVX-512 compare masks:
// _mm512_cmp_ps_mask picks the negative lanes, _mm512_mask_mul_ps scales only those.
// The tail uses masked loads/stores built from the remaining count.
#include <immintrin.h>
#include <cstdint>

extern "C" void leaky_relu_avx512(const float* x, float* y, float slope, int n)
{
    const __m512 vslope = _mm512_set1_ps(slope);
    const __m512 zero = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __mmask16 neg = _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ);
        v = _mm512_mask_mul_ps(v, neg, v, vslope);
        _mm512_storeu_ps(y + i, v);
    }
    if (i < n) {
        const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(tail, x + i);
        __mmask16 neg = _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ);
        v = _mm512_mask_mul_ps(v, neg, v, vslope);
        _mm512_mask_storeu_ps(y + i, tail, v);
    }
}
