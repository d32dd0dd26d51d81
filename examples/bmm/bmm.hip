// bmm: C[b][M][N] = A[b][M][K] . B[b][K][N], float32, row-major (HIP).
// 16x16 LDS tiles as in gemm.hip; blockIdx.z selects the batch.
#include <hip/hip_runtime.h>

#define TILE 16

extern "C" __global__ void bmm(const float* A, const float* B, float* C, int batch, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int b = blockIdx.z;
    if (b >= batch)
        return;  // whole work-group leaves together
    const float* Ab = A + (size_t)b * M * K;
    const float* Bb = B + (size_t)b * K * N;
    float* Cb = C + (size_t)b * M * N;

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? Ab[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? Bb[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        Cb[row * N + col] = acc;
}

extern "C" void bmm_host(const float* A, const float* B, float* C, int batch, int M, int N, int K) {
    const size_t bytesA = (size_t)batch * M * K * sizeof(float);
    const size_t bytesB = (size_t)batch * K * N * sizeof(float);
    const size_t bytesC = (size_t)batch * M * N * sizeof(float);
    float *dA, *dB, *dC;
    hipMalloc((void**)&dA, bytesA);
    hipMalloc((void**)&dB, bytesB);
    hipMalloc((void**)&dC, bytesC);
    hipMemcpy(dA, A, bytesA, hipMemcpyHostToDevice);
    hipMemcpy(dB, B, bytesB, hipMemcpyHostToDevice);

    dim3 block(TILE, TILE, 1);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, batch);
    bmm<<<grid, block>>>(dA, dB, dC, batch, M, N, K);

    hipMemcpy(C, dC, bytesC, hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dB);
    hipFree(dC);
}
