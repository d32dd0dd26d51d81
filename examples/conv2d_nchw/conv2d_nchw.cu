// conv2d_nchw (cuda): valid 2-D convolution in NCHW layout, shared-memory tiled.
//
// input [N][Cin][H][W], weight [Cout][Cin][KH][KW] -> output [N][Cout][Ho][Wo],
// Ho = (H-KH)/stride + 1, Wo = (W-KW)/stride + 1.
//
// Each block owns a TILE x TILE patch of output pixels of one output plane (n, co):
// blockIdx.x / blockIdx.y pick the patch, blockIdx.z = n * Cout + co. For every input
// channel the block first copies the input region that patch reads (the patch plus its
// halo: (TILE-1)*stride + KH rows by (TILE-1)*stride + KW columns) into dynamic shared
// memory, synchronizes, and then every thread accumulates its KH x KW window from shared
// memory. Rows/columns that fall outside the image are skipped while staging; threads
// whose output pixel lies outside the plane still help stage but write nothing.
// Dynamic shared bytes = ((TILE-1)*stride + KH) * ((TILE-1)*stride + KW) * sizeof(float).
#include <cuda_runtime.h>

#define TILE 16

__global__ void conv2d_nchw(const float *input, const float *weight, float *output,
                            int N, int Cin, int H, int W, int Cout, int KH, int KW, int stride)
{
    extern __shared__ float tile[];

    int Ho = (H - KH) / stride + 1;
    int Wo = (W - KW) / stride + 1;
    int n = blockIdx.z / Cout;
    int co = blockIdx.z % Cout;

    int wo = blockIdx.x * TILE + threadIdx.x;   // this thread's output column
    int ho = blockIdx.y * TILE + threadIdx.y;   // this thread's output row

    // input region read by the block: origin and extent (including the halo)
    int in_row0 = blockIdx.y * TILE * stride;
    int in_col0 = blockIdx.x * TILE * stride;
    int tile_h = (TILE - 1) * stride + KH;
    int tile_w = (TILE - 1) * stride + KW;
    int tid = threadIdx.y * TILE + threadIdx.x;

    float acc = 0.0f;
    for (int ci = 0; ci < Cin; ++ci) {
        const float *plane = input + ((long)n * Cin + ci) * H * W;
        // cooperative, guarded copy of the region into shared memory
        for (int i = tid; i < tile_h * tile_w; i += TILE * TILE) {
            int r = in_row0 + i / tile_w;
            int c = in_col0 + i % tile_w;
            if (r < H && c < W)
                tile[i] = plane[r * W + c];
        }
        __syncthreads();

        if (ho < Ho && wo < Wo) {
            const float *w = weight + ((long)co * Cin + ci) * KH * KW;
            // top-left of this thread's window inside the shared tile
            int base = (threadIdx.y * stride) * tile_w + threadIdx.x * stride;
            for (int kh = 0; kh < KH; ++kh)
                for (int kw = 0; kw < KW; ++kw)
                    acc += tile[base + kh * tile_w + kw] * w[kh * KW + kw];
        }
        __syncthreads();   // the tile is overwritten by the next channel
    }

    if (ho < Ho && wo < Wo)
        output[(((long)n * Cout + co) * Ho + ho) * Wo + wo] = acc;
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
    cudaMalloc((void **)&d_in, in_bytes);
    cudaMalloc((void **)&d_w, w_bytes);
    cudaMalloc((void **)&d_out, out_bytes);
    cudaMemcpy(d_in, input, in_bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(d_w, weight, w_bytes, cudaMemcpyHostToDevice);

    dim3 block(TILE, TILE, 1);
    dim3 grid((Wo + TILE - 1) / TILE, (Ho + TILE - 1) / TILE, N * Cout);
    size_t smem = (size_t)((TILE - 1) * stride + KH) * ((TILE - 1) * stride + KW) * sizeof(float);
    conv2d_nchw<<<grid, block, smem>>>(d_in, d_w, d_out, N, Cin, H, W, Cout, KH, KW, stride);
    cudaDeviceSynchronize();

    cudaMemcpy(output, d_out, out_bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_in);
    cudaFree(d_w);
    cudaFree(d_out);
}
