"""Block-tiled WMMA matmul for cuda (half x half -> float): tensorize's ``tile`` form.

The one-warp form (:func:`passes.patterns.simt_tile.wmma_body`) gives each 32-thread block one
16x16 tile of C and re-reads A and B from global memory for every tile; on an H100 it ran the
1024^3 half gemm at 0.28x of cuBLAS. Here a block of ``warps`` warps computes a ``BM x BN`` tile
of C; the warps form a ``WR x WC`` grid and each warp holds ``FM x FN`` 16x16 float accumulator
fragments (a ``BM/WR x BN/WC`` warp tile). Per ``BK``-deep k slice::

    A slice: xp_As[r * (BK + 8) + k]   (BM rows, skewed by 8 halves against bank conflicts)
    B slice: xp_Bs[k * (BN + 8) + c]   (BK rows, skewed likewise)
    each thread moves 8-half chunks: one 16-byte load / store where the chunk lies inside the
    matrix, is contiguous in memory (proven from the index: unit stride in k for A, in j for B)
    and 16-byte aligned (tested at run time); element by element with zero fill otherwise
    __syncthreads(); for kk in 0, 16, ..: load FM A and FN B fragments, FM * FN mma_sync

``double``: two shared slices; slice k0 + BK is fetched into registers (16-byte chunks; an edge
chunk goes straight to shared memory) while slice k0 is multiplied, then stored into the other
buffer: one ``__syncthreads`` per slice. Each accumulator goes through a per-warp 16x16 float
scratch tile (``store_matrix_sync``), from which the warp writes the in-range elements of C.

Numerics: the inputs are the source's half values (zero outside the matrix: adds +0), the
products and sums are float, as the one-warp form and the source compute; only the order of the
float sum inside one mma step is the tensor core's.
"""
from __future__ import annotations

from xpiler.ir import nodes as N

from . import simt_tile as ST

SKEW = 8            # halves added to every shared row (16 bytes: keeps 16-byte chunks aligned)
CHUNK = 8           # halves per 16-byte chunk
#: (BM, BN, warps, BK, double) the search may choose (tensorize candidates)
SHAPES = ((64, 64, 4, 32, True), (64, 64, 4, 32, False), (128, 128, 8, 32, True), (128, 64, 8, 32, True),
          (64, 128, 8, 32, True))
SHARED_LIMIT = 48 * 1024


def warp_grid(BM: int, BN: int, warps: int) -> tuple[int, int]:
    """(WR, WC): the warps' rows x columns over the block tile; the longer side gets more warps."""
    best = None
    for wr in range(1, warps + 1):
        if warps % wr:
            continue
        wc = warps // wr
        if BM % (16 * wr) or BN % (16 * wc):
            continue
        tm, tn = BM // wr, BN // wc
        score = (abs(tm - tn), -min(tm, tn))
        if best is None or score < best[0]:
            best = (score, (wr, wc))
    return best[1] if best else (0, 0)


def shared_bytes(BM: int, BN: int, warps: int, BK: int, double: bool) -> int:
    nbuf = 2 if double else 1
    return nbuf * 2 * (BM * (BK + SKEW) + BK * (BN + SKEW)) + 4 * 256 * warps


def check_params(BM, BN, warps, BK, double) -> str | None:
    """Why these block parameters are not a valid form (None: they are)."""
    if min(BM, BN, warps, BK) <= 0:
        return f"tile {BM}x{BN}, warps {warps}, bk {BK}: every size must be positive"
    if BM % 16 or BN % 16 or BK % 16:
        return f"tile {BM}x{BN} and bk {BK} must be multiples of 16 (the 16x16x16 fragment)"
    if warps not in (1, 2, 4, 8, 16):
        return f"warps {warps}: 1, 2, 4, 8 or 16 warps per block"
    WR, WC = warp_grid(BM, BN, warps)
    if not WR:
        return f"tile {BM}x{BN} does not split into {warps} warp tiles of whole 16x16 fragments"
    FM, FN = BM // WR // 16, BN // WC // 16
    if FM * FN > 8:
        return f"a warp tile of {FM}x{FN} fragments holds too many accumulators (at most 8)"
    NT = 32 * warps
    if (BM * BK // CHUNK) % NT or (BK * BN // CHUNK) % NT:
        return (f"the {BM}x{BK} and {BK}x{BN} slices do not split evenly into 8-half chunks over {NT} "
                f"threads")
    need = shared_bytes(BM, BN, warps, BK, double)
    if need > SHARED_LIMIT:
        return f"{need} bytes of static shared memory, more than {SHARED_LIMIT}"
    return None


def check_kernel(ct) -> str | None:
    """Why the contraction is not one this form computes (None: it is)."""
    if ct.per_row:
        return f"the per-row form (the row operand '{ct.A}' has no column index) is not a matrix product"
    if ct.dtypes.get("A") != "float16" or ct.dtypes.get("B") != "float16":
        return f"operands {ct.dtypes.get('A')} x {ct.dtypes.get('B')}: the form takes half inputs only"
    if ct.dtypes.get("C") != "float32" or ct.acc_dtype != "float32":
        return f"result {ct.dtypes.get('C')} / accumulator {ct.acc_dtype}: the form accumulates and stores float"
    return None


def unit_stride(index, var: str) -> bool:
    """The index is affine with coefficient exactly 1 in ``var`` (``var`` in no other monomial):
    consecutive values of ``var`` are consecutive elements."""
    from xpiler.ir.affine import to_affine
    a = to_affine(index)
    if a is None:
        return False
    terms = [(m, c) for m, c in a.coeffs if var in m.split("*")]
    return terms == [(var, 1)]


def body(ct, BM: int, BN: int, warps: int, BK: int, double: bool) -> str:
    E = ST.Emit(ct, "cuda")
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    b = "xp_b" if ct.batch is not None else N.Const(0, "int32", "0")
    WR, WC = warp_grid(BM, BN, warps)
    TMw, TNw = BM // WR, BN // WC
    FM, FN = TMw // 16, TNw // 16
    NT = 32 * warps
    SA, SB = BK + SKEW, BN + SKEW
    ASZ, BSZ = BM * SA, BK * SB
    nbuf = 2 if double else 1
    CA, CB = BM * BK // CHUNK, BK * BN // CHUNK
    NA, NB = CA // NT, CB // NT
    vec_a = unit_stride(ct.a_idx, ST.PREFIX + "k")
    vec_b = unit_stride(ct.b_idx, ST.PREFIX + "j")
    zero = "__float2half(0.0f)"

    def a_at(r, k):
        return E.load("A", b, r, k)

    def b_at(k, c):
        return E.load("B", b, k, c)

    def a_chunk(t):
        return [f"const int xp_r = ({t}) / {BK // CHUNK};", f"const int xp_c = ({t}) % {BK // CHUNK} * {CHUNK};"]

    def b_chunk(t):
        return [f"const int xp_r = ({t}) / {BN // CHUNK};", f"const int xp_c = ({t}) % {BN // CHUNK} * {CHUNK};"]

    # the 16-byte test of a chunk: inside the matrix, contiguous (proven above), aligned
    def a_vec(k0):
        gi, gk = "xp_row0 + xp_r", f"{k0} + xp_c"
        return (f"xp_row0 + xp_r < {Mx} && {k0} + xp_c + {CHUNK} <= {Kx} && "
                f"((size_t)(&{a_at(gi, gk)}) & 15) == 0")

    def b_vec(k0):
        gk, gj = f"{k0} + xp_r", "xp_col0 + xp_c"
        return (f"{k0} + xp_r < {Kx} && xp_col0 + xp_c + {CHUNK} <= {Nx} && "
                f"((size_t)(&{b_at(gk, gj)}) & 15) == 0")

    def a_scalar(k0, buf):
        return [f"for (int xp_e = 0; xp_e < {CHUNK}; ++xp_e) {{",
                f"    xp_As[{buf} + xp_r * {SA} + xp_c + xp_e] = (xp_row0 + xp_r < {Mx} && {k0} + xp_c + xp_e < {Kx}) "
                f"? {a_at('xp_row0 + xp_r', f'{k0} + xp_c + xp_e')} : {zero};",
                "}"]

    def b_scalar(k0, buf):
        return [f"for (int xp_e = 0; xp_e < {CHUNK}; ++xp_e) {{",
                f"    xp_Bs[{buf} + xp_r * {SB} + xp_c + xp_e] = ({k0} + xp_r < {Kx} && xp_col0 + xp_c + xp_e < {Nx}) "
                f"? {b_at(f'{k0} + xp_r', 'xp_col0 + xp_c + xp_e')} : {zero};",
                "}"]

    def a_load(k0):
        return f"*((const uint4 *)(&{a_at('xp_row0 + xp_r', f'{k0} + xp_c')}))"

    def b_load(k0):
        return f"*((const uint4 *)(&{b_at(f'{k0} + xp_r', 'xp_col0 + xp_c')}))"

    def a_dst(buf):
        return f"*((uint4 *)(&xp_As[{buf} + xp_r * {SA} + xp_c]))"

    def b_dst(buf):
        return f"*((uint4 *)(&xp_Bs[{buf} + xp_r * {SB} + xp_c]))"

    def ind(lines, n):
        return [" " * n + ln for ln in lines]

    def stage_direct(k0, abuf, bbuf):
        """Both slices at k0 into shared memory, every chunk stored as it is loaded."""
        out = ["#pragma unroll", f"for (int xp_u = 0; xp_u < {NA}; ++xp_u) {{"]
        inner = a_chunk(f"xp_tid + xp_u * {NT}")
        if vec_a:
            inner += [f"if ({a_vec(k0)}) {{", f"    {a_dst(abuf)} = {a_load(k0)};", "} else {"]
            inner += ind(a_scalar(k0, abuf), 4) + ["}"]
        else:
            inner += a_scalar(k0, abuf)
        out += ind(inner, 4) + ["}", "#pragma unroll", f"for (int xp_u = 0; xp_u < {NB}; ++xp_u) {{"]
        inner = b_chunk(f"xp_tid + xp_u * {NT}")
        if vec_b:
            inner += [f"if ({b_vec(k0)}) {{", f"    {b_dst(bbuf)} = {b_load(k0)};", "} else {"]
            inner += ind(b_scalar(k0, bbuf), 4) + ["}"]
        else:
            inner += b_scalar(k0, bbuf)
        return out + ind(inner, 4) + ["}"]

    def compute(abuf, bbuf):
        out = ["#pragma unroll", f"for (int xp_kk = 0; xp_kk < {BK}; xp_kk += 16) {{"]
        for m in range(FM):
            out.append(f"    wmma::load_matrix_sync(xp_fa{m}, xp_As + {abuf} + (xp_wr * {TMw} + {m * 16}) * {SA} + xp_kk, "
                       f"{SA});")
        for n in range(FN):
            out.append(f"    wmma::load_matrix_sync(xp_fb{n}, xp_Bs + {bbuf} + xp_kk * {SB} + xp_wc * {TNw} + {n * 16}, "
                       f"{SB});")
        for m in range(FM):
            for n in range(FN):
                out.append(f"    wmma::mma_sync(xp_fc{m}{n}, xp_fa{m}, xp_fb{n}, xp_fc{m}{n});")
        return out + ["}"]

    L = [f"__shared__ __align__(32) half xp_As[{nbuf * ASZ}];",
         f"__shared__ __align__(32) half xp_Bs[{nbuf * BSZ}];",
         f"__shared__ __align__(32) float xp_Cs[{warps * 256}];",
         "const int xp_tid = threadIdx.x;",
         "const int xp_warp = xp_tid / 32;",
         "const int xp_lane = xp_tid % 32;",
         f"const int xp_wr = xp_warp / {WC};",
         f"const int xp_wc = xp_warp % {WC};",
         f"const int xp_row0 = blockIdx.y * {BM};",
         f"const int xp_col0 = blockIdx.x * {BN};"]
    head = len(L)
    for m in range(FM):
        L.append(f"wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> xp_fa{m};")
    for n in range(FN):
        L.append(f"wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> xp_fb{n};")
    for m in range(FM):
        for n in range(FN):
            L += [f"wmma::fragment<wmma::accumulator, 16, 16, 16, float> xp_fc{m}{n};",
                  f"wmma::fill_fragment(xp_fc{m}{n}, 0.0f);"]
    if not double:
        L += [f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {BK}) {{"]
        L += ind(stage_direct("xp_k0", "0", "0"), 4)
        L += ["    __syncthreads();"] + ind(compute("0", "0"), 4) + ["    __syncthreads();", "}"]
    else:
        # registers of the next slice's 16-byte chunks; an edge chunk is written to shared memory
        # at once (the buffer it goes to was last read before the previous __syncthreads)
        L += [f"uint4 xp_ra[{NA}];", f"uint4 xp_rb[{NB}];", f"bool xp_va[{NA}];", f"bool xp_vb[{NB}];"]
        L += stage_direct("0", "0", "0") + ["__syncthreads();"]
        L += [f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {BK}) {{",
              f"    const int xp_s = xp_k0 / {BK} % 2;",
              f"    const int xp_kn = xp_k0 + {BK};",
              f"    if (xp_kn < {Kx}) {{"]
        nxt_a, nxt_b = f"(1 - xp_s) * {ASZ}", f"(1 - xp_s) * {BSZ}"
        fa = ["#pragma unroll", f"for (int xp_u = 0; xp_u < {NA}; ++xp_u) {{"]
        inner = a_chunk(f"xp_tid + xp_u * {NT}")
        if vec_a:
            inner += [f"xp_va[xp_u] = {a_vec('xp_kn')};", "if (xp_va[xp_u]) {",
                      f"    xp_ra[xp_u] = {a_load('xp_kn')};", "} else {"] + ind(a_scalar("xp_kn", nxt_a), 4) + ["}"]
        else:
            inner += ["xp_va[xp_u] = false;"] + a_scalar("xp_kn", nxt_a)
        fa += ind(inner, 4) + ["}", "#pragma unroll", f"for (int xp_u = 0; xp_u < {NB}; ++xp_u) {{"]
        inner = b_chunk(f"xp_tid + xp_u * {NT}")
        if vec_b:
            inner += [f"xp_vb[xp_u] = {b_vec('xp_kn')};", "if (xp_vb[xp_u]) {",
                      f"    xp_rb[xp_u] = {b_load('xp_kn')};", "} else {"] + ind(b_scalar("xp_kn", nxt_b), 4) + ["}"]
        else:
            inner += ["xp_vb[xp_u] = false;"] + b_scalar("xp_kn", nxt_b)
        fa += ind(inner, 4) + ["}"]
        L += ind(fa, 8) + ["    }"]
        L += ind(compute(f"xp_s * {ASZ}", f"xp_s * {BSZ}"), 4)
        st = ["#pragma unroll", f"for (int xp_u = 0; xp_u < {NA}; ++xp_u) {{",
              "    if (xp_va[xp_u]) {"] + ind(a_chunk(f"xp_tid + xp_u * {NT}"), 8) + [
              f"        {a_dst(nxt_a)} = xp_ra[xp_u];", "    }", "}",
              "#pragma unroll", f"for (int xp_u = 0; xp_u < {NB}; ++xp_u) {{",
              "    if (xp_vb[xp_u]) {"] + ind(b_chunk(f"xp_tid + xp_u * {NT}"), 8) + [
              f"        {b_dst(nxt_b)} = xp_rb[xp_u];", "    }", "}"]
        L += [f"    if (xp_kn < {Kx}) {{"] + ind(st, 8) + ["    }", "    __syncthreads();", "}"]
    # the accumulators through the warp's scratch tile; only the in-range elements of C are written
    for m in range(FM):
        for n in range(FN):
            L += [f"wmma::store_matrix_sync(xp_Cs + xp_warp * 256, xp_fc{m}{n}, 16, wmma::mem_row_major);",
                  "__syncwarp();",
                  "for (int xp_t = xp_lane; xp_t < 256; xp_t += 32) {",
                  f"    const int xp_i = xp_row0 + xp_wr * {TMw} + {m * 16} + xp_t / 16;",
                  f"    const int xp_j = xp_col0 + xp_wc * {TNw} + {n * 16} + xp_t % 16;",
                  f"    if (xp_i < {Mx} && xp_j < {Nx}) {{",
                  f"        {ct.C}[{E.e(ct.c_idx, b=b, i='xp_i', j='xp_j')}] = xp_Cs[xp_warp * 256 + xp_t];",
                  "    }",
                  "}",
                  "__syncwarp();"]
    return ST._batched(ct, E, L, head)


def launch(ct, BM: int, BN: int, warps: int) -> dict:
    return ST.launch(ct, "cuda", 32 * warps, 1, BM, BN)
