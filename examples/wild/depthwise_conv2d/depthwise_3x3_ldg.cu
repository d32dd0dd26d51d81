// depthwise_3x3_ldg.cu: depthwise 3x3 convolution (one filter per channel, NCHW), padding 1,
// stride 1; KS and PAD are macros, the filter taps are read through __ldg (read-only cache).
// 2-D blocks over (w, h), blockIdx.z = n * C + c.
#include <cuda_runtime.h>

#define KS 3
#define PAD 1

__global__ void dwconv3x3(const float* __restrict__ x, const float* __restrict__ k3, float* __restrict__ y,
                          int C, int H, int W)
{
    int w = blockIdx.x * blockDim.x + threadIdx.x;
    int h = blockIdx.y * blockDim.y + threadIdx.y;
    int nc = blockIdx.z;
    int c = nc % C;
    if (h >= H || w >= W) return;
    const float* img = x + (size_t)nc * H * W;
    const float* f = k3 + c * KS * KS;
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < KS; ++i) {
        int hh = h + i - PAD;
#pragma unroll
        for (int j = 0; j < KS; ++j) {
            int ww = w + j - PAD;
            float v = (hh >= 0 && hh < H && ww >= 0 && ww < W) ? __ldg(img + hh * W + ww) : 0.0f;
            s += v * __ldg(f + i * KS + j);
        }
    }
    y[(size_t)nc * H * W + h * W + w] = s;
}

void dwconv3x3_host(const float* x, const float* k3, float* y, int N, int C, int H, int W)
{
    float *dx, *dk, *dy;
    size_t nbytes = sizeof(float) * N * C * H * W;
    cudaMalloc(&dx, nbytes);
    cudaMalloc(&dk, sizeof(float) * C * KS * KS);
    cudaMalloc(&dy, nbytes);
    cudaMemcpy(dx, x, nbytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dk, k3, sizeof(float) * C * KS * KS, cudaMemcpyHostToDevice);
    dim3 block(16, 16);
    dim3 grid((W + 15) / 16, (H + 15) / 16, N * C);
    dwconv3x3<<<grid, block>>>(dx, dk, dy, C, H, W);
    cudaMemcpy(y, dy, nbytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dk);
    cudaFree(dy);
}
