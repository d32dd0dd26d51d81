// One wavefront computes D = A . B + C for a single 16x16 tile with each MFMA form, using the
// gfx90a operand layouts (lane l: i = l % 16, g = l / 16).
#include <hip/hip_runtime.h>
typedef float floatx4 __attribute__((ext_vector_type(4)));
typedef _Float16 halfx4 __attribute__((ext_vector_type(4)));

// A: 16x4, B: 4x16, C/D: 16x16 (float, row-major)
__global__ void mfma_f32(const float* A, const float* B, const float* C, float* D) {
  int l = threadIdx.x, i = l % 16, g = l / 16;
  floatx4 acc;
  for (int e = 0; e < 4; ++e) acc[e] = C[(4 * g + e) * 16 + i];
  acc = __builtin_amdgcn_mfma_f32_16x16x4f32(A[i * 4 + g], B[g * 16 + i], acc, 0, 0, 0);
  for (int e = 0; e < 4; ++e) D[(4 * g + e) * 16 + i] = acc[e];
}

// A: 16x16 half, B: 16x16 half, C/D: 16x16 float
__global__ void mfma_f16(const _Float16* A, const _Float16* B, const float* C, float* D) {
  int l = threadIdx.x, i = l % 16, g = l / 16;
  halfx4 a, b;
  for (int e = 0; e < 4; ++e) { a[e] = A[i * 16 + 4 * g + e]; b[e] = B[(4 * g + e) * 16 + i]; }
  floatx4 acc;
  for (int e = 0; e < 4; ++e) acc[e] = C[(4 * g + e) * 16 + i];
  acc = __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, acc, 0, 0, 0);
  for (int e = 0; e < 4; ++e) D[(4 * g + e) * 16 + i] = acc[e];
}
