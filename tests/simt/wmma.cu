// One warp per 16x16 tile of C = A(MxK, half, row-major) . B(KxN, half, col-major) + bias, float out.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;
__global__ void wmma_gemm(const half* A, const half* B, const float* bias, float* C, int M, int N, int K) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int tiles_n = N / 16;
  int tm = warp / tiles_n, tn = warp % tiles_n;
  if (tm >= M / 16) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::load_matrix_sync(c, bias + tm * 16 * N + tn * 16, N, wmma::mem_row_major);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + tm * 16 * K + k, K);
    wmma::load_matrix_sync(b, B + tn * 16 * K + k, K);   // column-major B: column j at B + j*K
    wmma::mma_sync(c, a, b, c);
  }
  for (int i = 0; i < c.num_elements; ++i) c.x[i] *= 2.0f;
  wmma::store_matrix_sync(C + tm * 16 * N + tn * 16, c, N, wmma::mem_row_major);
}
