// batchnorm_nhwc_fold.cpp: inference batch norm, channels last [NHW][C]: per-channel scale and
// shift folded into two std::vector<float>, then one fused multiply-add per element.
#include <cmath>
#include <vector>

extern "C" void batchnorm_nhwc(const float* x, const float* gamma, const float* beta, const float* mean,
                               const float* var, float* y, int NHW, int C, float eps)
{
    std::vector<float> scale(C), shift(C);
    for (int c = 0; c < C; ++c) {
        scale[c] = gamma[c] / std::sqrt(var[c] + eps);
        shift[c] = beta[c] - mean[c] * scale[c];
    }
#pragma omp parallel for
    for (int p = 0; p < NHW; ++p) {
        const float* xi = x + static_cast<long>(p) * C;
        float* yi = y + static_cast<long>(p) * C;
        for (int c = 0; c < C; ++c) yi[c] = std::fma(xi[c], scale[c], shift[c]);
    }
}
