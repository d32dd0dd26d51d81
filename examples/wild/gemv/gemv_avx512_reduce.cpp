// gemv_avx512_reduce.cpp: y = A x, A row-major [rows][cols]. Each row is a dot product of 16-wide
// FMA partial sums finished with _mm512_reduce_add_ps; the column tail is a masked load.
#include <immintrin.h>

extern "C" void gemv_avx512(const float* A, const float* x, float* y, int rows, int cols)
{
#pragma omp parallel for
    for (int r = 0; r < rows; ++r) {
        const float* a = A + static_cast<long>(r) * cols;
        __m512 acc = _mm512_setzero_ps();
        int c = 0;
        for (; c + 16 <= cols; c += 16) {
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + c), _mm512_loadu_ps(x + c), acc);
        }
        if (c < cols) {
            __mmask16 tail = _cvtu32_mask16((1u << (cols - c)) - 1u);
            acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, a + c), _mm512_maskz_loadu_ps(tail, x + c), acc);
        }
        y[r] = _mm512_reduce_add_ps(acc);
    }
}
