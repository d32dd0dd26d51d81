// Row-wise softmax, CUDA: one warp per row, reductions with __shfl_xor_sync.
// A 128-thread block holds 4 warps = 4 rows. Each lane walks the row with a stride of 32;
// the butterfly (xor) shuffle leaves the reduced value in every lane, so no shared memory
// and no __syncthreads are needed.
#include <cuda_runtime.h>

#define WARP 32
#define FULL_MASK 0xffffffffu

__global__ void softmax(const float *x, float *y, int rows, int cols)
{
    int lane = threadIdx.x % WARP;
    int row = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= rows)
        return;                          // the whole warp leaves together
    const float *xr = x + (long)row * cols;
    float *yr = y + (long)row * cols;

    float m = -3.0e38f;
    for (int c = lane; c < cols; c += WARP)
        m = fmaxf(m, xr[c]);
    for (int off = WARP / 2; off > 0; off /= 2)
        m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, off));

    float s = 0.0f;
    for (int c = lane; c < cols; c += WARP)
        s += expf(xr[c] - m);
    for (int off = WARP / 2; off > 0; off /= 2)
        s += __shfl_xor_sync(FULL_MASK, s, off);

    float inv = 1.0f / s;
    for (int c = lane; c < cols; c += WARP)
        yr[c] = expf(xr[c] - m) * inv;   // recompute exp rather than re-reading y
}

void softmax_host(const float *x, float *y, int rows, int cols)
{
    size_t bytes = sizeof(float) * (size_t)rows * cols;
    float *dx, *dy;
    cudaMalloc((void **)&dx, bytes);
    cudaMalloc((void **)&dy, bytes);
    cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    int rows_per_block = 128 / WARP;
    softmax<<<(rows + rows_per_block - 1) / rows_per_block, 128>>>(dx, dy, rows, cols);
    cudaDeviceSynchronize();
    cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
}
