// attention_query_thread.cu: scaled dot-product attention, [B][H][S][D] layout, one thread
// per (batch*head, query). The thread streams over the keys with an online softmax (running
// max, rescaled running sum and output accumulator in registers, HEAD_DIM fixed by a macro).
#include <cuda_runtime.h>

#define HEAD_DIM 64

__global__ void __launch_bounds__(128) attn_fwd_rowwise(const float* __restrict__ Q, const float* __restrict__ K,
                                                        const float* __restrict__ V, float* __restrict__ O,
                                                        int BH, int S, float scale)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= BH * S) return;
    int bh = gid / S;
    const float* q = Q + (size_t)gid * HEAD_DIM;
    const float* kb = K + (size_t)bh * S * HEAD_DIM;
    const float* vb = V + (size_t)bh * S * HEAD_DIM;
    float acc[HEAD_DIM];
    for (int d = 0; d < HEAD_DIM; ++d) acc[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < S; ++j) {
        const float* k = kb + (size_t)j * HEAD_DIM;
        float s = 0.0f;
        for (int d = 0; d < HEAD_DIM; ++d) s += q[d] * k[d];
        s *= scale;
        float m_new = fmaxf(m, s);
        float corr = __expf(m - m_new);
        float p = __expf(s - m_new);
        l = l * corr + p;
        const float* v = vb + (size_t)j * HEAD_DIM;
        for (int d = 0; d < HEAD_DIM; ++d) acc[d] = acc[d] * corr + p * v[d];
        m = m_new;
    }
    float inv = 1.0f / l;
    float* o = O + (size_t)gid * HEAD_DIM;
    for (int d = 0; d < HEAD_DIM; ++d) o[d] = acc[d] * inv;
}

void attn_fwd_rowwise_host(const float* Q, const float* K, const float* V, float* O, int B, int H, int S)
{
    size_t n = (size_t)B * H * S * HEAD_DIM;
    float *dq, *dk, *dv, *dout;
    cudaMalloc(&dq, n * sizeof(float));
    cudaMalloc(&dk, n * sizeof(float));
    cudaMalloc(&dv, n * sizeof(float));
    cudaMalloc(&dout, n * sizeof(float));
    cudaMemcpy(dq, Q, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dk, K, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dv, V, n * sizeof(float), cudaMemcpyHostToDevice);
    int rows = B * H * S;
    attn_fwd_rowwise<<<(rows + 127) / 128, 128>>>(dq, dk, dv, dout, B * H, S, 0.125f);
    cudaMemcpy(O, dout, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dout);
}
