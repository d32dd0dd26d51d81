// silu_wave.hip: SiLU where each 64-wide wavefront owns a contiguous chunk of CHUNK elements;
// lanes stride through the chunk. Uses __builtin_amdgcn_readfirstlane to make the chunk base
// a scalar (wave-uniform) value, as hand-tuned AMD kernels sometimes do.
#include <hip/hip_runtime.h>

#define WAVE 64
#define CHUNK 512

__global__ void silu_chunks(const float* in, float* out, int n)
{
    int wave_id = (blockIdx.x * blockDim.x + threadIdx.x) / WAVE;
    int lane = threadIdx.x % WAVE;
    int base = __builtin_amdgcn_readfirstlane(wave_id * CHUNK);
    int end = min(base + CHUNK, n);
    for (int i = base + lane; i < end; i += WAVE) {
        float v = in[i];
        out[i] = v / (1.0f + __expf(-v));
    }
}

void silu_chunks_host(const float* in, float* out, int n)
{
    float *d_in, *d_out;
    hipMalloc(&d_in, n * sizeof(float));
    hipMalloc(&d_out, n * sizeof(float));
    hipMemcpy(d_in, in, n * sizeof(float), hipMemcpyHostToDevice);
    int waves = (n + CHUNK - 1) / CHUNK;
    int waves_per_group = 4;
    int groups = (waves + waves_per_group - 1) / waves_per_group;
    hipLaunchKernelGGL(silu_chunks, dim3(groups), dim3(WAVE * waves_per_group), 0, 0, d_in, d_out, n);
    hipMemcpy(out, d_out, n * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(d_in);
    hipFree(d_out);
}
