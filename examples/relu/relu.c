// relu.c: y[i] = max(x[i], 0), float32, scalar reference-style loop.

void relu(const float* x, float* y, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
