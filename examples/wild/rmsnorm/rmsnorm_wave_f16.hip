// rmsnorm_wave_f16.hip: RMSNorm on fp16 activations with one 64-lane wavefront per row
// (LLaMA-style inference): float accumulation, mask-less __shfl_xor butterfly so all lanes
// hold the sum, __half weights, result converted back with __float2half.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

#define WAVE 64
#define RMS_EPS 1e-6f

__global__ void rmsnorm_w64_f16(const __half* __restrict__ x, const __half* __restrict__ w,
                                __half* __restrict__ y, int rows, int dim)
{
    const int lane = hipThreadIdx_x % WAVE;
    const int row = hipBlockIdx_x * (hipBlockDim_x / WAVE) + hipThreadIdx_x / WAVE;
    if (row >= rows) return;
    const __half* xr = x + (size_t)row * dim;
    float ss = 0.0f;
    for (int i = lane; i < dim; i += WAVE) {
        float v = __half2float(xr[i]);
        ss += v * v;
    }
    for (int m = WAVE / 2; m > 0; m >>= 1)
        ss += __shfl_xor(ss, m);
    float r = rsqrtf(ss / dim + RMS_EPS);
    __half* yr = y + (size_t)row * dim;
    for (int i = lane; i < dim; i += WAVE)
        yr[i] = __float2half(__half2float(xr[i]) * r * __half2float(w[i]));
}

void rmsnorm_w64_f16_host(const __half* x, const __half* w, __half* y, int rows, int dim)
{
    __half *dx, *dw, *dy;
    hipMalloc(&dx, sizeof(__half) * rows * dim);
    hipMalloc(&dw, sizeof(__half) * dim);
    hipMalloc(&dy, sizeof(__half) * rows * dim);
    hipMemcpy(dx, x, sizeof(__half) * rows * dim, hipMemcpyHostToDevice);
    hipMemcpy(dw, w, sizeof(__half) * dim, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(rmsnorm_w64_f16, dim3((rows + 1) / 2), dim3(2 * WAVE), 0, 0, dx, dw, dy, rows, dim);
    hipMemcpy(y, dy, sizeof(__half) * rows * dim, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dw);
    hipFree(dy);
}
