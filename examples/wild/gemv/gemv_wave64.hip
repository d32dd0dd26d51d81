// gemv_wave64.hip: y = A x on AMD, one 64-lane wavefront per row, reduction with the
// mask-less __shfl_down; lane 0 of each wave writes. Four waves per 256-thread work-group.
#include <hip/hip_runtime.h>

#define WAVE_SIZE 64

__global__ void gemv_wave(const float* __restrict__ A, const float* __restrict__ x,
                          float* __restrict__ y, int rows, int cols)
{
    const int lane = hipThreadIdx_x & (WAVE_SIZE - 1);
    const int row = hipBlockIdx_x * (hipBlockDim_x / WAVE_SIZE) + hipThreadIdx_x / WAVE_SIZE;
    if (row >= rows) return;
    const float* a = A + (size_t)row * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += WAVE_SIZE)
        s += a[c] * x[c];
    for (int off = WAVE_SIZE / 2; off > 0; off >>= 1)
        s += __shfl_down(s, off);
    if (lane == 0) y[row] = s;
}

void gemv_wave_host(const float* A, const float* x, float* y, int rows, int cols)
{
    float *dA, *dx, *dy;
    hipMalloc(&dA, sizeof(float) * rows * cols);
    hipMalloc(&dx, sizeof(float) * cols);
    hipMalloc(&dy, sizeof(float) * rows);
    hipMemcpy(dA, A, sizeof(float) * rows * cols, hipMemcpyHostToDevice);
    hipMemcpy(dx, x, sizeof(float) * cols, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(gemv_wave, dim3((rows + 3) / 4), dim3(256), 0, 0, dA, dx, dy, rows, cols);
    hipMemcpy(y, dy, sizeof(float) * rows, hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dx);
    hipFree(dy);
}
