// Single-head self-attention, CUDA: O = softmax(Q K^T * scale) V, Q/K/V/O [S][D] float32.
// One thread owns one query row; its q vector and output accumulator live in registers
// (D <= MAX_D). The block walks over the keys in tiles of TILE_K rows: all threads copy a
// tile of K and of V into shared memory, then every thread folds those keys into its own
// online softmax (running max m, running denominator l, rescaled accumulator acc).
#include <cuda_runtime.h>

#define TILE_K 32
#define MAX_D 64

__global__ void self_attention(const float *Q, const float *K, const float *V, float *O,
                               int S, int D, float scale)
{
    __shared__ float k_tile[TILE_K * MAX_D];
    __shared__ float v_tile[TILE_K * MAX_D];

    int i = blockIdx.x * blockDim.x + threadIdx.x;   // query row of this thread
    bool active = i < S;                             // idle threads still help load tiles

    float q[MAX_D];
    float acc[MAX_D];
    for (int d = 0; d < D; ++d) {
        q[d] = active ? Q[(long)i * D + d] * scale : 0.0f;   // fold the scale into q once
        acc[d] = 0.0f;
    }
    float m = -3.0e38f;
    float l = 0.0f;

    for (int j0 = 0; j0 < S; j0 += TILE_K) {
        int nk = min(TILE_K, S - j0);                // keys in this tile
        // cooperative copy of K[j0 : j0+nk] and V[j0 : j0+nk] (contiguous in global memory)
        for (int t = threadIdx.x; t < nk * D; t += blockDim.x) {
            k_tile[t] = K[(long)j0 * D + t];
            v_tile[t] = V[(long)j0 * D + t];
        }
        __syncthreads();

        if (active) {
            for (int j = 0; j < nk; ++j) {
                float s = 0.0f;
                for (int d = 0; d < D; ++d)
                    s += q[d] * k_tile[j * D + d];
                float m_new = fmaxf(m, s);
                float corr = expf(m - m_new);        // rescales what was accumulated so far
                float p = expf(s - m_new);
                l = l * corr + p;
                for (int d = 0; d < D; ++d)
                    acc[d] = acc[d] * corr + p * v_tile[j * D + d];
                m = m_new;
            }
        }
        __syncthreads();                             // tile fully consumed before overwrite
    }

    if (active) {
        float inv = 1.0f / l;
        for (int d = 0; d < D; ++d)
            O[(long)i * D + d] = acc[d] * inv;
    }
}

void self_attention_host(const float *Q, const float *K, const float *V, float *O,
                         int S, int D, float scale)
{
    size_t bytes = sizeof(float) * (size_t)S * D;
    float *dq, *dk, *dv, *dout;
    cudaMalloc((void **)&dq, bytes);
    cudaMalloc((void **)&dk, bytes);
    cudaMalloc((void **)&dv, bytes);
    cudaMalloc((void **)&dout, bytes);
    cudaMemcpy(dq, Q, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dk, K, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dv, V, bytes, cudaMemcpyHostToDevice);
    self_attention<<<(S + 63) / 64, 64>>>(dq, dk, dv, dout, S, D, scale);
    cudaDeviceSynchronize();
    cudaMemcpy(O, dout, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dout);
}
