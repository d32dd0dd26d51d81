// gemm_dynlds.hip: tile size chosen at launch; both LDS tiles live in one dynamic
// (extern __shared__) buffer whose size is the launch's shared-memory argument.
#include <hip/hip_runtime.h>

__global__ void gemm_dyn(const float* A, const float* B, float* C, int M, int N, int K, int tile)
{
    extern __shared__ float smem[];
    float* ta = smem;               // tile x tile
    float* tb = smem + tile * tile; // tile x tile
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * tile + ty;
    int c = blockIdx.x * tile + tx;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += tile) {
        ta[ty * tile + tx] = (r < M && k0 + tx < K) ? A[r * K + k0 + tx] : 0.0f;
        tb[ty * tile + tx] = (k0 + ty < K && c < N) ? B[(k0 + ty) * N + c] : 0.0f;
        __syncthreads();
        for (int k = 0; k < tile; ++k)
            s += ta[ty * tile + k] * tb[k * tile + tx];
        __syncthreads();
    }
    if (r < M && c < N)
        C[r * N + c] = s;
}

void gemm_dyn_host(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int tile = 16;
    float *dA, *dB, *dC;
    hipMalloc(&dA, sizeof(float) * M * K);
    hipMalloc(&dB, sizeof(float) * K * N);
    hipMalloc(&dC, sizeof(float) * M * N);
    hipMemcpy(dA, A, sizeof(float) * M * K, hipMemcpyHostToDevice);
    hipMemcpy(dB, B, sizeof(float) * K * N, hipMemcpyHostToDevice);
    size_t lds = 2 * tile * tile * sizeof(float);
    hipLaunchKernelGGL(gemm_dyn, dim3((N + tile - 1) / tile, (M + tile - 1) / tile), dim3(tile, tile), lds, 0,
                       dA, dB, dC, M, N, K, tile);
    hipMemcpy(C, dC, sizeof(float) * M * N, hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dB);
    hipFree(dC);
}
