// gemm_fixed_lds.hip: all three sizes are compile-time macros (M_DIM x N_DIM x K_DIM), as in
// sample code that benchmarks one shape; LDS tiles of TILE x TILE, no edge checks needed
// because the sizes are multiples of the tile.
#include <hip/hip_runtime.h>

#define M_DIM 256
#define N_DIM 384
#define K_DIM 512
#define TILE 16

__global__ void gemm_fixed(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    int lx = hipThreadIdx_x, ly = hipThreadIdx_y;
    int row = hipBlockIdx_y * TILE + ly;
    int col = hipBlockIdx_x * TILE + lx;
    float acc = 0.0f;
    for (int t = 0; t < K_DIM / TILE; ++t) {
        sa[ly][lx] = a[row * K_DIM + t * TILE + lx];
        sb[ly][lx] = b[(t * TILE + ly) * N_DIM + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc = fmaf(sa[ly][k], sb[k][lx], acc);
        __syncthreads();
    }
    c[row * N_DIM + col] = acc;
}

void gemm_fixed_host(const float* a, const float* b, float* c)
{
    float *da, *db, *dc;
    hipMalloc(&da, M_DIM * K_DIM * sizeof(float));
    hipMalloc(&db, K_DIM * N_DIM * sizeof(float));
    hipMalloc(&dc, M_DIM * N_DIM * sizeof(float));
    hipMemcpy(da, a, M_DIM * K_DIM * sizeof(float), hipMemcpyHostToDevice);
    hipMemcpy(db, b, K_DIM * N_DIM * sizeof(float), hipMemcpyHostToDevice);
    hipLaunchKernelGGL(gemm_fixed, dim3(N_DIM / TILE, M_DIM / TILE), dim3(TILE, TILE), 0, 0, da, db, dc);
    hipMemcpy(c, dc, M_DIM * N_DIM * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(da);
    hipFree(db);
    hipFree(dc);
}
