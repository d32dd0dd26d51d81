// Row softmax: one block of 256 threads per row, shared-memory tree reductions
// (21 __syncthreads() per block).  Used by benchmarks/bench_simt_softmax.py and the tests.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float red[THREADS];
  int row = blockIdx.x;
  int t = threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float* yr = y + (size_t)row * cols;

  float m = -INFINITY;
  for (int c = t; c < cols; c += THREADS) m = fmaxf(m, xr[c]);
  red[t] = m;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = fmaxf(red[t], red[t + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();

  float sum = 0.f;
  for (int c = t; c < cols; c += THREADS) sum += expf(xr[c] - m);
  red[t] = sum;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    __syncthreads();
  }
  float inv = 1.0f / red[0];
  __syncthreads();
  for (int c = t; c < cols; c += THREADS) yr[c] = expf(xr[c] - m) * inv;
  __syncthreads();
}
