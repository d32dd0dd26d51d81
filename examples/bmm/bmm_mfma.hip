// bmm_mfma: C[b][M][N] = A[b][M][K] . B[b][K][N], float32, row-major, gfx90a matrix cores.
// Per batch the gemm_mfma.hip scheme: 4 wavefronts per 32x32 tile, one 16x16 float
// accumulator each, __builtin_amdgcn_mfma_f32_16x16x4f32 over zero-padded 16-wide LDS
// slices of K. blockIdx.z selects the batch.
// Lane l (i = l % 16, g = l / 16) supplies A[i][g], B[g][i] per k step; element e of the
// accumulator is D[4 * g + e][i].
#include <hip/hip_runtime.h>

typedef float floatx4 __attribute__((ext_vector_type(4)));

#define BM 32
#define BN 32
#define BK 16

extern "C" __global__ void bmm_mfma(const float* A, const float* B, float* C, int batch, int M, int N, int K) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];

    const int b = blockIdx.z;
    if (b >= batch)
        return;  // whole work-group leaves together
    const float* Ab = A + (size_t)b * M * K;
    const float* Bb = B + (size_t)b * K * N;
    float* Cb = C + (size_t)b * M * N;

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
            As[t] = (r < M && k < K) ? Ab[r * K + k] : 0.0f;
        }
        for (int t = tid; t < BK * BN; t += blockDim.x) {
            const int k = k0 + t / BN;
            const int c = col0 + t % BN;
            Bs[t] = (k < K && c < N) ? Bb[k * N + c] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; kk += 4) {
            const float a = As[(wr * 16 + i) * BK + kk + g];
            const float bv = Bs[(kk + g) * BN + wc * 16 + i];
            acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a, bv, acc, 0, 0, 0);
        }
        __syncthreads();
    }

    const int c = col0 + wc * 16 + i;
    for (int e = 0; e < 4; ++e) {
        const int r = row0 + wr * 16 + 4 * g + e;
        if (r < M && c < N)
            Cb[r * N + c] = acc[e];
    }
}

extern "C" void bmm_mfma_host(const float* A, const float* B, float* C, int batch, int M, int N, int K) {
    const size_t bytesA = (size_t)batch * M * K * sizeof(float);
    const size_t bytesB = (size_t)batch * K * N * sizeof(float);
    const size_t bytesC = (size_t)batch * M * N * sizeof(float);
    float *dA, *dB, *dC;
    hipMalloc((void**)&dA, bytesA);
    hipMalloc((void**)&dB, bytesB);
    hipMalloc((void**)&dC, bytesC);
    hipMemcpy(dA, A, bytesA, hipMemcpyHostToDevice);
    hipMemcpy(dB, B, bytesB, hipMemcpyHostToDevice);

    dim3 block(256, 1, 1);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, batch);
    bmm_mfma<<<grid, block>>>(dA, dB, dC, batch, M, N, K);

    hipMemcpy(C, dC, bytesC, hipMemcpyDeviceToHost);
    hipFree(dA);
    hipFree(dB);
    hipFree(dC);
}
