// softmax_wave64.hip: row softmax on AMD with one 64-wide wavefront per row; reductions with
// the mask-less __shfl_down over 64 lanes, the result taken from lane 0 with __shfl. Four rows
// per 256-thread work-group, __launch_bounds__(256).
#include <hip/hip_runtime.h>

#define WAVE 64

__device__ inline float wave_max(float v)
{
    for (int o = WAVE / 2; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_down(v, o, WAVE));
    return __shfl(v, 0, WAVE);
}

__device__ inline float wave_sum(float v)
{
    for (int o = WAVE / 2; o > 0; o >>= 1)
        v += __shfl_down(v, o, WAVE);
    return __shfl(v, 0, WAVE);
}

__global__ __launch_bounds__(256) void softmax_w64(const float* x, float* y, int rows, int cols)
{
    int lane = hipThreadIdx_x % WAVE;
    int row = hipBlockIdx_x * (hipBlockDim_x / WAVE) + hipThreadIdx_x / WAVE;
    if (row >= rows) return;
    const float* xr = x + (long)row * cols;
    float* yr = y + (long)row * cols;
    float m = -3.402823466e38f;
    for (int c = lane; c < cols; c += WAVE) m = fmaxf(m, xr[c]);
    m = wave_max(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += WAVE) s += expf(xr[c] - m);
    s = wave_sum(s);
    for (int c = lane; c < cols; c += WAVE) yr[c] = expf(xr[c] - m) / s;
}

void softmax_w64_host(const float* x, float* y, int rows, int cols)
{
    float *dx, *dy;
    hipMalloc(&dx, sizeof(float) * rows * cols);
    hipMalloc(&dy, sizeof(float) * rows * cols);
    hipMemcpy(dx, x, sizeof(float) * rows * cols, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(softmax_w64, dim3((rows + 3) / 4), dim3(256), 0, 0, dx, dy, rows, cols);
    hipMemcpy(y, dy, sizeof(float) * rows * cols, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dy);
}
