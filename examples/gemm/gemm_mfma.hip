// gemm_mfma: C[M][N] = A[M][K] . B[K][N], float32, row-major, AMD matrix cores (gfx90a).
// A work-group of 4 wavefronts (256 threads) owns a 32x32 tile of C; wavefront w computes
// the 16x16 sub-tile (w / 2, w % 2) with __builtin_amdgcn_mfma_f32_16x16x4f32, which adds
// a 16x4 by 4x16 product into a 16x16 float accumulator spread over the 64 lanes.
// Operand layout per lane l (i = l % 16, g = l / 16):
//   lane supplies a = A[i][g] and b = B[g][i] of the current 4-wide k step;
//   accumulator element e holds D[4 * g + e][i].
// K is consumed in 16-wide slices staged in LDS with zeros outside the matrix (so ragged
// M, N, K need no special case); each slice feeds four MFMA steps.
#include <hip/hip_runtime.h>

typedef float floatx4 __attribute__((ext_vector_type(4)));

#define BM 32
#define BN 32
#define BK 16

extern "C" __global__ void gemm_mfma(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];

    const int tid = threadIdx.x;
    const int wave = tid / 64;
    const int lane = tid % 64;
    const int i = lane % 16;
    const int g = lane / 16;
    const int wr = wave / 2;
    const int wc = wave % 2;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    floatx4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int t = tid; t < BM * BK; t += blockDim.x) {
            const int r = row0 + t / BK;
            const int k = k0 + t % BK;
            As[t] = (r < M && k < K) ? A[r * K + k] : 0.0f;
        }
        for (int t = tid; t < BK * BN; t += blockDim.x) {
            const int k = k0 + t / BN;
            const int c = col0 + t % BN;
            Bs[t] = (k < K && c < N) ? B[k * N + c] : 0.0f;
        }
        __syncthreads();

        for (int kk = 0; kk < BK; kk += 4) {
            const float a = As[(wr * 16 + i) * BK + kk + g];
            const float b = Bs[(kk + g) * BN + wc * 16 + i];
            acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, acc, 0, 0, 0);
        }
        __syncthreads();
    }

    // lane holds rows 4g..4g+3 of column i of its wavefront's sub-tile
    const int c = col0 + wc * 16 + i;
    for (int e = 0; e < 4; ++e) {
        const int r = row0 + wr * 16 + 4 * g + e;
        if (r < M && c < N)
            C[r * N + c] = acc[e];
    }
}

extern "C" void gemm_mfma_host(const float* A, const float* B, float* C, int M, int N, int K) {
    const size_t bytesA = (size_t)M * K * sizeof(float);
    const size_t bytesB = (size_t)K * N * sizeof(float);
    const size_t bytesC = (size_t)M * N * sizeof(float);
    float *dA, *dB, *dC;
    hipMalloc((void**)&dA, bytesA);
    hipMalloc((void**)&dB, bytesB);
    hipMalloc((void**)&dC, bytesC);
    hipMemcpy(dA, A, bytesA, hipMemcpyHostToDevice);
    hipMemcpy(dB, B, bytesB, hipMemcpyHostToDevice);

    dim3 block(256, 1, 1);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, 1);
    hipLaunchKernelGGL(gemm_mfma, grid, block, 0, 0, dA, dB, dC, M, N, K);

    hipMemcpy(C, dC, bytesC, hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dB);
    hipFree(dC);
}
