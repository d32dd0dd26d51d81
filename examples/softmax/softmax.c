/* Row-wise softmax, plain C reference kernel.
 * x, y: [rows][cols] float32, row-major. Each row is shifted by its maximum before
 * exponentiating so that large inputs cannot overflow expf. */
#include <math.h>

void softmax(const float *x, float *y, int rows, int cols)
{
    for (int r = 0; r < rows; ++r) {
        const float *xr = x + (long)r * cols;
        float *yr = y + (long)r * cols;

        /* pass 1: row maximum */
        float m = xr[0];
        for (int c = 1; c < cols; ++c)
            m = fmaxf(m, xr[c]);

        /* pass 2: exponentials (kept in y) and their sum */
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c) {
            float e = expf(xr[c] - m);
            yr[c] = e;
            sum += e;
        }

        /* pass 3: normalise */
        float inv = 1.0f / sum;
        for (int c = 0; c < cols; ++c)
            yr[c] *= inv;
    }
}
