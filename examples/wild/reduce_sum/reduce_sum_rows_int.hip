// reduce_sum_rows_int.hip: int32 row sums (exact), one work-group of 256 per row. Each wave64
// folds its lanes with __shfl_down, lane 0 adds the wave's sum into an LDS counter with
// atomicAdd, and work-item 0 stores it.
#include <hip/hip_runtime.h>

__global__ void rowsum_i32(const int* __restrict__ x, int* __restrict__ y, int cols)
{
    __shared__ int total;
    if (hipThreadIdx_x == 0) total = 0;
    __syncthreads();
    const int* xr = x + (size_t)hipBlockIdx_x * cols;
    int s = 0;
    for (int c = hipThreadIdx_x; c < cols; c += hipBlockDim_x)
        s += xr[c];
    for (int off = warpSize / 2; off > 0; off >>= 1)
        s += __shfl_down(s, off);
    if ((hipThreadIdx_x % warpSize) == 0)
        atomicAdd(&total, s);
    __syncthreads();
    if (hipThreadIdx_x == 0)
        y[hipBlockIdx_x] = total;
}

void rowsum_i32_host(const int* x, int* y, int rows, int cols)
{
    int *dx, *dy;
    hipMalloc(&dx, sizeof(int) * rows * cols);
    hipMalloc(&dy, sizeof(int) * rows);
    hipMemcpy(dx, x, sizeof(int) * rows * cols, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(rowsum_i32, dim3(rows), dim3(256), 0, 0, dx, dy, cols);
    hipMemcpy(y, dy, sizeof(int) * rows, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dy);
}
