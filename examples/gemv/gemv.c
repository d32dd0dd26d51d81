/* gemv: y[M] = A[M][K] . x[K], float32, row-major: one dot product per row. */
void gemv(const float* A, const float* x, float* y, int M, int K) {
#pragma omp parallel for
    for (int i = 0; i < M; ++i) {
        const float* a = A + (long)i * K;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += a[k] * x[k];
        y[i] = acc;
    }
}
