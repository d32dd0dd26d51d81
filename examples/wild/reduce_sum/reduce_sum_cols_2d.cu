// reduce_sum_cols_2d.cu: column sums of a [rows][cols] matrix (reduction over axis 0). A 32x8
// block covers 32 columns; the 8 thread rows stride down the matrix, then the 8 partial sums
// per column are folded through a padded __shared__ [8][33] array.
#include <cuda_runtime.h>

#define BX 32
#define BY 8

__global__ void colsum(const float* __restrict__ a, float* __restrict__ out, int rows, int cols)
{
    __shared__ float part[BY][BX + 1];
    int c = blockIdx.x * BX + threadIdx.x;
    float s = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += BY)
            s += a[(size_t)r * cols + c];
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    for (int h = BY / 2; h > 0; h >>= 1) {
        if (threadIdx.y < h)
            part[threadIdx.y][threadIdx.x] += part[threadIdx.y + h][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && c < cols)
        out[c] = part[0][threadIdx.x];
}

void colsum_host(const float* a, float* out, int rows, int cols)
{
    float *da, *dout;
    cudaMalloc(&da, sizeof(float) * rows * cols);
    cudaMalloc(&dout, sizeof(float) * cols);
    cudaMemcpy(da, a, sizeof(float) * rows * cols, cudaMemcpyHostToDevice);
    colsum<<<(cols + BX - 1) / BX, dim3(BX, BY)>>>(da, dout, rows, cols);
    cudaMemcpy(out, dout, sizeof(float) * cols, cudaMemcpyDeviceToHost);
    cudaFree(da);
    cudaFree(dout);
}
