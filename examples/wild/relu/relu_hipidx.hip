// relu_hipidx.hip: old-style HIP names (hipThreadIdx_x, hipBlockIdx_x, hipBlockDim_x,
// hipGridDim_x) in a grid-stride loop, launched with hipLaunchKernelGGL.
#include <hip/hip_runtime.h>

#define THREADS 256

__global__ void relu_gs(const float* __restrict__ src, float* __restrict__ dst, const int count)
{
    const int stride = hipBlockDim_x * hipGridDim_x;
    for (int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x; i < count; i += stride)
        dst[i] = fmaxf(src[i], 0.0f);
}

void relu_gs_host(const float* src, float* dst, int count)
{
    float *d_src = nullptr, *d_dst = nullptr;
    hipMalloc(&d_src, count * sizeof(float));
    hipMalloc(&d_dst, count * sizeof(float));
    hipMemcpy(d_src, src, count * sizeof(float), hipMemcpyHostToDevice);
    int blocks = (count + THREADS - 1) / THREADS;
    if (blocks > 64) blocks = 64;
    hipLaunchKernelGGL(relu_gs, dim3(blocks), dim3(THREADS), 0, 0, d_src, d_dst, count);
    hipDeviceSynchronize();
    hipMemcpy(dst, d_dst, count * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(d_src);
    hipFree(d_dst);
}
