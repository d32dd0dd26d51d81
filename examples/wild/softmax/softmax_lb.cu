// softmax_lb.cu: one block of 128 threads per row; __launch_bounds__(128, 2) written after the
// return type; block reductions through shared memory with a __host__ __device__ helper.
#include <cuda_runtime.h>

__host__ __device__ inline float max2(float a, float b) { return a > b ? a : b; }

__global__ void __launch_bounds__(128, 2) softmax_row_kernel(const float* __restrict__ x,
                                                            float* __restrict__ y, int cols)
{
    __shared__ float red[128];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (long)row * cols;
    float* yr = y + (long)row * cols;

    float m = -3.402823466e+38f;
    for (int j = tid; j < cols; j += blockDim.x)
        m = max2(m, xr[j]);
    red[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            red[tid] = max2(red[tid], red[tid + s]);
        __syncthreads();
    }
    const float row_max = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int j = tid; j < cols; j += blockDim.x)
        sum += expf(xr[j] - row_max);
    red[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            red[tid] += red[tid + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int j = tid; j < cols; j += blockDim.x)
        yr[j] = expf(xr[j] - row_max) * inv;
}
