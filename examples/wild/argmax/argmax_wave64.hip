// argmax_wave64.hip: per-row argmax with one wavefront per row; the (value, index) pair of
// each lane is combined with two mask-less __shfl_xor calls per step (a butterfly, so every
// lane ends with the winner); ties go to the smaller index.
#include <hip/hip_runtime.h>

__global__ void argmax_w(const float* x, int* out, int rows, int cols)
{
    int lane = hipThreadIdx_x % warpSize;
    int row = hipBlockIdx_x * (hipBlockDim_x / warpSize) + hipThreadIdx_x / warpSize;
    if (row >= rows) return;
    const float* xr = x + (long)row * cols;
    float best = -INFINITY;
    int at = cols;
    for (int c = lane; c < cols; c += warpSize)
        if (xr[c] > best) { best = xr[c]; at = c; }
    for (int m = warpSize / 2; m > 0; m >>= 1) {
        float ov = __shfl_xor(best, m);
        int oi = __shfl_xor(at, m);
        if (ov > best || (ov == best && oi < at)) { best = ov; at = oi; }
    }
    if (lane == 0) out[row] = at;
}

void argmax_w_host(const float* x, int* out, int rows, int cols)
{
    float* dx;
    int* dout;
    hipMalloc(&dx, sizeof(float) * rows * cols);
    hipMalloc(&dout, sizeof(int) * rows);
    hipMemcpy(dx, x, sizeof(float) * rows * cols, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(argmax_w, dim3((rows + 3) / 4), dim3(256), 0, 0, dx, dout, rows, cols);
    hipMemcpy(out, dout, sizeof(int) * rows, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dout);
}
