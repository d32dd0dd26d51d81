// rmsnorm_rows.cpp: RMSNorm over the last axis (LLaMA style), y = x / sqrt(mean(x^2) + eps) * w.
// C++ style: std::size_t strides, reinterpret_cast-free pointer arithmetic, a const-reference
// helper parameter, std::sqrt, a constexpr epsilon and auto.
#include <cmath>
#include <cstddef>

namespace {

constexpr float kRmsEps = 1e-6f;

inline float mean_square(const float* row, const int& n)
{
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) {
        acc += row[j] * row[j];
    }
    return acc / static_cast<float>(n);
}

}  // namespace

extern "C" void rmsnorm_forward(const float* x, const float* weight, float* y, int rows, int dim)
{
    for (int r = 0; r < rows; ++r) {
        const std::size_t base = static_cast<std::size_t>(r) * static_cast<std::size_t>(dim);
        const auto scale = 1.0f / std::sqrt(mean_square(x + base, dim) + kRmsEps);
        for (int j = 0; j < dim; ++j) {
            y[base + j] = x[base + j] * scale * weight[j];
        }
    }
}
