// reduce_sum_bpermute.hip: float row sums, one 64-lane wavefront per row, written the way
// hand-tuned AMD code sometimes is: the lane id comes from __builtin_amdgcn_mbcnt_lo/hi and the
// cross-lane exchange uses __builtin_amdgcn_ds_bpermute (byte address = lane * 4) on the bits of
// the float, a xor butterfly so that every lane ends with the sum.
#include <hip/hip_runtime.h>

__device__ __forceinline__ int lane_id()
{
    return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

__device__ __forceinline__ float xor_shuffle(float v, int lane, int mask)
{
    int src = lane ^ mask;
    return __int_as_float(__builtin_amdgcn_ds_bpermute(src << 2, __float_as_int(v)));
}

__global__ void __launch_bounds__(64) rowsum_bpermute(const float* __restrict__ x, float* __restrict__ y, int cols)
{
    const int lane = lane_id();
    const float* xr = x + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = lane; c < cols; c += 64)
        s += xr[c];
    for (int m = 32; m > 0; m >>= 1)
        s += xor_shuffle(s, lane, m);
    if (lane == 0)
        y[blockIdx.x] = s;
}

void rowsum_bpermute_host(const float* x, float* y, int rows, int cols)
{
    float *dx, *dy;
    hipMalloc(&dx, sizeof(float) * rows * cols);
    hipMalloc(&dy, sizeof(float) * rows);
    hipMemcpy(dx, x, sizeof(float) * rows * cols, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(rowsum_bpermute, dim3(rows), dim3(64), 0, 0, dx, dy, cols);
    hipMemcpy(y, dy, sizeof(float) * rows, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dy);
}
