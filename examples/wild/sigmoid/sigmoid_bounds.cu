// sigmoid_bounds.cu: __launch_bounds__(MAX_THREADS) kernel, size passed as an unsigned long
// (size_t) the way library code does, early return for the tail.
#include <cuda_runtime.h>

#define MAX_THREADS 256

__global__ void __launch_bounds__(MAX_THREADS)
sigmoid_kernel(const float* __restrict__ in, float* __restrict__ out, size_t numel)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= numel) return;
    out[i] = 1.0f / (1.0f + __expf(-in[i]));
}

void sigmoid_host(const float* in, float* out, size_t numel)
{
    float *din, *dout;
    cudaMalloc(&din, numel * sizeof(float));
    cudaMalloc(&dout, numel * sizeof(float));
    cudaMemcpy(din, in, numel * sizeof(float), cudaMemcpyHostToDevice);
    unsigned int blocks = (unsigned int)((numel + MAX_THREADS - 1) / MAX_THREADS);
    sigmoid_kernel<<<blocks, MAX_THREADS>>>(din, dout, numel);
    cudaMemcpy(out, dout, numel * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(din);
    cudaFree(dout);
}
