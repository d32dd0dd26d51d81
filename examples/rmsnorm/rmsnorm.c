/* RMS normalisation over the last axis, plain C.
 * y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * gamma[c]. */
#include <math.h>

void rmsnorm(const float *x, const float *gamma, float *y, int rows, int cols, float eps)
{
    for (int r = 0; r < rows; ++r) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;

        float sq = 0.0f;
        for (int c = 0; c < cols; ++c)
            sq += xr[c] * xr[c];
        float rrms = 1.0f / sqrtf(sq / (float)cols + eps);

        for (int c = 0; c < cols; ++c)
            yr[c] = xr[c] * rrms * gamma[c];
    }
}
