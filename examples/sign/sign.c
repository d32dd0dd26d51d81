// sign.c: y[i] = +1, -1 or 0 by the sign of x[i] (sign(0) = 0), float32, scalar reference-style loop.

void sign(const float* x, float* y, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = (float)(v > 0.0f) - (float)(v < 0.0f);
    }
}
