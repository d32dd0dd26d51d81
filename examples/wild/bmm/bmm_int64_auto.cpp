// bmm_int64_auto.cpp: batched C[b] = A[b] * B[b] with int64_t strides, auto, a lambda for the
// flattened index, and a helper that takes its output row by reference.
#include <cstdint>
#include <vector>

namespace {

void row_times_matrix(const float* a_row, const float* b, std::vector<float>& out, int64_t K, int64_t N)
{
    for (auto& v : out) v = 0.0f;
    for (int64_t p = 0; p < K; ++p) {
        const float av = a_row[p];
        for (int64_t j = 0; j < N; ++j) out[static_cast<std::size_t>(j)] += av * b[p * N + j];
    }
}

}  // namespace

extern "C" void bmm_auto(const float* A, const float* B, float* C, int batch, int M, int N, int K)
{
    const int64_t m = M, n = N, k = K;
    auto at = [](int64_t b, int64_t r, int64_t rows, int64_t cols) { return (b * rows + r) * cols; };
    std::vector<float> row(static_cast<std::size_t>(n));
    for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < m; ++i) {
            row_times_matrix(A + at(b, i, m, k), B + b * k * n, row, k, n);
            float* dst = C + at(b, i, m, n);
            for (int64_t j = 0; j < n; ++j) dst[j] = row[static_cast<std::size_t>(j)];
        }
    }
}
