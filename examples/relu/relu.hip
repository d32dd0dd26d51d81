// relu.hip: y[i] = max(x[i], 0), float32, flat array of n elements.
// Same grid-stride structure as the CUDA version; nothing here depends on the
// wavefront width, so it is correct for wave64 (CDNA) and wave32 (RDNA) alike.
#include <hip/hip_runtime.h>

#define RELU_BLOCK 256       // threads per block (4 wavefronts of 64 on gfx90a)
#define RELU_MAX_GRID 32     // cap on blocks; the stride loop covers the rest

__global__ void relu(const float* x, float* y, int n)
{
    int step = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

void relu_host(const float* x, float* y, int n)
{
    size_t bytes = (size_t)n * sizeof(float);
    float* d_x;
    float* d_y;
    hipMalloc((void**)&d_x, bytes);
    hipMalloc((void**)&d_y, bytes);
    hipMemcpy(d_x, x, bytes, hipMemcpyHostToDevice);

    int blocks = (n + RELU_BLOCK - 1) / RELU_BLOCK;
    if (blocks > RELU_MAX_GRID) blocks = RELU_MAX_GRID;
    if (blocks < 1) blocks = 1;
    hipLaunchKernelGGL(relu, dim3(blocks), dim3(RELU_BLOCK), 0, 0, d_x, d_y, n);
    hipDeviceSynchronize();

    hipMemcpy(y, d_y, bytes, hipMemcpyDeviceToHost);
    hipFree(d_x);
    hipFree(d_y);
}
