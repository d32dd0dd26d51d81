// silu_std_omp.cpp: SiLU (x * sigmoid(x)) with std::exp, an OpenMP `parallel for simd` loop over
// an int64_t range, and a constexpr helper.
#include <cmath>
#include <cstdint>

static constexpr float kOne = 1.0f;

static inline float silu_one(float v) { return v / (kOne + std::exp(-v)); }

extern "C" void silu_forward(const float* __restrict x, float* __restrict y, std::int64_t n)
{
#pragma omp parallel for simd
    for (std::int64_t i = 0; i < n; ++i) y[i] = silu_one(x[i]);
}
