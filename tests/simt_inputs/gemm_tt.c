/* gemm_tt: C[M][N] = A . B with both operands given transposed, float32:
 * A stored [K][M] (A[k*M + i], stride 1 along i) and B stored [N][K] (B[j*K + k], stride 1
 * along k). Test input of the cuda loaders' stride-1 mapping (tests/test_stride1_loaders.py). */
void gemm_tt(const float *A, const float *B, float *C, int M, int N, int K) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k)
                acc += A[(long)k * M + i] * B[(long)j * K + k];
            C[(long)i * N + j] = acc;
        }
}
