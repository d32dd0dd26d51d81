// sigmoid.cu: y[i] = 1 / (1 + exp(-x[i])), float32, flat array of n elements.
// Grid-stride loop: each thread walks the array in steps of the whole grid, so the
// launcher may cap the grid size and still cover any n.
#include <cuda_runtime.h>

#define SIGMOID_BLOCK 256       // threads per block
#define SIGMOID_MAX_GRID 32     // cap on blocks; larger n is covered by the stride loop

__global__ void sigmoid(const float* x, float* y, int n)
{
    int step = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        float v = x[i];
        y[i] = 1.0f / (1.0f + expf(-v));
    }
}

// Host side: device buffers, one launch, copy back.
void sigmoid_host(const float* x, float* y, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    float* d_x;
    float* d_y;
    cudaMalloc((void**)&d_x, bytes);
    cudaMalloc((void**)&d_y, bytes);
    cudaMemcpy(d_x, x, bytes, cudaMemcpyHostToDevice);

    int blocks = (n + SIGMOID_BLOCK - 1) / SIGMOID_BLOCK;
    if (blocks > SIGMOID_MAX_GRID) blocks = SIGMOID_MAX_GRID;
    if (blocks < 1) blocks = 1;
    sigmoid<<<blocks, SIGMOID_BLOCK>>>(d_x, d_y, n);

    cudaMemcpy(y, d_y, bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_x);
    cudaFree(d_y);
}
