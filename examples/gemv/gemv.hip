// gemv: y[M] = A[M][K] . x[K], float32, row-major (HIP).
// One wavefront per row. On CDNA (gfx90a) a wavefront has 64 lanes, so the work-group is
// 64 x 4 (4 rows); lanes stride over K by 64 and the partial sums are folded with
// __shfl_down (HIP form: no mask argument) in log2(64) = 6 steps, starting at warpSize / 2.
// The kernel assumes blockDim.x == warpSize (wave64); for RDNA build with -mwavefrontsize64.
#include <hip/hip_runtime.h>

#define ROWS_PER_BLOCK 4

extern "C" __global__ void gemv(const float* A, const float* x, float* y, int M, int K) {
    const int lane = threadIdx.x;
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= M)
        return;  // uniform across the wavefront of this row

    const float* a = A + (size_t)row * K;
    float sum = 0.0f;
    for (int k = lane; k < K; k += blockDim.x)
        sum += a[k] * x[k];

    for (int offset = warpSize / 2; offset > 0; offset >>= 1)
        sum += __shfl_down(sum, offset);

    if (lane == 0)
        y[row] = sum;
}

extern "C" void gemv_host(const float* A, const float* x, float* y, int M, int K) {
    float *dA, *dx, *dy;
    hipMalloc((void**)&dA, (size_t)M * K * sizeof(float));
    hipMalloc((void**)&dx, (size_t)K * sizeof(float));
    hipMalloc((void**)&dy, (size_t)M * sizeof(float));
    hipMemcpy(dA, A, (size_t)M * K * sizeof(float), hipMemcpyHostToDevice);
    hipMemcpy(dx, x, (size_t)K * sizeof(float), hipMemcpyHostToDevice);

    dim3 block(64, ROWS_PER_BLOCK, 1);
    dim3 grid((M + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, 1, 1);
    hipLaunchKernelGGL(gemv, grid, block, 0, 0, dA, dx, dy, M, K);

    hipMemcpy(y, dy, (size_t)M * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dx);
    hipFree(dy);
}
