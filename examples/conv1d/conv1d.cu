// conv1d (cuda): valid 1-D convolution, batched, strided; one thread per output element.
//
// input [N][Cin][L], weight [Cout][Cin][KW] -> output [N][Cout][Lo], Lo = (L-KW)/stride + 1.
// 2-D grid: blockIdx.x * blockDim.x + threadIdx.x is the output position lo,
// blockIdx.y is the output row n * Cout + co.
#include <cuda_runtime.h>

#define BLOCK 64

__global__ void conv1d(const float *input, const float *weight, float *output,
                       int N, int Cin, int L, int Cout, int KW, int stride)
{
    int Lo = (L - KW) / stride + 1;
    int lo = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y;                // n * Cout + co
    if (lo >= Lo || row >= N * Cout)
        return;
    int n = row / Cout;
    int co = row % Cout;

    const float *x = input + (long)n * Cin * L + lo * stride;
    const float *w = weight + (long)co * Cin * KW;
    float acc = 0.0f;
    for (int ci = 0; ci < Cin; ++ci)
        for (int k = 0; k < KW; ++k)
            acc += x[ci * L + k] * w[ci * KW + k];
    output[(long)row * Lo + lo] = acc;
}

extern "C" void conv1d_host(const float *input, const float *weight, float *output,
                            int N, int Cin, int L, int Cout, int KW, int stride)
{
    int Lo = (L - KW) / stride + 1;
    size_t in_bytes = (size_t)N * Cin * L * sizeof(float);
    size_t w_bytes = (size_t)Cout * Cin * KW * sizeof(float);
    size_t out_bytes = (size_t)N * Cout * Lo * sizeof(float);

    float *d_in, *d_w, *d_out;
    cudaMalloc((void **)&d_in, in_bytes);
    cudaMalloc((void **)&d_w, w_bytes);
    cudaMalloc((void **)&d_out, out_bytes);
    cudaMemcpy(d_in, input, in_bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(d_w, weight, w_bytes, cudaMemcpyHostToDevice);

    dim3 block(BLOCK, 1, 1);
    dim3 grid((Lo + BLOCK - 1) / BLOCK, N * Cout, 1);
    conv1d<<<grid, block>>>(d_in, d_w, d_out, N, Cin, L, Cout, KW, stride);
    cudaDeviceSynchronize();

    cudaMemcpy(output, d_out, out_bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_in);
    cudaFree(d_w);
    cudaFree(d_out);
}
