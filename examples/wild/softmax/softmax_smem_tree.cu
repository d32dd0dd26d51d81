// softmax_smem_tree.cu: row softmax, one block per row, block size chosen at launch; the max
// and the sum are reduced with the classic shared-memory tree (halving stride, __syncthreads
// each step) in a dynamic extern __shared__ buffer of blockDim.x floats.
#include <cuda_runtime.h>

__global__ void softmax_tree(const float* __restrict__ in, float* __restrict__ out, int ncols)
{
    extern __shared__ float red[];
    const int tid = threadIdx.x;
    const float* x = in + (size_t)blockIdx.x * ncols;
    float* y = out + (size_t)blockIdx.x * ncols;

    float m = -INFINITY;
    for (int j = tid; j < ncols; j += blockDim.x)
        m = fmaxf(m, x[j]);
    red[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    const float rowmax = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int j = tid; j < ncols; j += blockDim.x) {
        float e = __expf(x[j] - rowmax);
        y[j] = e;
        sum += e;
    }
    red[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            red[tid] += red[tid + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int j = tid; j < ncols; j += blockDim.x)
        y[j] *= inv;
}

void softmax_tree_host(const float* in, float* out, int nrows, int ncols)
{
    float *din, *dout;
    size_t bytes = sizeof(float) * nrows * ncols;
    cudaMalloc(&din, bytes);
    cudaMalloc(&dout, bytes);
    cudaMemcpy(din, in, bytes, cudaMemcpyHostToDevice);
    int threads = 256;
    softmax_tree<<<nrows, threads, threads * sizeof(float)>>>(din, dout, ncols);
    cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost);
    cudaFree(din);
    cudaFree(dout);
}
