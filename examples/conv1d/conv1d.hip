// conv1d (hip): valid 1-D convolution, batched, strided.
//
// input [N][Cin][L], weight [Cout][Cin][KW] -> output [N][Cout][Lo], Lo = (L-KW)/stride + 1.
// blockIdx.y is the output row n * Cout + co; the block's 64 lanes (one wavefront) cover
// 64 consecutive output positions. Every lane of a block uses the same filter co, so the
// block first stages that filter's Cin*KW weights in LDS (dynamic, Cin*KW*sizeof(float)
// bytes), synchronizes, then each lane accumulates its own window.
#include <hip/hip_runtime.h>

#define BLOCK 64

__global__ void conv1d(const float *input, const float *weight, float *output,
                       int N, int Cin, int L, int Cout, int KW, int stride)
{
    extern __shared__ float filt[];             // [Cin][KW] of filter co

    int Lo = (L - KW) / stride + 1;
    int row = blockIdx.y;
    int n = row / Cout;
    int co = row % Cout;
    int lo = blockIdx.x * BLOCK + threadIdx.x;

    for (int e = threadIdx.x; e < Cin * KW; e += BLOCK)
        filt[e] = weight[(long)co * Cin * KW + e];
    __syncthreads();

    if (lo < Lo) {
        const float *x = input + (long)n * Cin * L + lo * stride;
        float sum = 0.0f;
        for (int ci = 0; ci < Cin; ++ci)
            for (int k = 0; k < KW; ++k)
                sum += x[ci * L + k] * filt[ci * KW + k];
        output[(long)row * Lo + lo] = sum;
    }
}

extern "C" void conv1d_host(const float *input, const float *weight, float *output,
                            int N, int Cin, int L, int Cout, int KW, int stride)
{
    int Lo = (L - KW) / stride + 1;
    size_t in_bytes = (size_t)N * Cin * L * sizeof(float);
    size_t w_bytes = (size_t)Cout * Cin * KW * sizeof(float);
    size_t out_bytes = (size_t)N * Cout * Lo * sizeof(float);

    float *d_in, *d_w, *d_out;
    hipMalloc((void **)&d_in, in_bytes);
    hipMalloc((void **)&d_w, w_bytes);
    hipMalloc((void **)&d_out, out_bytes);
    hipMemcpy(d_in, input, in_bytes, hipMemcpyHostToDevice);
    hipMemcpy(d_w, weight, w_bytes, hipMemcpyHostToDevice);

    dim3 block(BLOCK, 1, 1);
    dim3 grid((Lo + BLOCK - 1) / BLOCK, N * Cout, 1);
    hipLaunchKernelGGL(conv1d, grid, block, (size_t)Cin * KW * sizeof(float), 0,
                       d_in, d_w, d_out, N, Cin, L, Cout, KW, stride);
    hipDeviceSynchronize();

    hipMemcpy(output, d_out, out_bytes, hipMemcpyDeviceToHost);
    hipFree(d_in);
    hipFree(d_w);
    hipFree(d_out);
}
