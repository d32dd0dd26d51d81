// layernorm_rows.cpp: LayerNorm over the last axis, C++ style: the statistics come back
// through reference out-parameters, std::sqrt, static_cast for the count, constexpr epsilon.
#include <cmath>

static void row_moments(const float* row, int n, float& mean, float& var)
{
    float s = 0.0f;
    for (int j = 0; j < n; ++j) {
        s += row[j];
    }
    mean = s / static_cast<float>(n);
    float q = 0.0f;
    for (int j = 0; j < n; ++j) {
        const float d = row[j] - mean;
        q += d * d;
    }
    var = q / static_cast<float>(n);
}

extern "C" void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                                  int rows, int cols)
{
    constexpr float kEps = 1e-5f;
    for (int r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float mean = 0.0f, var = 0.0f;
        row_moments(xr, cols, mean, var);
        const float rstd = 1.0f / std::sqrt(var + kEps);
        for (int j = 0; j < cols; ++j) {
            yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
        }
    }
}
