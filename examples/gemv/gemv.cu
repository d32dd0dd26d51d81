// gemv: y[M] = A[M][K] . x[K], float32, row-major.
// One warp per row: the 32 lanes stride over K (coalesced reads of the row), then the
// 32 partial sums are folded with __shfl_down_sync in log2(32) = 5 steps; lane 0 ends up
// with the full dot product. A block holds 4 warps (blockDim = 32 x 4), i.e. 4 rows.
#include <cuda_runtime.h>

#define WARP 32
#define ROWS_PER_BLOCK 4

extern "C" __global__ void gemv(const float* A, const float* x, float* y, int M, int K) {
    const int lane = threadIdx.x;
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= M)
        return;  // the whole warp shares `row`, so full-mask shuffles below stay valid

    const float* a = A + (size_t)row * K;
    float sum = 0.0f;
    for (int k = lane; k < K; k += WARP)
        sum += a[k] * x[k];

    for (int offset = WARP / 2; offset > 0; offset >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);

    if (lane == 0)
        y[row] = sum;
}

extern "C" void gemv_host(const float* A, const float* x, float* y, int M, int K) {
    float *dA, *dx, *dy;
    cudaMalloc((void**)&dA, (size_t)M * K * sizeof(float));
    cudaMalloc((void**)&dx, (size_t)K * sizeof(float));
    cudaMalloc((void**)&dy, (size_t)M * sizeof(float));
    cudaMemcpy(dA, A, (size_t)M * K * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x, (size_t)K * sizeof(float), cudaMemcpyHostToDevice);

    dim3 block(WARP, ROWS_PER_BLOCK, 1);
    dim3 grid((M + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 1, 1);
    gemv<<<grid, block>>>(dA, dx, dy, M, K);

    cudaMemcpy(y, dy, (size_t)M * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dx);
    cudaFree(dy);
}
