// gelu_tanh_inline.cu: tanh-approximation GELU with the math in a __device__ __forceinline__
// helper and the constants as file-scope macros (GPT-2 style). Grid-stride loop over n.
#include <cuda_runtime.h>

#define GELU_SCALING_FACTOR 0.7978845608028654f   // sqrt(2 / pi)
#define GELU_CUBIC 0.044715f

__device__ __forceinline__ float gelu_tanh(float x)
{
    float cube = GELU_CUBIC * x * x * x;
    return 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
}

__global__ void gelu_forward_kernel(float* __restrict__ out, const float* __restrict__ inp, int N)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) {
        out[i] = gelu_tanh(inp[i]);
    }
}

void gelu_forward(float* out, const float* inp, int N)
{
    float *d_out, *d_inp;
    cudaMalloc(&d_out, N * sizeof(float));
    cudaMalloc(&d_inp, N * sizeof(float));
    cudaMemcpy(d_inp, inp, N * sizeof(float), cudaMemcpyHostToDevice);
    const int block_size = 128;
    int grid_size = (N + block_size - 1) / block_size;
    grid_size = grid_size < 48 ? grid_size : 48;
    gelu_forward_kernel<<<grid_size, block_size>>>(d_out, d_inp, N);
    cudaMemcpy(out, d_out, N * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_out);
    cudaFree(d_inp);
}
