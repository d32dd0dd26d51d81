/* xpiler: immintrin.h wrapper for CPUs without AVX-512 VNNI.
 * Takes the compiler's own header first, then SIMD Everywhere (libsimde-dev) with native
 * aliases, so unmodified kernels that call _mm512_dpbusd_epi32 & co. run (bit-exactly,
 * more slowly) where the instructions are missing. */
#ifndef XP_SIMDE_IMMINTRIN_WRAPPER
#define XP_SIMDE_IMMINTRIN_WRAPPER
#include_next <immintrin.h>
#ifndef SIMDE_ENABLE_NATIVE_ALIASES
#define SIMDE_ENABLE_NATIVE_ALIASES
#endif
#include <simde/x86/avx512.h>

/* SIMDe 0.7.4 has no _mm512_reduce_* helpers; these portable ones (ours) fill the gap. */
#define XP_SIMDE_REDUCE(NAME, VT, ET, N, OP)                                   \
  static inline ET xp_##NAME(VT v) {                                          \
    ET t[N]; memcpy(t, &v, sizeof t); ET r = t[0];                             \
    for (int i = 1; i < N; ++i) r = OP(r, t[i]);                               \
    return r;                                                                  \
  }
#include <string.h>
#include <stdint.h>
#define XP_ADD(a, b) ((a) + (b))
#define XP_MUL(a, b) ((a) * (b))
#define XP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define XP_MIN(a, b) ((a) < (b) ? (a) : (b))
XP_SIMDE_REDUCE(reduce_add_epi32, simde__m512i, int32_t, 16, XP_ADD)
XP_SIMDE_REDUCE(reduce_mul_epi32, simde__m512i, int32_t, 16, XP_MUL)
XP_SIMDE_REDUCE(reduce_max_epi32, simde__m512i, int32_t, 16, XP_MAX)
XP_SIMDE_REDUCE(reduce_min_epi32, simde__m512i, int32_t, 16, XP_MIN)
XP_SIMDE_REDUCE(reduce_add_ps, simde__m512, float, 16, XP_ADD)
XP_SIMDE_REDUCE(reduce_mul_ps, simde__m512, float, 16, XP_MUL)
XP_SIMDE_REDUCE(reduce_max_ps, simde__m512, float, 16, XP_MAX)
XP_SIMDE_REDUCE(reduce_min_ps, simde__m512, float, 16, XP_MIN)
XP_SIMDE_REDUCE(reduce_add_epi64, simde__m512i, int64_t, 8, XP_ADD)
#define _mm512_reduce_add_epi32(v) xp_reduce_add_epi32(v)
#define _mm512_reduce_mul_epi32(v) xp_reduce_mul_epi32(v)
#define _mm512_reduce_max_epi32(v) xp_reduce_max_epi32(v)
#define _mm512_reduce_min_epi32(v) xp_reduce_min_epi32(v)
#define _mm512_reduce_add_ps(v) xp_reduce_add_ps(v)
#define _mm512_reduce_mul_ps(v) xp_reduce_mul_ps(v)
#define _mm512_reduce_max_ps(v) xp_reduce_max_ps(v)
#define _mm512_reduce_min_ps(v) xp_reduce_min_ps(v)
#define _mm512_reduce_add_epi64(v) xp_reduce_add_epi64(v)

/* SIMDe 0.7.4 has no masked float load / store either (the tails of tensorize's loops use
 * them); these portable ones (ours) touch only the selected elements, as the instructions do. */
static inline simde__m512 xp_maskz_loadu_ps(simde__mmask16 k, const void *p) {
  float t[16];
  for (int i = 0; i < 16; ++i) t[i] = ((k >> i) & 1) ? ((const float *)p)[i] : 0.0f;
  simde__m512 r; memcpy(&r, t, sizeof t); return r;
}
static inline void xp_mask_storeu_ps(void *p, simde__mmask16 k, simde__m512 v) {
  float t[16]; memcpy(t, &v, sizeof t);
  for (int i = 0; i < 16; ++i) if ((k >> i) & 1) ((float *)p)[i] = t[i];
}
#define _mm512_maskz_loadu_ps(k, p) xp_maskz_loadu_ps(k, p)
#define _mm512_mask_storeu_ps(p, k, v) xp_mask_storeu_ps(p, k, v)
#endif /* XP_SIMDE_IMMINTRIN_WRAPPER */
