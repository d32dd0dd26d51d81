// relu_avx512.c: y[i] = max(x[i], 0) with AVX-512 (16 floats per vector).
// Full vectors use plain unaligned loads/stores; the last n % 16 elements use a
// lane mask, so nothing past the end of x or y is touched.
#include <immintrin.h>

void relu_avx512(const float* x, float* y, int n)
{
    const __m512 zero = _mm512_setzero_ps();
    int nvec = n / 16;

#pragma omp parallel for
    for (int v = 0; v < nvec; v++) {
        int i = v * 16;
        __m512 xv = _mm512_loadu_ps(x + i);
        _mm512_storeu_ps(y + i, _mm512_max_ps(xv, zero));
    }

    int rest = n - nvec * 16;
    if (rest > 0) {
        __mmask16 m = (__mmask16)((1u << rest) - 1u);
        int i = nvec * 16;
        __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_max_ps(xv, zero));
    }
}
