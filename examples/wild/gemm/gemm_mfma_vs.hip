// gemm_mfma_vs.hip: C = A * B (float32, row-major) on AMD matrix cores.  One wavefront (64
// lanes) owns a 16x16 tile of C and steps through K four at a time with
// __builtin_amdgcn_mfma_f32_16x16x4f32; the accumulator is a typedef'd vector_size type.
// Lane l: i = l % 16, g = l / 16 supplies A[i][k+g] and B[k+g][i]; it receives rows 4g..4g+3
// of column i.  M and N are multiples of 16, K a multiple of 4.
#include <hip/hip_runtime.h>

typedef float floatx4_t __attribute__((__vector_size__(4 * sizeof(float))));

__global__ void __launch_bounds__(64) gemm_mfma_16x16(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, int M, int N, int K)
{
    const int lane = threadIdx.x;
    const int i = lane % 16;
    const int g = lane / 16;
    const int row0 = blockIdx.y * 16;
    const int col0 = blockIdx.x * 16;
    floatx4_t acc = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k = 0; k < K; k += 4) {
        const float a = A[(row0 + i) * K + k + g];
        const float b = B[(k + g) * N + col0 + i];
        acc = __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, acc, 0, 0, 0);
    }
    for (int e = 0; e < 4; ++e)
        C[(row0 + 4 * g + e) * N + col0 + i] = acc[e];
}
