/* Layer normalisation over the last axis, plain C.
 * y[r][c] = (x[r][c] - mean_r) / sqrt(var_r + eps) * gamma[c] + beta[c], biased variance.
 * Two passes per row (mean, then centred sum of squares) for numerical robustness. */
#include <math.h>

void layernorm(const float *x, const float *gamma, const float *beta, float *y,
               int rows, int cols, float eps)
{
    for (int r = 0; r < rows; ++r) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;

        float sum = 0.0f;
        for (int c = 0; c < cols; ++c)
            sum += xr[c];
        float mean = sum / (float)cols;

        float sq = 0.0f;
        for (int c = 0; c < cols; ++c) {
            float d = xr[c] - mean;
            sq += d * d;
        }
        float rstd = 1.0f / sqrtf(sq / (float)cols + eps);

        for (int c = 0; c < cols; ++c)
            yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
    }
}
