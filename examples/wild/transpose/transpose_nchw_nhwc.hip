// transpose_nchw_nhwc.hip: layout change NCHW -> NHWC, one work-item per output element;
// the output's flat index is split into (n, h, w, c) with / and %.
#include <hip/hip_runtime.h>

__global__ void nchw_to_nhwc(const float* __restrict__ src, float* __restrict__ dst, int N, int C, int H, int W)
{
    int idx = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    int total = N * C * H * W;
    if (idx >= total) return;
    int c = idx % C;
    int w = (idx / C) % W;
    int h = (idx / (C * W)) % H;
    int n = idx / (C * W * H);
    dst[idx] = src[((n * C + c) * H + h) * W + w];
}

void nchw_to_nhwc_host(const float* src, float* dst, int N, int C, int H, int W)
{
    int total = N * C * H * W;
    float *ds, *dd;
    hipMalloc(&ds, total * sizeof(float));
    hipMalloc(&dd, total * sizeof(float));
    hipMemcpy(ds, src, total * sizeof(float), hipMemcpyHostToDevice);
    hipLaunchKernelGGL(nchw_to_nhwc, dim3((total + 255) / 256), dim3(256), 0, 0, ds, dd, N, C, H, W);
    hipMemcpy(dst, dd, total * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(ds);
    hipFree(dd);
}
