/* sigmoid_restrict.c: numerically careful sigmoid in C99: for x >= 0 use 1 / (1 + e^-x), for
 * x < 0 use e^x / (1 + e^x) so that exp never overflows. restrict pointers, expf. */
#include <math.h>

void sigmoid_stable(const float *restrict in, float *restrict out, int n)
{
    for (int i = 0; i < n; i++) {
        float v = in[i];
        if (v >= 0.0f) {
            out[i] = 1.0f / (1.0f + expf(-v));
        } else {
            float e = expf(v);
            out[i] = e / (1.0f + e);
        }
    }
}
