// bmm_wmma: C[b][M][N] (float) = A[b][M][K] (half) . B[b][K][N] (half), row-major, tensor cores.
// Per batch this is the gemm_wmma scheme: 4 warps per 32x32 tile of C, each warp one 16x16
// WMMA accumulator; A/B slices are staged in shared memory with zeros outside the matrix,
// so odd M, N, K work unchanged. blockIdx.z picks the batch.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

#define WMMA_M 16
#define WMMA_N 16
#define WMMA_K 16
#define BM 32
#define BN 32
#define BK 32

extern "C" __global__ void bmm_wmma(const half* A, const half* B, float* C, int batch, int M, int N, int K) {
    __shared__ __align__(32) half As[BM * BK];
    __shared__ __align__(32) half Bs[BK * BN];
    __shared__ __align__(32) float Cs[BM * BN];

    const int b = blockIdx.z;
    if (b >= batch)
        return;  // block-uniform
    const half* Ab = A + (size_t)b * M * K;
    const half* Bb = B + (size_t)b * K * N;
    float* Cb = C + (size_t)b * M * N;

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int wr = warp / 2;
    const int wc = warp % 2;
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;

    wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += blockDim.x) {
            const int r = row0 + i / BK;
            const int k = k0 + i % BK;
            As[i] = (r < M && k < K) ? Ab[r * K + k] : __float2half(0.0f);
        }
        for (int i = tid; i < BK * BN; i += blockDim.x) {
            const int k = k0 + i / BN;
            const int c = col0 + i % BN;
            Bs[i] = (k < K && c < N) ? Bb[k * N + c] : __float2half(0.0f);
        }
        __syncthreads();
        for (int kk = 0; kk < BK; kk += WMMA_K) {
            wmma::load_matrix_sync(a_frag, As + (wr * WMMA_M) * BK + kk, BK);
            wmma::load_matrix_sync(b_frag, Bs + kk * BN + wc * WMMA_N, BN);
            wmma::mma_sync(acc, a_frag, b_frag, acc);
        }
        __syncthreads();
    }

    wmma::store_matrix_sync(Cs + (wr * WMMA_M) * BN + wc * WMMA_N, acc, BN, wmma::mem_row_major);
    __syncthreads();
    for (int i = tid; i < BM * BN; i += blockDim.x) {
        const int r = row0 + i / BN;
        const int c = col0 + i % BN;
        if (r < M && c < N)
            Cb[r * N + c] = Cs[i];
    }
}

extern "C" void bmm_wmma_host(const half* A, const half* B, float* C, int batch, int M, int N, int K) {
    const size_t bytesA = (size_t)batch * M * K * sizeof(half);
    const size_t bytesB = (size_t)batch * K * N * sizeof(half);
    const size_t bytesC = (size_t)batch * M * N * sizeof(float);
    half *dA, *dB;
    float* dC;
    cudaMalloc((void**)&dA, bytesA);
    cudaMalloc((void**)&dB, bytesB);
    cudaMalloc((void**)&dC, bytesC);
    cudaMemcpy(dA, A, bytesA, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, bytesB, cudaMemcpyHostToDevice);

    dim3 block(128, 1, 1);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, batch);
    bmm_wmma<<<grid, block>>>(dA, dB, dC, batch, M, N, K);

    cudaMemcpy(C, dC, bytesC, cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}
