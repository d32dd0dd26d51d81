// exp_grid.hip: y = exp(x) in place-free grid-stride form, HIP, kernel named `exp`.
// Calls the overloaded float exp() (HIP's device math), as C++ code often does.
#include <hip/hip_runtime.h>

__global__ void exp(const float* __restrict__ x, float* __restrict__ y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = exp(x[i]);
}
