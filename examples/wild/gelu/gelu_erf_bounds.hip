// gelu_erf_bounds.hip: exact GELU, HIP, with __launch_bounds__(256) on the kernel and the
// element count as a size_t-free int; one element per work-item, guarded by an if.
#include <hip/hip_runtime.h>
#include <math.h>

__global__ void __launch_bounds__(256) gelu_exact(const float* __restrict__ input,
                                                  float* __restrict__ output, int numel)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid < numel) {
        float x = input[gid];
        output[gid] = 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2));
    }
}

void gelu_exact_host(const float* input, float* output, int numel)
{
    float *d_in, *d_out;
    hipMalloc(&d_in, sizeof(float) * numel);
    hipMalloc(&d_out, sizeof(float) * numel);
    hipMemcpy(d_in, input, sizeof(float) * numel, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(gelu_exact, dim3((numel + 255) / 256), dim3(256), 0, 0, d_in, d_out, numel);
    hipMemcpy(output, d_out, sizeof(float) * numel, hipMemcpyDeviceToHost);
    hipFree(d_in);
    hipFree(d_out);
}
