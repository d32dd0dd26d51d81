// Substrate self-test (xpiler doctor): a block-wide sum through shared memory, a barrier and a
// warp shuffle, then an elementwise write.  Small on purpose: it checks the substrate, not a kernel.
#include <hip/hip_runtime.h>

__global__ void selftest(const float* x, float* y, int n, int bs)
{
    __shared__ float part[32];
    int i = blockIdx.x * bs + threadIdx.x;
    float v = (threadIdx.x < bs && i < n) ? x[i] : 0.0f;
    float s = v;
    for (int off = warpSize / 2; off > 0; off /= 2)
        s += __shfl_down(s, off);
    if (threadIdx.x % warpSize == 0) part[threadIdx.x / warpSize] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < (int)(blockDim.x / warpSize); ++w) t += part[w];
        part[0] = t;
    }
    __syncthreads();
    if (threadIdx.x < bs && i < n) y[i] = v * 2.0f + part[0];
}
