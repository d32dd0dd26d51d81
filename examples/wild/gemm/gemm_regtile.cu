// gemm_regtile.cu: 64x64 output tile per 16x16 block, each thread accumulating a 4x4
// register tile; K walked in 16-wide slices staged in shared memory. The kernel is a
// template on the element type (deduced from the pointers, instantiated for float only).
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4

template <typename T>
__global__ void sgemm_64x64(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                            int M, int N, int K)
{
    __shared__ T As[BK][BM];   // A slice stored transposed: As[k][m]
    __shared__ T Bs[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * 16 + tx;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    T acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = T(0);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 256 threads load 64x16 of A and 16x64 of B, four elements each
        for (int l = tid; l < BM * BK; l += 256) {
            int m = l / BK, k = l % BK;
            int gr = row0 + m, gk = k0 + k;
            As[k][m] = (gr < M && gk < K) ? A[gr * K + gk] : T(0);
        }
        for (int l = tid; l < BK * BN; l += 256) {
            int k = l / BN, n = l % BN;
            int gk = k0 + k, gc = col0 + n;
            Bs[k][n] = (gk < K && gc < N) ? B[gk * N + gc] : T(0);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            T a[TM], b[TN];
            for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) {
        int r = row0 + ty * TM + i;
        if (r >= M) continue;
        for (int j = 0; j < TN; ++j) {
            int c = col0 + tx * TN + j;
            if (c < N) C[r * N + c] = acc[i][j];
        }
    }
}

void sgemm_host(const float* A, const float* B, float* C, int M, int N, int K)
{
    float *dA, *dB, *dC;
    cudaMalloc(&dA, sizeof(float) * M * K);
    cudaMalloc(&dB, sizeof(float) * K * N);
    cudaMalloc(&dC, sizeof(float) * M * N);
    cudaMemcpy(dA, A, sizeof(float) * M * K, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, sizeof(float) * K * N, cudaMemcpyHostToDevice);
    dim3 block(16, 16);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm_64x64<float><<<grid, block>>>(dA, dB, dC, M, N, K);
    cudaMemcpy(C, dC, sizeof(float) * M * N, cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}
