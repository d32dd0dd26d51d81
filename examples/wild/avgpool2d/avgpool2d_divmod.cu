// avgpool2d_divmod.cu: NCHW average pooling, window and stride as parameters, no padding.
// One thread per output; the flat index gives (nc, oh, ow) by div/mod. The divisor is the
// window area, computed once as a reciprocal.
#include <cuda_runtime.h>

__global__ void avg_pool2d_nchw(const float* input, float* output, int NC, int H, int W,
                                int OH, int OW, int kh, int kw, int sh, int sw)
{
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    if (index >= NC * OH * OW)
        return;
    int ow = index % OW;
    int oh = (index / OW) % OH;
    int nc = index / (OW * OH);
    const float* plane = input + nc * H * W;
    int hstart = oh * sh, wstart = ow * sw;
    float sum = 0.0f;
    for (int i = 0; i < kh; ++i)
        for (int j = 0; j < kw; ++j)
            sum += plane[(hstart + i) * W + wstart + j];
    output[index] = sum * (1.0f / (kh * kw));
}

void avg_pool2d_nchw_host(const float* input, float* output, int N, int C, int H, int W, int kh, int kw, int sh, int sw)
{
    int OH = (H - kh) / sh + 1, OW = (W - kw) / sw + 1;
    int NC = N * C;
    float *di, *dout;
    cudaMalloc(&di, sizeof(float) * NC * H * W);
    cudaMalloc(&dout, sizeof(float) * NC * OH * OW);
    cudaMemcpy(di, input, sizeof(float) * NC * H * W, cudaMemcpyHostToDevice);
    int total = NC * OH * OW;
    avg_pool2d_nchw<<<(total + 255) / 256, 256>>>(di, dout, NC, H, W, OH, OW, kh, kw, sh, sw);
    cudaMemcpy(output, dout, sizeof(float) * total, cudaMemcpyDeviceToHost);
    cudaFree(di);
    cudaFree(dout);
}
