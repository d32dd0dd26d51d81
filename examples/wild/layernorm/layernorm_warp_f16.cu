// layernorm_warp_f16.cu: llm.c-style layer norm, one warp per row, fp16 activations (__half in,
// __half out) with float weight/bias and float accumulation; mean and variance reduced with
// __shfl_xor_sync so every lane has them.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_allreduce(float v)
{
    for (int m = 16; m >= 1; m >>= 1)
        v += __shfl_xor_sync(0xffffffff, v, m);
    return v;
}

__global__ void layernorm_f16(__half* __restrict__ out, const __half* __restrict__ inp,
                              const float* __restrict__ weight, const float* __restrict__ bias, int N, int C)
{
    int lane = threadIdx.x % 32;
    int idx = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (idx >= N) return;
    const __half* x = inp + (size_t)idx * C;
    float sum = 0.0f;
    for (int i = lane; i < C; i += 32) sum += __half2float(x[i]);
    float m = warp_allreduce(sum) / C;
    float sq = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float d = __half2float(x[i]) - m;
        sq += d * d;
    }
    float s = rsqrtf(warp_allreduce(sq) / C + 1e-5f);
    __half* o = out + (size_t)idx * C;
    for (int i = lane; i < C; i += 32)
        o[i] = __float2half((__half2float(x[i]) - m) * s * weight[i] + bias[i]);
}

void layernorm_f16_host(__half* out, const __half* inp, const float* weight, const float* bias, int N, int C)
{
    __half *dout, *dinp;
    float *dw, *db;
    cudaMalloc(&dout, sizeof(__half) * N * C);
    cudaMalloc(&dinp, sizeof(__half) * N * C);
    cudaMalloc(&dw, sizeof(float) * C);
    cudaMalloc(&db, sizeof(float) * C);
    cudaMemcpy(dinp, inp, sizeof(__half) * N * C, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, weight, sizeof(float) * C, cudaMemcpyHostToDevice);
    cudaMemcpy(db, bias, sizeof(float) * C, cudaMemcpyHostToDevice);
    const int block = 256;
    layernorm_f16<<<(N * 32 + block - 1) / block, block>>>(dout, dinp, dw, db, N, C);
    cudaMemcpy(out, dout, sizeof(__half) * N * C, cudaMemcpyDeviceToHost);
    cudaFree(dout);
    cudaFree(dinp);
    cudaFree(dw);
    cudaFree(db);
}
