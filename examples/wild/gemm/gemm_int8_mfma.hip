// gemm_int8_mfma.hip: int8 x int8 -> int32 matmul on the gfx90a matrix cores. One wave64 per
// 16x16 tile of C; each lane packs four bytes of A (row i, k = 4g..4g+3) and of B (rows
// 4g..4g+3, column i) into an int, no LDS, zero bytes past the edges.
#include <hip/hip_runtime.h>
#include <cstdint>

typedef int int32x4 __attribute__((ext_vector_type(4)));

__global__ void __launch_bounds__(64)
gemm_i8_mfma(const int8_t* __restrict__ A, const int8_t* __restrict__ B, int32_t* __restrict__ C,
             int M, int N, int K)
{
    const int lane = threadIdx.x;
    const int i = lane % 16;
    const int g = lane / 16;
    const int row0 = blockIdx.y * 16;
    const int col0 = blockIdx.x * 16;
    int32x4 acc = {0, 0, 0, 0};
    for (int k0 = 0; k0 < K; k0 += 16) {
        unsigned a = 0u, b = 0u;
        for (int e = 0; e < 4; ++e) {
            const int k = k0 + 4 * g + e;
            const int8_t av = (row0 + i < M && k < K) ? A[(row0 + i) * K + k] : (int8_t)0;
            const int8_t bv = (k < K && col0 + i < N) ? B[k * N + col0 + i] : (int8_t)0;
            a |= (unsigned)(uint8_t)av << (8 * e);
            b |= (unsigned)(uint8_t)bv << (8 * e);
        }
        acc = __builtin_amdgcn_mfma_i32_16x16x16i8((int)a, (int)b, acc, 0, 0, 0);
    }
    for (int e = 0; e < 4; ++e) {
        const int r = row0 + 4 * g + e;
        const int c = col0 + i;
        if (r < M && c < N) C[r * N + c] = acc[e];
    }
}

void gemm_i8_mfma_host(const int8_t* A, const int8_t* B, int32_t* C, int M, int N, int K)
{
    int8_t *dA, *dB;
    int32_t* dC;
    hipMalloc(&dA, M * K);
    hipMalloc(&dB, K * N);
    hipMalloc(&dC, M * N * sizeof(int32_t));
    hipMemcpy(dA, A, M * K, hipMemcpyHostToDevice);
    hipMemcpy(dB, B, K * N, hipMemcpyHostToDevice);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    hipLaunchKernelGGL(gemm_i8_mfma, grid, dim3(64), 0, 0, dA, dB, dC, M, N, K);
    hipMemcpy(C, dC, M * N * sizeof(int32_t), hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dB);
    hipFree(dC);
}
