// abs.cu: y = |x|, CUDA, kernel named `abs` with a grid-stride loop and a size_t index.
#include <cuda_runtime.h>

__global__ void abs(const float* in, float* out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = fabsf(in[i]);
}
