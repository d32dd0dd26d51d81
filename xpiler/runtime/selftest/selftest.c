/* Substrate self-test (xpiler doctor): per-block sums and an elementwise write, with OpenMP. */
void selftest(const float* x, float* y, int n, int bs)
{
    int nb = (n + bs - 1) / bs;
#pragma omp parallel for
    for (int b = 0; b < nb; ++b) {
        float s = 0.0f;
        for (int i = b * bs; i < n && i < (b + 1) * bs; ++i) s += x[i];
        for (int i = b * bs; i < n && i < (b + 1) * bs; ++i) y[i] = x[i] * 2.0f + s;
    }
}
