// relu_lb.cu: grid-stride ReLU with __launch_bounds__ between __global__ and the return type.
#include <cuda_runtime.h>

#define RELU_THREADS 256

__global__ __launch_bounds__(RELU_THREADS) void relu_lb_kernel(const float* __restrict__ x,
                                                               float* __restrict__ y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        const float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
