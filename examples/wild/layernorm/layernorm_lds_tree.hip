// layernorm_lds_tree.hip: one work-group per row, both the mean and the variance reduced with
// an LDS tree of BLOCK floats; gamma/beta applied in the same
// kernel. Work-group size fixed at BLOCK = 256 (a power of two, required by the tree).
#include <hip/hip_runtime.h>

#define BLOCK 256

__device__ float lds_tree_sum(float v, float* lds)
{
    lds[hipThreadIdx_x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (hipThreadIdx_x < s)
            lds[hipThreadIdx_x] += lds[hipThreadIdx_x + s];
        __syncthreads();
    }
    float r = lds[0];
    __syncthreads();
    return r;
}

__global__ __launch_bounds__(BLOCK) void layernorm_rows_lds(const float* x, const float* gamma, const float* beta,
                                                            float* y, int cols, float eps)
{
    __shared__ float lds[BLOCK];
    const float* xr = x + (size_t)hipBlockIdx_x * cols;
    float* yr = y + (size_t)hipBlockIdx_x * cols;
    float s = 0.0f;
    for (int c = hipThreadIdx_x; c < cols; c += BLOCK) s += xr[c];
    float mean = lds_tree_sum(s, lds) / cols;
    float v = 0.0f;
    for (int c = hipThreadIdx_x; c < cols; c += BLOCK) {
        float d = xr[c] - mean;
        v += d * d;
    }
    float inv = 1.0f / sqrtf(lds_tree_sum(v, lds) / cols + eps);
    for (int c = hipThreadIdx_x; c < cols; c += BLOCK)
        yr[c] = (xr[c] - mean) * inv * gamma[c] + beta[c];
}

void layernorm_rows_lds_host(const float* x, const float* gamma, const float* beta, float* y, int rows, int cols)
{
    float *dx, *dg, *db, *dy;
    hipMalloc(&dx, sizeof(float) * rows * cols);
    hipMalloc(&dg, sizeof(float) * cols);
    hipMalloc(&db, sizeof(float) * cols);
    hipMalloc(&dy, sizeof(float) * rows * cols);
    hipMemcpy(dx, x, sizeof(float) * rows * cols, hipMemcpyHostToDevice);
    hipMemcpy(dg, gamma, sizeof(float) * cols, hipMemcpyHostToDevice);
    hipMemcpy(db, beta, sizeof(float) * cols, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(layernorm_rows_lds, dim3(rows), dim3(BLOCK), 0, 0, dx, dg, db, dy, cols, 1e-5f);
    hipMemcpy(y, dy, sizeof(float) * rows * cols, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dg);
    hipFree(db);
    hipFree(dy);
}
