"""The AMX tile path of the int8 contraction form (:mod:`passes.patterns.x86_gemm_i8`), a compile-time
variant of it (xpiler/verify/variants.py; docs/target-c.md).

The int8 form's output carries two paths, chosen by the guard macro ``XP_USE_AMX`` (1 where the
compiler targets AMX-INT8 and AMX-TILE, e.g. ``-march=native`` on a Sapphire Rapids Xeon; 0
elsewhere; ``-DXP_USE_AMX=0/1`` overrides)::

    #if XP_USE_AMX
        <ask Linux for the tile state once>; if granted: <AMX path>; xa_done = 1
    #else
        const int xa_done = 0;
    #endif
        if (!xa_done) { <the AVX-512 VNNI path, as before> }

so a build with AMX whose kernel refuses the tile state (arch_prctl fails: Linux before 5.16, or
no permission) takes the VNNI path at run time, as does one whose B scratch cannot be allocated.

The AMX path, per batch:

* B (int8, K x N) is packed once per call into a 64-byte aligned scratch in the VNNI 4-byte-group
  layout that a B tile reads: ``Bp[N/16 panels][Kp/4 groups][16 columns][4 k]`` with Kp = K rounded
  up to 64 and N to 32, zero past K and past N; the 16 groups x 64 bytes of one panel at one
  k step are one B tile (stride 64).
* The rows of C go in 32-row blocks (the OpenMP loop).  Per block and k chunk of at most
  :data:`KC` (a multiple of 64), A's 32 rows are copied into a zero-padded stack buffer
  ``[32][kp]`` (kp = the chunk rounded up to 64), so the ragged M and K edges read zeros.
* Per 32-column block: a 2 x 2 block of C tiles (tmm0..tmm3, 16 x 16 int32 each) starts at zero
  (first k chunk) or is loaded from C; per 64-deep k step two A tiles (tmm4, tmm5: 16 rows x 64
  bytes) and two B tiles (tmm6, tmm7: 16 groups x 16 columns x 4) are loaded and four
  ``_tile_dpb{s,u}sd`` accumulate; then the four tiles are stored, straight into C where the
  block is whole, else through a 32 x 32 stack buffer of which only the valid part is copied.
* The tile configuration (palette 1, all eight tiles 16 rows x 64 bytes) is loaded at the start
  of each row block, on the thread that runs it, and released at its end.

Instruction choice: a signed (int8) A takes ``_tile_dpbssd`` (signed x signed), an unsigned (uint8)
A ``_tile_dpbusd`` (its first source unsigned, the second signed); B is int8 in both (the form's
precondition). So the bytes are multiplied as they are -- no ``a + 128`` offset as in the VNNI
path -- and the int32 sums wrap modulo 2^32 like the VNNI path's: each stored element is the
exact sum modulo 2^32, which is the source's result wherever the source's result is defined.
Zero padding adds nothing.

gcc writes the tile intrinsics as ``asm volatile`` with the addresses as plain register inputs
(gcc 12: no memory operand on tileloadd), so the path puts a compiler barrier
(``__atomic_signal_fence``) between the stores that fill a buffer and the tile loads that read it.
On a build for emulation the intrinsics and the permission hook ``XP_AMX_PERMIT()`` are replaced
by xpiler/runtime/c/simde/xp_amx_tiles.h.
"""
from __future__ import annotations

#: the guard macro of the variant
GUARD = "XP_USE_AMX"
#: names the AMX path declares start with this
P = "xa_"
#: k chunk per A copy (bytes of a row); 32 x KC bytes of A live on the thread's stack
KC = 1024
#: the tile instruction by A's signedness (B is int8)
DP = {True: "_tile_dpbssd", False: "_tile_dpbusd"}
OPS = ("_tile_loadconfig", "_tile_loadd", "_tile_stored", "_tile_zero", "_tile_release")

#: top-level text: the variant's guard (exactly as the variant contract prints it) and the Linux
#: permission hook; put after the includes, before the first function
HEAD = f"""#ifndef {GUARD}
#if defined(__AMX_INT8__) && defined(__AMX_TILE__)
#define {GUARD} 1
#else
#define {GUARD} 0
#endif
#endif
#if {GUARD}
#ifndef XP_AMX_PERMIT
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define XP_AMX_PERMIT() syscall(SYS_arch_prctl, 0x1023, 18)
#else
#define XP_AMX_PERMIT() 0
#endif
#endif
#endif"""

HEAD_COMMENT = ("/* XP_USE_AMX: AMX tiles for the int8 contraction; XP_AMX_PERMIT(): Linux hands a process "
                "the tile data state only on request, arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023, "
                "XFEATURE_XTILEDATA = 18), 0 when granted */")


def ops(signed_a: bool) -> tuple:
    return (DP[signed_a],) + OPS


def wrap(vnni: str, amx: str) -> str:
    """The two paths as the guard chooses them: ``amx`` sets ``xa_done`` to 1 when it ran."""
    return "\n".join([f"#if {GUARD}", amx, "#else",
                      f"const int {P}done = 0;  /* built without AMX tiles: the VNNI path */",
                      "#endif", f"if (!{P}done) {{", *("    " + ln for ln in vnni.splitlines()), "}"])


def body_text(*, M, N, K, batch, lda, ldb, ldc, a_ptr, b_ptr, c_ptr, a_type, signed_a) -> str:
    """The AMX path's statements (C text, no outer braces). The arguments are C expressions:
    sizes, leading dimensions, and the batch-``b`` operand pointers (they may use ``xa_b``)."""
    dp = DP[signed_a]
    L = []
    w = L.append
    w(f"/* AMX: 32 x 32 blocks of C in tiles 0-3, A in tiles 4-5, B (4-byte k groups) in tiles 6-7; {dp} */")
    w(f"static int {P}perm = 0;  /* Linux's answer to the tile-state request: 0 not asked, 1 granted, -1 not */")
    w(f"if ({P}perm == 0)")
    w(f"    {P}perm = XP_AMX_PERMIT() == 0 ? 1 : -1;")
    w(f"int {P}done = 0;")
    w(f"if ({P}perm > 0) {{")
    w(f"    const long {P}M = (long)({M}), {P}N = (long)({N}), {P}K = (long)({K}), {P}nb = {batch};")
    w(f"    const long {P}Kp = ({P}K + 63) / 64 * 64, {P}Np = ({P}N + 31) / 32 * 32;")
    w(f"    int8_t *{P}bp = 0;")
    w(f"    if ({P}M > 0 && {P}N > 0 && {P}K > 0 && {P}nb > 0)")
    w(f"        {P}bp = (int8_t *)aligned_alloc(64, (size_t)({P}Kp * {P}Np));")
    w(f"    if ({P}bp != 0) {{")
    w(f"        const long {P}lda = {lda}, {P}ldb = {ldb}, {P}ldc = {ldc};")
    tile_config(w, P)
    w(f"        for (long {P}b = 0; {P}b < {P}nb; ++{P}b) {{")
    w(f"            const {a_type} *{P}A = {a_ptr};")
    w(f"            const int8_t *{P}B = {b_ptr};")
    w(f"            int32_t *{P}C = {c_ptr};")
    # ---- pack B: panel jp (16 columns) holds Kp/4 groups of 16 x 4 bytes
    w("            #pragma omp parallel for schedule(static)")
    w(f"            for (long {P}jp = 0; {P}jp < {P}Np; {P}jp += 16) {{")
    w(f"                const long {P}n = {P}N - {P}jp;")
    w(f"                const __mmask16 {P}m = (__mmask16)({P}n >= 16 ? 0xFFFFu : ({P}n <= 0 ? 0u : (1u << {P}n) - 1u));")
    w(f"                int8_t *{P}dst = {P}bp + {P}jp * {P}Kp;")
    w(f"                for (long {P}q = 0; 4 * {P}q < {P}Kp; ++{P}q) {{")
    w(f"                    const long {P}k0 = 4 * {P}q;")
    for r in range(4):
        w(f"                    const __m128i {P}r{r} = {P}k0 + {r} < {P}K ? _mm512_castsi512_si128(_mm512_maskz_loadu_epi8("
          f"(__mmask64){P}m, {P}B + ({P}k0 + {r}) * {P}ldb + {P}jp)) : _mm_setzero_si128();")
    w(f"                    const __m128i {P}lo = _mm_unpacklo_epi8({P}r0, {P}r1), {P}hi = _mm_unpackhi_epi8({P}r0, {P}r1);")
    w(f"                    const __m128i {P}lob = _mm_unpacklo_epi8({P}r2, {P}r3), {P}hib = _mm_unpackhi_epi8({P}r2, {P}r3);")
    w(f"                    __m512i {P}p = _mm512_castsi128_si512(_mm_unpacklo_epi16({P}lo, {P}lob));")
    w(f"                    {P}p = _mm512_inserti32x4({P}p, _mm_unpackhi_epi16({P}lo, {P}lob), 1);")
    w(f"                    {P}p = _mm512_inserti32x4({P}p, _mm_unpacklo_epi16({P}hi, {P}hib), 2);")
    w(f"                    {P}p = _mm512_inserti32x4({P}p, _mm_unpackhi_epi16({P}hi, {P}hib), 3);")
    w(f"                    _mm512_store_si512((void *)({P}dst + {P}q * 64), {P}p);")
    w("                }")
    w("            }")
    # ---- row blocks
    w("            #pragma omp parallel for schedule(static)")
    w(f"            for (long {P}i = 0; {P}i < {P}M; {P}i += 32) {{")
    w(f"                int8_t {P}ap[32 * {KC}];")
    w(f"                int32_t {P}ct[32 * 32];")
    w(f"                const long {P}mr = {P}M - {P}i < 32 ? {P}M - {P}i : 32;")
    w(f"                _tile_loadconfig({P}cfg);")
    w(f"                for (long {P}pc = 0; {P}pc < {P}K; {P}pc += {KC}) {{")
    w(f"                    const long {P}kc = {P}K - {P}pc < {KC} ? {P}K - {P}pc : {KC};")
    w(f"                    const long {P}kp = ({P}kc + 63) / 64 * 64;")
    w(f"                    for (long {P}r = 0; {P}r < 32; ++{P}r) {{")
    w(f"                        int8_t *{P}d = {P}ap + {P}r * {P}kp;")
    w(f"                        if ({P}r < {P}mr) {{")
    w(f"                            memcpy({P}d, {P}A + ({P}i + {P}r) * {P}lda + {P}pc, (size_t){P}kc);")
    w(f"                            memset({P}d + {P}kc, 0, (size_t)({P}kp - {P}kc));")
    w("                        } else {")
    w(f"                            memset({P}d, 0, (size_t){P}kp);")
    w("                        }")
    w("                    }")
    w(f"                    for (long {P}j = 0; {P}j < {P}N; {P}j += 32) {{")
    w(f"                        const long {P}nr = {P}N - {P}j < 32 ? {P}N - {P}j : 32;")
    w(f"                        const int {P}whole = {P}mr == 32 && {P}nr == 32;")
    w(f"                        int32_t *{P}c = {P}C + {P}i * {P}ldc + {P}j;")
    w(f"                        const int8_t *{P}pb = {P}bp + {P}j * {P}Kp + {P}pc * 16;")
    w(f"                        if ({P}pc == 0) {{")
    for t in range(4):
        w(f"                            _tile_zero({t});")
    w(f"                        }} else if ({P}whole) {{")
    for t, (ro, co) in enumerate(((0, 0), (0, 16), (16, 0), (16, 16))):
        w(f"                            _tile_loadd({t}, {P}c + {ro} * {P}ldc + {co}, {P}ldc * 4);")
    w("                        } else {")
    w(f"                            for (long {P}r = 0; {P}r < 32; ++{P}r) {{")
    w(f"                                for (long {P}s = 0; {P}s < 32; ++{P}s) {{")
    w(f"                                    {P}ct[{P}r * 32 + {P}s] = {P}r < {P}mr && {P}s < {P}nr ? "
      f"{P}c[{P}r * {P}ldc + {P}s] : 0;")
    w("                                }")
    w("                            }")
    w("                            __atomic_signal_fence(__ATOMIC_SEQ_CST);")
    for t, (ro, co) in enumerate(((0, 0), (0, 16), (16, 0), (16, 16))):
        w(f"                            _tile_loadd({t}, {P}ct + {ro * 32 + co}, 128);")
    w("                        }")
    w("                        __atomic_signal_fence(__ATOMIC_SEQ_CST);")
    w(f"                        for (long {P}k = 0; {P}k < {P}kp; {P}k += 64) {{")
    w(f"                            _tile_loadd(4, {P}ap + {P}k, {P}kp);")
    w(f"                            _tile_loadd(5, {P}ap + 16 * {P}kp + {P}k, {P}kp);")
    w(f"                            _tile_loadd(6, {P}pb + {P}k * 16, 64);")
    w(f"                            _tile_loadd(7, {P}pb + 16 * {P}Kp + {P}k * 16, 64);")
    for t, (a, b) in enumerate(((4, 6), (4, 7), (5, 6), (5, 7))):
        w(f"                            {dp}({t}, {a}, {b});")
    w("                        }")
    store_tiles(w, P, f"{P}ldc", "int32_t")
    return "\n".join(L)


def tile_config(w, P: str) -> None:
    """The 64-byte tile configuration both AMX bodies load (int8 and bf16): palette 1, tiles 0-7
    each 16 rows of 64 bytes."""
    w(f"        unsigned char {P}cfg[64];  /* palette 1; tiles 0-7: 16 rows x 64 bytes */")
    w(f"        memset({P}cfg, 0, 64);")
    w(f"        {P}cfg[0] = 1;")
    w(f"        for (int {P}t = 0; {P}t < 8; ++{P}t) {{")
    w(f"            {P}cfg[16 + 2 * {P}t] = 64;")
    w(f"            {P}cfg[48 + {P}t] = 16;")
    w("        }")


def store_tiles(w, P: str, ldc: str, ctype: str) -> None:
    """The end of an AMX body (int8 and bf16 alike): the 2x2 block of C tiles stored straight into C
    when the block is whole, else through the 32x32 scratch ``ct`` and a copy of its mr x nr corner;
    then the loops closed, the tiles released and the packed B freed. ``ldc``: C's row stride as
    text; ``ctype``: C's element type (4 bytes)."""
    w(f"                        if ({P}whole) {{")
    for t, (ro, co) in enumerate(((0, 0), (0, 16), (16, 0), (16, 16))):
        w(f"                            _tile_stored({t}, {P}c + {ro} * {ldc} + {co}, {ldc} * 4);")
    w("                        } else {")
    for t, (ro, co) in enumerate(((0, 0), (0, 16), (16, 0), (16, 16))):
        w(f"                            _tile_stored({t}, {P}ct + {ro * 32 + co}, 128);")
    w(f"                            for (long {P}r = 0; {P}r < {P}mr; ++{P}r) {{")
    w(f"                                memcpy({P}c + {P}r * {ldc}, {P}ct + {P}r * 32, sizeof({ctype}) * (size_t){P}nr);")
    w("                            }")
    w("                        }")
    w("                    }")
    w("                }")
    w("                _tile_release();")
    w("            }")
    w("        }")
    w(f"        {P}done = 1;")
    w("    }")
    w(f"    free({P}bp);")
    w("}")


def add_head(program):
    """``program`` with :data:`HEAD` before its first function (once)."""
    from xpiler.frontend import parse_text
    from xpiler.ir import nodes as N
    if any(isinstance(it, N.Directive) and it.text.strip() == f"#ifndef {GUARD}" for it in program.items):
        return program
    text = HEAD_COMMENT + "\n" + HEAD + "\nvoid xp_amx_head(void) {}\n"    # (the parser wants a function)
    head = [it for it in parse_text(text, "c", "xp_amx_head.c").items if not isinstance(it, N.Func)]
    items = list(program.items)
    first = next((k for k, it in enumerate(items) if isinstance(it, N.Func)), len(items))
    return program.with_(items=tuple(items[:first] + head + items[first:]))
