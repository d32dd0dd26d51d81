// Row-wise softmax, CUDA: one thread block per row.
// x, y: [rows][cols] float32. The block strides over the row, reduces the maximum and the
// sum of exponentials with a classic shared-memory tree (blockDim.x must be a power of two,
// at most MAX_THREADS), then writes exp(x - max) / sum.
#include <cuda_runtime.h>

#define MAX_THREADS 256

__global__ void softmax(const float *x, float *y, int rows, int cols)
{
    __shared__ float red[MAX_THREADS];
    int row = blockIdx.x;
    if (row >= rows)
        return;                          // uniform for the whole block
    const float *xr = x + (long)row * cols;
    float *yr = y + (long)row * cols;
    int tid = threadIdx.x;

    // 1) per-thread maximum over a strided slice of the row, then a tree over the block
    float m = -3.0e38f;
    for (int c = tid; c < cols; c += blockDim.x)
        m = fmaxf(m, xr[c]);
    red[tid] = m;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (tid < half)
            red[tid] = fmaxf(red[tid], red[tid + half]);
        __syncthreads();
    }
    float row_max = red[0];
    __syncthreads();                     // everyone has read red[0] before it is reused

    // 2) exponentials (stored in y for now) and their sum, same tree
    float s = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) {
        float e = expf(xr[c] - row_max);
        yr[c] = e;
        s += e;
    }
    red[tid] = s;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (tid < half)
            red[tid] += red[tid + half];
        __syncthreads();
    }
    float inv = 1.0f / red[0];

    // 3) normalise; each thread rescales exactly the elements it wrote
    for (int c = tid; c < cols; c += blockDim.x)
        yr[c] *= inv;
}

void softmax_host(const float *x, float *y, int rows, int cols)
{
    size_t bytes = sizeof(float) * (size_t)rows * cols;
    float *dx, *dy;
    cudaMalloc((void **)&dx, bytes);
    cudaMalloc((void **)&dy, bytes);
    cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    dim3 grid(rows, 1, 1);
    dim3 block(MAX_THREADS, 1, 1);
    softmax<<<grid, block>>>(dx, dy, rows, cols);
    cudaDeviceSynchronize();
    cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
}
