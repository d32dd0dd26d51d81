// attention_lds_scores.hip: attention for one (batch*head, query) per work-group: the S scores
// go to dynamic LDS (extern __shared__, S + 64 floats: scores then a reduction scratch), the max
// and the sum are reduced through the scratch by wave 0, then the work-items split the output dims.
#include <hip/hip_runtime.h>

#define GROUP 64

__global__ void attn_query_group(const float* Q, const float* K, const float* V, float* O, int S, int D, float scale)
{
    extern __shared__ float lds[];
    float* sc = lds;          // S scores
    float* red = lds + S;     // GROUP partials
    const int bh = hipBlockIdx_y, qi = hipBlockIdx_x, tid = hipThreadIdx_x;
    const float* q = Q + ((size_t)bh * S + qi) * D;
    const float* kb = K + (size_t)bh * S * D;
    const float* vb = V + (size_t)bh * S * D;

    float mx = -INFINITY;
    for (int j = tid; j < S; j += GROUP) {
        float s = 0.0f;
        for (int d = 0; d < D; ++d) s += q[d] * kb[(size_t)j * D + d];
        s *= scale;
        sc[j] = s;
        mx = fmaxf(mx, s);
    }
    red[tid] = mx;
    __syncthreads();
    if (tid == 0) {
        float m = red[0];
        for (int i = 1; i < GROUP; ++i) m = fmaxf(m, red[i]);
        red[0] = m;
    }
    __syncthreads();
    mx = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int j = tid; j < S; j += GROUP) {
        float e = expf(sc[j] - mx);
        sc[j] = e;
        sum += e;
    }
    red[tid] = sum;
    __syncthreads();
    if (tid == 0) {
        float t = 0.0f;
        for (int i = 0; i < GROUP; ++i) t += red[i];
        red[0] = t;
    }
    __syncthreads();
    const float inv = 1.0f / red[0];
    float* o = O + ((size_t)bh * S + qi) * D;
    for (int d = tid; d < D; d += GROUP) {
        float acc = 0.0f;
        for (int j = 0; j < S; ++j) acc += sc[j] * vb[(size_t)j * D + d];
        o[d] = acc * inv;
    }
}

void attn_query_group_host(const float* Q, const float* K, const float* V, float* O, int B, int H, int S, int D)
{
    size_t n = (size_t)B * H * S * D;
    float *dq, *dk, *dv, *dout;
    hipMalloc(&dq, n * sizeof(float));
    hipMalloc(&dk, n * sizeof(float));
    hipMalloc(&dv, n * sizeof(float));
    hipMalloc(&dout, n * sizeof(float));
    hipMemcpy(dq, Q, n * sizeof(float), hipMemcpyHostToDevice);
    hipMemcpy(dk, K, n * sizeof(float), hipMemcpyHostToDevice);
    hipMemcpy(dv, V, n * sizeof(float), hipMemcpyHostToDevice);
    float scale = 1.0f / sqrtf((float)D);
    hipLaunchKernelGGL(attn_query_group, dim3(S, B * H), dim3(GROUP), (S + GROUP) * sizeof(float), 0,
                       dq, dk, dv, dout, S, D, scale);
    hipMemcpy(O, dout, n * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(dq);
    hipFree(dk);
    hipFree(dv);
    hipFree(dout);
}
