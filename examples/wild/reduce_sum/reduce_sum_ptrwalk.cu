// reduce_sum_ptrwalk.cu: row sums in the style of the classic "optimizing parallel reduction"
// kernels: the row is walked with a pointer (p < end), the shared tree stops at 64 and the
// last warp finishes on a volatile pointer with __syncwarp around each write. THREADS = 256.
#include <cuda_runtime.h>

#define THREADS 256

__device__ void warp_tail(volatile float* s, int tid)
{
    // read, sync, write, sync: without the split, lane i would read s[i + k] while lane i + k
    // writes it (lanes of a warp are not in lockstep since Volta)
    for (int k = 32; k > 0; k >>= 1) {
        float v = s[tid] + s[tid + k];
        __syncwarp();
        s[tid] = v;
        __syncwarp();
    }
}

__global__ void row_sum_ptr(const float* in, float* out, int cols)
{
    __shared__ float sdata[THREADS];
    const int tid = threadIdx.x;
    const float* begin = in + (size_t)blockIdx.x * cols;
    const float* end = begin + cols;
    float acc = 0.0f;
    for (const float* p = begin + tid; p < end; p += THREADS)
        acc += *p;
    sdata[tid] = acc;
    __syncthreads();
    for (unsigned s = THREADS / 2; s > 32; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32)
        warp_tail(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

void row_sum_ptr_host(const float* in, float* out, int rows, int cols)
{
    float *din, *dout;
    cudaMalloc(&din, sizeof(float) * rows * cols);
    cudaMalloc(&dout, sizeof(float) * rows);
    cudaMemcpy(din, in, sizeof(float) * rows * cols, cudaMemcpyHostToDevice);
    row_sum_ptr<<<rows, THREADS>>>(din, dout, cols);
    cudaMemcpy(out, dout, sizeof(float) * rows, cudaMemcpyDeviceToHost);
    cudaFree(din);
    cudaFree(dout);
}
