// Reverse each block's slice of `x` through static shared memory (barrier test).
#include <cuda_runtime.h>
#define BS 128
__global__ void block_reverse(const float* x, float* y, int n) {
  __shared__ float tile[BS];
  int base = blockIdx.x * BS;
  int t = threadIdx.x;
  int len = min(BS, n - base);          // last block may be partial
  if (t < len) tile[t] = x[base + t];
  __syncthreads();
  if (t < len) y[base + t] = tile[len - 1 - t];
}
