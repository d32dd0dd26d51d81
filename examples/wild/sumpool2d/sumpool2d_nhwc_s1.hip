// sumpool2d_nhwc_s1.hip: NHWC sum pooling, 3x3 window (macro), stride 1, zero padding 1 so the
// output keeps H x W; channels are the fastest index, one work-item per output element with
// a 64-bit flat index.
#include <hip/hip_runtime.h>

#define WIN 3
#define HALO 1

__global__ __launch_bounds__(256) void sumpool3_nhwc(const float* __restrict__ x, float* __restrict__ y,
                                                     int N, int H, int W, int C)
{
    long i = (long)hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    long total = (long)N * H * W * C;
    if (i >= total) return;
    int c = i % C;
    int w = (i / C) % W;
    int h = (i / ((long)C * W)) % H;
    int n = i / ((long)C * W * H);
    float s = 0.0f;
    for (int dh = -HALO; dh <= HALO; ++dh) {
        int hh = h + dh;
        if (hh < 0 || hh >= H) continue;
        for (int dw = -HALO; dw <= HALO; ++dw) {
            int ww = w + dw;
            if (ww < 0 || ww >= W) continue;
            s += x[(((long)n * H + hh) * W + ww) * C + c];
        }
    }
    y[i] = s;
}

void sumpool3_nhwc_host(const float* x, float* y, int N, int H, int W, int C)
{
    long total = (long)N * H * W * C;
    float *dx, *dy;
    hipMalloc(&dx, sizeof(float) * total);
    hipMalloc(&dy, sizeof(float) * total);
    hipMemcpy(dx, x, sizeof(float) * total, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(sumpool3_nhwc, dim3((unsigned)((total + 255) / 256)), dim3(256), 0, 0, dx, dy, N, H, W, C);
    hipMemcpy(y, dy, sizeof(float) * total, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dy);
}
