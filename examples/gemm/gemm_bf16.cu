// gemm_bf16: C[M][N] (float) = A[M][K] (bfloat16) . B[K][N] (bfloat16), row-major, float sums.
// The gemm.cu scheme with bfloat16 operands: a 16x16 thread block owns a 16x16 tile of C and
// stages, per 16-wide slice of K, the A tile and the B tile in shared memory. The tiles hold the
// operands widened to float (bfloat16 -> float is exact: the same 8-bit exponent, the 7 mantissa
// bits shifted up), so the inner loop multiplies and sums in float. Out-of-range elements are
// staged as 0, so ragged M, N and K take the same inner loop.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define TILE 16

extern "C" __global__ void gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C,
                                     int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int ka = k0 + tx;  // column of A this thread stages
        const int kb = k0 + ty;  // row of B this thread stages
        As[ty][tx] = (row < M && ka < K) ? __bfloat162float(A[row * K + ka]) : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? __bfloat162float(B[kb * N + col]) : 0.0f;
        __syncthreads();

        for (int kk = 0; kk < TILE; ++kk)
            acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();  // the tiles are overwritten in the next iteration
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}

extern "C" void gemm_bf16_host(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K) {
    const size_t bytesA = (size_t)M * K * sizeof(__nv_bfloat16);
    const size_t bytesB = (size_t)K * N * sizeof(__nv_bfloat16);
    const size_t bytesC = (size_t)M * N * sizeof(float);
    __nv_bfloat16 *dA, *dB;
    float* dC;
    cudaMalloc((void**)&dA, bytesA);
    cudaMalloc((void**)&dB, bytesB);
    cudaMalloc((void**)&dC, bytesC);
    cudaMemcpy(dA, A, bytesA, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, bytesB, cudaMemcpyHostToDevice);

    dim3 block(TILE, TILE, 1);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, 1);
    gemm_bf16<<<grid, block>>>(dA, dB, dC, M, N, K);

    cudaMemcpy(C, dC, bytesC, cudaMemcpyDeviceToHost);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
}
