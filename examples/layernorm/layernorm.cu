// Layer normalisation, CUDA: one block per row, warp-shuffle reductions.
// Each reduction is done in two levels: a __shfl_down_sync tree inside every warp, then
// warp 0 reduces the per-warp partials kept in shared memory. blockDim.x must be a multiple
// of 32 and at most 32 warps. Two passes: mean, then the centred sum of squares.
#include <cuda_runtime.h>

#define WARP 32
#define FULL_MASK 0xffffffffu

// Sum of v over the block; every thread receives the result. `partial` holds 32 floats.
__device__ float block_sum(float v, float *partial)
{
    int lane = threadIdx.x % WARP;
    int warp = threadIdx.x / WARP;
    int nwarps = blockDim.x / WARP;
    for (int off = WARP / 2; off > 0; off /= 2)
        v += __shfl_down_sync(FULL_MASK, v, off);
    if (lane == 0)
        partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < nwarps ? partial[lane] : 0.0f;
        for (int off = WARP / 2; off > 0; off /= 2)
            t += __shfl_down_sync(FULL_MASK, t, off);
        if (lane == 0)
            partial[0] = t;
    }
    __syncthreads();
    float total = partial[0];
    __syncthreads();                     // partial[] may be reused by the next call
    return total;
}

__global__ void layernorm(const float *x, const float *gamma, const float *beta, float *y,
                          int rows, int cols, float eps)
{
    __shared__ float partial[WARP];
    int row = blockIdx.x;
    if (row >= rows)
        return;
    const float *xr = x + (long)row * cols;
    float *yr = y + (long)row * cols;

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += xr[c];
    float mean = block_sum(s, partial) / (float)cols;

    float sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = xr[c] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, partial) / (float)cols + eps);

    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}

void layernorm_host(const float *x, const float *gamma, const float *beta, float *y,
                    int rows, int cols, float eps)
{
    size_t bytes = sizeof(float) * (size_t)rows * cols;
    size_t vbytes = sizeof(float) * (size_t)cols;
    float *dx, *dg, *db, *dy;
    cudaMalloc((void **)&dx, bytes);
    cudaMalloc((void **)&dg, vbytes);
    cudaMalloc((void **)&db, vbytes);
    cudaMalloc((void **)&dy, bytes);
    cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dg, gamma, vbytes, cudaMemcpyHostToDevice);
    cudaMemcpy(db, beta, vbytes, cudaMemcpyHostToDevice);
    layernorm<<<rows, 128>>>(dx, dg, db, dy, rows, cols, eps);
    cudaDeviceSynchronize();
    cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dg);
    cudaFree(db);
    cudaFree(dy);
}
