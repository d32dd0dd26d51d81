// conv1d_flat.cu: 1-D convolution (cross-correlation) over [N][C][L] with weights [OC][C][K],
// stride and zero padding as scalar parameters. One thread per output; the flat output index
// is split into (n, oc, ol) with div/mod.
#include <cuda_runtime.h>

__global__ void conv1d_ncl(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                           int N, int C, int L, int OC, int K, int stride, int pad, int OL)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * OC * OL) return;
    int ol = idx % OL;
    int oc = (idx / OL) % OC;
    int n = idx / (OL * OC);
    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* xr = x + (n * C + c) * L;
        const float* wr = w + (oc * C + c) * K;
        for (int k = 0; k < K; ++k) {
            int pos = ol * stride - pad + k;
            if (pos >= 0 && pos < L)
                acc += xr[pos] * wr[k];
        }
    }
    y[idx] = acc;
}

void conv1d_ncl_host(const float* x, const float* w, float* y, int N, int C, int L, int OC, int K, int stride, int pad)
{
    int OL = (L + 2 * pad - K) / stride + 1;
    float *dx, *dw, *dy;
    cudaMalloc(&dx, sizeof(float) * N * C * L);
    cudaMalloc(&dw, sizeof(float) * OC * C * K);
    cudaMalloc(&dy, sizeof(float) * N * OC * OL);
    cudaMemcpy(dx, x, sizeof(float) * N * C * L, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, w, sizeof(float) * OC * C * K, cudaMemcpyHostToDevice);
    int total = N * OC * OL;
    conv1d_ncl<<<(total + 255) / 256, 256>>>(dx, dw, dy, N, C, L, OC, K, stride, pad, OL);
    cudaMemcpy(y, dy, sizeof(float) * total, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
}
