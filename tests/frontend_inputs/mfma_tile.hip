// Front-end test input: one wavefront computes a 16x16 tile with an MFMA builtin.
#include <hip/hip_runtime.h>

typedef float floatx4 __attribute__((ext_vector_type(4)));

__global__ void mfma_tile(const float* A, const float* B, float* C, int K) {
    const int lane = threadIdx.x % 64;
    const int i = lane % 16;
    const int g = lane / 16;
    floatx4 acc = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k = 0; k < K; k += 4) {
        acc = __builtin_amdgcn_mfma_f32_16x16x4f32(A[i * K + k + g], B[(k + g) * 16 + i], acc, 0, 0, 0);
    }
    for (int e = 0; e < 4; ++e)
        C[(4 * g + e) * 16 + i] = acc[e];
}
