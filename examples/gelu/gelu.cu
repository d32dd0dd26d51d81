// gelu.cu: y[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2))),
// the exact gelu (not the tanh approximation), float32, flat array of n elements.
// Grid-stride loop: each thread walks the array in steps of the whole grid, so the
// launcher may cap the grid size and still cover any n.
#include <cuda_runtime.h>

#define GELU_BLOCK 256       // threads per block
#define GELU_MAX_GRID 32     // cap on blocks; larger n is covered by the stride loop

__global__ void gelu(const float* x, float* y, int n)
{
    int step = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

// Host side: device buffers, one launch, copy back.
void gelu_host(const float* x, float* y, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    float* d_x;
    float* d_y;
    cudaMalloc((void**)&d_x, bytes);
    cudaMalloc((void**)&d_y, bytes);
    cudaMemcpy(d_x, x, bytes, cudaMemcpyHostToDevice);

    int blocks = (n + GELU_BLOCK - 1) / GELU_BLOCK;
    if (blocks > GELU_MAX_GRID) blocks = GELU_MAX_GRID;
    if (blocks < 1) blocks = 1;
    gelu<<<blocks, GELU_BLOCK>>>(d_x, d_y, n);

    cudaMemcpy(y, d_y, bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_x);
    cudaFree(d_y);
}
