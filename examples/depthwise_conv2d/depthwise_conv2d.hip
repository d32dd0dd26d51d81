// depthwise_conv2d (hip): NCHW, one filter per channel, valid, strided.
//
// input [N][C][H][W], weight [C][KH][KW] -> output [N][C][Ho][Wo].
// One thread per output element on a 3-D grid: x -> output column, y -> output row,
// z -> plane n * C + c. A 16 x 16 block is four wavefronts of 64.
#include <hip/hip_runtime.h>

#define BX 16
#define BY 16

__global__ void depthwise_conv2d(const float *input, const float *weight, float *output,
                                 int N, int C, int H, int W, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int wo = blockIdx.x * BX + threadIdx.x;
    int ho = blockIdx.y * BY + threadIdx.y;
    int plane = blockIdx.z;
    if (wo >= Wo || ho >= Ho || plane >= N * C)
        return;

    const float *w = weight + (long)(plane % C) * KH * KW;
    const float *x = input + (long)plane * H * W;
    float sum = 0.0f;
    for (int kh = 0; kh < KH; ++kh) {
        const float *xrow = x + (ho * stride + kh) * W + wo * stride;
        for (int kw = 0; kw < KW; ++kw)
            sum += xrow[kw] * w[kh * KW + kw];
    }
    output[((long)plane * Ho + ho) * Wo + wo] = sum;
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
    hipMalloc((void **)&d_in, in_bytes);
    hipMalloc((void **)&d_w, w_bytes);
    hipMalloc((void **)&d_out, out_bytes);
    hipMemcpy(d_in, input, in_bytes, hipMemcpyHostToDevice);
    hipMemcpy(d_w, weight, w_bytes, hipMemcpyHostToDevice);

    dim3 block(BX, BY, 1);
    dim3 grid((Wo + BX - 1) / BX, (Ho + BY - 1) / BY, N * C);
    depthwise_conv2d<<<grid, block>>>(d_in, d_w, d_out, N, C, H, W, KH, KW, stride);
    hipDeviceSynchronize();

    hipMemcpy(output, d_out, out_bytes, hipMemcpyDeviceToHost);
    hipFree(d_in);
    hipFree(d_w);
    hipFree(d_out);
}
