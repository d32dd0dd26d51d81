// gemm_mfma_f16: C[M][N] (float) = A[M][K] (half) . B[K][N] (half), row-major, gfx90a.
// Same work split as gemm_mfma.hip (4 wavefronts, 32x32 tile, one 16x16 accumulator per
// wavefront), but with __builtin_amdgcn_mfma_f32_16x16x16f16: each step multiplies a
// 16x16 half A block by a 16x16 half B block and accumulates in float.
// Operand layout per lane l (i = l % 16, g = l / 16), e = 0..3:
//   a[e] = A[i][4 * g + e],  b[e] = B[4 * g + e][i],  accumulator element e = D[4 * g + e][i].
// Half inputs are 16-bit _Float16 (IEEE binary16). K is staged in 32-wide LDS slices with
// zero fill outside the matrix, two MFMA steps per slice.
#include <hip/hip_runtime.h>

typedef float floatx4 __attribute__((ext_vector_type(4)));
typedef _Float16 halfx4 __attribute__((ext_vector_type(4)));

#define BM 32
#define BN 32
#define BK 32

extern "C" __global__ void gemm_mfma_f16(const _Float16* A, const _Float16* B, float* C, int M, int N, int K) {
    __shared__ _Float16 As[BM * BK];
    __shared__ _Float16 Bs[BK * BN];

    const int tid = threadIdx.x;
    const int wave = tid / 64;
    const int lane = tid % 64;
    const int i = lane % 16;
    const int g = lane / 16;
    const int wr = wave / 2;
    const int wc = wave % 2;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    const _Float16 zero = static_cast<_Float16>(0.0f);

    floatx4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int t = tid; t < BM * BK; t += blockDim.x) {
            const int r = row0 + t / BK;
            const int k = k0 + t % BK;
            As[t] = (r < M && k < K) ? A[r * K + k] : zero;
        }
        for (int t = tid; t < BK * BN; t += blockDim.x) {
            const int k = k0 + t / BN;
            const int c = col0 + t % BN;
            Bs[t] = (k < K && c < N) ? B[k * N + c] : zero;
        }
        __syncthreads();

        for (int kk = 0; kk < BK; kk += 16) {
            halfx4 a;
            halfx4 b;
            for (int e = 0; e < 4; ++e) {
                a[e] = As[(wr * 16 + i) * BK + kk + 4 * g + e];
                b[e] = Bs[(kk + 4 * g + e) * BN + wc * 16 + i];
            }
            acc = __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, acc, 0, 0, 0);
        }
        __syncthreads();
    }

    const int c = col0 + wc * 16 + i;
    for (int e = 0; e < 4; ++e) {
        const int r = row0 + wr * 16 + 4 * g + e;
        if (r < M && c < N)
            C[r * N + c] = acc[e];
    }
}

extern "C" void gemm_mfma_f16_host(const _Float16* A, const _Float16* B, float* C, int M, int N, int K) {
    const size_t bytesA = (size_t)M * K * sizeof(_Float16);
    const size_t bytesB = (size_t)K * N * sizeof(_Float16);
    const size_t bytesC = (size_t)M * N * sizeof(float);
    _Float16 *dA, *dB;
    float* dC;
    hipMalloc((void**)&dA, bytesA);
    hipMalloc((void**)&dB, bytesB);
    hipMalloc((void**)&dC, bytesC);
    hipMemcpy(dA, A, bytesA, hipMemcpyHostToDevice);
    hipMemcpy(dB, B, bytesB, hipMemcpyHostToDevice);

    dim3 block(256, 1, 1);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, 1);
    gemm_mfma_f16<<<grid, block>>>(dA, dB, dC, M, N, K);

    hipMemcpy(C, dC, bytesC, hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dB);
    hipFree(dC);
}
