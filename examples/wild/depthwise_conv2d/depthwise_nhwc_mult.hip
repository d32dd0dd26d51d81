// depthwise_nhwc_mult.hip: depthwise convolution on NHWC with a channel multiplier (each input
// channel c produces M outputs c*M + m), weights [R][S][C*M], stride and padding parameters.
// Grid-stride over all outputs with a long flat index split by div/mod.
#include <hip/hip_runtime.h>

__global__ void dw_nhwc(const float* x, const float* w, float* y, int N, int H, int W, int C, int M,
                        int R, int S, int stride, int pad, int OH, int OW)
{
    const long total = (long)N * OH * OW * C * M;
    const int CM = C * M;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long)blockDim.x * gridDim.x) {
        int oc = i % CM;
        int ow = (i / CM) % OW;
        int oh = (i / ((long)CM * OW)) % OH;
        int n = i / ((long)CM * OW * OH);
        int c = oc / M;
        float acc = 0.0f;
        for (int r = 0; r < R; ++r) {
            int ih = oh * stride - pad + r;
            if (ih < 0 || ih >= H) continue;
            for (int s = 0; s < S; ++s) {
                int iw = ow * stride - pad + s;
                if (iw < 0 || iw >= W) continue;
                acc += x[((n * H + ih) * W + iw) * C + c] * w[(r * S + s) * CM + oc];
            }
        }
        y[i] = acc;
    }
}

void dw_nhwc_host(const float* x, const float* w, float* y, int N, int H, int W, int C, int M, int R, int S,
                  int stride, int pad)
{
    int OH = (H + 2 * pad - R) / stride + 1, OW = (W + 2 * pad - S) / stride + 1;
    long total = (long)N * OH * OW * C * M;
    float *dx, *dw, *dy;
    hipMalloc(&dx, sizeof(float) * N * H * W * C);
    hipMalloc(&dw, sizeof(float) * R * S * C * M);
    hipMalloc(&dy, sizeof(float) * total);
    hipMemcpy(dx, x, sizeof(float) * N * H * W * C, hipMemcpyHostToDevice);
    hipMemcpy(dw, w, sizeof(float) * R * S * C * M, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(dw_nhwc, dim3(80), dim3(256), 0, 0, dx, dw, dy, N, H, W, C, M, R, S, stride, pad, OH, OW);
    hipMemcpy(y, dy, sizeof(float) * total, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dw);
    hipFree(dy);
}
