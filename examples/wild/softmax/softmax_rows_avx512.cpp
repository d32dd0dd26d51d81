// softmax_rows_avx512.cpp: row softmax with an AVX-512 max pass (_mm512_max_ps and
// _mm512_reduce_max_ps), a scalar std::exp pass that also sums, and an AVX-512 scaling pass.
// Rows in parallel with OpenMP.
#include <immintrin.h>
#include <cmath>
#include <algorithm>
#include <limits>

namespace {

float row_max(const float* r, int n)
{
    __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    int j = 0;
    for (; j + 16 <= n; j += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(r + j));
    float best = _mm512_reduce_max_ps(m);
    for (; j < n; ++j) best = std::max(best, r[j]);
    return best;
}

}  // namespace

extern "C" void softmax_rows_avx512(const float* x, float* y, int rows, int cols)
{
#pragma omp parallel for
    for (int r = 0; r < rows; ++r) {
        const float* in = x + static_cast<long>(r) * cols;
        float* out = y + static_cast<long>(r) * cols;
        const float mx = row_max(in, cols);
        float sum = 0.0f;
        for (int j = 0; j < cols; ++j) {
            out[j] = std::exp(in[j] - mx);
            sum += out[j];
        }
        const __m512 inv = _mm512_set1_ps(1.0f / sum);
        int j = 0;
        for (; j + 16 <= cols; j += 16) _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_loadu_ps(out + j), inv));
        for (; j < cols; ++j) out[j] *= 1.0f / sum;
    }
}
