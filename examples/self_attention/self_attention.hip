// Single-head self-attention, HIP: O = softmax(Q K^T * scale) V, Q/K/V/O [S][D] float32.
// A 64-thread block (one wave64 on CDNA) owns 64 query rows, one per thread. Keys and
// values are streamed through LDS in tiles of TILE_K rows; for each key a thread updates
// its online softmax state (running max, running denominator, rescaled accumulator).
// D <= MAX_D: the query and the accumulator are private arrays of MAX_D floats.
#include <hip/hip_runtime.h>

#define TILE_K 32
#define MAX_D 64

__global__ void self_attention(const float *Q, const float *K, const float *V, float *O,
                               int S, int D, float scale)
{
    __shared__ float k_lds[TILE_K * MAX_D];
    __shared__ float v_lds[TILE_K * MAX_D];

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool active = i < S;

    float q[MAX_D];
    float acc[MAX_D];
    for (int d = 0; d < D; ++d) {
        q[d] = active ? Q[(long)i * D + d] : 0.0f;
        acc[d] = 0.0f;
    }
    float m = -3.0e38f;
    float l = 0.0f;

    for (int j0 = 0; j0 < S; j0 += TILE_K) {
        int nk = min(TILE_K, S - j0);
        for (int t = threadIdx.x; t < nk * D; t += blockDim.x) {
            k_lds[t] = K[(long)j0 * D + t];
            v_lds[t] = V[(long)j0 * D + t];
        }
        __syncthreads();

        if (active) {
            for (int j = 0; j < nk; ++j) {
                float s = 0.0f;
                for (int d = 0; d < D; ++d)
                    s += q[d] * k_lds[j * D + d];
                s *= scale;
                if (s > m) {                 // new maximum: rescale the running state
                    float corr = expf(m - s);
                    l *= corr;
                    for (int d = 0; d < D; ++d)
                        acc[d] *= corr;
                    m = s;
                }
                float p = expf(s - m);
                l += p;
                for (int d = 0; d < D; ++d)
                    acc[d] += p * v_lds[j * D + d];
            }
        }
        __syncthreads();
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
    hipMalloc((void **)&dq, bytes);
    hipMalloc((void **)&dk, bytes);
    hipMalloc((void **)&dv, bytes);
    hipMalloc((void **)&dout, bytes);
    hipMemcpy(dq, Q, bytes, hipMemcpyHostToDevice);
    hipMemcpy(dk, K, bytes, hipMemcpyHostToDevice);
    hipMemcpy(dv, V, bytes, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(self_attention, dim3((S + 63) / 64), dim3(64), 0, 0,
                       dq, dk, dv, dout, S, D, scale);
    hipDeviceSynchronize();
    hipMemcpy(O, dout, bytes, hipMemcpyDeviceToHost);
    hipFree(dq);
    hipFree(dk);
    hipFree(dv);
    hipFree(dout);
}
