// argmax_rows_smem.cu: index of the largest value in each row (first one on ties), one block
// per row; (value, index) pairs reduced by a shared-memory tree in two __shared__ arrays.
// Output int32 (int64 in PyTorch; int32 here).
#include <cuda_runtime.h>

#define THREADS 128

__device__ __forceinline__ bool better(float v, int i, float bv, int bi)
{
    return v > bv || (v == bv && i < bi);
}

__global__ void argmax_rows(const float* __restrict__ x, int* __restrict__ idx_out, int cols)
{
    __shared__ float sv[THREADS];
    __shared__ int si[THREADS];
    const float* row = x + (size_t)blockIdx.x * cols;
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        float v = row[c];
        if (better(v, c, bv, bi)) { bv = v; bi = c; }
    }
    sv[threadIdx.x] = bv;
    si[threadIdx.x] = bi;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && better(sv[threadIdx.x + s], si[threadIdx.x + s], sv[threadIdx.x], si[threadIdx.x])) {
            sv[threadIdx.x] = sv[threadIdx.x + s];
            si[threadIdx.x] = si[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        idx_out[blockIdx.x] = si[0];
}

void argmax_rows_host(const float* x, int* idx_out, int rows, int cols)
{
    float* dx;
    int* di;
    cudaMalloc(&dx, sizeof(float) * rows * cols);
    cudaMalloc(&di, sizeof(int) * rows);
    cudaMemcpy(dx, x, sizeof(float) * rows * cols, cudaMemcpyHostToDevice);
    argmax_rows<<<rows, THREADS>>>(dx, di, cols);
    cudaMemcpy(idx_out, di, sizeof(int) * rows, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(di);
}
