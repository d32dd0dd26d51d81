"""Register-tiled, cache-blocked AVX-512 fp32 contraction for tensorize on the ``c`` dialect.

What it replaces: a kernel whose (only) top-level loop nest computes a row-major contraction

    for b < BATCH, i < M, j < N:   C[c0(b) + i*ldc + j] = sum_{k < K} A[a0(b) + i*lda + k] * B[b0(b) + k*ldb + j]

(recognised by :func:`passes.patterns.simt_tile.analyse`, which reads the i-j form with a scalar
accumulator, the zero-then-i-k-j form and a flattened batch loop; the OpenMP-bound loop of a c
program is read like a bound SIMT loop).  It becomes, per batch and per NC-wide column block
and KC-deep slice of k:

* B's slice packed into NR-column panels (``Bp[panel][k][NR]``, columns past N zero), once;
* for each MC-row block (the OpenMP loop): A's block copied row by row into a stack buffer of the
  thread (``Ap[i][k]``, row stride KC, the slice's largest depth; 16 floats per load / store; rows
  up to the last MR-row panel's end past M zero). Until 2026-12-06 the rows were interleaved
  (``Ap[panel][k][MR]``) by a scalar copy, one element per store: M*K stores per column block
  against M*K*N/16 FMAs, a large share where N is small (bmm 8 x 128^3 ran at 0.63x of PyTorch on
  the Xeon, gemm 512^3 at 0.90x; an estimate, not a measurement: docs/decisions.md);
* an MR x NR micro-kernel per (row panel, column panel): MR x NR/16 ``__m512`` accumulators in
  registers, per k one broadcast of ``Ap`` per row (row r at the constant offset r*KC) and NR/16
  loads of ``Bp``,
  ``_mm512_fmadd_ps``; the first slice starts from zero, later slices reload C (masked); the
  tile is stored with ``_mm512_mask_storeu_ps`` (rows past M skipped, columns past N masked).

Numerics: every element of C is still ``((0 + a_0 b_0) + a_1 b_1) + ...`` in increasing k (a
slice ends by storing the float32 partial sum and the next one reloads it), but each step is one
fused multiply-add (one rounding instead of two).  Padding rows / columns only feed lanes that
are never stored.

Half operands (``_Float16`` A and / or B, each read widened to float in the product:
``acc += (float)A[..] * (float)B[..]`` with a float accumulator and a float C, what the WMMA /
MFMA f16 sources become): the panels are packed as float, converted on the way in (B 16 at a
time with ``_mm512_cvtph_ps`` of a 16-bit load, a partial run past N first copied zero-filled
into a local array, A element by element), and the float
micro-kernel runs on them. Half to float is exact, so the packed panels hold the very values the
loop multiplies; a product of two halves (11-bit significands) is exact in float, so with both
operands half the fused multiply-add rounds exactly where the loop's separate add does and each
element of C is bit for bit the loop's sum.

The fast path needs ``M, N, K, BATCH > 0`` and the heap buffer for Bp; otherwise the original
nest runs (it also writes C = 0 for K == 0).  Every c output of this project uses AVX-512
unconditionally; a CPU without it runs the output through SIMDe (``emu:simde-cpu``), as for
every other tensorized c kernel.

Refusals (:class:`Refused`, a reason the pass reports): not a contraction (the recogniser's
reason), an operand that is neither float32 nor a half widened to float, a non-float32
accumulator or C, an operand that is not a plain (widened) load, a
non-unit inner stride (A along k, B and C along j), C being A or B, and parameters outside
what the register file holds.
"""
from __future__ import annotations

from dataclasses import dataclass

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from . import common as U
from . import polyz as PZ
from . import simt_tile as ST

#: (micro, kc) pairs tensorize's candidates() offers for c; the first is the default plan's
CHOICES = (("6x32", 256), ("8x32", 256), ("6x32", 128), ("14x32", 128), ("4x48", 256))
ZMM = 32
P = "xg_"
#: the instruction the form is named by, and every intrinsic it writes (tensorize.applied_ops)
OP = "_mm512_fmadd_ps"
OPS = ("_mm512_fmadd_ps", "_mm512_mask_storeu_ps", "_mm512_maskz_loadu_ps", "_mm512_set1_ps")
#: what packing a half B panel adds (16 halves widened per instruction)
HALF_OPS = ("_mm512_cvtph_ps", "_mm256_maskz_loadu_epi16")
#: element types an operand may have: float32, or float16 read widened to float
OPERAND_DTYPES = ("float32", "float16")


class Refused(Exception):
    """The nest is not (or not legally) this form; ``code`` XP4002 = nothing to do, XP4001 = a
    contraction the form cannot take, ``param`` = a parameter is out of range."""

    def __init__(self, why, node=None, code="XP4001"):
        super().__init__(why)
        self.why, self.node, self.code = why, node, code


@dataclass
class Tile:
    mr: int
    nr: int
    kc: int
    mc: int
    nc: int

    @property
    def nv(self):
        return self.nr // 16


def tile_params(micro="6x32", kc=256, mc=None, nc=None) -> Tile:
    """Parse and check the register / cache tile (Refused with code 'param' when out of range)."""
    try:
        mr, nr = (int(x) for x in str(micro).lower().split("x"))
    except ValueError:
        raise Refused(f"micro={micro!r} is not 'MRxNR' (e.g. '6x32')", code="param")
    if not 1 <= mr <= 16 or nr % 16 or not 16 <= nr <= 64:
        raise Refused(f"micro={micro!r}: MR must be 1..16 and NR a multiple of 16 up to 64 (16 floats per zmm)",
                      code="param")
    regs = mr * nr // 16 + nr // 16 + 1
    if regs > ZMM:
        raise Refused(f"micro={micro!r} needs {regs} zmm registers ({mr * nr // 16} accumulators, {nr // 16} B "
                      f"rows, 1 broadcast); AVX-512 has {ZMM}", code="param")
    try:
        kc = int(kc)
        mc = int(mc) if mc is not None else mr * max(1, 96 // mr)
        nc = int(nc) if nc is not None else nr * (1024 // nr)
    except (TypeError, ValueError):
        raise Refused(f"kc/mc/nc must be integers (kc={kc!r}, mc={mc!r}, nc={nc!r})", code="param")
    if not 1 <= kc <= 4096:
        raise Refused(f"kc={kc} must be 1..4096", code="param")
    if mc < mr or mc % mr or mc * kc > 65536:
        raise Refused(f"mc={mc} must be a positive multiple of MR={mr} with mc*kc <= 65536 floats (the packed "
                      f"A block lives on the thread's stack)", code="param")
    if nc < nr or nc % nr or nc > 1 << 16:
        raise Refused(f"nc={nc} must be a positive multiple of NR={nr} up to 65536", code="param")
    return Tile(mr, nr, kc, mc, nc)


# ------------------------------------------------------------------------------ recognition
def _root(func):
    stmts = [s for s in func.body.stmts if not isinstance(s, (N.Comment, N.Pragma))]
    loops = [s for s in stmts if isinstance(s, N.For)]
    if len(loops) != 1:
        raise Refused(f"'{func.name}' has {len(loops)} top-level loops, not one contraction nest", func, "XP4002")
    return loops[0]


def _coeffs(idx, what, node):
    """{'b'|'i'|'j'|'k'|'': polynomial} of an affine subscript over xp_b/i/j/k."""
    try:
        p = PZ.poly(idx)
    except PZ.NotPoly:
        raise Refused(f"the subscript of {what} is not a polynomial of the loop indices", node)
    out = {}
    lv = {ST.PREFIX + v: v for v in "bijk"}
    for mono, c in p.items():
        hit = [lv[v] for v in mono if v in lv]
        if len(hit) > 1:
            raise Refused(f"the subscript of {what} multiplies two loop indices", node)
        key = hit[0] if hit else ""
        rest = tuple(v for v in mono if v not in lv)
        out.setdefault(key, {})[rest] = out.get(key, {}).get(rest, 0) + c
    return out


def _unit(poly_):
    return poly_ == {(): 1}


def _expr(poly_):
    """Back to IR (``long`` arithmetic is applied when printed)."""
    return PZ.pexpr({m: c for m, c in (poly_ or {}).items() if c}, {})


@dataclass
class Gemm:
    ct: ST.Contraction
    func: N.Func
    root: N.Stmt
    prelude: list
    a: dict
    b: dict
    c: dict


def analyse(program, func) -> Gemm:
    """The float32 contraction of ``func`` (half operands widened to float included; Refused with
    the reason when it is not one)."""
    g = read(program, func)
    ct, root = g.ct, g.root
    bad = {r: d for r, d in ct.dtypes.items() if d not in (OPERAND_DTYPES if r in ("A", "B") else ("float32",))}
    if bad or ct.acc_dtype != "float32":
        what = ", ".join(f"{r} is {d}" for r, d in bad.items()) or f"the accumulator is {ct.acc_dtype}"
        raise Refused(f"non-float contraction ({what}): the AVX-512 form takes float32 (or half operands "
                      f"widened to float) into a float32 C", root)
    ld = N.Var(ST.PREFIX + "LOAD")
    for op, nm, r in ((ct.op_a, ct.A, "A"), (ct.op_b, ct.B, "B")):
        widened = isinstance(op, N.Cast) and op.expr == ld and U.scalar_dtype(op.type) == "float32"
        if ct.dtypes[r] == "float16":
            if not widened:
                raise Refused(f"the half operand read from '{nm}' enters the product as {ST._txt(op)}, not "
                              f"widened to float ((float){nm}[..]): a half product rounds to half", root)
        elif not (op == ld or widened):
            raise Refused(f"the operand read from '{nm}' is transformed before the product "
                          f"({ST._txt(op)}): not a plain float load", root)
    return g


def half_operands(g: Gemm) -> set:
    """The roles ('A', 'B') of ``g``'s half operands (widened to float while packing)."""
    return {r for r in ("A", "B") if g.ct.dtypes[r] == "float16"}


def ops_of(program, func, t=None) -> tuple:
    """The intrinsics the form writes for ``func`` (:data:`OPS`, and :data:`HALF_OPS` for a half B);
    ``t``, the tile plan, as the int8 form's ``ops_of`` takes it (unused here)."""
    return OPS + (HALF_OPS if "B" in half_operands(analyse(program, func)) else ())


def read(program, func) -> Gemm:
    """The contraction of ``func``'s single top-level nest, any element type (the forms check
    the types they take): recogniser, subscripts, unit inner strides, nothing after the nest."""
    root = _root(func)
    # read the OpenMP (or unbound) top-level loop like a bound SIMT loop: same recogniser
    fake = func.with_(body=func.body.with_(stmts=tuple(
        s.with_(binding="global.x") if s is root else s for s in func.body.stmts)))
    try:
        ct = ST.analyse(program, fake)
    except ST.NotMatmul as e:
        if "also an operand" in e.why:
            raise Refused(f"C aliases an operand: {e.why}", e.node if getattr(e.node, "loc", None) else root)
        raise Refused(f"accumulation form not recognised ({e.why})",
                      e.node if getattr(e.node, "loc", None) else root, "XP4002")
    if ct.C in (ct.A, ct.B):
        raise Refused(f"C aliases an operand ('{ct.C}' is read and written)", root)
    a = _coeffs(ct.a_idx, f"'{ct.A}'", root)
    b = _coeffs(ct.b_idx, f"'{ct.B}'", root)
    c = _coeffs(ct.c_idx, f"'{ct.C}'", root)
    if "j" in a or "i" in b or "k" in c:
        raise Refused("the subscripts are not A(i, k), B(k, j), C(i, j)", root)
    for nm, co, inner in ((ct.A, a, "k"), (ct.B, b, "j"), (ct.C, c, "j")):
        if not _unit(co.get(inner)):
            raise Refused(f"non-unit inner stride: '{nm}' advances by {ST._txt(_expr(co.get(inner)))} elements per "
                          f"step of {inner} (the packed panels read rows with unit stride)", root)
    if ct.batch is None and any("b" in co for co in (a, b, c)):
        raise Refused("a batch index without a batch loop", root)
    stmts = list(func.body.stmts)
    k = stmts.index(root)
    if any(not isinstance(s, (N.Comment, N.Pragma)) and not (isinstance(s, N.Return) and s.value is None)
           for s in stmts[k + 1:]):
        raise Refused("statements after the contraction nest", root, "XP4002")
    return Gemm(ct, func, root, stmts[:k], a, b, c)


# ------------------------------------------------------------------------------ emission
def _t(e) -> str:
    return ST._txt(e)


def _L(poly_) -> str:
    """A coefficient polynomial as a ``long`` C expression."""
    if not poly_:
        return "0L"
    terms = []
    for mono, c in sorted(poly_.items()):
        f = [f"(long){v}" for v in mono]
        if c != 1 or not f:
            f.insert(0, f"{c}L")
        terms.append(" * ".join(f))
    return "(" + " + ".join(terms) + ")"


def body_text(g: Gemm, t: Tile, original: str) -> str:
    ct = g.ct
    mr, nr, nv, kc, mc, nc = t.mr, t.nr, t.nv, t.kc, t.mc, t.nc
    half = half_operands(g)
    ta, tb = ("_Float16" if r in half else "float" for r in ("A", "B"))
    lda, ldb, ldc = _L(g.a.get("i")), _L(g.b.get("k")), _L(g.c.get("i"))
    batch = f"(long)({_t(ct.batch)})" if ct.batch is not None else "1L"

    def off(co):
        s = _L(co.get(""))
        return s if "b" not in co else f"{s} + {P}b * {_L(co['b'])}"
    L = []
    w = L.append
    w(f"// tensorize(micro=\"{mr}x{nr}\", kc={kc}, mc={mc}, nc={nc}): C = A . B, {mr}x{nr} register tile, "
      f"A and B packed per {mc}x{kc} / {kc}x{nc} block")
    w("{")
    # No second path (docs/decisions.md, 2026-12-05 "no untested fallback"): K <= 0 runs one k
    # slice of length 0 (C = 0, as the nest does); a failed malloc is reported and aborts.
    w(f"    const long {P}M = (long)({_t(ct.M)}), {P}N = (long)({_t(ct.N_)}), {P}K = (long)({_t(ct.K)}) > 0 ? "
      f"(long)({_t(ct.K)}) : 0L, {P}nb = {batch};")
    w(f"    const long {P}Kb = {P}K > 0 ? {P}K : 1L;")
    w(f"    if ({P}M > 0 && {P}N > 0 && {P}nb > 0) {{")
    w(f"        float *{P}bp = (float *)malloc(sizeof(float) * {kc * nc});")
    w(f"        if ({P}bp == 0) {{")
    w(f"            fputs(\"xpiler tensorize(c): malloc of the {4 * kc * nc}-byte gemm packing buffer failed\\n\", "
      f"stderr);")
    w("            abort();")
    w("        }")
    w(f"        const long {P}lda = {lda}, {P}ldb = {ldb}, {P}ldc = {ldc};")
    w(f"        for (long {P}b = 0; {P}b < {P}nb; ++{P}b) {{")
    w(f"            const {ta} *{P}A = {ct.A} + ({off(g.a)});")
    w(f"            const {tb} *{P}B = {ct.B} + ({off(g.b)});")
    w(f"            float *{P}C = {ct.C} + ({off(g.c)});")
    w(f"            for (long {P}jc = 0; {P}jc < {P}N; {P}jc += {nc}) {{")
    w(f"                const long {P}nc = {P}N - {P}jc < {nc} ? {P}N - {P}jc : {nc};")
    w(f"                for (long {P}pc = 0; {P}pc < {P}Kb; {P}pc += {kc}) {{")
    w(f"                    const long {P}kc = {P}K - {P}pc < {kc} ? {P}K - {P}pc : {kc};")
    # ---- pack B: panel q holds columns jc + q*NR .. +NR of rows pc .. pc+kc, zero past N
    w(f"                    for (long {P}jp = 0; {P}jp < {P}nc; {P}jp += {nr}) {{")
    w(f"                        float *{P}dst = {P}bp + {P}jp * {P}kc;")
    for v in range(nv):
        w(f"                        const long {P}n{v} = {P}nc - {P}jp - {16 * v};")
        if "B" not in half:
            w(f"                        const __mmask16 {P}m{v} = (__mmask16)({P}n{v} >= 16 ? 0xFFFFu : "
              f"({P}n{v} <= 0 ? 0u : (1u << {P}n{v}) - 1u));")
    w(f"                        for (long {P}k = 0; {P}k < {P}kc; ++{P}k) {{")
    w(f"                            const {tb} *{P}src = {P}B + ({P}pc + {P}k) * {P}ldb + {P}jc + {P}jp;")
    for v in range(nv):
        at = f"{P}dst + {P}k * {nr} + {16 * v}"
        if "B" in half:
            # 16 halves widened exactly to 16 floats. A part past N is first copied (zero-filled)
            # into a local run: a masked 16-bit load folded into the conversion (gcc 13, Sapphire
            # Rapids) faulted on masked-off halves past the end of B (docs/decisions.md, 2026-12-05)
            w(f"                            if ({P}n{v} >= 16) {{")
            w(f"                                _mm512_storeu_ps({at}, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16("
              f"0xFFFF, {P}src + {16 * v})));")
            w("                            } else {")
            w(f"                                _Float16 {P}h{v}[16];")
            w(f"                                for (long {P}q = 0; {P}q < 16; ++{P}q) {{")
            w(f"                                    {P}h{v}[{P}q] = {P}q < {P}n{v} ? {P}src[{16 * v} + {P}q] : "
              f"(_Float16)0.0f;")
            w("                                }")
            w(f"                                _mm512_storeu_ps({at}, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16("
              f"0xFFFF, {P}h{v})));")
            w("                            }")
        else:
            w(f"                            _mm512_storeu_ps({at}, _mm512_maskz_loadu_ps({P}m{v}, {P}src + {16 * v}));")
    w("                        }")
    w("                    }")
    # ---- row blocks (parallel): pack A, then the micro tiles
    w("                    #pragma omp parallel for schedule(static)")
    w(f"                    for (long {P}ic = 0; {P}ic < {P}M; {P}ic += {mc}) {{")
    w(f"                        float {P}ap[{mc * kc}];")
    w(f"                        const long {P}mc = {P}M - {P}ic < {mc} ? {P}M - {P}ic : {mc};")
    # A's block row by row: row i of the block at ap + i*KC (KC, the slice's largest depth, a
    # constant: the micro-kernel reads row r of its panel at a fixed offset r*KC), each row one
    # contiguous copy (16 floats per load / store) instead of a scalar interleave, and the rows up
    # to the last panel's end (past M) zero (docs/decisions.md, 2026-12-06 "A panels by rows")
    w(f"                        const long {P}mp = ({P}mc + {mr - 1}) / {mr} * {mr};")
    w(f"                        for (long {P}i = 0; {P}i < {P}mp; ++{P}i) {{")
    w(f"                            float *{P}dst = {P}ap + {P}i * {kc};")
    w(f"                            if ({P}i < {P}mc) {{")
    w(f"                                const {ta} *{P}src = {P}A + ({P}ic + {P}i) * {P}lda + {P}pc;")
    if "A" in half:
        w(f"                                for (long {P}k = 0; {P}k < {P}kc; ++{P}k)")
        w(f"                                    {P}dst[{P}k] = (float){P}src[{P}k];")
    else:
        w(f"                                long {P}k = 0;")
        w(f"                                for (; {P}k + 16 <= {P}kc; {P}k += 16)")
        w(f"                                    _mm512_storeu_ps({P}dst + {P}k, _mm512_loadu_ps({P}src + {P}k));")
        w(f"                                if ({P}k < {P}kc) {{")
        w(f"                                    const __mmask16 {P}mk = (__mmask16)((1u << ({P}kc - {P}k)) - 1u);")
        w(f"                                    _mm512_mask_storeu_ps({P}dst + {P}k, {P}mk, "
          f"_mm512_maskz_loadu_ps({P}mk, {P}src + {P}k));")
        w("                                }")
    w("                            } else {")
    w(f"                                for (long {P}k = 0; {P}k < {P}kc; ++{P}k)")
    w(f"                                    {P}dst[{P}k] = 0.0f;")
    w("                            }")
    w("                        }")
    w(f"                        for (long {P}jr = 0; {P}jr < {P}nc; {P}jr += {nr}) {{")
    for v in range(nv):
        w(f"                            const long {P}n{v} = {P}nc - {P}jr - {16 * v};")
        w(f"                            const __mmask16 {P}m{v} = (__mmask16)({P}n{v} >= 16 ? 0xFFFFu : "
          f"({P}n{v} <= 0 ? 0u : (1u << {P}n{v}) - 1u));")
    w(f"                            const float *{P}pb = {P}bp + {P}jr * {P}kc;")
    w(f"                            for (long {P}ir = 0; {P}ir < {P}mc; {P}ir += {mr}) {{")
    w(f"                                const float *{P}pa = {P}ap + {P}ir * {kc};")
    w(f"                                const long {P}mr = {P}mc - {P}ir;")
    w(f"                                float *{P}c = {P}C + ({P}ic + {P}ir) * {P}ldc + {P}jc + {P}jr;")
    acc = [[f"{P}c{r}_{v}" for v in range(nv)] for r in range(mr)]
    for r in range(mr):
        for v in range(nv):
            load = f"_mm512_maskz_loadu_ps({P}m{v}, {P}c + {r} * {P}ldc + {16 * v})"
            init = load if r == 0 else f"{P}mr > {r} ? {load} : _mm512_setzero_ps()"
            w(f"                                __m512 {acc[r][v]} = {P}pc == 0 ? _mm512_setzero_ps() : ({init});")
    w(f"                                for (long {P}k = 0; {P}k < {P}kc; ++{P}k) {{")
    for v in range(nv):
        w(f"                                    const __m512 {P}b{v} = _mm512_loadu_ps({P}pb + {P}k * {nr} + {16 * v});")
    for r in range(mr):
        w(f"                                    const __m512 {P}a{r} = _mm512_set1_ps({P}pa[{r * kc} + {P}k]);")
        for v in range(nv):
            w(f"                                    {acc[r][v]} = _mm512_fmadd_ps({P}a{r}, {P}b{v}, {acc[r][v]});")
    w("                                }")
    for r in range(mr):
        guard = "" if r == 0 else f"if ({P}mr > {r}) "
        stores = " ".join(f"_mm512_mask_storeu_ps({P}c + {r} * {P}ldc + {16 * v}, {P}m{v}, {acc[r][v]});"
                          for v in range(nv))
        w(f"                                {guard}{{ {stores} }}")
    w("                            }")
    w("                        }")
    w("                    }")
    w("                }")
    w("            }")
    w("        }")
    w(f"        free({P}bp);")
    w("    }")
    w("}")
    return "\n".join(L)


def rewrite_program(program, func, t: Tile):
    """The program with ``func``'s contraction nest replaced by the register-tiled form."""
    g = analyse(program, func)
    return splice(program, func, g, lambda nest: body_text(g, t, nest), P,
                  includes=("<stdio.h>", "<stdlib.h>", "<immintrin.h>"))


def splice(program, func, g: Gemm, make_body, prefix, includes=("<stdlib.h>", "<immintrin.h>")):
    """``program`` with ``g.root`` (the top-level nest of ``func``) replaced by ``make_body(nest)``,
    C text that keeps the nest's printed text as its fallback; names starting with ``prefix`` are
    the form's own."""
    from xpiler.frontend import parse_text
    from xpiler.printers import print_program
    used = {n.name for n in walk(func) if isinstance(n, (N.Var, N.Decl))} | {p.name for p in func.params}
    clash = sorted(n for n in used if n.startswith(prefix))      # prefix: a string or a tuple of them
    if clash:
        raise Refused(f"the kernel already uses the name '{clash[0]}' the form declares", g.root)
    marker = N.Raw("/*XP_GEMM*/")
    nf = func.with_(body=N.Block(tuple(g.prelude) + (marker,)))
    original = print_program(program.with_(items=(func.with_(body=N.Block((g.root,))),)), "c")
    # the printed function is 'void f(...) {\n    <root>\n}': keep the nest's lines only
    lines = original.splitlines()
    start = next(n for n, ln in enumerate(lines) if ln.rstrip().endswith("{") and func.name + "(" in ln)
    end = max(n for n, ln in enumerate(lines) if ln.strip() == "}")
    nest = "\n".join(ln[4:] if ln.startswith("    ") else ln for ln in lines[start + 1:end])
    text = print_program(program.with_(items=tuple(nf if it is func else it for it in program.items)), "c")
    body = make_body(nest)
    text = text.replace("/*XP_GEMM*/", body.replace("\n", "\n    "), 1)
    for inc in includes:
        if inc not in text:
            text = f"#include {inc}\n" + text
    out = parse_text(text, "c", program.file)
    if hasattr(program, "launches"):        # the program's launches travel with it (c has none to size)
        out = out.with_(launches=program.launches)
    return out
