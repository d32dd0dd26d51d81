// RMS normalisation, CUDA: one warp per row (4 rows per 128-thread block).
// The sum of squares is reduced with a butterfly of __shfl_xor_sync, which leaves the total
// in all 32 lanes, so every lane can scale its own columns right away.
#include <cuda_runtime.h>

#define WARP 32
#define FULL_MASK 0xffffffffu

__global__ void rmsnorm(const float *x, const float *gamma, float *y, int rows, int cols, float eps)
{
    int lane = threadIdx.x % WARP;
    int row = blockIdx.x * (blockDim.x / WARP) + threadIdx.x / WARP;
    if (row >= rows)
        return;
    const float *xr = x + (long)row * cols;
    float *yr = y + (long)row * cols;

    float sq = 0.0f;
    for (int c = lane; c < cols; c += WARP)
        sq += xr[c] * xr[c];
    for (int off = WARP / 2; off > 0; off /= 2)
        sq += __shfl_xor_sync(FULL_MASK, sq, off);
    float rrms = rsqrtf(sq / (float)cols + eps);

    for (int c = lane; c < cols; c += WARP)
        yr[c] = xr[c] * rrms * gamma[c];
}

void rmsnorm_host(const float *x, const float *gamma, float *y, int rows, int cols, float eps)
{
    size_t bytes = sizeof(float) * (size_t)rows * cols;
    size_t vbytes = sizeof(float) * (size_t)cols;
    float *dx, *dg, *dy;
    cudaMalloc((void **)&dx, bytes);
    cudaMalloc((void **)&dg, vbytes);
    cudaMalloc((void **)&dy, bytes);
    cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dg, gamma, vbytes, cudaMemcpyHostToDevice);
    dim3 block(128, 1, 1);
    dim3 grid((rows + 3) / 4, 1, 1);
    rmsnorm<<<grid, block>>>(dx, dg, dy, rows, cols, eps);
    cudaDeviceSynchronize();
    cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dg);
    cudaFree(dy);
}
