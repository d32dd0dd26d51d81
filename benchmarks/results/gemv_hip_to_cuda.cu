// gemv: y[M] = A[M][K] . x[K], float32, row-major (HIP).
// One wavefront per row. On CDNA (gfx90a) a wavefront has 64 lanes, so the work-group is
// 64 x 4 (4 rows); lanes stride over K by 64 and the partial sums are folded with
// __shfl_down (HIP form: no mask argument) in log2(64) = 6 steps, starting at warpSize / 2.
// The kernel assumes blockDim.x == warpSize (wave64); for RDNA build with -mwavefrontsize64.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#define ROWS_PER_BLOCK 4

extern "C" __global__ void gemv(const float *A, const float *x, float *y, int M, int K) {
    for (int bx = (blockIdx.x * blockDim.x + threadIdx.x); bx < (M + 4 - 1) / 4; bx += (gridDim.x * blockDim.x)) {
        float xpd_xch3[1024];
        float sum[256];
        float xpd_sh1[256];
        unsigned char done[256];
        for (int t = 0; t < 256; ++t) {
            done[t] = 0;
        }
        for (int ty = 0; ty < 4; ++ty) {
            for (int lane = 0; lane < 64; ++lane) {
                const int row = bx * 4 + ty;
                if (row >= M) {
                    done[ty * 64 + lane] = 1;
                    continue;
                }  // uniform across the wavefront of this row

                const float *a = A + (size_t)row * K;
                sum[ty * 64 + lane] = 0.0f;
                for (int k = lane; k < K; k += 64) {
                    sum[ty * 64 + lane] += a[k] * x[k];
                }
            }
        }
        for (int offset = 64 / 2; offset > 0; offset >>= 1) {
            {
                for (int ty = 0; ty < 4; ++ty) {
                    for (int lane = 0; lane < 64; ++lane) {
                        if (!done[ty * 64 + lane]) {
                            const int xpd_tid2 = lane + ty * 64 + 0 * 64 * 4;
                            xpd_xch3[xpd_tid2] = sum[ty * 64 + lane];
                        }
                    }
                }
                for (int ty = 0; ty < 4; ++ty) {
                    for (int lane = 0; lane < 64; ++lane) {
                        if (!done[ty * 64 + lane]) {
                            const int xpd_tid2 = lane + ty * 64 + 0 * 64 * 4;
                            const int xpd_lane4 = xpd_tid2 % 64;
                            const int xpd_sub5 = xpd_lane4 % 64;
                            const int xpd_seg6 = xpd_tid2 - xpd_sub5;
                            const int xpd_src7 = xpd_sub5 + offset;
                            xpd_sh1[ty * 64 + lane] = xpd_src7 < 64 ? xpd_xch3[xpd_seg6 + xpd_src7] : xpd_xch3[xpd_tid2];
                        }
                    }
                }
                for (int ty = 0; ty < 4; ++ty) {
                    for (int lane = 0; lane < 64; ++lane) {
                        if (!done[ty * 64 + lane]) {
                            sum[ty * 64 + lane] += xpd_sh1[ty * 64 + lane];
                        }
                    }
                }
            }
        }
        for (int ty = 0; ty < 4; ++ty) {
            for (int lane = 0; lane < 64; ++lane) {
                if (!done[ty * 64 + lane]) {
                    const int row = bx * 4 + ty;

                    if (lane == 0) {
                        y[row] = sum[ty * 64 + lane];
                    }
                }
            }
        }
    }
}

extern "C" void gemv_host(const float *A, const float *x, float *y, int M, int K) {
    float *dA;
    float *dx;
    float *dy;
    cudaMalloc((void **)&dA, (size_t)M * K * sizeof(float));
    cudaMalloc((void **)&dx, (size_t)K * sizeof(float));
    cudaMalloc((void **)&dy, (size_t)M * sizeof(float));
    cudaMemcpy(dA, A, (size_t)M * K * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x, (size_t)K * sizeof(float), cudaMemcpyHostToDevice);

    gemv<<<dim3(((M + 4 - 1) / 4 + 255) / 256, 1, 1), dim3(256, 1, 1)>>>(dA, dx, dy, M, K);

    cudaMemcpy(y, dy, (size_t)M * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dx);
    cudaFree(dy);
}
