/* rmsnorm_avx512.c: y = x / sqrt(mean(x^2) + eps) * w per row. Sum of squares with
 * _mm512_fmadd_ps and _mm512_reduce_add_ps, then a vector scale pass; scalar tails. */
#include <immintrin.h>
#include <math.h>

#define EPS 1e-6f

void rmsnorm_avx512(const float *x, const float *w, float *y, int rows, int dim)
{
    for (int r = 0; r < rows; ++r) {
        const float *xr = x + (long)r * dim;
        float *yr = y + (long)r * dim;
        __m512 acc = _mm512_setzero_ps();
        int i = 0;
        for (; i + 16 <= dim; i += 16) {
            __m512 v = _mm512_loadu_ps(xr + i);
            acc = _mm512_fmadd_ps(v, v, acc);
        }
        float ss = _mm512_reduce_add_ps(acc);
        for (; i < dim; ++i) ss += xr[i] * xr[i];
        float inv = 1.0f / sqrtf(ss / (float)dim + EPS);
        __m512 vinv = _mm512_set1_ps(inv);
        for (i = 0; i + 16 <= dim; i += 16)
            _mm512_storeu_ps(yr + i, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xr + i), vinv), _mm512_loadu_ps(w + i)));
        for (; i < dim; ++i) yr[i] = xr[i] * inv * w[i];
    }
}
