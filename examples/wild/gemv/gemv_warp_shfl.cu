// gemv_warp_shfl.cu: y = A x, one warp per row; lanes stride the row, then a
// __shfl_down_sync tree leaves the sum in lane 0, which writes it. 8 warps per block.
#include <cuda_runtime.h>

#define WARP_SIZE 32
#define WARPS_PER_BLOCK 8

__device__ __forceinline__ float warp_reduce_sum(float v)
{
#pragma unroll
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__global__ void gemv_warp(const float* __restrict__ A, const float* __restrict__ x,
                          float* __restrict__ y, int rows, int cols)
{
    int warp = threadIdx.x / WARP_SIZE;
    int lane = threadIdx.x % WARP_SIZE;
    int row = blockIdx.x * WARPS_PER_BLOCK + warp;
    if (row >= rows) return;
    float sum = 0.0f;
    for (int c = lane; c < cols; c += WARP_SIZE)
        sum += A[(size_t)row * cols + c] * x[c];
    sum = warp_reduce_sum(sum);
    if (lane == 0)
        y[row] = sum;
}

void gemv_warp_host(const float* A, const float* x, float* y, int rows, int cols)
{
    float *dA, *dx, *dy;
    cudaMalloc(&dA, sizeof(float) * rows * cols);
    cudaMalloc(&dx, sizeof(float) * cols);
    cudaMalloc(&dy, sizeof(float) * rows);
    cudaMemcpy(dA, A, sizeof(float) * rows * cols, cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x, sizeof(float) * cols, cudaMemcpyHostToDevice);
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    gemv_warp<<<blocks, WARPS_PER_BLOCK * WARP_SIZE>>>(dA, dx, dy, rows, cols);
    cudaMemcpy(y, dy, sizeof(float) * rows, cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dx);
    cudaFree(dy);
}
