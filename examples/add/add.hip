// add.hip: c[i] = a[i] + b[i], float32, flat arrays of n elements.
// Grid-stride loop; independent of the wavefront width.
#include <hip/hip_runtime.h>

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
    hipMalloc((void**)&d_a, bytes);
    hipMalloc((void**)&d_b, bytes);
    hipMalloc((void**)&d_c, bytes);
    hipMemcpy(d_a, a, bytes, hipMemcpyHostToDevice);
    hipMemcpy(d_b, b, bytes, hipMemcpyHostToDevice);

    int blocks = (n + ADD_BLOCK - 1) / ADD_BLOCK;
    if (blocks > ADD_MAX_GRID) blocks = ADD_MAX_GRID;
    if (blocks < 1) blocks = 1;
    hipLaunchKernelGGL(add, dim3(blocks), dim3(ADD_BLOCK), 0, 0, d_a, d_b, d_c, n);
    hipDeviceSynchronize();

    hipMemcpy(c, d_c, bytes, hipMemcpyDeviceToHost);
    hipFree(d_a);
    hipFree(d_b);
    hipFree(d_c);
}
