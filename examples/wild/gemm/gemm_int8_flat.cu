// gemm_int8_flat.cu: int8 x int8 -> int32 matmul, one thread per output, the output
// position recovered from a flat index with / and %; 1-D launch.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void gemm_s8s32(const int8_t* __restrict__ A, const int8_t* __restrict__ B,
                           int32_t* __restrict__ C, int M, int N, int K)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= M * N) return;
    int m = idx / N;
    int n = idx % N;
    int32_t acc = 0;
    for (int k = 0; k < K; ++k)
        acc += (int32_t)A[m * K + k] * (int32_t)B[k * N + n];
    C[idx] = acc;
}

void gemm_s8s32_host(const int8_t* A, const int8_t* B, int32_t* C, int M, int N, int K)
{
    int8_t *dA, *dB;
    int32_t* dC;
    cudaMalloc(&dA, M * K);
    cudaMalloc(&dB, K * N);
    cudaMalloc(&dC, M * N * sizeof(int32_t));
    cudaMemcpy(dA, A, M * K, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, K * N, cudaMemcpyHostToDevice);
    gemm_s8s32<<<(M * N + 255) / 256, 256>>>(dA, dB, dC, M, N, K);
    cudaMemcpy(C, dC, M * N * sizeof(int32_t), cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}
