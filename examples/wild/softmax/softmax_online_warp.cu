// softmax_online_warp.cu: "online" softmax (running max and rescaled running sum in one pass),
// one warp per row, 4 warps per block. Lanes merge their (max, sum) pairs with
// __shfl_down_sync, then lane 0's result is broadcast with __shfl_sync.
#include <cuda_runtime.h>

struct MaxSum {
    float m;
    float s;
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b)
{
    float m = fmaxf(a.m, b.m);
    MaxSum r;
    r.m = m;
    r.s = a.s * __expf(a.m - m) + b.s * __expf(b.m - m);
    return r;
}

__global__ void softmax_online(float* out, const float* inp, int N, int C)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= N) return;
    const float* x = inp + (size_t)row * C;
    MaxSum acc = {-INFINITY, 0.0f};
    for (int i = lane; i < C; i += 32) {
        MaxSum one = {x[i], 1.0f};
        acc = merge(acc, one);
    }
    for (int off = 16; off > 0; off >>= 1) {
        MaxSum other;
        other.m = __shfl_down_sync(0xffffffffu, acc.m, off);
        other.s = __shfl_down_sync(0xffffffffu, acc.s, off);
        acc = merge(acc, other);
    }
    float m = __shfl_sync(0xffffffffu, acc.m, 0);
    float inv = 1.0f / __shfl_sync(0xffffffffu, acc.s, 0);
    float* y = out + (size_t)row * C;
    for (int i = lane; i < C; i += 32)
        y[i] = __expf(x[i] - m) * inv;
}

void softmax_online_host(float* out, const float* inp, int N, int C)
{
    float *dout, *dinp;
    cudaMalloc(&dout, sizeof(float) * N * C);
    cudaMalloc(&dinp, sizeof(float) * N * C);
    cudaMemcpy(dinp, inp, sizeof(float) * N * C, cudaMemcpyHostToDevice);
    softmax_online<<<(N + 3) / 4, 128>>>(dout, dinp, N, C);
    cudaMemcpy(out, dout, sizeof(float) * N * C, cudaMemcpyDeviceToHost);
    cudaFree(dout);
    cudaFree(dinp);
}
