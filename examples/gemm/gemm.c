/* gemm: C[M][N] = A[M][K] . B[K][N], float32, row-major.
 * i-k-j loop order: the innermost loop walks one row of B and one row of C with unit
 * stride, so it vectorizes and each A element is loaded once. Rows of C are
 * independent, which makes the outer loop the natural place for OpenMP. */
void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
#pragma omp parallel for
    for (int i = 0; i < M; ++i) {
        float* c = C + (long)i * N;
        for (int j = 0; j < N; ++j)
            c[j] = 0.0f;
        for (int k = 0; k < K; ++k) {
            const float a = A[(long)i * K + k];
            const float* b = B + (long)k * N;
            for (int j = 0; j < N; ++j)
                c[j] += a * b[j];
        }
    }
}
