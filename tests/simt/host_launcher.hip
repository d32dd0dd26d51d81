// A HIP host launcher using hipLaunchKernelGGL and a wave64 shuffle reduction.
#include <hip/hip_runtime.h>
__global__ void row_sum(const float* x, float* out, int cols) {
  float v = 0.f;
  for (int c = threadIdx.x; c < cols; c += warpSize) v += x[blockIdx.x * cols + c];
  for (int off = warpSize / 2; off > 0; off >>= 1) v += __shfl_down(v, off);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
int row_sum_host(const float* x, float* out, int rows, int cols) {
  float *dx, *dout;
  hipMalloc(&dx, rows * cols * sizeof(float));
  hipMalloc(&dout, rows * sizeof(float));
  hipMemcpy(dx, x, rows * cols * sizeof(float), hipMemcpyHostToDevice);
  hipLaunchKernelGGL(row_sum, dim3(rows), dim3(64), 0, 0, dx, dout, cols);
  if (hipGetLastError() != hipSuccess) return 2;
  hipDeviceSynchronize();
  hipMemcpy(out, dout, rows * sizeof(float), hipMemcpyDeviceToHost);
  hipFree(dx);
  hipFree(dout);
  return 0;
}
