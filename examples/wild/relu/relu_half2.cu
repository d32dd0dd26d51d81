// relu_half2.cu: fp16 relu that packs two halves per thread (__half2), as fp16 PyTorch-style
// elementwise kernels do. An odd trailing element is handled by one more thread as a scalar __half.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void relu_half2_kernel(const __half* __restrict__ x, __half* __restrict__ y, int n)
{
    int pair = blockIdx.x * blockDim.x + threadIdx.x;
    int npairs = n / 2;
    const __half2 zero2 = __float2half2_rn(0.0f);
    if (pair < npairs) {
        __half2 v = reinterpret_cast<const __half2*>(x)[pair];
        reinterpret_cast<__half2*>(y)[pair] = __hmax2(v, zero2);
    }
    if (pair == npairs && (n & 1)) {
        __half v = x[n - 1];
        y[n - 1] = __hgt(v, __float2half(0.0f)) ? v : __float2half(0.0f);
    }
}

void relu_half2_host(const __half* x, __half* y, int n)
{
    __half *dx, *dy;
    size_t bytes = (size_t)n * sizeof(__half);
    cudaMalloc((void**)&dx, bytes);
    cudaMalloc((void**)&dy, bytes);
    cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    int threads = 128;
    int blocks = (n / 2 + 1 + threads - 1) / threads;
    relu_half2_kernel<<<blocks, threads>>>(dx, dy, n);
    cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
}
