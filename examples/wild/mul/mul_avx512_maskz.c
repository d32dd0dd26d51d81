/* mul_avx512_maskz.c: c = a * b with AVX-512, every iteration masked (no separate tail loop):
 * the mask is all ones except in the last iteration. */
#include <immintrin.h>

void mul_maskz(const float *a, const float *b, float *c, int n)
{
    for (int i = 0; i < n; i += 16) {
        int rem = n - i;
        __mmask16 m = rem >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << rem) - 1u);
        __m512 va = _mm512_maskz_loadu_ps(m, a + i);
        __m512 vb = _mm512_maskz_loadu_ps(m, b + i);
        _mm512_mask_storeu_ps(c + i, m, _mm512_mul_ps(va, vb));
    }
}
