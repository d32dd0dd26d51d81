// RMS normalisation, HIP: one block per row, sum of squares reduced by a tree in LDS.
// blockDim.x must be a power of two <= BLOCK. A tree in LDS does not depend on the
// wavefront width at all, which keeps this kernel identical on wave64 and wave32 parts.
#include <hip/hip_runtime.h>

#define BLOCK 256

__global__ void rmsnorm(const float *x, const float *gamma, float *y, int rows, int cols, float eps)
{
    __shared__ float lds[BLOCK];
    int row = blockIdx.x;
    if (row >= rows)
        return;
    const float *xr = x + (long)row * cols;
    float *yr = y + (long)row * cols;
    int tid = threadIdx.x;

    float sq = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x)
        sq += xr[c] * xr[c];
    lds[tid] = sq;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (tid < half)
            lds[tid] += lds[tid + half];
        __syncthreads();
    }
    float rrms = rsqrtf(lds[0] / (float)cols + eps);

    for (int c = tid; c < cols; c += blockDim.x)
        yr[c] = xr[c] * rrms * gamma[c];
}

void rmsnorm_host(const float *x, const float *gamma, float *y, int rows, int cols, float eps)
{
    size_t bytes = sizeof(float) * (size_t)rows * cols;
    size_t vbytes = sizeof(float) * (size_t)cols;
    float *dx, *dg, *dy;
    hipMalloc((void **)&dx, bytes);
    hipMalloc((void **)&dg, vbytes);
    hipMalloc((void **)&dy, bytes);
    hipMemcpy(dx, x, bytes, hipMemcpyHostToDevice);
    hipMemcpy(dg, gamma, vbytes, hipMemcpyHostToDevice);
    rmsnorm<<<dim3(rows), dim3(BLOCK)>>>(dx, dg, dy, rows, cols, eps);
    hipDeviceSynchronize();
    hipMemcpy(y, dy, bytes, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dg);
    hipFree(dy);
}
