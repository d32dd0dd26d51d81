// avgpool2d.cu: 2-D mean (sum / (KH * KW)) pooling, NHWC float32, no padding.
// input [N][H][W][C] -> output [N][Ho][Wo][C], Ho = (H - KH) / stride + 1, Wo likewise.
// One thread per output element; the channel index varies fastest across threads,
// so neighbouring threads read neighbouring addresses.
#include <cuda_runtime.h>

#define POOL_BLOCK 128

__global__ void avgpool2d(const float* input, float* output, int N, int H, int W, int C, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int total = N * Ho * Wo * C;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;

    // split the flat output index into (n, oh, ow, c)
    int c = idx % C;
    int t = idx / C;
    int ow = t % Wo;
    t = t / Wo;
    int oh = t % Ho;
    int n = t / Ho;

    // top-left corner of this output's window, channel c
    const float* win = input + ((n * H + oh * stride) * W + ow * stride) * C + c;
    float acc = 0.0f;
    for (int kh = 0; kh < KH; kh++) {
        for (int kw = 0; kw < KW; kw++) {
            float v = win[(kh * W + kw) * C];
            acc += v;
        }
    }
    output[idx] = acc / (float)(KH * KW);
}

void avgpool2d_host(const float* input, float* output, int N, int H, int W, int C, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int total = N * Ho * Wo * C;
    size_t in_bytes = (size_t)N * H * W * C * sizeof(float);
    size_t out_bytes = (size_t)total * sizeof(float);
    float* d_in;
    float* d_out;
    cudaMalloc((void**)&d_in, in_bytes);
    cudaMalloc((void**)&d_out, out_bytes);
    cudaMemcpy(d_in, input, in_bytes, cudaMemcpyHostToDevice);

    int blocks = (total + POOL_BLOCK - 1) / POOL_BLOCK;
    avgpool2d<<<blocks, POOL_BLOCK>>>(d_in, d_out, N, H, W, C, KH, KW, stride);

    cudaMemcpy(output, d_out, out_bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_in);
    cudaFree(d_out);
}
