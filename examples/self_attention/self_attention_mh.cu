// Multi-head self-attention, CUDA. Q, K, V, O: [S][H][D] float32 (heads interleaved).
// One block per (query i = blockIdx.x, head h = blockIdx.y), two-pass softmax:
//   pass 1: threads split the S keys, write scores into a dynamic shared row (S floats,
//           launch with S*4 bytes of dynamic shared memory) and reduce the maximum;
//   pass 2: exponentiate in place and reduce the sum;
//   pass 3: threads split the D output channels, each sums p_j * V[j][h][d] over all keys.
// Reductions: __shfl_xor_sync inside a warp, then the per-warp values through shared memory.
#include <cuda_runtime.h>

#define WARP 32
#define FULL_MASK 0xffffffffu

__device__ float warp_max(float v)
{
    for (int off = WARP / 2; off > 0; off /= 2)
        v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, off));
    return v;
}

__device__ float warp_sum(float v)
{
    for (int off = WARP / 2; off > 0; off /= 2)
        v += __shfl_xor_sync(FULL_MASK, v, off);
    return v;
}

__global__ void self_attention_mh(const float *Q, const float *K, const float *V, float *O,
                                  int S, int H, int D, float scale)
{
    extern __shared__ float score[];       // S floats
    __shared__ float warp_val[WARP];
    int i = blockIdx.x;
    int h = blockIdx.y;
    int lane = threadIdx.x % WARP;
    int warp = threadIdx.x / WARP;
    int nwarps = blockDim.x / WARP;
    long tok = (long)H * D;                 // stride between tokens
    const float *q = Q + i * tok + (long)h * D;

    // pass 1: scores and their maximum
    float m = -3.0e38f;
    for (int j = threadIdx.x; j < S; j += blockDim.x) {
        const float *k = K + j * tok + (long)h * D;
        float s = 0.0f;
        for (int d = 0; d < D; ++d)
            s += q[d] * k[d];
        s *= scale;
        score[j] = s;
        m = fmaxf(m, s);
    }
    m = warp_max(m);
    if (lane == 0)
        warp_val[warp] = m;
    __syncthreads();
    m = warp_val[0];
    for (int w = 1; w < nwarps; ++w)
        m = fmaxf(m, warp_val[w]);
    __syncthreads();                        // warp_val is reused below

    // pass 2: exponentials and their sum
    float s = 0.0f;
    for (int j = threadIdx.x; j < S; j += blockDim.x) {
        float p = expf(score[j] - m);
        score[j] = p;
        s += p;
    }
    s = warp_sum(s);
    if (lane == 0)
        warp_val[warp] = s;
    __syncthreads();                        // also publishes every score[j] to all threads
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w)
        total += warp_val[w];
    float inv = 1.0f / total;

    // pass 3: weighted sum of the value rows, one output channel per thread
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float o = 0.0f;
        for (int j = 0; j < S; ++j)
            o += score[j] * V[j * tok + (long)h * D + d];
        O[i * tok + (long)h * D + d] = o * inv;
    }
}

void self_attention_mh_host(const float *Q, const float *K, const float *V, float *O,
                            int S, int H, int D, float scale)
{
    size_t bytes = sizeof(float) * (size_t)S * H * D;
    float *dq, *dk, *dv, *dout;
    cudaMalloc((void **)&dq, bytes);
    cudaMalloc((void **)&dk, bytes);
    cudaMalloc((void **)&dv, bytes);
    cudaMalloc((void **)&dout, bytes);
    cudaMemcpy(dq, Q, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dk, K, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dv, V, bytes, cudaMemcpyHostToDevice);
    dim3 grid(S, H, 1);
    dim3 block(128, 1, 1);
    size_t shared = sizeof(float) * (size_t)S;
    self_attention_mh<<<grid, block, shared>>>(dq, dk, dv, dout, S, H, D, scale);
    cudaDeviceSynchronize();
    cudaMemcpy(O, dout, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dout);
}
