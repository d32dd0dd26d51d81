/* bmm: C[b][M][N] = A[b][M][K] . B[b][K][N], float32, row-major, batches independent.
 * Every (batch, row) pair is one independent task; inside it the i-k-j order keeps
 * the innermost loop unit-stride over B and C. */
void bmm(const float* A, const float* B, float* C, int batch, int M, int N, int K) {
#pragma omp parallel for
    for (int t = 0; t < batch * M; ++t) {
        const int b = t / M;
        const int i = t % M;
        const float* a = A + ((long)b * M + i) * K;
        const float* bb = B + (long)b * K * N;
        float* c = C + ((long)b * M + i) * N;
        for (int j = 0; j < N; ++j)
            c[j] = 0.0f;
        for (int k = 0; k < K; ++k) {
            const float av = a[k];
            const float* brow = bb + (long)k * N;
            for (int j = 0; j < N; ++j)
                c[j] += av * brow[j];
        }
    }
}
