// bmm_strided_lds.hip: strided-batched matmul (like rocBLAS's strided batched API: each
// operand has a batch stride passed as a long), 16x16 LDS tiles, batch in blockIdx.z.
#include <hip/hip_runtime.h>

#define TS 16

__global__ __launch_bounds__(TS * TS)
void bmm_strided(const float* A, long strideA, const float* B, long strideB, float* C, long strideC,
                 int M, int N, int K)
{
    __shared__ float la[TS][TS + 1];
    __shared__ float lb[TS][TS + 1];
    A += blockIdx.z * strideA;
    B += blockIdx.z * strideB;
    C += blockIdx.z * strideC;
    int r = blockIdx.y * TS + threadIdx.y;
    int c = blockIdx.x * TS + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        la[threadIdx.y][threadIdx.x] = (r < M && ka < K) ? A[r * K + ka] : 0.0f;
        lb[threadIdx.y][threadIdx.x] = (kb < K && c < N) ? B[kb * N + c] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TS; ++k)
            acc += la[threadIdx.y][k] * lb[k][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N)
        C[r * N + c] = acc;
}

void bmm_strided_host(const float* A, const float* B, float* C, int batch, int M, int N, int K)
{
    long sA = (long)M * K, sB = (long)K * N, sC = (long)M * N;
    float *dA, *dB, *dC;
    hipMalloc(&dA, sizeof(float) * batch * sA);
    hipMalloc(&dB, sizeof(float) * batch * sB);
    hipMalloc(&dC, sizeof(float) * batch * sC);
    hipMemcpy(dA, A, sizeof(float) * batch * sA, hipMemcpyHostToDevice);
    hipMemcpy(dB, B, sizeof(float) * batch * sB, hipMemcpyHostToDevice);
    dim3 grid((N + TS - 1) / TS, (M + TS - 1) / TS, batch);
    hipLaunchKernelGGL(bmm_strided, grid, dim3(TS, TS), 0, 0, dA, sA, dB, sB, dC, sC, M, N, K);
    hipMemcpy(C, dC, sizeof(float) * batch * sC, hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dB);
    hipFree(dC);
}
