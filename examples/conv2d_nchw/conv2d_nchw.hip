// conv2d_nchw (hip): valid 2-D convolution in NCHW layout, LDS tiled.
//
// input [N][Cin][H][W], weight [Cout][Cin][KH][KW] -> output [N][Cout][Ho][Wo].
// A 16 x 16 block (four 64-wide wavefronts) computes a 16 x 16 patch of one output plane;
// blockIdx.z selects the plane (n * Cout + co). Per input channel the block stages the
// patch's receptive field (patch plus KH-1 / KW-1 halo, stretched by the stride) in LDS,
// and the KH*KW filter taps of (co, ci) in a second small LDS array, then synchronizes and
// accumulates from LDS. Staging is guarded at the image border; outputs past the plane
// edge are not written.
// Dynamic LDS bytes = (((TILE-1)*stride + KH) * ((TILE-1)*stride + KW) + KH*KW) * sizeof(float).
#include <hip/hip_runtime.h>

#define TILE 16

__global__ void conv2d_nchw(const float *input, const float *weight, float *output,
                            int N, int Cin, int H, int W, int Cout, int KH, int KW, int stride)
{
    extern __shared__ float lds[];

    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int plane = blockIdx.z;
    int n = plane / Cout;
    int co = plane % Cout;
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int wo = blockIdx.x * TILE + tx;
    int ho = blockIdx.y * TILE + ty;

    int span_h = (TILE - 1) * stride + KH;      // rows of the staged receptive field
    int span_w = (TILE - 1) * stride + KW;      // columns of the staged receptive field
    int row0 = blockIdx.y * TILE * stride;
    int col0 = blockIdx.x * TILE * stride;
    float *field = lds;                         // [span_h][span_w]
    float *taps = lds + span_h * span_w;        // [KH][KW] for the current (co, ci)
    int lane = ty * TILE + tx;
    bool active = (ho < Ho) && (wo < Wo);

    float sum = 0.0f;
    for (int ci = 0; ci < Cin; ++ci) {
        const float *src = input + ((long)n * Cin + ci) * H * W;
        for (int e = lane; e < span_h * span_w; e += TILE * TILE) {
            int r = row0 + e / span_w;
            int c = col0 + e % span_w;
            field[e] = (r < H && c < W) ? src[r * W + c] : 0.0f;
        }
        for (int e = lane; e < KH * KW; e += TILE * TILE)
            taps[e] = weight[((long)co * Cin + ci) * KH * KW + e];
        __syncthreads();

        if (active) {
            const float *win = field + ty * stride * span_w + tx * stride;
            for (int kh = 0; kh < KH; ++kh)
                for (int kw = 0; kw < KW; ++kw)
                    sum += win[kh * span_w + kw] * taps[kh * KW + kw];
        }
        __syncthreads();
    }

    if (active)
        output[(((long)n * Cout + co) * Ho + ho) * Wo + wo] = sum;
}

extern "C" void conv2d_nchw_host(const float *input, const float *weight, float *output,
                                 int N, int Cin, int H, int W, int Cout, int KH, int KW, int stride)
{
    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    size_t in_bytes = (size_t)N * Cin * H * W * sizeof(float);
    size_t w_bytes = (size_t)Cout * Cin * KH * KW * sizeof(float);
    size_t out_bytes = (size_t)N * Cout * Ho * Wo * sizeof(float);

    float *d_in, *d_w, *d_out;
    hipMalloc((void **)&d_in, in_bytes);
    hipMalloc((void **)&d_w, w_bytes);
    hipMalloc((void **)&d_out, out_bytes);
    hipMemcpy(d_in, input, in_bytes, hipMemcpyHostToDevice);
    hipMemcpy(d_w, weight, w_bytes, hipMemcpyHostToDevice);

    dim3 block(TILE, TILE, 1);
    dim3 grid((Wo + TILE - 1) / TILE, (Ho + TILE - 1) / TILE, N * Cout);
    size_t lds_bytes = (size_t)(((TILE - 1) * stride + KH) * ((TILE - 1) * stride + KW) + KH * KW)
                       * sizeof(float);
    hipLaunchKernelGGL(conv2d_nchw, grid, block, lds_bytes, 0,
                       d_in, d_w, d_out, N, Cin, H, W, Cout, KH, KW, stride);
    hipDeviceSynchronize();

    hipMemcpy(output, d_out, out_bytes, hipMemcpyDeviceToHost);
    hipFree(d_in);
    hipFree(d_w);
    hipFree(d_out);
}
