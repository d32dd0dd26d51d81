// add_avx512.c: c[i] = a[i] + b[i] with AVX-512: 16 floats per vector,
// unaligned loads, and one masked load/store for the last n % 16 elements.
// The vector loop is split over threads with OpenMP when compiled with -fopenmp.
#include <immintrin.h>

void add_avx512(const float* a, const float* b, float* c, int n)
{
    int nvec = n / 16;

#pragma omp parallel for
    for (int v = 0; v < nvec; v++) {
        int i = v * 16;
        __m512 va = _mm512_loadu_ps(a + i);
        __m512 vb = _mm512_loadu_ps(b + i);
        _mm512_storeu_ps(c + i, _mm512_add_ps(va, vb));
    }

    int rest = n - nvec * 16;
    if (rest > 0) {
        // lanes 0 .. rest-1 active; masked-off lanes are neither read nor written
        __mmask16 m = (__mmask16)((1u << rest) - 1u);
        int i = nvec * 16;
        __m512 va = _mm512_maskz_loadu_ps(m, a + i);
        __m512 vb = _mm512_maskz_loadu_ps(m, b + i);
        _mm512_mask_storeu_ps(c + i, m, _mm512_add_ps(va, vb));
    }
}
