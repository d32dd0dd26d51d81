// gemm_wmma: C[M][N] (float) = A[M][K] (half) . B[K][N] (half), row-major, tensor cores.
// A block of 4 warps (128 threads) owns a 32x32 tile of C; warp w computes the 16x16
// sub-tile (w / 2, w % 2) with WMMA 16x16x16 fragments, accumulating in float.
// WMMA loads need whole 16x16 tiles, so for each 32-wide slice of K the block copies the
// A tile (32 x 32) and B tile (32 x 32) into shared memory, writing 0 wherever the index
// leaves the matrix. Zeros add nothing to the dot products, so ragged M, N and K need no
// special path. The accumulators go through shared memory on the way out so that only
// in-range elements of C are written.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

#define WMMA_M 16
#define WMMA_N 16
#define WMMA_K 16
#define BM 32  // block tile rows
#define BN 32  // block tile columns
#define BK 32  // K slice staged per step (two WMMA k-steps)

extern "C" __global__ void gemm_wmma(const half* A, const half* B, float* C, int M, int N, int K) {
    // WMMA loads/stores need 256-bit aligned tile pointers
    __shared__ __align__(32) half As[BM * BK];
    __shared__ __align__(32) half Bs[BK * BN];
    __shared__ __align__(32) float Cs[BM * BN];

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int wr = warp / 2;  // warp's sub-tile row within the block tile
    const int wc = warp % 2;  // warp's sub-tile column
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
            As[i] = (r < M && k < K) ? A[r * K + k] : __float2half(0.0f);
        }
        for (int i = tid; i < BK * BN; i += blockDim.x) {
            const int k = k0 + i / BN;
            const int c = col0 + i % BN;
            Bs[i] = (k < K && c < N) ? B[k * N + c] : __float2half(0.0f);
        }
        __syncthreads();

        for (int kk = 0; kk < BK; kk += WMMA_K) {
            wmma::load_matrix_sync(a_frag, As + (wr * WMMA_M) * BK + kk, BK);
            wmma::load_matrix_sync(b_frag, Bs + kk * BN + wc * WMMA_N, BN);
            wmma::mma_sync(acc, a_frag, b_frag, acc);
        }
        __syncthreads();  // As/Bs are refilled in the next step
    }

    wmma::store_matrix_sync(Cs + (wr * WMMA_M) * BN + wc * WMMA_N, acc, BN, wmma::mem_row_major);
    __syncthreads();
    for (int i = tid; i < BM * BN; i += blockDim.x) {
        const int r = row0 + i / BN;
        const int c = col0 + i % BN;
        if (r < M && c < N)
            C[r * N + c] = Cs[i];
    }
}

extern "C" void gemm_wmma_host(const half* A, const half* B, float* C, int M, int N, int K) {
    const size_t bytesA = (size_t)M * K * sizeof(half);
    const size_t bytesB = (size_t)K * N * sizeof(half);
    const size_t bytesC = (size_t)M * N * sizeof(float);
    half *dA, *dB;
    float* dC;
    cudaMalloc((void**)&dA, bytesA);
    cudaMalloc((void**)&dB, bytesB);
    cudaMalloc((void**)&dC, bytesC);
    cudaMemcpy(dA, A, bytesA, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, bytesB, cudaMemcpyHostToDevice);

    dim3 block(128, 1, 1);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, 1);
    gemm_wmma<<<grid, block>>>(dA, dB, dC, M, N, K);

    cudaMemcpy(C, dC, bytesC, cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}
