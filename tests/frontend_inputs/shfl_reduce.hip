// Front-end test input: HIP wavefront reduction, ext vector typedef, hipLaunchKernelGGL.
#include <hip/hip_runtime.h>

typedef float floatx4 __attribute__((ext_vector_type(4)));

__device__ inline float wave_sum(float v) {
    for (int off = 32; off > 0; off /= 2)
        v += __shfl_down(v, off);
    return v;
}

extern "C" __global__ void row_sum(const float* x, float* out, int cols) {
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += x[blockIdx.x * cols + c];
    s = wave_sum(s);
    floatx4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
    acc[0] = s;
    if (threadIdx.x == 0)
        atomicAdd(&out[blockIdx.x], acc[0]);
}

extern "C" void row_sum_host(const float* x, float* out, int rows, int cols) {
    float *dx, *dout;
    hipMalloc((void**)&dx, sizeof(float) * rows * cols);
    hipMalloc((void**)&dout, sizeof(float) * rows);
    hipMemcpy(dx, x, sizeof(float) * rows * cols, hipMemcpyHostToDevice);
    hipMemset(dout, 0, sizeof(float) * rows);
    hipLaunchKernelGGL(row_sum, dim3(rows), dim3(64), 0, 0, dx, dout, cols);
    hipMemcpy(out, dout, sizeof(float) * rows, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dout);
}
