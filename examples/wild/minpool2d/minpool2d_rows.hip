// minpool2d_rows.hip: NCHW min pooling (k x k, stride k) where each work-item produces one
// whole output row; hipBlockIdx_x selects the plane, work-items pick rows, early return for
// rows past OH. A __device__ helper computes one window.
#include <hip/hip_runtime.h>

__device__ float window_min(const float* p, int W, int k)
{
    float m = p[0];
    for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j)
            m = fminf(m, p[i * W + j]);
    return m;
}

__global__ void minpool_rows(const float* in, float* out, int H, int W, int k)
{
    int OH = H / k, OW = W / k;
    int oh = hipThreadIdx_x;
    if (oh >= OH) return;
    const float* plane = in + (size_t)hipBlockIdx_x * H * W;
    float* orow = out + ((size_t)hipBlockIdx_x * OH + oh) * OW;
    for (int ow = 0; ow < OW; ++ow)
        orow[ow] = window_min(plane + oh * k * W + ow * k, W, k);
}

void minpool_rows_host(const float* in, float* out, int N, int C, int H, int W, int k)
{
    int OH = H / k, OW = W / k;
    float *di, *dout;
    hipMalloc(&di, sizeof(float) * N * C * H * W);
    hipMalloc(&dout, sizeof(float) * N * C * OH * OW);
    hipMemcpy(di, in, sizeof(float) * N * C * H * W, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(minpool_rows, dim3(N * C), dim3(64), 0, 0, di, dout, H, W, k);
    hipMemcpy(out, dout, sizeof(float) * N * C * OH * OW, hipMemcpyDeviceToHost);
    hipFree(di);
    hipFree(dout);
}
