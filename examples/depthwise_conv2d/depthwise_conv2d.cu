// depthwise_conv2d (cuda): NCHW, one filter per channel, valid, strided.
//
// input [N][C][H][W], weight [C][KH][KW] -> output [N][C][Ho][Wo].
// 3-D grid, one thread per output element: x -> output column, y -> output row,
// z (blockIdx.z) -> plane n * C + c.
#include <cuda_runtime.h>

#define BX 16
#define BY 8

__global__ void depthwise_conv2d(const float *input, const float *weight, float *output,
                                 int N, int C, int H, int W, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int wo = blockIdx.x * blockDim.x + threadIdx.x;
    int ho = blockIdx.y * blockDim.y + threadIdx.y;
    int plane = blockIdx.z;
    if (wo >= Wo || ho >= Ho || plane >= N * C)
        return;
    int c = plane % C;

    const float *x = input + (long)plane * H * W + (ho * stride) * W + wo * stride;
    const float *w = weight + (long)c * KH * KW;
    float acc = 0.0f;
    for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw)
            acc += x[kh * W + kw] * w[kh * KW + kw];
    output[((long)plane * Ho + ho) * Wo + wo] = acc;
}

extern "C" void depthwise_conv2d_host(const float *input, const float *weight, float *output,
                                      int N, int C, int H, int W, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    size_t in_bytes = (size_t)N * C * H * W * sizeof(float);
    size_t w_bytes = (size_t)C * KH * KW * sizeof(float);
    size_t out_bytes = (size_t)N * C * Ho * Wo * sizeof(float);

    float *d_in, *d_w, *d_out;
    cudaMalloc((void **)&d_in, in_bytes);
    cudaMalloc((void **)&d_w, w_bytes);
    cudaMalloc((void **)&d_out, out_bytes);
    cudaMemcpy(d_in, input, in_bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(d_w, weight, w_bytes, cudaMemcpyHostToDevice);

    dim3 block(BX, BY, 1);
    dim3 grid((Wo + BX - 1) / BX, (Ho + BY - 1) / BY, N * C);
    depthwise_conv2d<<<grid, block>>>(d_in, d_w, d_out, N, C, H, W, KH, KW, stride);
    cudaDeviceSynchronize();

    cudaMemcpy(output, d_out, out_bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_in);
    cudaFree(d_w);
    cudaFree(d_out);
}
