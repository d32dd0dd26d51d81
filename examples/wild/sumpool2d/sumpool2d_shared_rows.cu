// sumpool2d_shared_rows.cu: k x k / stride k sum pooling over NCHW in two steps inside one
// block: the block first sums k input rows column-wise into dynamic shared memory
// (extern __shared__, W floats), then sums k adjacent columns. One block per (plane, output row).
#include <cuda_runtime.h>

__global__ void sumpool_rows_smem(const float* __restrict__ x, float* __restrict__ y, int H, int W, int k)
{
    extern __shared__ float colsum[];
    int OH = H / k, OW = W / k;
    int plane = blockIdx.y, oh = blockIdx.x;
    const float* src = x + ((size_t)plane * H + oh * k) * W;
    for (int w = threadIdx.x; w < W; w += blockDim.x) {
        float s = 0.0f;
        for (int i = 0; i < k; ++i)
            s += src[i * W + w];
        colsum[w] = s;
    }
    __syncthreads();
    for (int ow = threadIdx.x; ow < OW; ow += blockDim.x) {
        float s = 0.0f;
        for (int j = 0; j < k; ++j)
            s += colsum[ow * k + j];
        y[((size_t)plane * OH + oh) * OW + ow] = s;
    }
}

void sumpool_rows_smem_host(const float* x, float* y, int N, int C, int H, int W, int k)
{
    int OH = H / k, OW = W / k;
    float *dx, *dy;
    cudaMalloc(&dx, sizeof(float) * N * C * H * W);
    cudaMalloc(&dy, sizeof(float) * N * C * OH * OW);
    cudaMemcpy(dx, x, sizeof(float) * N * C * H * W, cudaMemcpyHostToDevice);
    sumpool_rows_smem<<<dim3(OH, N * C), 128, W * sizeof(float)>>>(dx, dy, H, W, k);
    cudaMemcpy(y, dy, sizeof(float) * N * C * OH * OW, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
}
