// leaky_relu_slope.cu: the negative slope is a float kernel parameter; 2-D indexing over a
// [rows][cols] matrix with a 2-D block (32 x 8) and a pitch (row stride) parameter.
#include <cuda_runtime.h>

__global__ void leaky_relu_2d(const float* x, float* y, int rows, int cols, int pitch, float slope)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        float v = x[r * pitch + c];
        y[r * pitch + c] = v >= 0.0f ? v : v * slope;
    }
}

void leaky_relu_2d_host(const float* x, float* y, int rows, int cols, int pitch, float slope)
{
    float *dx, *dy;
    size_t bytes = sizeof(float) * rows * pitch;
    cudaMalloc(&dx, bytes);
    cudaMalloc(&dy, bytes);
    cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice);
    dim3 block(32, 8);
    dim3 grid((cols + 31) / 32, (rows + 7) / 8);
    leaky_relu_2d<<<grid, block>>>(dx, dy, rows, cols, pitch, slope);
    cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
}
