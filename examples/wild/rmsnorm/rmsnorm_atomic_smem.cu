// rmsnorm_atomic_smem.cu: RMSNorm (y = x / sqrt(mean(x^2) + eps) * w), one block per row;
// each thread's partial sum of squares is added into one __shared__ float with atomicAdd
// (the third way to reduce, next to trees and shuffles). eps is a kernel parameter.
#include <cuda_runtime.h>

__global__ void rmsnorm_atomic(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                               int hidden, float eps)
{
    __shared__ float ss;
    __shared__ float scale;
    const float* xr = x + (size_t)blockIdx.x * hidden;
    float* yr = y + (size_t)blockIdx.x * hidden;
    if (threadIdx.x == 0) ss = 0.0f;
    __syncthreads();
    float part = 0.0f;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x)
        part += xr[i] * xr[i];
    atomicAdd(&ss, part);
    __syncthreads();
    if (threadIdx.x == 0)
        scale = rsqrtf(ss / hidden + eps);
    __syncthreads();
    for (int i = threadIdx.x; i < hidden; i += blockDim.x)
        yr[i] = xr[i] * scale * w[i];
}

void rmsnorm_atomic_host(const float* x, const float* w, float* y, int tokens, int hidden, float eps)
{
    float *dx, *dw, *dy;
    cudaMalloc(&dx, sizeof(float) * tokens * hidden);
    cudaMalloc(&dw, sizeof(float) * hidden);
    cudaMalloc(&dy, sizeof(float) * tokens * hidden);
    cudaMemcpy(dx, x, sizeof(float) * tokens * hidden, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, w, sizeof(float) * hidden, cudaMemcpyHostToDevice);
    rmsnorm_atomic<<<tokens, 256>>>(dx, dw, dy, hidden, eps);
    cudaMemcpy(y, dy, sizeof(float) * tokens * hidden, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
}
