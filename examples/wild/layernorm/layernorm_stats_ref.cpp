// layernorm_stats_ref.cpp: LayerNorm over the last axis (eps = 1e-5) in llm.c-like CPU style:
// a helper computes mean and reciprocal standard deviation and returns them through references;
// double accumulators; gamma/beta applied in the same pass.
#include <cmath>

static void row_stats(const float* x, int n, float& mean, float& rstd)
{
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += x[i];
    const double m = s / n;
    double v = 0.0;
    for (int i = 0; i < n; ++i) {
        const double d = x[i] - m;
        v += d * d;
    }
    mean = static_cast<float>(m);
    rstd = static_cast<float>(1.0 / std::sqrt(v / n + 1e-5));
}

extern "C" void layernorm_forward(const float* inp, const float* weight, const float* bias, float* out,
                                  int rows, int cols)
{
    for (int r = 0; r < rows; ++r) {
        const float* x = inp + static_cast<long>(r) * cols;
        float* o = out + static_cast<long>(r) * cols;
        float mean = 0.0f, rstd = 0.0f;
        row_stats(x, cols, mean, rstd);
        for (int i = 0; i < cols; ++i) o[i] = (x[i] - mean) * rstd * weight[i] + bias[i];
    }
}
