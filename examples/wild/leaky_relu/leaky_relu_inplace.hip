// leaky_relu_inplace.hip: in-place leaky relu (x is read and overwritten), slope fixed by a
// macro, grid-stride loop with warpSize-independent indexing.
#include <hip/hip_runtime.h>

#define NEG_SLOPE 0.01f

__global__ void leaky_relu_(float* x, long n)
{
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
        if (v < 0.0f)
            x[i] = v * NEG_SLOPE;
    }
}

void leaky_relu__host(float* x, long n)
{
    float* dx;
    hipMalloc(&dx, n * sizeof(float));
    hipMemcpy(dx, x, n * sizeof(float), hipMemcpyHostToDevice);
    hipLaunchKernelGGL(leaky_relu_, dim3(32), dim3(256), 0, 0, dx, n);
    hipMemcpy(x, dx, n * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(dx);
}
