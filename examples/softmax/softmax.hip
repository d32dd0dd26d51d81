// Row-wise softmax, HIP: one block per row, written for any wavefront width.
// Inside a wavefront the reductions use the HIP butterfly shuffle __shfl_xor (no mask
// argument; the width defaults to warpSize, 64 on CDNA, 32 on RDNA). One value per
// wavefront then goes through LDS and every thread folds those few values itself.
#include <hip/hip_runtime.h>

#define BLOCK 256
#define MAX_WAVES 32   // BLOCK / smallest wavefront (32)

__device__ float wave_max(float v)
{
    for (int off = warpSize / 2; off > 0; off /= 2)
        v = fmaxf(v, __shfl_xor(v, off));
    return v;
}

__device__ float wave_sum(float v)
{
    for (int off = warpSize / 2; off > 0; off /= 2)
        v += __shfl_xor(v, off);
    return v;
}

__global__ void softmax(const float *x, float *y, int rows, int cols)
{
    __shared__ float lds[MAX_WAVES];
    int row = blockIdx.x;
    if (row >= rows)
        return;
    const float *xr = x + (long)row * cols;
    float *yr = y + (long)row * cols;
    int lane = threadIdx.x % warpSize;
    int wave = threadIdx.x / warpSize;
    int nwaves = (blockDim.x + warpSize - 1) / warpSize;

    float m = -3.0e38f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        m = fmaxf(m, xr[c]);
    m = wave_max(m);
    if (lane == 0)
        lds[wave] = m;
    __syncthreads();
    m = lds[0];
    for (int w = 1; w < nwaves; ++w)
        m = fmaxf(m, lds[w]);
    __syncthreads();                     // lds is overwritten by the sum below

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += expf(xr[c] - m);
    s = wave_sum(s);
    if (lane == 0)
        lds[wave] = s;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwaves; ++w)
        total += lds[w];

    float inv = 1.0f / total;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = expf(xr[c] - m) * inv;
}

void softmax_host(const float *x, float *y, int rows, int cols)
{
    size_t bytes = sizeof(float) * (size_t)rows * cols;
    float *dx, *dy;
    hipMalloc((void **)&dx, bytes);
    hipMalloc((void **)&dy, bytes);
    hipMemcpy(dx, x, bytes, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(softmax, dim3(rows), dim3(BLOCK), 0, 0, dx, dy, rows, cols);
    hipDeviceSynchronize();
    hipMemcpy(y, dy, bytes, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dy);
}
