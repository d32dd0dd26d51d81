// gemm: C[M][N] = A[M][K] . B[K][N], float32, row-major (HIP).
// LDS tiling: a 16x16 work-group owns a 16x16 tile of C and walks K in 16-wide slices.
// Each slice of A and B is staged once in LDS (__shared__) and then read 16 times from
// there; elements beyond the matrix edges are staged as zero so the inner loop needs no
// bounds checks.
#include <hip/hip_runtime.h>

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
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}

extern "C" void gemm_host(const float* A, const float* B, float* C, int M, int N, int K) {
    const size_t bytesA = (size_t)M * K * sizeof(float);
    const size_t bytesB = (size_t)K * N * sizeof(float);
    const size_t bytesC = (size_t)M * N * sizeof(float);
    float *dA, *dB, *dC;
    hipMalloc((void**)&dA, bytesA);
    hipMalloc((void**)&dB, bytesB);
    hipMalloc((void**)&dC, bytesC);
    hipMemcpy(dA, A, bytesA, hipMemcpyHostToDevice);
    hipMemcpy(dB, B, bytesB, hipMemcpyHostToDevice);

    dim3 block(TILE, TILE, 1);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, 1);
    hipLaunchKernelGGL(gemm, grid, block, 0, 0, dA, dB, dC, M, N, K);

    hipMemcpy(C, dC, bytesC, hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dB);
    hipFree(dC);
}
