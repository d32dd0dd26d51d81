// gemm: C[M][N] = A[M][K] . B[K][N], float32, row-major.
// Classic shared-memory tiling: a 16x16 thread block owns a 16x16 tile of C. For every
// 16-wide slice of K it stages the matching A tile (16 rows x 16 k) and B tile (16 k x 16 cols)
// in shared memory, so each global element is read once per block instead of once per thread.
// Out-of-range elements are staged as 0, which lets ragged M/N/K edges reuse the same inner loop.
#include <cuda_runtime.h>

#define TILE 16

extern "C" __global__ void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int ka = k0 + tx;  // column of A this thread stages
        const int kb = k0 + ty;  // row of B this thread stages
        As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();

        for (int kk = 0; kk < TILE; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();  // the tiles are overwritten in the next iteration
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}

extern "C" void gemm_host(const float* A, const float* B, float* C, int M, int N, int K) {
    const size_t bytesA = (size_t)M * K * sizeof(float);
    const size_t bytesB = (size_t)K * N * sizeof(float);
    const size_t bytesC = (size_t)M * N * sizeof(float);
    float *dA, *dB, *dC;
    cudaMalloc((void**)&dA, bytesA);
    cudaMalloc((void**)&dB, bytesB);
    cudaMalloc((void**)&dC, bytesC);
    cudaMemcpy(dA, A, bytesA, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, bytesB, cudaMemcpyHostToDevice);

    dim3 block(TILE, TILE, 1);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, 1);
    gemm<<<grid, block>>>(dA, dB, dC, M, N, K);

    cudaMemcpy(C, dC, bytesC, cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}
