// gemm_int8_dp4a.cu: int8 x int8 -> int32 matmul with __dp4a (sm_61+). Both operands arrive
// packed four bytes to an int along K: A4 is A[M][K] as int[M][K/4], B4t is B transposed,
// B^T[N][K] as int[N][K/4], so one __dp4a adds four products per step. 2-D launch.
#include <cuda_runtime.h>

__global__ void gemm_s8_dp4a(const int* __restrict__ A4, const int* __restrict__ B4t,
                             int* __restrict__ C, int M, int N, int K4)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    const int* a = A4 + row * K4;
    const int* b = B4t + col * K4;
    int acc = 0;
    for (int k = 0; k < K4; ++k)
        acc = __dp4a(a[k], b[k], acc);
    C[row * N + col] = acc;
}

void gemm_s8_dp4a_host(const int* A4, const int* B4t, int* C, int M, int N, int K4)
{
    int *dA, *dB, *dC;
    cudaMalloc(&dA, M * K4 * sizeof(int));
    cudaMalloc(&dB, N * K4 * sizeof(int));
    cudaMalloc(&dC, M * N * sizeof(int));
    cudaMemcpy(dA, A4, M * K4 * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B4t, N * K4 * sizeof(int), cudaMemcpyHostToDevice);
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    gemm_s8_dp4a<<<grid, block>>>(dA, dB, dC, M, N, K4);
    cudaMemcpy(C, dC, M * N * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}
