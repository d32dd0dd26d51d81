// Front-end test input: one warp computes a 16x16 tile with WMMA.
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

__global__ void wmma_tile(const half* a, const half* b, float* c, int K) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    nvcuda::wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, a + k, K);
        wmma::load_matrix_sync(fb, b + k, K);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    for (int i = 0; i < fc.num_elements; i++)
        fc.x[i] = fc.x[i] * 2.0f;
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
