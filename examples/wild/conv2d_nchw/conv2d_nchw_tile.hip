// conv2d_nchw_tile.hip: NCHW convolution, 2-D work-groups over the output plane (16x16) and
// blockIdx.z = n * K + k; an input patch of (16 + R - 1)^2 per channel is staged in LDS
// (fixed maximum filter size FMAX), stride 1, no padding.
#include <hip/hip_runtime.h>

#define TW 16
#define FMAX 5

__global__ void conv2d_tile(const float* in, const float* wt, float* out,
                            int C, int H, int W, int K, int R, int S)
{
    __shared__ float patch[TW + FMAX - 1][TW + FMAX - 1];
    const int P = H - R + 1, Q = W - S + 1;
    const int n = blockIdx.z / K, k = blockIdx.z % K;
    const int q0 = blockIdx.x * TW, p0 = blockIdx.y * TW;
    const int tx = threadIdx.x, ty = threadIdx.y;
    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* img = in + ((size_t)n * C + c) * H * W;
        for (int y = ty; y < TW + R - 1; y += TW)
            for (int x = tx; x < TW + S - 1; x += TW) {
                int h = p0 + y, w = q0 + x;
                patch[y][x] = (h < H && w < W) ? img[h * W + w] : 0.0f;
            }
        __syncthreads();
        const float* f = wt + ((size_t)k * C + c) * R * S;
        for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s)
                acc += patch[ty + r][tx + s] * f[r * S + s];
        __syncthreads();
    }
    int p = p0 + ty, q = q0 + tx;
    if (p < P && q < Q)
        out[(((size_t)n * K + k) * P + p) * Q + q] = acc;
}

void conv2d_tile_host(const float* in, const float* wt, float* out, int N, int C, int H, int W, int K, int R, int S)
{
    int P = H - R + 1, Q = W - S + 1;
    float *di, *dw, *dout;
    hipMalloc(&di, sizeof(float) * N * C * H * W);
    hipMalloc(&dw, sizeof(float) * K * C * R * S);
    hipMalloc(&dout, sizeof(float) * N * K * P * Q);
    hipMemcpy(di, in, sizeof(float) * N * C * H * W, hipMemcpyHostToDevice);
    hipMemcpy(dw, wt, sizeof(float) * K * C * R * S, hipMemcpyHostToDevice);
    dim3 grid((Q + TW - 1) / TW, (P + TW - 1) / TW, N * K);
    hipLaunchKernelGGL(conv2d_tile, grid, dim3(TW, TW), 0, 0, di, dw, dout, C, H, W, K, R, S);
    hipMemcpy(out, dout, sizeof(float) * N * K * P * Q, hipMemcpyDeviceToHost);
    hipFree(di);
    hipFree(dw);
    hipFree(dout);
}
