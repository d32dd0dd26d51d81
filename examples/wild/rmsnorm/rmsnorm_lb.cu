// rmsnorm_lb.cu: RMSNorm, one 256-thread block per row.  __launch_bounds__ on the line before
// __global__, a static __device__ __forceinline__ warp reduction, #pragma unroll N, and
// const T* __restrict__ parameters.
#include <cuda_runtime.h>

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll 5
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__launch_bounds__(256)
__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                               float* __restrict__ y, int dim, float eps)
{
    __shared__ float partial[8];
    const float* xr = x + (long)blockIdx.x * dim;
    float* yr = y + (long)blockIdx.x * dim;
    float ss = 0.0f;
    for (int j = threadIdx.x; j < dim; j += 256)
        ss += xr[j] * xr[j];
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0)
        partial[threadIdx.x >> 5] = ss;
    __syncthreads();
    float total = 0.0f;
#pragma unroll 8
    for (int k = 0; k < 8; ++k)
        total += partial[k];
    const float scale = rsqrtf(total / dim + eps);
    for (int j = threadIdx.x; j < dim; j += 256)
        yr[j] = xr[j] * scale * w[j];
}
