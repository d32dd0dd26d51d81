// bmm_gridz.cu: batched matmul C[b] = A[b] . B[b]; the batch index is blockIdx.z, rows and
// columns come from a 2-D grid of 16x16 blocks. Pointers are offset per batch up front.
#include <cuda_runtime.h>

__global__ void bmm_kernel(const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K)
{
    const int b = blockIdx.z;
    const float* a = A + (size_t)b * M * K;
    const float* bb = B + (size_t)b * K * N;
    float* c = C + (size_t)b * M * N;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || j >= N)
        return;
    float acc = 0.f;
    for (int k = 0; k < K; k++)
        acc += a[i * K + k] * bb[k * N + j];
    c[i * N + j] = acc;
}

void bmm_host(const float* A, const float* B, float* C, int batch, int M, int N, int K)
{
    float *dA, *dB, *dC;
    cudaMalloc(&dA, sizeof(float) * batch * M * K);
    cudaMalloc(&dB, sizeof(float) * batch * K * N);
    cudaMalloc(&dC, sizeof(float) * batch * M * N);
    cudaMemcpy(dA, A, sizeof(float) * batch * M * K, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, sizeof(float) * batch * K * N, cudaMemcpyHostToDevice);
    dim3 block(16, 16, 1);
    dim3 grid((N + 15) / 16, (M + 15) / 16, batch);
    bmm_kernel<<<grid, block>>>(dA, dB, dC, M, N, K);
    cudaMemcpy(C, dC, sizeof(float) * batch * M * N, cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}
