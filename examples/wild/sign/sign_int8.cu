// sign_int8.cu: sign of a float tensor written as int8 (-1, 0, +1), a common "quantized
// output" form. Branch-free: (v > 0) - (v < 0). One thread per element.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void sign_to_int8(const float* __restrict__ x, int8_t* __restrict__ s, int n)
{
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    if (tid < n) {
        float v = x[tid];
        s[tid] = (int8_t)((v > 0.0f) - (v < 0.0f));
    }
}

void sign_to_int8_host(const float* x, int8_t* s, int n)
{
    float* dx;
    int8_t* ds;
    cudaMalloc((void**)&dx, n * sizeof(float));
    cudaMalloc((void**)&ds, n * sizeof(int8_t));
    cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice);
    sign_to_int8<<<(n + 127) / 128, 128>>>(dx, ds, n);
    cudaMemcpy(s, ds, n * sizeof(int8_t), cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(ds);
}
