// Two arrays carved out of one dynamic shared-memory buffer: s_a[i] = x[i] * 2, s_b[i] = x[i] + 1,
// then out[i] = s_a[(i + 1) % bs] + s_b[bs - 1 - i] within each block.
#include <cuda_runtime.h>
extern __shared__ float smem[];
__global__ void dyn_shared(const float* x, float* out, int n) {
  float* s_a = smem;
  float* s_b = smem + blockDim.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int t = threadIdx.x, bs = blockDim.x;
  s_a[t] = x[i] * 2.0f;
  s_b[t] = x[i] + 1.0f;
  __syncthreads();
  out[i] = s_a[(t + 1) % bs] + s_b[bs - 1 - t];
}
