// gelu.c: y[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2))),
// the exact gelu (not the tanh approximation), float32, scalar reference-style loop.
#include <math.h>

void gelu(const float* x, float* y, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}
