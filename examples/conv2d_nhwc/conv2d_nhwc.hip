// conv2d_nhwc (hip): valid 2-D convolution, channels-last, one thread per output element.
//
// input [N][H][W][Cin], weight [Cout][KH][KW][Cin] -> output [N][Ho][Wo][Cout].
// 2-D grid: x covers output channels (64 = one wavefront per block row), y is the output
// pixel index (n * Ho + ho) * Wo + wo. All lanes of a wavefront read the same input pixel
// run and each lane walks its own filter; Cin is contiguous for both.
#include <hip/hip_runtime.h>

#define WAVE 64

__global__ void conv2d_nhwc(const float *input, const float *weight, float *output,
                            int N, int H, int W, int Cin, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int co = blockIdx.x * blockDim.x + threadIdx.x;
    int pix = blockIdx.y;                       // (n * Ho + ho) * Wo + wo
    if (co >= Cout || pix >= N * Ho * Wo)
        return;
    int wo = pix % Wo;
    int ho = (pix / Wo) % Ho;
    int n = pix / (Wo * Ho);

    float sum = 0.0f;
    for (int kh = 0; kh < KH; ++kh) {
        // one input row of the window: KW pixels x Cin channels, contiguous in memory
        const float *xrow = input + (((long)n * H + ho * stride + kh) * W + wo * stride) * Cin;
        const float *wrow = weight + ((long)co * KH + kh) * KW * Cin;
        for (int j = 0; j < KW * Cin; ++j)
            sum += xrow[j] * wrow[j];
    }
    output[(long)pix * Cout + co] = sum;
}

extern "C" void conv2d_nhwc_host(const float *input, const float *weight, float *output,
                                 int N, int H, int W, int Cin, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    size_t in_bytes = (size_t)N * H * W * Cin * sizeof(float);
    size_t w_bytes = (size_t)Cout * KH * KW * Cin * sizeof(float);
    size_t out_bytes = (size_t)N * Ho * Wo * Cout * sizeof(float);

    float *d_in, *d_w, *d_out;
    hipMalloc((void **)&d_in, in_bytes);
    hipMalloc((void **)&d_w, w_bytes);
    hipMalloc((void **)&d_out, out_bytes);
    hipMemcpy(d_in, input, in_bytes, hipMemcpyHostToDevice);
    hipMemcpy(d_w, weight, w_bytes, hipMemcpyHostToDevice);

    dim3 block(WAVE, 1, 1);
    dim3 grid((Cout + WAVE - 1) / WAVE, N * Ho * Wo, 1);
    conv2d_nhwc<<<grid, block>>>(d_in, d_w, d_out, N, H, W, Cin, Cout, KH, KW, stride);
    hipDeviceSynchronize();

    hipMemcpy(output, d_out, out_bytes, hipMemcpyDeviceToHost);
    hipFree(d_in);
    hipFree(d_w);
    hipFree(d_out);
}
