// gelu_half_erf.cu: exact (erf) GELU on __half storage. Each thread converts to float with
// __half2float, computes, and stores with __float2half; the kernel returns early past n.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define kAlpha 0.70710678118654752f   // 1 / sqrt(2)

__global__ void gelu_erf_half(const __half* x, __half* y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = __half2float(x[i]);
    float r = v * 0.5f * (1.0f + erff(v * kAlpha));
    y[i] = __float2half(r);
}

void gelu_erf_half_host(const __half* x, __half* y, int n)
{
    __half *dx, *dy;
    cudaMalloc((void**)&dx, n * sizeof(__half));
    cudaMalloc((void**)&dy, n * sizeof(__half));
    cudaMemcpy(dx, x, n * sizeof(__half), cudaMemcpyHostToDevice);
    dim3 block(512);
    dim3 grid((n + block.x - 1) / block.x);
    gelu_erf_half<<<grid, block>>>(dx, dy, n);
    cudaDeviceSynchronize();
    cudaMemcpy(y, dy, n * sizeof(__half), cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
}
