/* xpiler: a bfloat16 storage type for building c outputs with a compiler whose C has no __bf16
 * (gcc before 13 on x86: this development host's gcc 12.2; gcc 13 has it).  Our own code.
 *
 * platforms/prelude.py includes it, and compiles the output as C++, only when the text uses
 * __bf16 and the compiler's C rejects it; the user's gcc 13 builds the same text as C with the
 * real type.  The type holds the 16 raw bits (the layout of __bf16 and of the harness's uint16_t
 * arrays) and converts exactly as gcc 13 does:
 *   - to float: the bits shifted up 16 (exact; bfloat16 is float's upper half);
 *   - from float: round to nearest, ties to even; a NaN stays a NaN (quieted), infinities stay;
 *   - from double or an integer: through float (gcc 13 rounds a double once, straight to
 *     bfloat16, so a double exactly halfway after float rounding may differ in the last bit).
 * Arithmetic on two values goes through the float conversion (C++ picks float for both operands)
 * and a result stored back into a __bf16 is rounded as above. */
#ifndef XP_BF16_H
#define XP_BF16_H
#ifdef __cplusplus
#include <stdint.h>
#include <string.h>

static inline uint16_t xp_float_to_bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);   /* NaN: quiet it */
  u += 0x7FFFu + ((u >> 16) & 1u);                                                /* ties to even */
  return (uint16_t)(u >> 16);
}

struct xp_bf16 {
  uint16_t bits;
  xp_bf16() = default;
  xp_bf16(float f) : bits(xp_float_to_bf16_bits(f)) {}
  xp_bf16(double d) : bits(xp_float_to_bf16_bits((float)d)) {}
  xp_bf16(int i) : bits(xp_float_to_bf16_bits((float)i)) {}
  operator float() const {
    const uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
};
static_assert(sizeof(xp_bf16) == 2, "bfloat16 storage is 2 bytes");
#define __bf16 xp_bf16
#endif /* __cplusplus */
#endif /* XP_BF16_H */
