// A CUDA host launcher: allocate, copy in, launch with <<<>>>, check, copy out, free.
#include <cuda_runtime.h>
#include <cstdio>
__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int saxpy_host(float a, const float* x, float* y, int n) {
  float *dx = nullptr, *dy = nullptr;
  if (cudaMalloc(&dx, n * sizeof(float)) != cudaSuccess) return 1;
  cudaMalloc((void**)&dy, n * sizeof(float));
  cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, n * sizeof(float), cudaMemcpyHostToDevice);
  dim3 block(128);
  dim3 grid((n + block.x - 1) / block.x);
  saxpy<<<grid, block>>>(a, dx,
                         dy, n);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) { printf("launch failed: %s\n", cudaGetErrorString(e)); return 2; }
  cudaDeviceSynchronize();
  cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  return 0;
}
