"""The AMX tile path of the bfloat16 contraction form (:mod:`passes.patterns.x86_gemm_bf16`): ``_tile_dpbf16ps``
under the guard ``XP_USE_AMX`` (1 where the compiler targets AMX-BF16 and AMX-TILE), laid out like the
int8 tile path (:mod:`passes.patterns.x86_gemm_amx`, whose permission hook and ``wrap`` it shares).

Per call and batch, when K > 0 and Linux grants the tile state:

* B is packed once into a 64-byte aligned scratch of bf16 pairs, the layout a B tile of tdpbf16ps
  reads: ``Bp[Np/16 panels][Kp/2 pairs][16 columns]`` 32-bit words, ``B[2q][j]`` in the low half and
  ``B[2q+1][j]`` in the high half, Kp = K rounded up to 32 and Np = N to 32, zero past K and N. At
  one 32-deep k step the 16 pairs x 64 bytes of a panel are one B tile (stride 64).
* Rows of C go in 32-row blocks (the OpenMP loop). Per block and k chunk of at most :data:`KC`
  bf16 (a multiple of 32), A's 32 rows are copied into a zero-padded stack buffer ``[32][kp]``
  (kp = the chunk rounded up to 32): an A tile is 16 rows x 32 bf16 (16 pairs).
* Per 32-column block, a 2 x 2 block of C tiles (tmm0-3, 16 x 16 floats) starts at zero (first
  chunk) or is loaded from C; per 32-deep k step two A tiles (tmm4, tmm5) and two B tiles (tmm6,
  tmm7) and four ``_tile_dpbf16ps``; the tiles are stored straight into C where the block is
  whole, else through a 32 x 32 stack buffer of which the valid part is copied.

Numerics (Intel's description; docs/target-c.md): each pair step is a float fused multiply-add, the
even element of a pair first, rounded to nearest even, with denormal inputs read as zero and
denormal results flushed to zero. The products of bfloat16 values are exact in float, so the tile
path sums the source's products in float in another grouping, like the other two paths.
"""
from __future__ import annotations

from . import x86_gemm_amx as XA

GUARD = XA.GUARD
P = XA.P
#: k chunk per A copy (bf16 elements of a row); 32 x KC x 2 bytes of A live on the thread's stack
KC = 512
DP = "_tile_dpbf16ps"
OPS = (DP,) + XA.OPS
HEAD = XA.HEAD.replace("defined(__AMX_INT8__)", "defined(__AMX_BF16__)")
HEAD_COMMENT = XA.HEAD_COMMENT.replace("AMX tiles for the int8 contraction", "AMX tiles (AMX-BF16) for the "
                                       "bfloat16 contraction")
assert HEAD != XA.HEAD and HEAD_COMMENT != XA.HEAD_COMMENT
wrap = XA.wrap


def body_text(*, M, N, K, batch, lda, ldb, ldc, a_ptr, b_ptr, c_ptr) -> str:
    """The AMX path's statements (C text, no outer braces); sizes and pointers are C expressions
    (the pointers may use ``xa_b``; A and B as ``const uint16_t *``)."""
    L = []
    w = L.append
    w(f"/* AMX: 32 x 32 blocks of C in tiles 0-3, A in tiles 4-5 (16 rows x 32 bf16), B (bf16 pairs) in tiles "
      f"6-7; {DP} */")
    w(f"static int {P}perm = 0;  /* Linux's answer to the tile-state request: 0 not asked, 1 granted, -1 not */")
    w(f"if ({P}perm == 0)")
    w(f"    {P}perm = XP_AMX_PERMIT() == 0 ? 1 : -1;")
    w(f"int {P}done = 0;")
    w(f"if ({P}perm > 0 && ({K}) > 0) {{")
    w(f"    const long {P}M = {M}, {P}N = {N}, {P}K = {K}, {P}nb = {batch};")
    w(f"    const long {P}Kp = ({P}K + 31) / 32 * 32, {P}Np = ({P}N + 31) / 32 * 32, {P}Q = {P}Kp / 2;")
    w(f"    uint32_t *{P}bp = (uint32_t *)aligned_alloc(64, (size_t)({P}Q * {P}Np * 4));")
    w(f"    if ({P}bp != 0) {{")
    XA.tile_config(w, P)
    w(f"        for (long {P}b = 0; {P}b < {P}nb; ++{P}b) {{")
    w(f"            const uint16_t *{P}A = {a_ptr};")
    w(f"            const uint16_t *{P}B = {b_ptr};")
    w(f"            float *{P}C = {c_ptr};")
    w("            #pragma omp parallel for schedule(static)")
    w(f"            for (long {P}jp = 0; {P}jp < {P}Np; {P}jp += 16) {{")
    w(f"                uint32_t *{P}dst = {P}bp + {P}jp * {P}Q;")
    w(f"                for (long {P}q = 0; {P}q < {P}Q; ++{P}q) {{")
    w(f"                    for (long {P}j = 0; {P}j < 16; ++{P}j) {{")
    w(f"                        const long {P}col = {P}jp + {P}j, {P}k0 = 2 * {P}q;")
    w(f"                        uint32_t {P}wd = 0;")
    w(f"                        if ({P}col < {P}N && {P}k0 < {P}K)")
    w(f"                            {P}wd = (uint32_t){P}B[{P}k0 * {ldb} + {P}col] | ({P}k0 + 1 < {P}K ? "
      f"(uint32_t){P}B[({P}k0 + 1) * {ldb} + {P}col] << 16 : 0u);")
    w(f"                        {P}dst[{P}q * 16 + {P}j] = {P}wd;")
    w("                    }")
    w("                }")
    w("            }")
    w("            #pragma omp parallel for schedule(static)")
    w(f"            for (long {P}i = 0; {P}i < {P}M; {P}i += 32) {{")
    w(f"                uint16_t {P}ap[32 * {KC}];")
    w(f"                float {P}ct[32 * 32];")
    w(f"                const long {P}mr = {P}M - {P}i < 32 ? {P}M - {P}i : 32;")
    w(f"                _tile_loadconfig({P}cfg);")
    w(f"                for (long {P}pc = 0; {P}pc < {P}K; {P}pc += {KC}) {{")
    w(f"                    const long {P}kc = {P}K - {P}pc < {KC} ? {P}K - {P}pc : {KC};")
    w(f"                    const long {P}kp = ({P}kc + 31) / 32 * 32;")
    w(f"                    for (long {P}r = 0; {P}r < 32; ++{P}r) {{")
    w(f"                        uint16_t *{P}d = {P}ap + {P}r * {P}kp;")
    w(f"                        if ({P}r < {P}mr) {{")
    w(f"                            memcpy({P}d, {P}A + ({P}i + {P}r) * {lda} + {P}pc, 2 * (size_t){P}kc);")
    w(f"                            memset({P}d + {P}kc, 0, 2 * (size_t)({P}kp - {P}kc));")
    w("                        } else {")
    w(f"                            memset({P}d, 0, 2 * (size_t){P}kp);")
    w("                        }")
    w("                    }")
    w(f"                    for (long {P}j = 0; {P}j < {P}N; {P}j += 32) {{")
    w(f"                        const long {P}nr = {P}N - {P}j < 32 ? {P}N - {P}j : 32;")
    w(f"                        const int {P}whole = {P}mr == 32 && {P}nr == 32;")
    w(f"                        float *{P}c = {P}C + {P}i * {ldc} + {P}j;")
    w(f"                        const uint32_t *{P}pb = {P}bp + {P}j * {P}Q + {P}pc / 2 * 16;")
    w(f"                        if ({P}pc == 0) {{")
    for t in range(4):
        w(f"                            _tile_zero({t});")
    w(f"                        }} else if ({P}whole) {{")
    for t, (ro, co) in enumerate(((0, 0), (0, 16), (16, 0), (16, 16))):
        w(f"                            _tile_loadd({t}, {P}c + {ro} * {ldc} + {co}, {ldc} * 4);")
    w("                        } else {")
    w(f"                            for (long {P}r = 0; {P}r < 32; ++{P}r) {{")
    w(f"                                for (long {P}s = 0; {P}s < 32; ++{P}s) {{")
    w(f"                                    {P}ct[{P}r * 32 + {P}s] = {P}r < {P}mr && {P}s < {P}nr ? "
      f"{P}c[{P}r * {ldc} + {P}s] : 0.0f;")
    w("                                }")
    w("                            }")
    w("                            __atomic_signal_fence(__ATOMIC_SEQ_CST);")
    for t, (ro, co) in enumerate(((0, 0), (0, 16), (16, 0), (16, 16))):
        w(f"                            _tile_loadd({t}, {P}ct + {ro * 32 + co}, 128);")
    w("                        }")
    w("                        __atomic_signal_fence(__ATOMIC_SEQ_CST);")
    w(f"                        for (long {P}k = 0; {P}k < {P}kp; {P}k += 32) {{")
    w(f"                            _tile_loadd(4, {P}ap + {P}k, {P}kp * 2);")
    w(f"                            _tile_loadd(5, {P}ap + 16 * {P}kp + {P}k, {P}kp * 2);")
    w(f"                            _tile_loadd(6, {P}pb + {P}k / 2 * 16, 64);")
    w(f"                            _tile_loadd(7, {P}pb + 16 * {P}Q + {P}k / 2 * 16, 64);")
    for t, (a, b) in enumerate(((4, 6), (4, 7), (5, 6), (5, 7))):
        w(f"                            {DP}({t}, {a}, {b});")
    w("                        }")
    XA.store_tiles(w, P, ldc, "float")
    return "\n".join(L)
