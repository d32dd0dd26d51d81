"""Register-tiled AVX-512 VNNI int8 contraction for tensorize on the ``c`` dialect.

What it replaces: a kernel whose single top-level loop nest computes

    for b < BATCH, i < M, j < N:   C[c0(b) + i*ldc + j] = sum_{k < K} A[a0(b) + i*lda + k] * B[b0(b) + k*ldb + j]

with A int8 or uint8, B int8, an int32 accumulator and an int32 C (read like the float32 form,
:func:`passes.patterns.x86_gemm.read`). One more input form: the one-thread-per-output loop of a
cuda / hip source, ``for (idx < P * N) { m = idx / N; n = idx % N; ... C[idx] = acc }``, is read
through :func:`passes.patterns.x86_delin.split` (the (row, column) pair visits the same idx in the
same order when N > 0, which the fast path requires).

It becomes, per batch, NC-wide column block and KC-deep slice of k (KC a multiple of 4):

* B's slice packed into NR-column panels of 4-deep k groups, ``Bp[panel][q][NR][4]`` (the four
  bytes B[4q..4q+3][j] side by side, zero past N and past K), once; when A is signed, also
  ``cs[j] = 128 * sum_k B[k][j]`` over the slice, in int32;
* for each MC-row block (the OpenMP loop): A's block packed into MR-row panels of int32 words
  ``Ap[panel][q][MR]`` (the bytes A[i][4q..4q+3]; a signed A is stored with 0x80 xor-ed into each
  byte, i.e. ``a + 128`` as an unsigned byte) on the thread's stack;
* an MR x NR micro-kernel: MR x NR/16 ``__m512i`` accumulators; per k group NR/16 loads of Bp,
  MR ``_mm512_set1_epi32`` broadcasts of Ap and ``_mm512_dpbusd_epi32`` (u8 x s8, four products
  summed into each int32 lane, non-saturating); then ``- cs`` (signed A), the first slice from
  zero, later slices add to C (masked load); masked stores.

Beside it stands a compile-time variant: under ``#if XP_USE_AMX`` (1 where the compiler targets
AMX) an AMX tile path runs first and sets ``xa_done``; the VNNI block, printed once after the
``#endif``, runs only where the tile path did not (built without it, or the kernel was refused
the tile state): :mod:`passes.patterns.x86_gemm_amx`.

Exactness (docs/passes/tensorize.md, "int8"): every int32 operation used (vpdpbusd, vpsubd,
vpaddd) wraps modulo 2^32, so each stored element is congruent mod 2^32 to
``sum_k (a_k + 128) b_k - 128 sum_k b_k = sum_k a_k b_k``, the exact sum. The source's int32 sum
is that same number whenever the source is defined (no signed overflow in its running sum;
guaranteed for |a|, |b| <= 128 when K < 2^17); so the output equals the source's result on every
input the source has a defined result for. Padding bytes are zero in B, so they add nothing.

Refusals (:class:`passes.patterns.x86_gemm.Refused`): not a contraction; A not int8 / uint8, B
not int8 (vpdpbusd takes one unsigned and one signed operand), the accumulator or C not int32
(a narrower or saturating accumulator is another computation); an operand converted to a type
that does not hold all its values, or any other conversion in the product; non-unit inner
strides; C aliasing an operand; parameters out of range (XP4210).
"""
from __future__ import annotations

from dataclasses import dataclass

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from . import simt_tile as ST
from . import x86_delin as XD
from . import x86_gemm as XG
from . import x86_gemm_amx as XA
from .x86_gemm import Refused

#: (micro, kc) pairs tensorize's candidates() offers for an int8 contraction; kc counts k elements
CHOICES = (("6x32", 256), ("6x32", 512), ("6x64", 512), ("12x32", 512), ("6x32", 1024))
P = "xq_"
#: the instruction the form is named by, and the main intrinsics it writes (tensorize.applied_ops)
OP = "_mm512_dpbusd_epi32"
OPS = ("_mm512_dpbusd_epi32", "_mm512_loadu_si512", "_mm512_mask_storeu_epi32", "_mm512_set1_epi32")
#: the packed A block lives on the thread's stack: at most this many bytes
STACK_BYTES = 262144
#: (dtype of the load) -> integer types a conversion of it may go to without changing a value
HOLDS = {"int8": {"int8", "int16", "int32", "int64"}, "uint8": {"uint8", "int16", "int32", "int64"}}
WIDE = {"int32", "int64"}


@dataclass
class Tile8(XG.Tile):
    amx: bool = True        # the AMX tile variant beside the VNNI path (x86_gemm_amx.py)


#: the form has the AMX variant (tensorize's ``amx=`` parameter)
AMX = True


def tile_params(micro="6x32", kc=256, mc=None, nc=None, amx=True) -> Tile8:
    """The register / cache tile of the int8 form (Refused with code 'param' when out of range);
    ``amx=False``: the VNNI path alone, without the ``XP_USE_AMX`` variant."""
    if not isinstance(amx, bool):
        raise Refused(f"amx must be true or false (amx={amx!r})", code="param")
    t = XG.tile_params(micro, 16, _mr(micro), nc)      # MRxNR within the register file, nc (mc is checked here)
    try:
        kc = int(kc)
    except (TypeError, ValueError):
        raise Refused(f"kc must be an integer (kc={kc!r})", code="param")
    if not 4 <= kc <= 8192 or kc % 4:
        raise Refused(f"kc={kc} must be a multiple of 4 in 4..8192 (k goes in groups of 4 bytes)", code="param")
    mc = int(mc) if mc is not None else t.mr * max(1, 96 // t.mr)
    if mc < t.mr or mc % t.mr or mc * kc > STACK_BYTES:
        raise Refused(f"mc={mc} must be a positive multiple of MR={t.mr} with mc*kc <= {STACK_BYTES} bytes (the "
                      f"packed A block lives on the thread's stack)", code="param")
    return Tile8(t.mr, t.nr, kc, mc, t.nc, amx)


def _mr(micro):
    """MR of ``micro`` (an mc the float32 checker accepts; the int8 rule for mc is checked above)."""
    try:
        mr = int(str(micro).lower().split("x")[0])
    except ValueError:
        return None
    return mr if mr >= 1 else None


# ------------------------------------------------------------------------------ recognition
@dataclass
class Int8Gemm:
    g: XG.Gemm            # the contraction read (g.root: the original top-level nest)
    signed_a: bool


def _flat_split(func):
    """``func`` with a flat one-thread-per-output loop split into (row, column) loops, or None."""
    root = XG._root(func)
    sp = XD.split(func, root)
    if sp is None:
        return None
    (guard,), _ = sp
    outer = guard.then.stmts[0]
    stmts = list(func.body.stmts)
    k = stmts.index(root)
    return func.with_(body=func.body.with_(stmts=tuple(stmts[:k] + [outer] + stmts[k + 1:])))


def _conversions(root, ct):
    """Refuse any conversion in the nest other than widening an operand load or widening to >= 32 bits."""
    ld = N.Var(ST.PREFIX + "LOAD")
    for op, nm in ((ct.op_a, ct.A), (ct.op_b, ct.B)):
        e, d = op, ct.dtypes["A" if nm == ct.A else "B"]
        while isinstance(e, N.Cast):
            to = getattr(e.type, "dtype", None) if isinstance(e.type, N.Scalar) else None
            if to not in HOLDS[d]:
                raise Refused(f"the operand read from '{nm}' ({d}) is converted to {to or ST._txt(e)}, which does "
                              f"not hold all its values: the VNNI form multiplies the bytes themselves", root)
            e = e.expr
        if e != ld:
            raise Refused(f"the operand read from '{nm}' is transformed before the product ({ST._txt(op)}): "
                          f"not a plain integer load", root)

    subscript = {id(x) for ix in walk(root) if isinstance(ix, N.Index) for x in walk(ix.index)}
    for n in walk(root):
        if isinstance(n, N.Cast) and id(n) not in subscript and not isinstance(n.expr, N.Index):
            to = n.type.dtype if isinstance(n.type, N.Scalar) else None
            if to not in WIDE:
                raise Refused(f"a conversion to {to or 'a non-scalar type'} ({ST._txt(n)}) in the accumulation: the "
                              f"VNNI form sums exact products in int32", root)


def _saturating(root):
    """The text of a clamp (``?:``, min / max) assigned to a running variable (a scalar the innermost
    loop also reads) inside an innermost loop of the nest, or None. Used only to name the reason of
    a refusal; the nest is refused either way."""
    for lp in walk(root):
        if not isinstance(lp, N.For) or any(isinstance(x, N.For) for x in walk(lp.body)):
            continue
        for st in walk(lp.body):
            if isinstance(st, N.Assign) and isinstance(st.target, N.Var):
                val = st.value
                if sum(1 for x in walk(lp.body) if isinstance(x, N.Var) and x.name == st.target.name) < 2:
                    continue
                for x in walk(val):
                    if isinstance(x, N.Cond) or (isinstance(x, N.Call) and isinstance(x.func, str) and
                                                 x.func.lower().lstrip("_").startswith(("min", "max", "clamp", "sat"))):
                        return ST._txt(val)
    return None


def analyse(program, func) -> Int8Gemm:
    root = XG._root(func)
    split = _flat_split(func)
    try:
        try:
            g = XG.read(program, func)
        except Refused as e:
            if split is None or e.code != "XP4002":
                raise
            g = XG.read(program, split)
    except Refused as e:
        sat = _saturating(root)
        if sat is not None:
            e = Refused(f"the running sum is clamped in the k loop ({sat}): vpdpbusd adds without saturating "
                        f"(modulo 2^32), so this is another computation", root, e.code)
            e.read = True
        raise e
        g = XG.Gemm(g.ct, func, root, g.prelude, g.a, g.b, g.c)     # the original nest is the fallback
    try:
        return _types(g)
    except Refused as e:
        # an integer contraction was read: the reason is the int8 form's own (a float one is the float form's)
        e.read = not any(g.ct.dtypes[r].startswith(("float", "bfloat")) for r in ("A", "B"))
        raise


def _types(g) -> Int8Gemm:
    ct = g.ct
    da, db, dc = ct.dtypes["A"], ct.dtypes["B"], ct.dtypes["C"]
    if da not in ("int8", "uint8") or db != "int8":
        if db == "uint8" and da == "int8":
            why = "B is uint8 and A int8: vpdpbusd takes the unsigned bytes from the broadcast (A) side only"
        else:
            why = f"A is {da}, B is {db}: the VNNI form takes int8 / uint8 A times int8 B"
        raise Refused(f"not an 8-bit contraction ({why})", g.root)
    if ct.acc_dtype != "int32":
        raise Refused(f"the accumulator is {ct.acc_dtype}, not int32: vpdpbusd sums in int32 modulo 2^32, so a "
                      f"narrower or wider running sum is another computation", g.root)
    if dc != "int32":
        raise Refused(f"C is {dc}, not int32: the form stores the int32 sums as they are", g.root)
    _conversions(g.root, ct)
    return Int8Gemm(g, da == "int8")


# ------------------------------------------------------------------------------ emission
def body_text(ig: Int8Gemm, t: XG.Tile, original: str) -> str:
    g, ct = ig.g, ig.g.ct
    mr, nr, nv, kc, mc, nc = t.mr, t.nr, t.nv, t.kc, t.mc, t.nc
    kq = kc // 4
    lda, ldb, ldc = XG._L(g.a.get("i")), XG._L(g.b.get("k")), XG._L(g.c.get("i"))
    batch = f"(long)({XG._t(ct.batch)})" if ct.batch is not None else "1L"
    at = "int8_t" if ig.signed_a else "uint8_t"
    flip = "(int32_t)0x80808080u" if ig.signed_a else "0"

    def off(co, prefix=P):
        s = XG._L(co.get(""))
        return s if "b" not in co else f"{s} + {prefix}b * {XG._L(co['b'])}"

    def masks(ind, base):
        for v in range(nv):
            w(f"{ind}const long {P}n{v} = {base} - {16 * v};")
            w(f"{ind}const __mmask16 {P}m{v} = (__mmask16)({P}n{v} >= 16 ? 0xFFFFu : "
              f"({P}n{v} <= 0 ? 0u : (1u << {P}n{v}) - 1u));")
    L = []
    w = L.append
    w(f"// tensorize(micro=\"{mr}x{nr}\", kc={kc}, mc={mc}, nc={nc}): C = A . B in int8, AVX-512 VNNI "
      f"(_mm512_dpbusd_epi32), {mr}x{nr} register tile, k in groups of 4"
      + ("; A + 128 as unsigned bytes, minus 128 * column sums of B" if ig.signed_a else ""))
    w("{")
    w(f"    const long {P}M = (long)({XG._t(ct.M)}), {P}N = (long)({XG._t(ct.N_)}), {P}K = (long)({XG._t(ct.K)}), "
      f"{P}nb = {batch};")
    w(f"    int8_t *{P}bp = 0;")
    w(f"    int32_t *{P}cs = 0;")
    w(f"    if ({P}M > 0 && {P}N > 0 && {P}K > 0 && {P}nb > 0) {{")
    w(f"        {P}bp = (int8_t *)malloc({kc * nc});")
    w(f"        {P}cs = (int32_t *)malloc(sizeof(int32_t) * {nc});")
    w("    }")
    w(f"    if ({P}bp != 0 && {P}cs != 0) {{")
    w(f"        const long {P}lda = {lda}, {P}ldb = {ldb}, {P}ldc = {ldc};")
    w(f"        const __m512i {P}one = _mm512_set1_epi8(1);")
    w(f"        for (long {P}b = 0; {P}b < {P}nb; ++{P}b) {{")
    w(f"            const {at} *{P}A = {ct.A} + ({off(g.a)});")
    w(f"            const int8_t *{P}B = {ct.B} + ({off(g.b)});")
    w(f"            int32_t *{P}C = {ct.C} + ({off(g.c)});")
    w(f"            for (long {P}jc = 0; {P}jc < {P}N; {P}jc += {nc}) {{")
    w(f"                const long {P}nc = {P}N - {P}jc < {nc} ? {P}N - {P}jc : {nc};")
    w(f"                for (long {P}pc = 0; {P}pc < {P}K; {P}pc += {kc}) {{")
    w(f"                    const long {P}kc = {P}K - {P}pc < {kc} ? {P}K - {P}pc : {kc};")
    w(f"                    const long {P}qc = ({P}kc + 3) / 4;")
    # ---- pack B: panel at jp holds [q][NR][4] bytes; 16 columns x 4 rows per 64-byte vector
    w(f"                    for (long {P}jp = 0; {P}jp < {P}nc; {P}jp += {nr}) {{")
    w(f"                        int8_t *{P}dst = {P}bp + {P}jp * {kc};")
    w(f"                        const int8_t *{P}src = {P}B + {P}pc * {P}ldb + {P}jc + {P}jp;")
    masks("                        ", f"{P}nc - {P}jp")
    for v in range(nv):
        w(f"                        __m512i {P}s{v} = _mm512_setzero_si512();")
    w(f"                        for (long {P}q = 0; {P}q < {P}qc; ++{P}q) {{")
    w(f"                            const long {P}k0 = 4 * {P}q;")
    for v in range(nv):
        rows = []
        for r in range(4):
            ld = (f"_mm512_castsi512_si128(_mm512_maskz_loadu_epi8((__mmask64){P}m{v}, "
                  f"{P}src + ({P}k0 + {r}) * {P}ldb + {16 * v}))")
            rows.append(ld if r == 0 else f"{P}k0 + {r} < {P}kc ? {ld} : _mm_setzero_si128()")
        for r in range(4):
            w(f"                            const __m128i {P}r{v}_{r} = {rows[r]};")
        w(f"                            const __m128i {P}lo{v} = _mm_unpacklo_epi8({P}r{v}_0, {P}r{v}_1), "
          f"{P}hi{v} = _mm_unpackhi_epi8({P}r{v}_0, {P}r{v}_1);")
        w(f"                            const __m128i {P}lo{v}b = _mm_unpacklo_epi8({P}r{v}_2, {P}r{v}_3), "
          f"{P}hi{v}b = _mm_unpackhi_epi8({P}r{v}_2, {P}r{v}_3);")
        w(f"                            __m512i {P}p{v} = _mm512_castsi128_si512(_mm_unpacklo_epi16({P}lo{v}, {P}lo{v}b));")
        w(f"                            {P}p{v} = _mm512_inserti32x4({P}p{v}, _mm_unpackhi_epi16({P}lo{v}, {P}lo{v}b), 1);")
        w(f"                            {P}p{v} = _mm512_inserti32x4({P}p{v}, _mm_unpacklo_epi16({P}hi{v}, {P}hi{v}b), 2);")
        w(f"                            {P}p{v} = _mm512_inserti32x4({P}p{v}, _mm_unpackhi_epi16({P}hi{v}, {P}hi{v}b), 3);")
        w(f"                            _mm512_storeu_si512((void *)({P}dst + ({P}q * {nr} + {16 * v}) * 4), {P}p{v});")
        if ig.signed_a:
            w(f"                            {P}s{v} = _mm512_dpbusd_epi32({P}s{v}, {P}one, {P}p{v});")
    w("                        }")
    for v in range(nv):
        w(f"                        _mm512_storeu_si512((void *)({P}cs + {P}jp + {16 * v}), "
          f"_mm512_slli_epi32({P}s{v}, 7));")
    w("                    }")
    # ---- row blocks (parallel): pack A as int32 words, then the micro tiles
    w("                    #pragma omp parallel for schedule(static)")
    w(f"                    for (long {P}ic = 0; {P}ic < {P}M; {P}ic += {mc}) {{")
    w(f"                        int32_t {P}ap[{mc * kq}];")
    w(f"                        const long {P}mc = {P}M - {P}ic < {mc} ? {P}M - {P}ic : {mc};")
    w(f"                        for (long {P}ip = 0; {P}ip < {P}mc; {P}ip += {mr}) {{")
    w(f"                            int32_t *{P}dst = {P}ap + {P}ip * {kq};")
    w(f"                            for (long {P}r = 0; {P}r < {mr}; ++{P}r) {{")
    w(f"                                if ({P}ip + {P}r < {P}mc) {{")
    w(f"                                    const uint8_t *{P}src = (const uint8_t *)({P}A + ({P}ic + {P}ip + {P}r) * "
      f"{P}lda + {P}pc);")
    w(f"                                    long {P}q = 0;")
    w(f"                                    for (; 4 * {P}q + 4 <= {P}kc; ++{P}q) {{")
    w(f"                                        int32_t {P}w;")
    w(f"                                        memcpy(&{P}w, {P}src + 4 * {P}q, 4);")
    w(f"                                        {P}dst[{P}q * {mr} + {P}r] = {P}w ^ {flip};")
    w("                                    }")
    w(f"                                    if ({P}q < {P}qc) {{")
    w(f"                                        uint8_t {P}t[4] = {{0, 0, 0, 0}};")
    w(f"                                        for (long {P}e = 0; 4 * {P}q + {P}e < {P}kc; ++{P}e)")
    w(f"                                            {P}t[{P}e] = {P}src[4 * {P}q + {P}e];")
    w(f"                                        int32_t {P}w;")
    w(f"                                        memcpy(&{P}w, {P}t, 4);")
    w(f"                                        {P}dst[{P}q * {mr} + {P}r] = {P}w ^ {flip};")
    w("                                    }")
    w("                                } else {")
    w(f"                                    for (long {P}q = 0; {P}q < {P}qc; ++{P}q)")
    w(f"                                        {P}dst[{P}q * {mr} + {P}r] = 0;")
    w("                                }")
    w("                            }")
    w("                        }")
    w(f"                        for (long {P}jr = 0; {P}jr < {P}nc; {P}jr += {nr}) {{")
    masks("                            ", f"{P}nc - {P}jr")
    w(f"                            const int8_t *{P}pb = {P}bp + {P}jr * {kc};")
    w(f"                            for (long {P}ir = 0; {P}ir < {P}mc; {P}ir += {mr}) {{")
    w(f"                                const int32_t *{P}pa = {P}ap + {P}ir * {kq};")
    w(f"                                const long {P}mr = {P}mc - {P}ir;")
    w(f"                                int32_t *{P}c = {P}C + ({P}ic + {P}ir) * {P}ldc + {P}jc + {P}jr;")
    acc = [[f"{P}c{r}_{v}" for v in range(nv)] for r in range(mr)]
    for r in range(mr):
        for v in range(nv):
            w(f"                                __m512i {acc[r][v]} = _mm512_setzero_si512();")
    w(f"                                for (long {P}q = 0; {P}q < {P}qc; ++{P}q) {{")
    for v in range(nv):
        w(f"                                    const __m512i {P}b{v} = _mm512_loadu_si512((const void *)({P}pb + "
          f"({P}q * {nr} + {16 * v}) * 4));")
    for r in range(mr):
        w(f"                                    const __m512i {P}a{r} = _mm512_set1_epi32({P}pa[{P}q * {mr} + {r}]);")
        for v in range(nv):
            w(f"                                    {acc[r][v]} = _mm512_dpbusd_epi32({acc[r][v]}, {P}a{r}, {P}b{v});")
    w("                                }")
    if ig.signed_a:
        for v in range(nv):
            w(f"                                const __m512i {P}k{v} = _mm512_loadu_si512((const void *)({P}cs + {P}jr"
              f" + {16 * v}));")
    for r in range(mr):
        guard = "" if r == 0 else f"if ({P}mr > {r}) "
        parts = []
        for v in range(nv):
            val = f"_mm512_sub_epi32({acc[r][v]}, {P}k{v})" if ig.signed_a else acc[r][v]
            dst = f"{P}c + {r} * {P}ldc + {16 * v}"
            parts.append(f"_mm512_mask_storeu_epi32({dst}, {P}m{v}, {P}pc == 0 ? {val} : "
                         f"_mm512_add_epi32({val}, _mm512_maskz_loadu_epi32({P}m{v}, {dst})));")
        w(f"                                {guard}{{ {' '.join(parts)} }}")
    w("                            }")
    w("                        }")
    w("                    }")
    w("                }")
    w("            }")
    w("        }")
    w("    } else {")
    for line in original.splitlines():
        w("        " + line)
    w("    }")
    w(f"    free({P}bp);")
    w(f"    free({P}cs);")
    w("}")
    if not getattr(t, "amx", True):
        return "\n".join(L)
    # the AMX tile path (x86_gemm_amx.py) first, under its guard; the VNNI block where it did not run
    amx = XA.body_text(M=XG._t(ct.M), N=XG._t(ct.N_), K=XG._t(ct.K), batch=batch, lda=lda, ldb=ldb, ldc=ldc,
                       a_ptr=f"{ct.A} + ({off(g.a, XA.P)})", b_ptr=f"{ct.B} + ({off(g.b, XA.P)})",
                       c_ptr=f"{ct.C} + ({off(g.c, XA.P)})", a_type=at, signed_a=ig.signed_a)
    L[0] += f"; under {XA.GUARD}, AMX tiles first ({XA.DP[ig.signed_a]}, 32 x 32 blocks of C)"
    return "\n".join([L[0], "{", XA.wrap("\n".join(L[1:]), amx), "}"])


def rewrite_program(program, func, t: XG.Tile):
    """The program with ``func``'s int8 contraction nest replaced by the VNNI register-tiled form (and its
    AMX variant)."""
    ig = analyse(program, func)
    amx = getattr(t, "amx", True)
    out = XG.splice(program, func, ig.g, lambda nest: body_text(ig, t, nest), (P, XA.P) if amx else P,
                    includes=("<stdlib.h>", "<string.h>", "<stdint.h>", "<immintrin.h>"))
    return XA.add_head(out) if amx else out


def ops_of(program, func, t=None) -> tuple:
    """The intrinsics the form writes for ``func``: the VNNI path's and (unless ``amx=False``) the
    AMX path's."""
    return OPS + (XA.ops(analyse(program, func).signed_a) if getattr(t, "amx", True) else ())
