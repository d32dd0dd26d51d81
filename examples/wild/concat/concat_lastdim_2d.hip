// concat_lastdim_2d.hip: concatenation along the last axis, out[r] = [a[r] (ca values), b[r] (cb
// values)], written as two loops per row inside a 2-D launch (x: columns, y: rows), as a
// "copy two slices" kernel.
#include <hip/hip_runtime.h>

__global__ void concat_last(const float* a, const float* b, float* out, int rows, int ca, int cb)
{
    int r = hipBlockIdx_y * hipBlockDim_y + hipThreadIdx_y;
    if (r >= rows) return;
    int width = ca + cb;
    for (int c = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x; c < ca; c += hipGridDim_x * hipBlockDim_x)
        out[r * width + c] = a[r * ca + c];
    for (int c = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x; c < cb; c += hipGridDim_x * hipBlockDim_x)
        out[r * width + ca + c] = b[r * cb + c];
}

void concat_last_host(const float* a, const float* b, float* out, int rows, int ca, int cb)
{
    float *da, *db, *dout;
    hipMalloc(&da, sizeof(float) * rows * ca);
    hipMalloc(&db, sizeof(float) * rows * cb);
    hipMalloc(&dout, sizeof(float) * rows * (ca + cb));
    hipMemcpy(da, a, sizeof(float) * rows * ca, hipMemcpyHostToDevice);
    hipMemcpy(db, b, sizeof(float) * rows * cb, hipMemcpyHostToDevice);
    dim3 block(64, 4);
    dim3 grid(2, (rows + 3) / 4);
    hipLaunchKernelGGL(concat_last, grid, block, 0, 0, da, db, dout, rows, ca, cb);
    hipMemcpy(out, dout, sizeof(float) * rows * (ca + cb), hipMemcpyDeviceToHost);
    hipFree(da);
    hipFree(db);
    hipFree(dout);
}
