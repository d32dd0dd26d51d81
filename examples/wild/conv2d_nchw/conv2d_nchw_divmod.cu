// conv2d_nchw_divmod.cu: direct NCHW convolution with a compile-time 3x3 filter (KSIZE macro),
// run-time stride and padding; one thread per output, (n, k, p, q) from the flat index.
// The filter loops are fully unrolled by #pragma unroll.
#include <cuda_runtime.h>

#define KSIZE 3

__global__ void conv2d_3x3_nchw(const float* __restrict__ in, const float* __restrict__ filt,
                                float* __restrict__ out, int N, int C, int H, int W, int K,
                                int P, int Q, int stride, int pad)
{
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long total = (long)N * K * P * Q;
    if (idx >= total) return;
    int q = idx % Q;
    int p = (idx / Q) % P;
    int k = (idx / ((long)P * Q)) % K;
    int n = idx / ((long)K * P * Q);
    float acc = 0.f;
    for (int c = 0; c < C; ++c) {
#pragma unroll
        for (int r = 0; r < KSIZE; ++r) {
            int h = p * stride - pad + r;
            if (h < 0 || h >= H) continue;
#pragma unroll
            for (int s = 0; s < KSIZE; ++s) {
                int wi = q * stride - pad + s;
                if (wi < 0 || wi >= W) continue;
                acc += in[((n * C + c) * H + h) * W + wi] * filt[((k * C + c) * KSIZE + r) * KSIZE + s];
            }
        }
    }
    out[idx] = acc;
}

void conv2d_3x3_nchw_host(const float* in, const float* filt, float* out, int N, int C, int H, int W, int K,
                          int stride, int pad)
{
    int P = (H + 2 * pad - KSIZE) / stride + 1;
    int Q = (W + 2 * pad - KSIZE) / stride + 1;
    float *din, *df, *dout;
    cudaMalloc(&din, sizeof(float) * N * C * H * W);
    cudaMalloc(&df, sizeof(float) * K * C * KSIZE * KSIZE);
    cudaMalloc(&dout, sizeof(float) * N * K * P * Q);
    cudaMemcpy(din, in, sizeof(float) * N * C * H * W, cudaMemcpyHostToDevice);
    cudaMemcpy(df, filt, sizeof(float) * K * C * KSIZE * KSIZE, cudaMemcpyHostToDevice);
    long total = (long)N * K * P * Q;
    conv2d_3x3_nchw<<<(unsigned)((total + 255) / 256), 256>>>(din, df, dout, N, C, H, W, K, P, Q, stride, pad);
    cudaMemcpy(out, dout, sizeof(float) * total, cudaMemcpyDeviceToHost);
    cudaFree(din);
    cudaFree(df);
    cudaFree(dout);
}
