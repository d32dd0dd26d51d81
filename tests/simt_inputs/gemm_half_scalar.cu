#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" __global__ void gemm_wmma(const half* A, const half* B, float* C, int M, int N, int K) {
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) {
                acc += __half2float(A[i * K + k]) * __half2float(B[k * N + j]);
            }
            C[i * N + j] = acc;
        }
    }
}
