/* xpiler: portable AMX tiles for the emulated c substrate (emu:simde-cpu); our own code.
 *
 * Included by the immintrin.h wrapper of this folder, which is on the include path only when a
 * c output is built for emulation.  It replaces the compiler's AMX-TILE / AMX-INT8 intrinsics
 * (gcc writes them as inline asm, which faults on a CPU without AMX) by C functions over a tile
 * register file of our own: 8 tiles of 16 rows x 64 bytes and the palette-1 configuration, one
 * per thread as each core has its own.  The integer semantics follow Intel's description of
 * LDTILECFG, TILELOADD, TILESTORED, TILEZERO, TILERELEASE and TDPB[SU][SU]D:
 *
 *   - LDTILECFG reads 64 bytes: palette (byte 0; 0 releases the tiles, 1 is the only other one
 *     here), start_row (byte 1), 14 reserved zero bytes, colsb[16] (uint16, bytes 16..47) and
 *     rows[16] (bytes 48..63); palette 1 has 8 tiles of at most 16 rows x 64 bytes, a tile is
 *     either unused (rows = colsb = 0) or both are non-zero, entries 8..15 are zero.  Every tile
 *     is zeroed.  A bad configuration traps (the instruction raises #GP).
 *   - TILELOADD t, [base + r * stride] copies colsb bytes of each of the tile's rows; the rest
 *     of each row and the rows past `rows` become zero.  TILESTORED writes rows x colsb bytes.
 *   - TDPBxyD dst, a, b: for m < dst.rows, n < dst.colsb / 4, k < a.colsb / 4:
 *       dst.i32[m][n] += sum_{r<4} X(a[m][4k + r]) * Y(b[k][4n + r])
 *     with X, Y sign- (s) or zero- (u) extended bytes in the order of the mnemonic (a is the
 *     first source: dpbusd = unsigned a, signed b); the int32 sums wrap modulo 2^32, nothing
 *     saturates.  The shapes must agree (dst.rows = a.rows, dst.colsb = b.colsb,
 *     a.colsb = 4 * b.rows) and the three tiles differ; otherwise the instruction raises #UD:
 *     here a trap.  So does any tile instruction before a configuration is loaded.
 *
 * TDPBF16PS (AMX-BF16) is emulated too, with its float numerics: see xp_tile_dpbf16ps below.
 *
 * The Linux permission request an AMX kernel makes first (arch_prctl ARCH_REQ_XCOMP_PERM) is the
 * hook XP_AMX_PERMIT(); here it succeeds without asking the kernel (the emulated tile state is
 * ordinary memory). */
#ifndef XP_AMX_TILES_H
#define XP_AMX_TILES_H
#include <stdint.h>
#include <string.h>

#define XP_AMX_EMULATED 1

typedef struct {
  uint8_t b[8][16][64];       /* the tile data */
  uint16_t colsb[8];
  uint8_t rows[8];
  int configured;
} xp_amx_file;

static __thread xp_amx_file xp_amx;

static inline void xp_amx_check(int ok) {
  if (!ok) __builtin_trap();
}

static inline void xp_tile_release(void) {
  memset(&xp_amx, 0, sizeof xp_amx);
}

static inline void xp_tile_loadconfig(const void *cfg) {
  const uint8_t *c = (const uint8_t *)cfg;
  if (c[0] == 0) {               /* palette 0: the tiles go back to the init state */
    xp_tile_release();
    return;
  }
  xp_amx_check(c[0] == 1);       /* palette 1 only */
  xp_amx_check(c[1] == 0);       /* start_row: only an interrupted load sets it */
  for (int i = 2; i < 16; ++i) xp_amx_check(c[i] == 0);
  xp_tile_release();
  for (int t = 0; t < 16; ++t) {
    const unsigned colsb = (unsigned)c[16 + 2 * t] | ((unsigned)c[17 + 2 * t] << 8);
    const unsigned rows = c[48 + t];
    if (t >= 8) {
      xp_amx_check(colsb == 0 && rows == 0);
      continue;
    }
    xp_amx_check(colsb <= 64 && rows <= 16 && (colsb == 0) == (rows == 0));
    xp_amx.colsb[t] = (uint16_t)colsb;
    xp_amx.rows[t] = (uint8_t)rows;
  }
  xp_amx.configured = 1;
}

static inline void xp_tile_storeconfig(void *cfg) {
  uint8_t *c = (uint8_t *)cfg;
  memset(c, 0, 64);
  if (!xp_amx.configured) return;
  c[0] = 1;
  for (int t = 0; t < 8; ++t) {
    c[16 + 2 * t] = (uint8_t)(xp_amx.colsb[t] & 0xFF);
    c[17 + 2 * t] = (uint8_t)(xp_amx.colsb[t] >> 8);
    c[48 + t] = xp_amx.rows[t];
  }
}

/* a tile the instruction may name: configured, in use */
static inline void xp_amx_usable(int t) {
  xp_amx_check(xp_amx.configured && t >= 0 && t < 8 && xp_amx.rows[t] != 0);
}

static inline void xp_tile_loadd(int t, const void *base, long stride) {
  xp_amx_usable(t);
  const uint8_t *p = (const uint8_t *)base;
  memset(xp_amx.b[t], 0, sizeof xp_amx.b[t]);
  for (int r = 0; r < xp_amx.rows[t]; ++r) memcpy(xp_amx.b[t][r], p + (long)r * stride, xp_amx.colsb[t]);
}

static inline void xp_tile_stored(int t, void *base, long stride) {
  xp_amx_usable(t);
  uint8_t *p = (uint8_t *)base;
  for (int r = 0; r < xp_amx.rows[t]; ++r) memcpy(p + (long)r * stride, xp_amx.b[t][r], xp_amx.colsb[t]);
}

static inline void xp_tile_zero(int t) {
  xp_amx_usable(t);
  memset(xp_amx.b[t], 0, sizeof xp_amx.b[t]);
}

/* The operand checks of a tile dot product (int8 and bf16 alike): three distinct configured tiles
 * whose shapes agree (#UD otherwise: a trap).  Sets the product's rows, output dwords per row and
 * k groups (4-byte groups of a row of a). */
static inline void xp_tile_dp_shapes(int dst, int a, int b, int *rows, int *n_out, int *n_k) {
  xp_amx_usable(dst);
  xp_amx_usable(a);
  xp_amx_usable(b);
  xp_amx_check(dst != a && dst != b && a != b);
  *rows = xp_amx.rows[dst];
  *n_out = xp_amx.colsb[dst] / 4;
  *n_k = xp_amx.colsb[a] / 4;
  xp_amx_check(xp_amx.colsb[dst] % 4 == 0 && xp_amx.colsb[a] % 4 == 0);
  xp_amx_check(xp_amx.rows[a] == *rows && xp_amx.colsb[b] == xp_amx.colsb[dst] && xp_amx.rows[b] == *n_k);
}

/* TDPB{sa}{sb}D dst, a, b (sa, sb: 1 signed bytes, 0 unsigned) */
static inline void xp_tile_dpb(int sa, int sb, int dst, int a, int b) {
  int rows, n_out, n_k;
  xp_tile_dp_shapes(dst, a, b, &rows, &n_out, &n_k);
  uint8_t out[16][64];
  memset(out, 0, sizeof out);
  for (int m = 0; m < rows; ++m) {
    for (int n = 0; n < n_out; ++n) {
      uint32_t acc;
      memcpy(&acc, &xp_amx.b[dst][m][4 * n], 4);
      for (int k = 0; k < n_k; ++k) {
        for (int r = 0; r < 4; ++r) {
          const uint8_t x = xp_amx.b[a][m][4 * k + r], y = xp_amx.b[b][k][4 * n + r];
          const int32_t xv = sa ? (int32_t)(int8_t)x : (int32_t)x;
          const int32_t yv = sb ? (int32_t)(int8_t)y : (int32_t)y;
          acc += (uint32_t)(xv * yv);     /* |xv * yv| <= 65025: exact in int32; the sum wraps */
        }
      }
      memcpy(&out[m][4 * n], &acc, 4);
    }
  }
  memcpy(xp_amx.b[dst], out, sizeof out);   /* the rest of each row and the rows past `rows`: zero */
}

/* TDPBF16PS dst, a, b: bf16 pairs into float (AMX-BF16).  As Intel's pseudocode writes it, for
 * m < dst.rows, then k < a.colsb / 4 (the bf16 pairs of a row of a), then n < dst.colsb / 4:
 *     dst.f32[m][n] = FMA(a[m].bf16[2k],   b[k].bf16[2n],   dst.f32[m][n])
 *     dst.f32[m][n] = FMA(a[m].bf16[2k+1], b[k].bf16[2n+1], dst.f32[m][n])
 * the even element first (vdpbf16ps takes the odd one first); each step a single-precision fused
 * multiply-add rounded to nearest even, denormal inputs read as zero and denormal results flushed
 * to zero (xp_bf16_daz, xp_f32_ftz of immintrin.h), MXCSR neither read nor written.  The shapes
 * must agree as for the int8 products (#UD otherwise: a trap). */
static inline void xp_tile_dpbf16ps(int dst, int a, int b) {
  int rows, n_out, n_k;
  xp_tile_dp_shapes(dst, a, b, &rows, &n_out, &n_k);
  uint8_t out[16][64];
  memset(out, 0, sizeof out);
  for (int m = 0; m < rows; ++m) {
    float acc[16];
    memcpy(acc, xp_amx.b[dst][m], 4 * (size_t)n_out);
    for (int n = 0; n < n_out; ++n) acc[n] = xp_f32_ftz(acc[n]);
    for (int k = 0; k < n_k; ++k) {
      for (int n = 0; n < n_out; ++n) {
        for (int r = 0; r < 2; ++r) {
          uint16_t x, y;
          memcpy(&x, &xp_amx.b[a][m][4 * k + 2 * r], 2);
          memcpy(&y, &xp_amx.b[b][k][4 * n + 2 * r], 2);
          acc[n] = xp_f32_ftz(fmaf(xp_bf16_daz(x), xp_bf16_daz(y), acc[n]));
        }
      }
    }
    memcpy(out[m], acc, 4 * (size_t)n_out);
  }
  memcpy(xp_amx.b[dst], out, sizeof out);   /* the rest of each row and the rows past `rows`: zero */
}

/* the compiler's spellings (gcc: macros over inline asm) give way to the emulation */
#undef _tile_dpbf16ps
#define _tile_dpbf16ps(d, a, b) xp_tile_dpbf16ps((d), (a), (b))
#undef _tile_loadd
#undef _tile_stream_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbsud
#undef _tile_dpbusd
#undef _tile_dpbuud
#undef _tile_loadconfig
#undef _tile_storeconfig
#undef _tile_release
#define _tile_loadconfig(cfg) xp_tile_loadconfig(cfg)
#define _tile_storeconfig(cfg) xp_tile_storeconfig(cfg)
#define _tile_release() xp_tile_release()
#define _tile_loadd(t, base, stride) xp_tile_loadd((t), (base), (long)(stride))
#define _tile_stream_loadd(t, base, stride) xp_tile_loadd((t), (base), (long)(stride))
#define _tile_stored(t, base, stride) xp_tile_stored((t), (base), (long)(stride))
#define _tile_zero(t) xp_tile_zero(t)
#define _tile_dpbssd(d, a, b) xp_tile_dpb(1, 1, (d), (a), (b))
#define _tile_dpbsud(d, a, b) xp_tile_dpb(1, 0, (d), (a), (b))
#define _tile_dpbusd(d, a, b) xp_tile_dpb(0, 1, (d), (a), (b))
#define _tile_dpbuud(d, a, b) xp_tile_dpb(0, 0, (d), (a), (b))

#undef XP_AMX_PERMIT
#define XP_AMX_PERMIT() 0L

#endif /* XP_AMX_TILES_H */
