// sign_copysign.hip: sign with explicit zero handling, written with an if/else chain
// and copysignf, grid-stride, hipLaunchKernelGGL with a fixed grid of 120 work-groups.
#include <hip/hip_runtime.h>

#define NUM_GROUPS 120
#define GROUP_SIZE 64

__global__ void sign_f32(const float* a, float* out, unsigned int n)
{
    for (unsigned int i = blockIdx.x * GROUP_SIZE + threadIdx.x; i < n; i += NUM_GROUPS * GROUP_SIZE) {
        float v = a[i];
        if (v == 0.0f)
            out[i] = 0.0f;
        else
            out[i] = copysignf(1.0f, v);
    }
}

void sign_f32_host(const float* a, float* out, unsigned int n)
{
    float *da, *dout;
    hipMalloc(&da, n * sizeof(float));
    hipMalloc(&dout, n * sizeof(float));
    hipMemcpy(da, a, n * sizeof(float), hipMemcpyHostToDevice);
    hipLaunchKernelGGL(sign_f32, dim3(NUM_GROUPS), dim3(GROUP_SIZE), 0, 0, da, dout, n);
    hipMemcpy(out, dout, n * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(da);
    hipFree(dout);
}
