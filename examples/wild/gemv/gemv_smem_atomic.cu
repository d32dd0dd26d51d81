// gemv_smem_atomic.cu: y = A x with one block per row; every thread adds its partial dot
// product into a __shared__ accumulator with atomicAdd, then thread 0 stores it.
#include <cuda_runtime.h>

__global__ void gemv_atomic(const float* A, const float* x, float* y, int rows, int cols)
{
    __shared__ float acc;
    int row = blockIdx.x;
    if (threadIdx.x == 0)
        acc = 0.0f;
    __syncthreads();
    float part = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        part += A[row * cols + c] * x[c];
    atomicAdd(&acc, part);
    __syncthreads();
    if (threadIdx.x == 0)
        y[row] = acc;
}

void gemv_atomic_host(const float* A, const float* x, float* y, int rows, int cols)
{
    float *dA, *dx, *dy;
    cudaMalloc(&dA, sizeof(float) * rows * cols);
    cudaMalloc(&dx, sizeof(float) * cols);
    cudaMalloc(&dy, sizeof(float) * rows);
    cudaMemcpy(dA, A, sizeof(float) * rows * cols, cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x, sizeof(float) * cols, cudaMemcpyHostToDevice);
    gemv_atomic<<<rows, 128>>>(dA, dx, dy, rows, cols);
    cudaMemcpy(y, dy, sizeof(float) * rows, cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dx);
    cudaFree(dy);
}
