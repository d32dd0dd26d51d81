"""Register-tiled bfloat16 contraction for tensorize on the ``c`` dialect: AVX512-BF16 ``vdpbf16ps``,
a widening AVX-512 FMA path, and AMX ``tdpbf16ps`` tiles, chosen at compile time.

What it replaces: the float32 contraction nest of :mod:`passes.patterns.x86_gemm` with both operands
bfloat16 read widened to float in the product (``acc += (float)A[..] * (float)B[..]``, a float
accumulator and a float C: what gemm_bf16.cu becomes after loop recovery and untile).

The output reads A and B as their 16-bit patterns (``const uint16_t *``), so the same text builds with
gcc 13 (real ``__bf16``) and with the bfloat16 storage type of runtime/common/xp_bf16.h. Three paths,
two guards (xpiler/verify/variants.py; every value of each is built and tested):

* ``#if XP_USE_AMX`` (1 where ``__AMX_BF16__`` and ``__AMX_TILE__``): AMX tiles, :mod:`x86_gemm_bf16_amx`;
  it sets ``xa_done``; the AVX-512 block runs where it did not (built without it, tile state refused).
* ``#if XP_USE_AVX512BF16`` (1 where ``__AVX512BF16__``): per NC x KC block, B packed once into
  NR-column panels of k pairs, ``Bp[panel][q][NR]`` 32-bit words holding ``B[2q][j]`` (low half) and
  ``B[2q+1][j]`` (high half), zero past N and K; A's MC-row block packed the same way per MR-row
  panel ``Ap[panel][q][MR]`` (on the thread's stack); an MR x NR micro-kernel of ``__m512``
  accumulators, per pair NR/16 loads of Bp, MR broadcasts of an A word (``_mm512_set1_epi32``) and
  ``_mm512_dpbf16_ps`` (lane j += A[i][2q] B[2q][j] + A[i][2q+1] B[2q+1][j]).
* ``#else``: the panels hold floats, each bf16 widened by shifting its bits up 16 (exact), and the
  float micro-kernel of :mod:`x86_gemm` runs on them (``_mm512_fmadd_ps``).

Numerics: a product of two bfloat16 values (8-bit significands) is exact in float, so every path sums
the source's exact products in float32; only the order and grouping of the additions differ (pairs
in vdpbf16ps, the AMX tile's pair order) and, on the dpbf16 and AMX paths, denormal inputs and
results are flushed to zero (the instructions' DAZ / FTZ; docs/target-c.md). So the output equals the
source within the float32 rounding of a sum of K terms -- what the spec's tolerance covers -- and is
not bit-identical to it. K <= 0 stores zeros (one k slice of length 0), as the nest does.

Refusals (:class:`passes.patterns.x86_gemm.Refused`): an operand that is not bfloat16 widened to float
(both must be), a non-float accumulator or C, and the float form's structural refusals.
"""
from __future__ import annotations

from dataclasses import dataclass

from xpiler.ir import nodes as N

from . import common as U
from . import simt_tile as ST
from . import x86_gemm as XG
from . import x86_gemm_bf16_amx as XB
from .x86_gemm import Refused

CHOICES = XG.CHOICES
P = "xh_"
GUARD = "XP_USE_AVX512BF16"
#: the instruction the form is named by, and the main intrinsics it writes (tensorize.applied_ops)
OP = "_mm512_dpbf16_ps"
OPS = ("_mm512_dpbf16_ps", "_mm512_set1_epi32", "_mm512_loadu_si512", "_mm512_fmadd_ps",
       "_mm512_mask_storeu_ps", "_mm512_maskz_loadu_ps")
#: the form has the AMX variant (tensorize's ``amx=`` parameter)
AMX = True

HEAD = f"""#ifndef {GUARD}
#if defined(__AVX512BF16__)
#define {GUARD} 1
#else
#define {GUARD} 0
#endif
#endif"""
HEAD_COMMENT = (f"/* {GUARD}: AVX512-BF16 vdpbf16ps for the bfloat16 contraction (0: bf16 widened to float, "
                f"then FMA) */")


@dataclass
class TileBF(XG.Tile):
    amx: bool = True


def tile_params(micro="6x32", kc=256, mc=None, nc=None, amx=True) -> TileBF:
    if not isinstance(amx, bool):
        raise Refused(f"amx must be true or false (amx={amx!r})", code="param")
    t = XG.tile_params(micro, kc, mc, nc)
    if t.kc % 2:
        raise Refused(f"kc={t.kc} must be even (k goes in bf16 pairs)", code="param")
    return TileBF(t.mr, t.nr, t.kc, t.mc, t.nc, amx)


def analyse(program, func) -> XG.Gemm:
    g = XG.read(program, func)
    ct = g.ct
    if not (ct.dtypes["A"] == ct.dtypes["B"] == "bfloat16"):
        raise Refused(f"not a bfloat16 contraction (A is {ct.dtypes['A']}, B is {ct.dtypes['B']})", g.root)
    if ct.acc_dtype != "float32" or ct.dtypes["C"] != "float32":
        raise Refused(f"the bfloat16 form sums in float into a float C (the accumulator is {ct.acc_dtype}, "
                      f"C is {ct.dtypes['C']})", g.root)
    ld = N.Var(ST.PREFIX + "LOAD")
    for op, nm in ((ct.op_a, ct.A), (ct.op_b, ct.B)):
        if not (isinstance(op, N.Cast) and op.expr == ld and U.scalar_dtype(op.type) == "float32"):
            raise Refused(f"the bfloat16 operand read from '{nm}' enters the product as {ST._txt(op)}, not "
                          f"widened to float ((float){nm}[..])", g.root)
    return g


def _masks(w, ind, base, nv):
    for v in range(nv):
        w(f"{ind}const long {P}n{v} = {base} - {16 * v};")
        w(f"{ind}const __mmask16 {P}m{v} = (__mmask16)({P}n{v} >= 16 ? 0xFFFFu : "
          f"({P}n{v} <= 0 ? 0u : (1u << {P}n{v}) - 1u));")


def _micro(w, ind, mr, nr, nv, pairs: bool):
    """The MR x NR tile: accumulators from zero (first slice) or C, the k loop, masked stores."""
    acc = [[f"{P}c{r}_{v}" for v in range(nv)] for r in range(mr)]
    for r in range(mr):
        for v in range(nv):
            load = f"_mm512_maskz_loadu_ps({P}m{v}, {P}c + {r} * {P}ldc + {16 * v})"
            init = load if r == 0 else f"{P}mr > {r} ? {load} : _mm512_setzero_ps()"
            w(f"{ind}__m512 {acc[r][v]} = {P}pc == 0 ? _mm512_setzero_ps() : ({init});")
    if pairs:
        w(f"{ind}for (long {P}q = 0; {P}q < {P}qc; ++{P}q) {{")
        for v in range(nv):
            w(f"{ind}    const __m512bh {P}b{v} = (__m512bh)_mm512_loadu_si512((const void *)({P}pb + {P}q * {nr} + "
              f"{16 * v}));")
        for r in range(mr):
            w(f"{ind}    const __m512bh {P}a{r} = (__m512bh)_mm512_set1_epi32((int){P}pa[{P}q * {mr} + {r}]);")
            for v in range(nv):
                w(f"{ind}    {acc[r][v]} = _mm512_dpbf16_ps({acc[r][v]}, {P}a{r}, {P}b{v});")
    else:
        w(f"{ind}for (long {P}k = 0; {P}k < {P}kc; ++{P}k) {{")
        for v in range(nv):
            w(f"{ind}    const __m512 {P}b{v} = _mm512_loadu_ps({P}pf + {P}k * {nr} + {16 * v});")
        for r in range(mr):
            w(f"{ind}    const __m512 {P}a{r} = _mm512_set1_ps({P}fa[{P}k * {mr} + {r}]);")
            for v in range(nv):
                w(f"{ind}    {acc[r][v]} = _mm512_fmadd_ps({P}a{r}, {P}b{v}, {acc[r][v]});")
    w(f"{ind}}}")
    for r in range(mr):
        guard = "" if r == 0 else f"if ({P}mr > {r}) "
        stores = " ".join(f"_mm512_mask_storeu_ps({P}c + {r} * {P}ldc + {16 * v}, {P}m{v}, {acc[r][v]});"
                          for v in range(nv))
        w(f"{ind}{guard}{{ {stores} }}")


def _f32(bits: str) -> str:
    """A float from a bf16 bit pattern (a uint16_t expression): the bits shifted up 16, exactly."""
    return f"_mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128((int)((uint32_t)({bits}) << 16))))"


def _avx512(g: XG.Gemm, t: XG.Tile, off) -> list:
    ct = g.ct
    mr, nr, nv, kc, mc, nc = t.mr, t.nr, t.nv, t.kc, t.mc, t.nc
    L = []
    w = L.append
    w(f"void *{P}buf = malloc(sizeof(float) * {kc * nc});")
    w(f"if ({P}buf == 0) {{")
    w(f"    fputs(\"xpiler tensorize(c): malloc of the {4 * kc * nc}-byte bf16 gemm packing buffer failed\\n\", stderr);")
    w("    abort();")
    w("}")
    w(f"for (long {P}b = 0; {P}b < {P}nb; ++{P}b) {{")
    w(f"    const uint16_t *{P}A = (const uint16_t *)({ct.A}) + ({off(g.a)});")
    w(f"    const uint16_t *{P}B = (const uint16_t *)({ct.B}) + ({off(g.b)});")
    w(f"    float *{P}C = {ct.C} + ({off(g.c)});")
    w(f"    for (long {P}jc = 0; {P}jc < {P}N; {P}jc += {nc}) {{")
    w(f"        const long {P}nc = {P}N - {P}jc < {nc} ? {P}N - {P}jc : {nc};")
    w(f"        for (long {P}pc = 0; {P}pc < {P}Kb; {P}pc += {kc}) {{")
    w(f"            const long {P}kc = {P}K - {P}pc < {kc} ? {P}K - {P}pc : {kc};")
    w(f"            const long {P}qc = ({P}kc + 1) / 2;")
    ind = "            "
    # ---------------- dpbf16: pair words
    w(f"#if {GUARD}")
    w(f"{ind}uint32_t *{P}bp = (uint32_t *){P}buf;")
    w(f"{ind}for (long {P}jp = 0; {P}jp < {P}nc; {P}jp += {nr}) {{")
    w(f"{ind}    uint32_t *{P}dst = {P}bp + {P}jp * {P}qc;")
    w(f"{ind}    for (long {P}q = 0; {P}q < {P}qc; ++{P}q) {{")
    w(f"{ind}        const uint16_t *{P}s0 = {P}B + ({P}pc + 2 * {P}q) * {P}ldb + {P}jc + {P}jp;")
    w(f"{ind}        const int {P}odd = 2 * {P}q + 1 < {P}kc;")
    w(f"{ind}        for (long {P}j = 0; {P}j < {nr}; ++{P}j) {{")
    w(f"{ind}            uint32_t {P}wd = 0;")
    w(f"{ind}            if ({P}jp + {P}j < {P}nc)")
    w(f"{ind}                {P}wd = (uint32_t){P}s0[{P}j] | ({P}odd ? (uint32_t){P}s0[{P}ldb + {P}j] << 16 : 0u);")
    w(f"{ind}            {P}dst[{P}q * {nr} + {P}j] = {P}wd;")
    w(f"{ind}        }}")
    w(f"{ind}    }}")
    w(f"{ind}}}")
    w(f"{ind}#pragma omp parallel for schedule(static)")
    w(f"{ind}for (long {P}ic = 0; {P}ic < {P}M; {P}ic += {mc}) {{")
    w(f"{ind}    uint32_t {P}ap[{mc * kc // 2}];")
    w(f"{ind}    const long {P}mc = {P}M - {P}ic < {mc} ? {P}M - {P}ic : {mc};")
    w(f"{ind}    for (long {P}ip = 0; {P}ip < {P}mc; {P}ip += {mr}) {{")
    w(f"{ind}        uint32_t *{P}dst = {P}ap + {P}ip * {P}qc;")
    w(f"{ind}        for (long {P}r = 0; {P}r < {mr}; ++{P}r) {{")
    w(f"{ind}            const uint16_t *{P}src = {P}A + ({P}ic + {P}ip + {P}r) * {P}lda + {P}pc;")
    w(f"{ind}            for (long {P}q = 0; {P}q < {P}qc; ++{P}q) {{")
    w(f"{ind}                uint32_t {P}wd = 0;")
    w(f"{ind}                if ({P}ip + {P}r < {P}mc)")
    w(f"{ind}                    {P}wd = (uint32_t){P}src[2 * {P}q] | (2 * {P}q + 1 < {P}kc ? "
      f"(uint32_t){P}src[2 * {P}q + 1] << 16 : 0u);")
    w(f"{ind}                {P}dst[{P}q * {mr} + {P}r] = {P}wd;")
    w(f"{ind}            }}")
    w(f"{ind}        }}")
    w(f"{ind}    }}")
    w(f"{ind}    for (long {P}jr = 0; {P}jr < {P}nc; {P}jr += {nr}) {{")
    _masks(w, ind + "        ", f"{P}nc - {P}jr", nv)
    w(f"{ind}        const uint32_t *{P}pb = {P}bp + {P}jr * {P}qc;")
    w(f"{ind}        for (long {P}ir = 0; {P}ir < {P}mc; {P}ir += {mr}) {{")
    w(f"{ind}            const uint32_t *{P}pa = {P}ap + {P}ir * {P}qc;")
    w(f"{ind}            const long {P}mr = {P}mc - {P}ir;")
    w(f"{ind}            float *{P}c = {P}C + ({P}ic + {P}ir) * {P}ldc + {P}jc + {P}jr;")
    _micro(w, ind + "            ", mr, nr, nv, True)
    w(f"{ind}        }}")
    w(f"{ind}    }}")
    w(f"{ind}}}")
    # ---------------- widening: float panels
    w("#else")
    w(f"{ind}float *{P}bf = (float *){P}buf;")
    w(f"{ind}for (long {P}jp = 0; {P}jp < {P}nc; {P}jp += {nr}) {{")
    w(f"{ind}    float *{P}dst = {P}bf + {P}jp * {P}kc;")
    w(f"{ind}    for (long {P}k = 0; {P}k < {P}kc; ++{P}k) {{")
    w(f"{ind}        const uint16_t *{P}src = {P}B + ({P}pc + {P}k) * {P}ldb + {P}jc + {P}jp;")
    w(f"{ind}        for (long {P}j = 0; {P}j < {nr}; ++{P}j)")
    w(f"{ind}            {P}dst[{P}k * {nr} + {P}j] = {P}jp + {P}j < {P}nc ? {_f32(f'{P}src[{P}j]')} : 0.0f;")
    w(f"{ind}    }}")
    w(f"{ind}}}")
    w(f"{ind}#pragma omp parallel for schedule(static)")
    w(f"{ind}for (long {P}ic = 0; {P}ic < {P}M; {P}ic += {mc}) {{")
    w(f"{ind}    float {P}af[{mc * kc}];")
    w(f"{ind}    const long {P}mc = {P}M - {P}ic < {mc} ? {P}M - {P}ic : {mc};")
    w(f"{ind}    for (long {P}ip = 0; {P}ip < {P}mc; {P}ip += {mr}) {{")
    w(f"{ind}        float *{P}dst = {P}af + {P}ip * {P}kc;")
    w(f"{ind}        for (long {P}r = 0; {P}r < {mr}; ++{P}r) {{")
    w(f"{ind}            const uint16_t *{P}src = {P}A + ({P}ic + {P}ip + {P}r) * {P}lda + {P}pc;")
    w(f"{ind}            for (long {P}k = 0; {P}k < {P}kc; ++{P}k)")
    w(f"{ind}                {P}dst[{P}k * {mr} + {P}r] = {P}ip + {P}r < {P}mc ? {_f32(f'{P}src[{P}k]')} : 0.0f;")
    w(f"{ind}        }}")
    w(f"{ind}    }}")
    w(f"{ind}    for (long {P}jr = 0; {P}jr < {P}nc; {P}jr += {nr}) {{")
    _masks(w, ind + "        ", f"{P}nc - {P}jr", nv)
    w(f"{ind}        const float *{P}pf = {P}bf + {P}jr * {P}kc;")
    w(f"{ind}        for (long {P}ir = 0; {P}ir < {P}mc; {P}ir += {mr}) {{")
    w(f"{ind}            const float *{P}fa = {P}af + {P}ir * {P}kc;")
    w(f"{ind}            const long {P}mr = {P}mc - {P}ir;")
    w(f"{ind}            float *{P}c = {P}C + ({P}ic + {P}ir) * {P}ldc + {P}jc + {P}jr;")
    _micro(w, ind + "            ", mr, nr, nv, False)
    w(f"{ind}        }}")
    w(f"{ind}    }}")
    w(f"{ind}}}")
    w("#endif")
    w("        }")
    w("    }")
    w("}")
    w(f"free({P}buf);")
    return L


def body_text(g: XG.Gemm, t: XG.Tile, original: str) -> str:
    ct = g.ct
    lda, ldb, ldc = XG._L(g.a.get("i")), XG._L(g.b.get("k")), XG._L(g.c.get("i"))
    batch = f"(long)({XG._t(ct.batch)})" if ct.batch is not None else "1L"

    def off(co, prefix=P):
        s = XG._L(co.get(""))
        return s if "b" not in co else f"{s} + {prefix}b * {XG._L(co['b'])}"
    amx = getattr(t, "amx", True)
    L = []
    w = L.append
    w(f"// tensorize(micro=\"{t.mr}x{t.nr}\", kc={t.kc}, mc={t.mc}, nc={t.nc}): C = A . B with bfloat16 A and B, "
      f"float sums; {t.mr}x{t.nr} register tile; under {GUARD} _mm512_dpbf16_ps on k pairs, else bf16 widened "
      f"to float and _mm512_fmadd_ps" + (f"; under {XB.GUARD}, AMX tiles first (_tile_dpbf16ps)" if amx else ""))
    w("{")
    w(f"    const long {P}M = (long)({XG._t(ct.M)}), {P}N = (long)({XG._t(ct.N_)}), {P}K = (long)({XG._t(ct.K)}) > 0 ? "
      f"(long)({XG._t(ct.K)}) : 0L, {P}nb = {batch};")
    w(f"    const long {P}Kb = {P}K > 0 ? {P}K : 1L;")
    w(f"    const long {P}lda = {lda}, {P}ldb = {ldb}, {P}ldc = {ldc};")
    w(f"    if ({P}M > 0 && {P}N > 0 && {P}nb > 0) {{")
    vec = _avx512(g, t, off)
    if amx:
        tiles = XB.body_text(M=f"{P}M", N=f"{P}N", K=f"{P}K", batch=f"{P}nb", lda=f"{P}lda", ldb=f"{P}ldb",
                             ldc=f"{P}ldc", a_ptr=f"(const uint16_t *)({ct.A}) + ({off(g.a, XB.P)})",
                             b_ptr=f"(const uint16_t *)({ct.B}) + ({off(g.b, XB.P)})",
                             c_ptr=f"{ct.C} + ({off(g.c, XB.P)})")
        body = XB.wrap("\n".join(vec), tiles)
    else:
        body = "\n".join(vec)
    for ln in body.splitlines():
        w(ln if ln.startswith("#") else "        " + ln)
    w("    }")
    w("}")
    return "\n".join(L)


def rewrite_program(program, func, t: XG.Tile):
    """The program with ``func``'s bfloat16 contraction nest replaced by the three-path form."""
    g = analyse(program, func)
    amx = getattr(t, "amx", True)
    out = XG.splice(program, func, g, lambda nest: body_text(g, t, nest), (P, XB.P) if amx else P,
                    includes=("<stdio.h>", "<stdlib.h>", "<string.h>", "<stdint.h>", "<immintrin.h>"))
    return add_head(out, amx)


def add_head(program, amx=True):
    """``program`` with the guards (and the AMX permission hook) before its first function, once."""
    from xpiler.frontend import parse_text
    have = {it.text.strip() for it in program.items if isinstance(it, N.Directive)}
    text = ""
    if f"#ifndef {GUARD}" not in have:
        text += HEAD_COMMENT + "\n" + HEAD + "\n"
    if amx and f"#ifndef {XB.GUARD}" not in have:
        text += XB.HEAD_COMMENT + "\n" + XB.HEAD + "\n"
    if not text:
        return program
    head = [it for it in parse_text(text + "void xp_bf16_head(void) {}\n", "c", "xp_bf16_head.c").items
            if not isinstance(it, N.Func)]
    items = list(program.items)
    first = next((k for k, it in enumerate(items) if isinstance(it, N.Func)), len(items))
    return program.with_(items=tuple(items[:first] + head + items[first:]))


def ops_of(program, func, t=None) -> tuple:
    analyse(program, func)
    return OPS + (XB.OPS if getattr(t, "amx", True) else ())
