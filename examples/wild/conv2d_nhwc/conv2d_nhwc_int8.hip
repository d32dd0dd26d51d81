// conv2d_nhwc_int8.hip: quantized NHWC convolution, int8 activations and weights
// ([K][R][S][C], OHWI), int32 accumulation, per-tensor requantization by a multiplier and
// right shift, saturated to int8. Valid convolution, stride 1; one work-item per output.
#include <hip/hip_runtime.h>
#include <stdint.h>

__device__ __forceinline__ int8_t requant(int32_t acc, int32_t mult, int shift)
{
    int64_t v = ((int64_t)acc * mult) >> shift;
    v = v < -128 ? -128 : (v > 127 ? 127 : v);
    return (int8_t)v;
}

__global__ void qconv_nhwc(const int8_t* __restrict__ x, const int8_t* __restrict__ w, int8_t* __restrict__ y,
                           int N, int H, int W, int C, int K, int R, int S, int32_t mult, int shift)
{
    const int P = H - R + 1, Q = W - S + 1;
    int idx = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    if (idx >= N * P * Q * K) return;
    int k = idx % K;
    int q = (idx / K) % Q;
    int p = (idx / (K * Q)) % P;
    int n = idx / (K * Q * P);
    int32_t acc = 0;
    for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
            const int8_t* xp = x + ((n * H + p + r) * W + q + s) * C;
            const int8_t* wp = w + ((k * R + r) * S + s) * C;
            for (int c = 0; c < C; ++c)
                acc += (int32_t)xp[c] * (int32_t)wp[c];
        }
    y[idx] = requant(acc, mult, shift);
}

void qconv_nhwc_host(const int8_t* x, const int8_t* w, int8_t* y, int N, int H, int W, int C, int K, int R, int S,
                     int32_t mult, int shift)
{
    int P = H - R + 1, Q = W - S + 1;
    int8_t *dx, *dw, *dy;
    hipMalloc(&dx, N * H * W * C);
    hipMalloc(&dw, K * R * S * C);
    hipMalloc(&dy, N * P * Q * K);
    hipMemcpy(dx, x, N * H * W * C, hipMemcpyHostToDevice);
    hipMemcpy(dw, w, K * R * S * C, hipMemcpyHostToDevice);
    int total = N * P * Q * K;
    hipLaunchKernelGGL(qconv_nhwc, dim3((total + 255) / 256), dim3(256), 0, 0, dx, dw, dy, N, H, W, C, K, R, S, mult, shift);
    hipMemcpy(y, dy, total, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dw);
    hipFree(dy);
}
