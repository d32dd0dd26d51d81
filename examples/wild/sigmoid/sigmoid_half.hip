// sigmoid_half.hip: fp16 sigmoid in HIP (hip_fp16.h). Loads __half, computes in float,
// stores with __float2half. A 2-D launch (grid.y rows of a [rows][cols] tensor).
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

__device__ inline float sigm(float v) { return 1.0f / (1.0f + expf(-v)); }

__global__ void sigmoid_rows_f16(const __half* x, __half* y, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c >= cols || r >= rows) return;
    int off = r * cols + c;
    y[off] = __float2half(sigm(__half2float(x[off])));
}

void sigmoid_rows_f16_host(const __half* x, __half* y, int rows, int cols)
{
    __half *dx, *dy;
    size_t bytes = sizeof(__half) * rows * cols;
    hipMalloc((void**)&dx, bytes);
    hipMalloc((void**)&dy, bytes);
    hipMemcpy(dx, x, bytes, hipMemcpyHostToDevice);
    dim3 grid((cols + 63) / 64, rows);
    hipLaunchKernelGGL(sigmoid_rows_f16, grid, dim3(64), 0, 0, dx, dy, rows, cols);
    hipMemcpy(y, dy, bytes, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dy);
}
