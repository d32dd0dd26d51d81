"""Register-blocked matmul kernels for cuda/hip: the cache pass's ``thread_tile`` form.

The one-element-per-thread tiled kernel (:func:`passes.patterns.simt_tile.tiled_body`) reads
two shared-memory values per multiply-add; on the H200 it ran gemm 1024^3 fp32 at 0.25x of
cuBLAS. Here a block of ``(BN/TN) x (BM/TM)`` threads computes a ``BM x BN`` tile of C and each
thread a ``TM x TN`` sub-tile held in registers: per step ``kk`` of a ``BK``-deep slice it reads
``TM`` values of A and ``TN`` of B from shared memory and does ``TM * TN`` multiply-adds.

    __shared__ float xp_As[BK * (BM+1)];  // A slice, k-major: xp_As[kk * (BM + 1) + r]
    __shared__ float xp_Bs[BK * BN];      // B slice, row-major: xp_Bs[kk * BN + c]
    float xp_acc[TM][TN] = 0;
    for (k0 = 0; k0 < K; k0 += BK) {
        cooperative, guarded loads of both slices (zero outside the matrices); __syncthreads();
        for (kk = 0; kk < BK; ++kk) {
            xp_a[m] = xp_As[kk * BM + ty + m * SY];      // SY = BM / TM threads along i
            xp_b[n] = xp_Bs[kk * BN + tx + n * SX];      // SX = BN / TN threads along j
            xp_acc[m][n] += op(xp_a[m]) * op(xp_b[n]);
        }
        __syncthreads();
    }
    C[i0 + ty + m*SY][j0 + tx + n*SX] = xp_acc[m][n]   (guarded)

The rows and columns a thread owns are strided by the thread counts, so the threads of a warp
read consecutive shared words of B (no bank conflicts), broadcast the same words of A, and write
consecutive elements of C. Every element of C is still the sum over k in increasing order,
starting from zero, of the same products (the zero padding adds +0): the result is the one the
one-element kernel computes. Only float32 operands and accumulator (a half or int8 product kept
in registers would round differently from the source's expression).
"""
from __future__ import annotations

from . import simt_kparts as KP
from . import simt_tile as ST

#: (BM = BN, TM = TN, BK) offered by the cache pass's candidates
SHAPES = ((64, 4, 16), (128, 8, 8), (64, 8, 8))


def check_shape(ct, BM: int, TM: int, BK: int) -> str | None:
    """Why this register tiling does not apply to ``ct`` (None: it does)."""
    if any(ct.dtypes.get(x) != "float32" for x in ("A", "B", "C")) or ct.acc_dtype != "float32":
        return "register tiles are for float32 operands and accumulator"
    if BM <= 0 or TM <= 0 or BK <= 0 or BM % TM:
        return f"tile {BM} is not a multiple of thread tile {TM}"
    threads = (BM // TM) ** 2
    if threads > 1024 or threads < 32:
        return f"tile {BM} / thread tile {TM} gives {threads} threads per block (32 to 1024)"
    if TM * TM > 64:
        return f"a {TM}x{TM} thread tile holds too many accumulators"
    return None


def body(ct, dialect: str, BM: int, TM: int, BK: int) -> str:
    E = ST.Emit(ct, dialect)
    BN, TN = BM, TM
    SY, SX = BM // TM, BN // TN
    NT = SX * SY
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    b = "xp_b" if ct.batch is not None else ST.N.Const(0, "int32", "0")
    PA = BM + 1         # the A slice is stored transposed; a padded row keeps its stores off one bank
    L = [f"__shared__ float xp_As[{BK * PA}];", f"__shared__ float xp_Bs[{BK * BN}];",
         "const int xp_tx = threadIdx.x;", "const int xp_ty = threadIdx.y;",
         f"const int xp_tid = xp_ty * {SX} + xp_tx;"]
    head = len(L)
    L += [f"const int xp_i0 = blockIdx.y * {BM};", f"const int xp_j0 = blockIdx.x * {BN};",
          f"float xp_acc[{TM}][{TN}];",
          f"for (int xp_m = 0; xp_m < {TM}; ++xp_m) {{",
          f"    for (int xp_n = 0; xp_n < {TN}; ++xp_n) {{",
          "        xp_acc[xp_m][xp_n] = 0.0f;",
          "    }",
          "}",
          f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {BK}) {{",
          f"    for (int xp_t = xp_tid; xp_t < {BM * BK}; xp_t += {NT}) {{",
          f"        const int xp_r = xp_t / {BK};",
          f"        const int xp_c = xp_t % {BK};",
          f"        xp_As[xp_c * {PA} + xp_r] = (xp_i0 + xp_r < {Mx} && xp_k0 + xp_c < {Kx}) ? "
          f"{E.load('A', b, 'xp_i0 + xp_r', 'xp_k0 + xp_c')} : 0.0f;",
          "    }",
          f"    for (int xp_t = xp_tid; xp_t < {BK * BN}; xp_t += {NT}) {{",
          f"        const int xp_r = xp_t / {BN};",
          f"        const int xp_c = xp_t % {BN};",
          f"        xp_Bs[xp_t] = (xp_k0 + xp_r < {Kx} && xp_j0 + xp_c < {Nx}) ? "
          f"{E.load('B', b, 'xp_k0 + xp_r', 'xp_j0 + xp_c')} : 0.0f;",
          "    }",
          "    __syncthreads();",
          f"    for (int xp_kk = 0; xp_kk < {BK}; ++xp_kk) {{",
          f"        float xp_a[{TM}];",
          f"        float xp_bv[{TN}];",
          f"        for (int xp_m = 0; xp_m < {TM}; ++xp_m) {{",
          f"            xp_a[xp_m] = {E.op('A', f'xp_As[xp_kk * {PA} + xp_ty + xp_m * {SY}]')};",
          "        }",
          f"        for (int xp_n = 0; xp_n < {TN}; ++xp_n) {{",
          f"            xp_bv[xp_n] = {E.op('B', f'xp_Bs[xp_kk * {BN} + xp_tx + xp_n * {SX}]')};",
          "        }",
          f"        for (int xp_m = 0; xp_m < {TM}; ++xp_m) {{",
          f"            for (int xp_n = 0; xp_n < {TN}; ++xp_n) {{",
          "                xp_acc[xp_m][xp_n] += xp_a[xp_m] * xp_bv[xp_n];",
          "            }",
          "        }",
          "    }",
          "    __syncthreads();",
          "}",
          f"for (int xp_m = 0; xp_m < {TM}; ++xp_m) {{",
          f"    for (int xp_n = 0; xp_n < {TN}; ++xp_n) {{",
          f"        const int xp_i = xp_i0 + xp_ty + xp_m * {SY};",
          f"        const int xp_j = xp_j0 + xp_tx + xp_n * {SX};",
          f"        if (xp_i < {Mx} && xp_j < {Nx}) {{",
          f"            {ct.C}[{E.e(ct.c_idx, b=b, i='xp_i', j='xp_j')}] = xp_acc[xp_m][xp_n];",
          "        }",
          "    }",
          "}"]
    return ST._batched(ct, E, L, head)


def launch(ct, dialect: str, BM: int, TM: int) -> dict:
    return ST.launch(ct, dialect, BM // TM, BM // TM, BM, BM)


# ------------------------------------------------------------------------------ the wide form (vec=4)
#: (BM, BN, TM, TN, BK, prefetch) of the wide form offered by the cache pass's candidates: a
#: BM x BN block tile, TM x TN per thread, shared-memory reads as float4 (``vec=4``); with
#: ``prefetch`` the next slice is loaded into registers while the current one is computed
WIDE_SHAPES = ((128, 128, 8, 8, 8, False), (128, 64, 8, 8, 8, False), (64, 128, 8, 8, 8, False),
               (64, 64, 8, 8, 8, False), (64, 64, 4, 4, 16, False),
               (128, 128, 8, 8, 8, True), (128, 64, 8, 4, 8, True), (64, 64, 4, 4, 16, True))
VEC = 4


def wide_pad(BM: int) -> int:
    """Row length of the transposed A slice: BM + 4 keeps float4 reads aligned (16 bytes) and puts
    the transposed stores of consecutive k of one row on different banks."""
    return BM + VEC


def widened(ct, which: str) -> bool:
    """The operand is half, and the source converts each loaded value to float before the
    multiply (``__half2float(A[..])`` or ``(float)A[..]``): staging the converted value in a
    float tile gives the same product, in float, as the source computes."""
    op = ct.op_a if which == "A" else ct.op_b
    load = ST.N.Var(ST.PREFIX + "LOAD")
    if ct.dtypes.get(which) != "float16":
        return False
    if isinstance(op, ST.N.Intrinsic) and op.name == "__half2float" and op.args == (load,):
        return True
    return isinstance(op, ST.N.Cast) and isinstance(op.type, ST.N.Scalar) and op.type.dtype == "float32" \
        and op.expr == load


def check_wide(ct, BM: int, BN: int, TM: int, TN: int, BK: int, prefetch: bool = False) -> str | None:
    """Why the wide register tiling does not apply to ``ct`` (None: it does)."""
    if ct.dtypes.get("C") != "float32" or ct.acc_dtype != "float32" or \
            any(ct.dtypes.get(x) != "float32" and not widened(ct, x) for x in ("A", "B")):
        return ("register tiles are for float32 operands and accumulator, or half operands the source "
                "converts to float before the multiply (a product formed in half would round differently)")
    if min(BM, BN, TM, TN, BK) <= 0:
        return f"tile {BM}x{BN}, thread tile {TM}x{TN}, bk {BK}: every size must be positive"
    if TM % VEC or TN % VEC:
        return f"thread tile {TM}x{TN} is not a multiple of {VEC} (each thread reads float4 runs of A and B)"
    if BM % TM or BN % TN:
        return f"tile {BM}x{BN} is not a multiple of thread tile {TM}x{TN}"
    threads = (BM // TM) * (BN // TN)
    if threads > 1024 or threads < 32:
        return f"tile {BM}x{BN} / thread tile {TM}x{TN} gives {threads} threads per block (32 to 1024)"
    if TM * TN > 64:
        return f"a {TM}x{TN} thread tile holds too many accumulators"
    if prefetch and (BM * BK % threads or BK * BN % threads):
        return (f"prefetch: the {BM}x{BK} and {BK}x{BN} slices do not split evenly over {threads} threads "
                f"(each thread keeps a fixed number of loads in registers)")
    return None


def b_by_k(ct, dialect: str) -> bool:
    """Stage B k-fastest: B's index is proven stride 1 along k (``simt_kparts.k_contiguous``:
    the weight [Cout][KH][KW][Cin] of conv2d_nhwc, a gemm B given transposed), so the loader maps
    ``t % BK`` to k and ``t / BK`` to the column (a warp reads runs of BK consecutive floats instead
    of 32 columns K floats apart) and stores the slice transposed, k-major with rows padded by 4
    as the A side does. Otherwise (B[k*N + j], or not proven) the column is the fast index, as
    before. cuda only: the hip forms are kept as they were (not measured on an AMD card)."""
    return dialect == "cuda" and KP.k_contiguous(ct, "B")


def a_by_i(ct, dialect: str) -> bool:
    """Load A row-fastest (``t % BM`` is the row, ``t / BM`` is k): A's index is proven stride 1
    along the row and not along k (an A stored transposed, ``A[k*M + i]``). The slice is stored
    k-major as always, so these stores need no transposition. Otherwise A is loaded k-fastest, as
    before. cuda only, as :func:`b_by_k`."""
    return dialect == "cuda" and not KP.k_contiguous(ct, "A") and KP.r_contiguous(ct, "A")


def wide_shared_bytes(BM: int, BN: int, BK: int, bk_fast: bool = False) -> int:
    return 4 * BK * (wide_pad(BM) + (wide_pad(BN) if bk_fast else BN))


def body_wide(ct, dialect: str, BM: int, BN: int, TM: int, TN: int, BK: int, prefetch: bool = False) -> str:
    """A ``BM x BN`` tile per block of ``(BN/TN) x (BM/TM)`` threads; thread (tx, ty) owns the
    rows ``ty*4 + q + 4*SY*v`` and the columns ``tx*4 + q + 4*SX*v`` (q < 4): runs of four
    consecutive rows / columns, so that per step kk it reads its TM values of A and TN of B as
    float4 from shared memory (A staged transposed, k-major, rows padded by 4). With
    ``prefetch``, slice k0 + BK is loaded from global memory into registers before slice k0 is
    computed, and stored to shared memory at the top of the next iteration."""
    E = ST.Emit(ct, dialect)
    SY, SX = BM // TM, BN // TN
    NT = SX * SY
    MV, NV = TM // VEC, TN // VEC          # float4 runs per thread along rows / columns
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    b = "xp_b" if ct.batch is not None else ST.N.Const(0, "int32", "0")
    PA = wide_pad(BM)
    BT = b_by_k(ct, dialect)
    AT = a_by_i(ct, dialect)
    PB = wide_pad(BN) if BT else BN     # row length of the B slice in shared memory
    comp = ("x", "y", "z", "w")

    # a half operand is converted to float as it is staged (check_wide: that is all its
    # expression does); a float32 one gets its expression where it is read, as in body()
    pre = {x: ct.dtypes[x] != "float32" for x in ("A", "B")}

    def staged(which, text):
        return E.op(which, text) if pre[which] else text

    def used(which, text):
        return text if pre[which] else E.op(which, text)

    # prefetch: operand indices proven separable into a row part (per block) and a k part (k
    # itself, or a shared table), so the loads do no division (passes/patterns/simt_kparts.py)
    sp = KP.splits(ct, BK, BN, NT, BT) if KP.applies(dialect, prefetch) else {}

    def split_load(which, k, row):
        """The load of ``which`` at (row, k) with the split index; ``row`` names the thread's
        row-part register. A table split falls back to the old index when the table is not used."""
        buf = ct.A if which == "A" else ct.B
        s = sp[which]
        if s.kind == "unit":
            return f"{buf}[{row} + ({k})]"
        # the choice is uniform over the block; nvcc keeps the old index under a uniform branch
        # (one copy of the hot loop: duplicating it for the two cases cost 131 registers on sm_90)
        old = E.load(which, b, 'xp_i0 + xp_r', k) if which == "A" else E.load(which, b, k, 'xp_j0 + xp_c')
        return f"(xp_use{which} ? {buf}[{row} + xp_kt{which}[{k}]] : {old})"

    def a_val(k0):
        load = split_load("A", f"{k0} + xp_c", "xp_ra[xp_u]") if "A" in sp else \
            E.load('A', b, 'xp_i0 + xp_r', f'{k0} + xp_c')
        return (f"(xp_i0 + xp_r < {Mx} && {k0} + xp_c < {Kx}) ? "
                f"{staged('A', load)} : 0.0f")

    def b_val(k0):
        load = split_load("B", f"{k0} + xp_r", "xp_rb[xp_u]" if BT else "xp_rb") if "B" in sp else \
            E.load('B', b, f'{k0} + xp_r', 'xp_j0 + xp_c')
        return (f"({k0} + xp_r < {Kx} && xp_j0 + xp_c < {Nx}) ? "
                f"{staged('B', load)} : 0.0f")

    def a_rc(t):
        if AT:          # the row fastest: the stride-1 index of A
            return [f"const int xp_r = {t} % {BM};", f"const int xp_c = {t} / {BM};"]
        return [f"const int xp_r = {t} / {BK};", f"const int xp_c = {t} % {BK};"]

    def b_rc(t):
        if BT:          # k fastest: the stride-1 index of B
            return [f"const int xp_r = {t} % {BK};", f"const int xp_c = {t} / {BK};"]
        return [f"const int xp_r = {t} / {BN};", f"const int xp_c = {t} % {BN};"]

    def b_store(t, val):
        if BT:
            return b_rc(t) + [f"xp_Bs[xp_r * {PB} + xp_c] = {val};"]
        return [f"xp_Bs[{t}] = {val};"]

    def ind(lines, n):
        return [" " * n + ln for ln in lines]
    L = [f"__shared__ __align__(16) float xp_As[{BK * PA}];",
         f"__shared__ __align__(16) float xp_Bs[{BK * PB}];",
         "const int xp_tx = threadIdx.x;", "const int xp_ty = threadIdx.y;",
         f"const int xp_tid = xp_ty * {SX} + xp_tx;"]
    L += [f"__shared__ int xp_kt{w}[{KP.TABLE_CAP}];" for w, s in sp.items() if s.kind == "table"]
    head = len(L)
    L += [f"const int xp_i0 = blockIdx.y * {BM};", f"const int xp_j0 = blockIdx.x * {BN};"]
    L += split_setup(ct, E, sp, b, Mx, Nx, Kx, BM, BK, BN, NT, BT, AT)
    L += [f"float xp_acc[{TM}][{TN}];",
          "#pragma unroll",
          f"for (int xp_m = 0; xp_m < {TM}; ++xp_m) {{",
          "    #pragma unroll",
          f"    for (int xp_n = 0; xp_n < {TN}; ++xp_n) {{",
          "        xp_acc[xp_m][xp_n] = 0.0f;",
          "    }",
          "}"]
    if prefetch:
        NA, NB = BM * BK // NT, BK * BN // NT     # loads per thread (check_wide: exact)

        def fetch(k0):
            out = ["#pragma unroll", f"for (int xp_u = 0; xp_u < {NA}; ++xp_u) {{"]
            out += ind(a_rc(f"(xp_tid + xp_u * {NT})") + [f"xp_pa[xp_u] = {a_val(k0)};"], 4) + ["}"]
            out += ["#pragma unroll", f"for (int xp_u = 0; xp_u < {NB}; ++xp_u) {{"]
            out += ind(b_rc(f"(xp_tid + xp_u * {NT})") + [f"xp_pb[xp_u] = {b_val(k0)};"], 4) + ["}"]
            return out
        L += [f"float xp_pa[{NA}];", f"float xp_pb[{NB}];"] + fetch("0")
        L += [f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {BK}) {{",
              "    #pragma unroll", f"    for (int xp_u = 0; xp_u < {NA}; ++xp_u) {{"]
        L += ind(a_rc(f"(xp_tid + xp_u * {NT})") + [f"xp_As[xp_c * {PA} + xp_r] = xp_pa[xp_u];"], 8) + ["    }"]
        L += ["    #pragma unroll", f"    for (int xp_u = 0; xp_u < {NB}; ++xp_u) {{"]
        L += ind(b_store(f"(xp_tid + xp_u * {NT})", "xp_pb[xp_u]") if BT else
                 [f"xp_Bs[xp_tid + xp_u * {NT}] = xp_pb[xp_u];"], 8)
        L += ["    }",
              "    __syncthreads();",
              f"    if (xp_k0 + {BK} < {Kx}) {{"]
        L += ind(fetch(f"(xp_k0 + {BK})"), 8) + ["    }"]
    else:
        L += [f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {BK}) {{",
              "    #pragma unroll",
              f"    for (int xp_t = xp_tid; xp_t < {BM * BK}; xp_t += {NT}) {{"]
        L += ind(a_rc("xp_t") + [f"xp_As[xp_c * {PA} + xp_r] = {a_val('xp_k0')};"], 8) + ["    }"]
        L += ["    #pragma unroll", f"    for (int xp_t = xp_tid; xp_t < {BK * BN}; xp_t += {NT}) {{"]
        L += ind(b_rc("xp_t") + b_store("xp_t", b_val('xp_k0'))[-1:], 8) + ["    }"]
        L += ["    __syncthreads();"]
    L += ["    #pragma unroll",
          f"    for (int xp_kk = 0; xp_kk < {BK}; ++xp_kk) {{",
          f"        float xp_a[{TM}];",
          f"        float xp_bv[{TN}];",
          "        #pragma unroll",
          f"        for (int xp_v = 0; xp_v < {MV}; ++xp_v) {{",
          f"            const float4 xp_a4 = ((const float4 *)xp_As)[xp_kk * {PA // VEC} + xp_ty + xp_v * {SY}];"]
    L += [f"            xp_a[xp_v * 4 + {q}] = {used('A', f'xp_a4.{c}')};" for q, c in enumerate(comp)]
    L += ["        }",
          "        #pragma unroll",
          f"        for (int xp_v = 0; xp_v < {NV}; ++xp_v) {{",
          f"            const float4 xp_b4 = ((const float4 *)xp_Bs)[xp_kk * {PB // VEC} + xp_tx + xp_v * {SX}];"]
    L += [f"            xp_bv[xp_v * 4 + {q}] = {used('B', f'xp_b4.{c}')};" for q, c in enumerate(comp)]
    L += ["        }",
          "        #pragma unroll",
          f"        for (int xp_m = 0; xp_m < {TM}; ++xp_m) {{",
          "            #pragma unroll",
          f"            for (int xp_n = 0; xp_n < {TN}; ++xp_n) {{",
          "                xp_acc[xp_m][xp_n] += xp_a[xp_m] * xp_bv[xp_n];",
          "            }",
          "        }",
          "    }",
          "    __syncthreads();",
          "}",
          "#pragma unroll",
          f"for (int xp_m = 0; xp_m < {TM}; ++xp_m) {{",
          "    #pragma unroll",
          f"    for (int xp_n = 0; xp_n < {TN}; ++xp_n) {{",
          f"        const int xp_i = xp_i0 + xp_ty * 4 + xp_m % 4 + xp_m / 4 * {VEC * SY};",
          f"        const int xp_j = xp_j0 + xp_tx * 4 + xp_n % 4 + xp_n / 4 * {VEC * SX};",
          f"        if (xp_i < {Mx} && xp_j < {Nx}) {{",
          f"            {ct.C}[{E.e(ct.c_idx, b=b, i='xp_i', j='xp_j')}] = xp_acc[xp_m][xp_n];",
          "        }",
          "    }",
          "}"]
    return ST._batched(ct, E, L, head)


def split_setup(ct, E, sp, b, Mx, Nx, Kx, BM, BK, BN, NT, b_k=False, a_i=False) -> list:
    """Per block: the k-offset tables of the table splits (filled, then one ``__syncthreads_or``
    that also says whether every entry fitted an int), and the row-part registers of the thread
    (A: one per prefetched row; B: its one column). Row parts are computed only for rows / columns
    inside the matrix and a non-empty K (the index may divide by a size that is zero otherwise)."""
    L = []
    for w, s in sp.items():
        if s.kind != "table":
            continue
        r0 = "xp_i0" if w == "A" else "xp_j0"
        L += [f"const int xp_tab{w} = {Kx} <= {KP.TABLE_CAP};",
              f"int xp_kbig{w} = 0;",
              f"if (xp_tab{w}) {{",
              f"    for (int xp_t = xp_tid; xp_t < {Kx}; xp_t += {NT}) {{",
              f"        const long xp_v = {KP.k_part(E, ct, w, b, r0, 'xp_t')};",
              f"        xp_kt{w}[xp_t] = (int)xp_v;",
              f"        xp_kbig{w} = xp_kbig{w} || xp_v != (long)(int)xp_v;",
              "    }",
              "}",
              f"const int xp_use{w} = __syncthreads_or(xp_kbig{w}) == 0 && xp_tab{w};"]
    if "A" in sp:
        L += [f"long xp_ra[{BM * BK // NT}];",
              "#pragma unroll",
              f"for (int xp_u = 0; xp_u < {BM * BK // NT}; ++xp_u) {{",
              f"    const int xp_r = (xp_tid + xp_u * {NT}) {'%' if a_i else '/'} {BM if a_i else BK};",
              f"    xp_ra[xp_u] = (xp_i0 + xp_r < {Mx} && 0 < {Kx}) ? "
              f"{KP.row_part(E, ct, 'A', b, 'xp_i0 + xp_r')} : 0;",
              "}"]
    if "B" in sp and b_k:          # B loaded k-fastest: one row part per prefetched column
        L += [f"long xp_rb[{BK * BN // NT}];",
              "#pragma unroll",
              f"for (int xp_u = 0; xp_u < {BK * BN // NT}; ++xp_u) {{",
              f"    const int xp_c = (xp_tid + xp_u * {NT}) / {BK};",
              f"    xp_rb[xp_u] = (xp_j0 + xp_c < {Nx} && 0 < {Kx}) ? "
              f"{KP.row_part(E, ct, 'B', b, 'xp_j0 + xp_c')} : 0;",
              "}"]
    elif "B" in sp:
        L += [f"const long xp_rb = (xp_j0 + xp_tid % {BN} < {Nx} && 0 < {Kx}) ? "
              f"{KP.row_part(E, ct, 'B', b, f'xp_j0 + xp_tid % {BN}')} : 0;"]
    return L


def launch_wide(ct, dialect: str, BM: int, BN: int, TM: int, TN: int) -> dict:
    return ST.launch(ct, dialect, BN // TN, BM // TM, BM, BN)
