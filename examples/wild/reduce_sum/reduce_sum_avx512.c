/* reduce_sum_avx512.c: total = sum(x[0..n)), four independent AVX-512 accumulators, a scalar
 * tail, and an early return for empty input (the output still written). */
#include <immintrin.h>

void reduce_sum(const float *x, float *total, int n)
{
    if (n <= 0) {
        total[0] = 0.0f;
        return;
    }
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    for (; i < n; ++i) s += x[i];
    total[0] = s;
}
