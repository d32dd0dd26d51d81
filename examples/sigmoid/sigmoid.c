// sigmoid.c: y[i] = 1 / (1 + exp(-x[i])), float32, scalar reference-style loop.
#include <math.h>

void sigmoid(const float* x, float* y, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 1.0f / (1.0f + expf(-v));
    }
}
