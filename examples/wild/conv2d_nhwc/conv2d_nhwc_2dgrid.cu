// conv2d_nhwc_2dgrid.cu: NHWC convolution with HWIO-style weights [R][S][C][K] (TensorFlow
// layout). Threads of a 2-D block map to (output channel, output pixel); blockIdx.y walks
// the flattened (n, p, q) output positions. Stride 1, "same" padding for odd filters.
#include <cuda_runtime.h>

__global__ void conv_nhwc_hwio(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                               int H, int W, int C, int K, int R, int S, int npix)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int pix = blockIdx.y * blockDim.y + threadIdx.y;
    if (k >= K || pix >= npix) return;
    int q = pix % W;
    int p = (pix / W) % H;
    int n = pix / (W * H);
    int ph = R / 2, pw = S / 2;
    float acc = 0.0f;
    for (int r = 0; r < R; ++r) {
        int h = p + r - ph;
        if ((unsigned)h >= (unsigned)H) continue;
        for (int s = 0; s < S; ++s) {
            int ww = q + s - pw;
            if ((unsigned)ww >= (unsigned)W) continue;
            const float* xp = x + ((n * H + h) * W + ww) * C;
            const float* wp = w + (r * S + s) * C * K + k;
            for (int c = 0; c < C; ++c)
                acc += xp[c] * wp[c * K];
        }
    }
    y[pix * K + k] = acc;
}

void conv_nhwc_hwio_host(const float* x, const float* w, float* y, int N, int H, int W, int C, int K, int R, int S)
{
    int npix = N * H * W;
    float *dx, *dw, *dy;
    cudaMalloc(&dx, sizeof(float) * npix * C);
    cudaMalloc(&dw, sizeof(float) * R * S * C * K);
    cudaMalloc(&dy, sizeof(float) * npix * K);
    cudaMemcpy(dx, x, sizeof(float) * npix * C, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, w, sizeof(float) * R * S * C * K, cudaMemcpyHostToDevice);
    dim3 block(32, 4);
    dim3 grid((K + 31) / 32, (npix + 3) / 4);
    conv_nhwc_hwio<<<grid, block>>>(dx, dw, dy, H, W, C, K, R, S, npix);
    cudaMemcpy(y, dy, sizeof(float) * npix * K, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
}
