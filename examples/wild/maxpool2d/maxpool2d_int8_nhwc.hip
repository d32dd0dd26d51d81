// maxpool2d_int8_nhwc.hip: int8 NHWC max pooling 2x2 / stride 2 (quantized models); one
// work-item per output channel value, channels fastest. Starts from the first tap.
#include <hip/hip_runtime.h>
#include <stdint.h>

__global__ void maxpool_i8_nhwc(const int8_t* x, int8_t* y, int N, int H, int W, int C)
{
    int OH = H / 2, OW = W / 2;
    int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    if (i >= N * OH * OW * C) return;
    int c = i % C;
    int ow = (i / C) % OW;
    int oh = (i / (C * OW)) % OH;
    int n = i / (C * OW * OH);
    const int8_t* p = x + ((n * H + oh * 2) * W + ow * 2) * C + c;
    int8_t m = p[0];
    m = max(m, p[C]);
    m = max(m, p[W * C]);
    m = max(m, p[W * C + C]);
    y[i] = m;
}

void maxpool_i8_nhwc_host(const int8_t* x, int8_t* y, int N, int H, int W, int C)
{
    int total = N * (H / 2) * (W / 2) * C;
    int8_t *dx, *dy;
    hipMalloc(&dx, N * H * W * C);
    hipMalloc(&dy, total);
    hipMemcpy(dx, x, N * H * W * C, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(maxpool_i8_nhwc, dim3((total + 127) / 128), dim3(128), 0, 0, dx, dy, N, H, W, C);
    hipMemcpy(y, dy, total, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dy);
}
