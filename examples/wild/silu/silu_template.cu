// silu_template.cu: SiLU (x * sigmoid(x)) from a kernel template on the block size and the
// number of elements each thread handles, instantiated once by the launcher (<256, 4>).
#include <cuda_runtime.h>

template <int BLOCK, int ITEMS>
__global__ void silu_kernel(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int base = blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int i = base + k * BLOCK;
        if (i < n) {
            float v = x[i];
            y[i] = v / (1.0f + expf(-v));
        }
    }
}

void silu_host(const float* x, float* y, int n)
{
    constexpr int kBlock = 256;
    constexpr int kItems = 4;
    float *dx, *dy;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice);
    int blocks = (n + kBlock * kItems - 1) / (kBlock * kItems);
    silu_kernel<kBlock, kItems><<<blocks, kBlock>>>(dx, dy, n);
    cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
}
