// dense_lds_wt.hip: y = x . W^T + b with W stored [out][in]; a 16x16 work-group computes a
// 16x16 tile of y, staging x and W (read transposed) through LDS, bias added at the end.
#include <hip/hip_runtime.h>

#define T 16

__global__ void dense_tiled(const float* __restrict__ x, const float* __restrict__ W,
                            const float* __restrict__ b, float* __restrict__ y,
                            int batch, int in_f, int out_f)
{
    __shared__ float xs[T][T];
    __shared__ float ws[T][T];
    const int o = blockIdx.x * T + threadIdx.x;   // output feature
    const int r = blockIdx.y * T + threadIdx.y;   // batch row
    float acc = 0.0f;
    for (int k0 = 0; k0 < in_f; k0 += T) {
        xs[threadIdx.y][threadIdx.x] = (r < batch && k0 + threadIdx.x < in_f) ? x[r * in_f + k0 + threadIdx.x] : 0.0f;
        int wo = blockIdx.x * T + threadIdx.y;
        ws[threadIdx.y][threadIdx.x] = (wo < out_f && k0 + threadIdx.x < in_f) ? W[wo * in_f + k0 + threadIdx.x] : 0.0f;
        __syncthreads();
        for (int k = 0; k < T; ++k)
            acc += xs[threadIdx.y][k] * ws[threadIdx.x][k];
        __syncthreads();
    }
    if (r < batch && o < out_f)
        y[r * out_f + o] = acc + b[o];
}

void dense_tiled_host(const float* x, const float* W, const float* b, float* y, int batch, int in_f, int out_f)
{
    float *dx, *dW, *db, *dy;
    hipMalloc(&dx, sizeof(float) * batch * in_f);
    hipMalloc(&dW, sizeof(float) * out_f * in_f);
    hipMalloc(&db, sizeof(float) * out_f);
    hipMalloc(&dy, sizeof(float) * batch * out_f);
    hipMemcpy(dx, x, sizeof(float) * batch * in_f, hipMemcpyHostToDevice);
    hipMemcpy(dW, W, sizeof(float) * out_f * in_f, hipMemcpyHostToDevice);
    hipMemcpy(db, b, sizeof(float) * out_f, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(dense_tiled, dim3((out_f + T - 1) / T, (batch + T - 1) / T), dim3(T, T), 0, 0,
                       dx, dW, db, dy, batch, in_f, out_f);
    hipMemcpy(y, dy, sizeof(float) * batch * out_f, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dW);
    hipFree(db);
    hipFree(dy);
}
