// relu_define.cu: everything fixed at compile time, the way many tutorial kernels are written.
// N and BLOCK_SIZE are macros; the launcher sizes the grid from them and the kernel has no
// size parameter at all. One thread per element, guarded with if (idx < N).
#include <cstdio>
#include <cuda_runtime.h>

#define N 4099
#define BLOCK_SIZE 256
#define CUDA_CHECK(call)                                                        \
    do {                                                                        \
        cudaError_t err_ = (call);                                              \
        if (err_ != cudaSuccess) {                                              \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__,                   \
                    cudaGetErrorString(err_));                                  \
        }                                                                       \
    } while (0)

__global__ void relu_kernel(const float* in, float* out)
{
    int idx = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    if (idx < N) {
        float v = in[idx];
        out[idx] = v > 0.f ? v : 0.f;
    }
}

void relu_launch(const float* h_in, float* h_out)
{
    float *d_in, *d_out;
    CUDA_CHECK(cudaMalloc(&d_in, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, N * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_in, h_in, N * sizeof(float), cudaMemcpyHostToDevice));
    relu_kernel<<<(N + BLOCK_SIZE - 1) / BLOCK_SIZE, BLOCK_SIZE>>>(d_in, d_out);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(h_out, d_out, N * sizeof(float), cudaMemcpyDeviceToHost));
    cudaFree(d_in);
    cudaFree(d_out);
}
