/* absmax_scale.c: scale a buffer so that its largest magnitude becomes 1; the maximum is
   found with an if-update, as hand-written C often does it. */
#include <math.h>

void absmax_scale(const float *x, float *y, int n)
{
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a > m)
            m = a;
    }
    float inv = m > 0.0f ? 1.0f / m : 0.0f;
    for (int i = 0; i < n; i++)
        y[i] = x[i] * inv;
}
