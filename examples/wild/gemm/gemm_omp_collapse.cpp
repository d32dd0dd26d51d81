// gemm_omp_collapse.cpp: C = A * B, float32, row-major, C++ operator-library style: size_t loop
// counters, static_cast, a const __restrict view of the inputs, and the two outer loops
// collapsed into one OpenMP parallel loop.
#include <cstddef>

extern "C" void gemm_omp(const float* __restrict A, const float* __restrict B, float* __restrict C,
                         int M, int N, int K)
{
    const auto m = static_cast<std::size_t>(M);
    const auto n = static_cast<std::size_t>(N);
    const auto k = static_cast<std::size_t>(K);
#pragma omp parallel for collapse(2) schedule(static)
    for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (std::size_t p = 0; p < k; ++p) {
                acc += A[i * k + p] * B[p * n + j];
            }
            C[i * n + j] = acc;
        }
    }
}
