// add.cu: c[i] = a[i] + b[i], float32, flat arrays of n elements.
// Grid-stride loop, so a capped grid still covers any n.
#include <cuda_runtime.h>

#define ADD_BLOCK 256
#define ADD_MAX_GRID 32

__global__ void add(const float* a, const float* b, float* c, int n)
{
    int step = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        c[i] = a[i] + b[i];
    }
}

void add_host(const float* a, const float* b, float* c, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    float* d_a;
    float* d_b;
    float* d_c;
    cudaMalloc((void**)&d_a, bytes);
    cudaMalloc((void**)&d_b, bytes);
    cudaMalloc((void**)&d_c, bytes);
    cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(d_b, b, bytes, cudaMemcpyHostToDevice);

    int blocks = (n + ADD_BLOCK - 1) / ADD_BLOCK;
    if (blocks > ADD_MAX_GRID) blocks = ADD_MAX_GRID;
    if (blocks < 1) blocks = 1;
    add<<<blocks, ADD_BLOCK>>>(d_a, d_b, d_c, n);

    cudaMemcpy(c, d_c, bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_a);
    cudaFree(d_b);
    cudaFree(d_c);
}
