// batchnorm_infer_nchw.cu: inference batch norm on NCHW with running statistics,
// y = (x - mean[c]) * rsqrt(var[c] + eps) * gamma[c] + beta[c]; the channel of a flat index
// is (idx / HW) % C. Grid-stride loop, eps passed as a float.
#include <cuda_runtime.h>

__global__ void bn_infer(const float* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ var,
                         const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y,
                         int total, int C, int HW, float eps)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int c = (i / HW) % C;
        float inv = rsqrtf(var[c] + eps);
        y[i] = (x[i] - mean[c]) * inv * gamma[c] + beta[c];
    }
}

void bn_infer_host(const float* x, const float* mean, const float* var, const float* gamma, const float* beta,
                   float* y, int N, int C, int HW, float eps)
{
    int total = N * C * HW;
    float *dx, *dm, *dv, *dg, *db, *dy;
    cudaMalloc(&dx, sizeof(float) * total);
    cudaMalloc(&dm, sizeof(float) * C);
    cudaMalloc(&dv, sizeof(float) * C);
    cudaMalloc(&dg, sizeof(float) * C);
    cudaMalloc(&db, sizeof(float) * C);
    cudaMalloc(&dy, sizeof(float) * total);
    cudaMemcpy(dx, x, sizeof(float) * total, cudaMemcpyHostToDevice);
    cudaMemcpy(dm, mean, sizeof(float) * C, cudaMemcpyHostToDevice);
    cudaMemcpy(dv, var, sizeof(float) * C, cudaMemcpyHostToDevice);
    cudaMemcpy(dg, gamma, sizeof(float) * C, cudaMemcpyHostToDevice);
    cudaMemcpy(db, beta, sizeof(float) * C, cudaMemcpyHostToDevice);
    bn_infer<<<128, 256>>>(dx, dm, dv, dg, db, dy, total, C, HW, eps);
    cudaMemcpy(y, dy, sizeof(float) * total, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dm);
    cudaFree(dv);
    cudaFree(dg);
    cudaFree(db);
    cudaFree(dy);
}
