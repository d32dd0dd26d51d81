// conv2d_nhwc (cuda): valid 2-D convolution, channels-last, one thread per output element.
//
// input [N][H][W][Cin], weight [Cout][KH][KW][Cin] -> output [N][Ho][Wo][Cout].
// The output is treated as one flat array of N*Ho*Wo*Cout elements, covered by a 1-D grid.
// Output channel varies fastest with the thread index, so neighbouring threads share the
// same input pixels (broadcast reads) and write neighbouring output addresses.
#include <cuda_runtime.h>

#define BLOCK 128

__global__ void conv2d_nhwc(const float *input, const float *weight, float *output,
                            int N, int H, int W, int Cin, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long total = (long)N * Ho * Wo * Cout;
    if (idx >= total)
        return;

    // unflatten idx = ((n*Ho + ho)*Wo + wo)*Cout + co
    int co = (int)(idx % Cout);
    long pix = idx / Cout;
    int wo = (int)(pix % Wo);
    int ho = (int)((pix / Wo) % Ho);
    int n = (int)(pix / ((long)Wo * Ho));

    const float *patch = input + (((long)n * H + ho * stride) * W + wo * stride) * Cin;
    const float *w = weight + (long)co * KH * KW * Cin;
    float acc = 0.0f;
    for (int kh = 0; kh < KH; ++kh)
        for (int kw = 0; kw < KW; ++kw) {
            const float *px = patch + ((long)kh * W + kw) * Cin;
            const float *pw = w + (kh * KW + kw) * Cin;
            for (int ci = 0; ci < Cin; ++ci)
                acc += px[ci] * pw[ci];
        }
    output[idx] = acc;
}

extern "C" void conv2d_nhwc_host(const float *input, const float *weight, float *output,
                                 int N, int H, int W, int Cin, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    long total = (long)N * Ho * Wo * Cout;
    size_t in_bytes = (size_t)N * H * W * Cin * sizeof(float);
    size_t w_bytes = (size_t)Cout * KH * KW * Cin * sizeof(float);
    size_t out_bytes = (size_t)total * sizeof(float);

    float *d_in, *d_w, *d_out;
    cudaMalloc((void **)&d_in, in_bytes);
    cudaMalloc((void **)&d_w, w_bytes);
    cudaMalloc((void **)&d_out, out_bytes);
    cudaMemcpy(d_in, input, in_bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(d_w, weight, w_bytes, cudaMemcpyHostToDevice);

    dim3 block(BLOCK, 1, 1);
    dim3 grid((unsigned)((total + BLOCK - 1) / BLOCK), 1, 1);
    conv2d_nhwc<<<grid, block>>>(d_in, d_w, d_out, N, H, W, Cin, Cout, KH, KW, stride);
    cudaDeviceSynchronize();

    cudaMemcpy(output, d_out, out_bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_in);
    cudaFree(d_w);
    cudaFree(d_out);
}
