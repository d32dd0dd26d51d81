/* relu_avx512_mask.c: ReLU with _mm512_max_ps, plain C99, the tail handled with a mask made by
 * _bzhi_u32-free arithmetic ((1 << rem) - 1) and masked load/store. */
#include <immintrin.h>
#include <stddef.h>

void relu_avx512(const float *restrict x, float *restrict y, size_t n)
{
    const __m512 zero = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_max_ps(_mm512_loadu_ps(x + i), zero));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (unsigned)(n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, _mm512_max_ps(_mm512_maskz_loadu_ps(m, x + i), zero));
    }
}
