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
/* SIMDe 0.7.4 has no masked loads/stores either.  These (ours) touch only the lanes whose mask
 * bit is set, like the instructions (masked-off lanes never fault, so a tail load past the end
 * of an array is legal and AddressSanitizer stays quiet about it). */
#define XP_SIMDE_MASKED(SUF, VT, ET, N, MT)                                        \
  static inline VT xp_maskz_loadu_##SUF(MT k, const void *p) {                    \
    ET t[N]; const ET *s = (const ET *)p; VT r;                                    \
    for (int i = 0; i < N; ++i) t[i] = ((k >> i) & 1) ? s[i] : (ET)0;              \
    memcpy(&r, t, sizeof r); return r;                                             \
  }                                                                                \
  static inline VT xp_mask_loadu_##SUF(VT src, MT k, const void *p) {             \
    ET t[N]; const ET *s = (const ET *)p; VT r; memcpy(t, &src, sizeof t);         \
    for (int i = 0; i < N; ++i) if ((k >> i) & 1) t[i] = s[i];                     \
    memcpy(&r, t, sizeof r); return r;                                             \
  }                                                                                \
  static inline void xp_mask_storeu_##SUF(void *p, MT k, VT v) {                  \
    ET t[N]; ET *d = (ET *)p; memcpy(t, &v, sizeof t);                             \
    for (int i = 0; i < N; ++i) if ((k >> i) & 1) d[i] = t[i];                     \
  }
XP_SIMDE_MASKED(ps, simde__m512, float, 16, simde__mmask16)
XP_SIMDE_MASKED(pd, simde__m512d, double, 8, simde__mmask8)
XP_SIMDE_MASKED(epi8, simde__m512i, int8_t, 64, simde__mmask64)
XP_SIMDE_MASKED(epi16, simde__m512i, int16_t, 32, simde__mmask32)
XP_SIMDE_MASKED(epi32, simde__m512i, int32_t, 16, simde__mmask16)
XP_SIMDE_MASKED(epi64, simde__m512i, int64_t, 8, simde__mmask8)
#define _mm512_maskz_loadu_ps xp_maskz_loadu_ps
#define _mm512_mask_loadu_ps xp_mask_loadu_ps
#define _mm512_mask_storeu_ps xp_mask_storeu_ps
#define _mm512_maskz_load_ps xp_maskz_loadu_ps
#define _mm512_mask_load_ps xp_mask_loadu_ps
#define _mm512_mask_store_ps xp_mask_storeu_ps
#define _mm512_maskz_loadu_pd xp_maskz_loadu_pd
#define _mm512_mask_loadu_pd xp_mask_loadu_pd
#define _mm512_mask_storeu_pd xp_mask_storeu_pd
#define _mm512_maskz_loadu_epi8 xp_maskz_loadu_epi8
#define _mm512_mask_loadu_epi8 xp_mask_loadu_epi8
#define _mm512_mask_storeu_epi8 xp_mask_storeu_epi8
#define _mm512_maskz_loadu_epi16 xp_maskz_loadu_epi16
#define _mm512_mask_loadu_epi16 xp_mask_loadu_epi16
#define _mm512_mask_storeu_epi16 xp_mask_storeu_epi16
#define _mm512_maskz_loadu_epi32 xp_maskz_loadu_epi32
#define _mm512_mask_loadu_epi32 xp_mask_loadu_epi32
#define _mm512_mask_storeu_epi32 xp_mask_storeu_epi32
#define _mm512_maskz_load_epi32 xp_maskz_loadu_epi32
#define _mm512_mask_load_epi32 xp_mask_loadu_epi32
#define _mm512_mask_store_epi32 xp_mask_storeu_epi32
#define _mm512_maskz_loadu_epi64 xp_maskz_loadu_epi64
#define _mm512_mask_loadu_epi64 xp_mask_loadu_epi64
#define _mm512_mask_storeu_epi64 xp_mask_storeu_epi64
/* 256-bit masked 16-bit load (AVX512BW+VL) and 16 halves -> 16 floats (AVX512F): SIMDe 0.7.4 has
 * neither; the half panels of the register-tiled gemm (passes/patterns/x86_gemm.py) use both. */
static inline simde__m256i xp_maskz_loadu_epi16_256(simde__mmask16 k, const void *p) {
  int16_t t[16]; const int16_t *s = (const int16_t *)p; simde__m256i r;
  for (int i = 0; i < 16; ++i) t[i] = ((k >> i) & 1) ? s[i] : (int16_t)0;
  memcpy(&r, t, sizeof r); return r;
}
/* IEEE half bits -> float, exactly (by hand: C++ before gcc 13 has no _Float16) */
static inline float xp_half_bits_to_float(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, b;
  if (e == 0x1Fu) b = s | 0x7F800000u | (m << 13) | (m ? 0x400000u : 0u);  /* inf; nan quieted, as vcvtph2ps */
  else if (e) b = s | ((e + 112u) << 23) | (m << 13);         /* normal: rebias 15 -> 127 */
  else if (!m) b = s;                                         /* +-0 */
  else {                                                      /* subnormal: m * 2^-24 */
    e = 113u;
    while (!(m & 0x400u)) { m <<= 1; --e; }
    b = s | (e << 23) | ((m & 0x3FFu) << 13);
  }
  float f; memcpy(&f, &b, sizeof f); return f;
}
static inline simde__m512 xp_cvtph_ps(simde__m256i h) {
  uint16_t t[16]; float f[16]; simde__m512 r; memcpy(t, &h, sizeof t);
  for (int i = 0; i < 16; ++i) f[i] = xp_half_bits_to_float(t[i]);
  memcpy(&r, f, sizeof r); return r;
}
#define _mm256_maskz_loadu_epi16 xp_maskz_loadu_epi16_256
#define _mm512_cvtph_ps xp_cvtph_ps
/* mask conversions (plain integers in SIMDe) */
#define _cvtu32_mask16(x) ((simde__mmask16)(x))
#define _cvtmask16_u32(x) ((uint32_t)(x))
#define _cvtu64_mask64(x) ((simde__mmask64)(x))
#define _cvtmask64_u64(x) ((uint64_t)(x))
#define _cvtu32_mask32(x) ((simde__mmask32)(x))
#define _cvtmask32_u32(x) ((uint32_t)(x))
#define _mm512_reduce_add_epi32(v) xp_reduce_add_epi32(v)
#define _mm512_reduce_mul_epi32(v) xp_reduce_mul_epi32(v)
#define _mm512_reduce_max_epi32(v) xp_reduce_max_epi32(v)
#define _mm512_reduce_min_epi32(v) xp_reduce_min_epi32(v)
#define _mm512_reduce_add_ps(v) xp_reduce_add_ps(v)
#define _mm512_reduce_mul_ps(v) xp_reduce_mul_ps(v)
#define _mm512_reduce_max_ps(v) xp_reduce_max_ps(v)
#define _mm512_reduce_min_ps(v) xp_reduce_min_ps(v)
#define _mm512_reduce_add_epi64(v) xp_reduce_add_epi64(v)
/* non-temporal store (SIMDe has none for 512 bits): a store of the same bytes, and like the
   instruction it faults on an address that is not 64-byte aligned (passes/patterns/x86_stream.py) */
static inline void xp_stream_ps(void *p, simde__m512 v) {
  if (((uintptr_t)p & 63u) != 0) __builtin_trap();
  memcpy(p, &v, sizeof v);
}
#define _mm512_stream_ps xp_stream_ps
/* AVX512-BF16 vdpbf16ps with the instruction's own numerics (ours; SIMDe 0.7.4 adds the two
 * products in the other order, with the inputs' denormals and with MXCSR's flush behaviour): per
 * float lane j, as Intel's pseudocode writes it, the odd pair first,
 *     c = FMA(a.bf16[2j+1], b.bf16[2j+1], c);  c = FMA(a.bf16[2j], b.bf16[2j], c)
 * each a single-precision fused multiply-add rounded to nearest even, with denormal inputs read
 * as zero (DAZ: the bf16 operands and c) and a denormal result flushed to zero (FTZ), whatever
 * MXCSR says.  xp_bf16_daz / xp_f32_ftz are shared with the AMX tile emulation. */
#include <math.h>
static inline float xp_bf16_daz(uint16_t h) {
  uint32_t u = ((h & 0x7F80u) == 0 ? (h & 0x8000u) : h) << 16;   /* exponent 0: +-0 */
  float f; memcpy(&f, &u, 4); return f;
}
static inline float xp_f32_ftz(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if ((u & 0x7F800000u) == 0) { u &= 0x80000000u; memcpy(&f, &u, 4); }
  return f;
}
static inline simde__m512 xp_dpbf16_ps(simde__m512 src, simde__m512bh a, simde__m512bh b) {
  float c[16]; uint16_t x[32], y[32]; simde__m512 r;
  memcpy(c, &src, sizeof c); memcpy(x, &a, sizeof x); memcpy(y, &b, sizeof y);
  for (int j = 0; j < 16; ++j) {
    float acc = xp_f32_ftz(c[j]);
    acc = xp_f32_ftz(fmaf(xp_bf16_daz(x[2 * j + 1]), xp_bf16_daz(y[2 * j + 1]), acc));
    acc = xp_f32_ftz(fmaf(xp_bf16_daz(x[2 * j]), xp_bf16_daz(y[2 * j]), acc));
    c[j] = acc;
  }
  memcpy(&r, c, sizeof r); return r;
}
#undef _mm512_dpbf16_ps
#define _mm512_dpbf16_ps xp_dpbf16_ps
/* AMX tiles (_tile_loadd, _tile_dpbssd, ...): a register file of our own, xp_amx_tiles.h */
#include "xp_amx_tiles.h"

#endif /* XP_SIMDE_IMMINTRIN_WRAPPER */
