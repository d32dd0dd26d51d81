"""tensorize: replace loop nests by the target's vector / matrix instructions.

Each instruction is described once by what it computes (``xpiler.ir.intrinsics.REGISTRY``
semantics, plus the loop-nest descriptions in ``passes/patterns``); a loop nest is replaced
when its structure matches the description and its scalar body computes the same function.

BANG, elementwise loop over staged NRAM chunks (what the cache pass produces)::

    for (int i = 0; i < i_len; ++i) {            // i_len = min(8192, n - i_c) <= 8192
        float v = x_nram[i];
        y_nram[i] = v > 0.0f ? v : 0.0f;
    }
  ->
    __bang_active_relu(y_nram, x_nram, (i_len + 31) / 32 * 32);

(the vector-length rule: n * sizeof(float) % 128 == 0, so n is rounded up inside the padded
8192-element buffers; the copy back moves only the valid elements).  Binary bodies
(``c[i] = a[i] + b[i]``) select ``__bang_add`` / ``sub`` / ``mul`` / ``maxequal`` / ``minequal`` /
``div``.

BANG, matmul / matrix-vector nests over staged buffers (rows of A in NRAM, B in WRAM) ->
``__bang_matmul`` / ``__bang_mlp``: see :mod:`passes.patterns.rows`; int8 x int8 -> int32 rows (uint8 or
int8 A, int8 B in WRAM) -> the fixed-point ``__bang_matmul`` in K chunks of 1024, exact for every input:
see :mod:`passes.patterns.bang_matmul_i8`.

C, float elementwise loop -> AVX-512 with a masked tail::

    for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
  ->
    int i = 0;
    for (; i + 16 <= n; i += 16)  _mm512_storeu_ps(c + i, _mm512_add_ps(_mm512_loadu_ps(a + i), ...));
    if (i < n) { __mmask16 m = (__mmask16)((1u << (n - i)) - 1u); ... maskz_loadu / mask_storeu ... }

HIP, float32 matmul (the bound nest binding writes, or the shared-memory tiled kernel the cache
pass writes) -> one wave64 per 16x16 tile of C with ``__builtin_amdgcn_mfma_f32_16x16x4f32``
(lane l = 16g + i supplies A[i][k0+g] and B[k0+g][i], holds D[4g+e][i]), K staged through LDS
in zero-padded 16-wide slices; launch block [64, 1, 1], grid [cdiv(N,16), cdiv(M,16), batch].
Products of floats are exact in fp32, only the order of the sum changes. The MFMA step stands
under ``#if XP_USE_MFMA`` (defined 1 on CDNA, 0 elsewhere: RDNA3, host passes, hip_on_cuda.h) with
per-lane sums over the same LDS tiles as the other path (:mod:`passes.patterns.mfma_variant`).
Half, 8-bit and bfloat16 operands take the 16x16x16 forms (bfloat16: ``..._16x16x16bf16_1k``, bit
patterns four to a ``shortx4``, guard without gfx908, which lacks it).
CUDA, half x half -> float matmul -> WMMA 16x16x16 (one warp per tile).  float32 inputs are
refused on cuda (XP4001): WMMA would round them to half.

Legality: XP4002 when no loop matches a description (nothing to do); XP4001 when a loop
matches but the instruction's rules cannot be met (buffer too small for the padded length,
operands in the wrong memory, float32 numerics that the instruction would change).
Parameters: ``target`` (the dialect), ``ops`` (restrict to these instruction names); c: ``stream``
(output elements from which an elementwise loop stores with ``_mm512_stream_ps`` after an alignment
peel; default :data:`patterns.x86_stream.STREAM_MIN`, for loops that call no vector-math helper;
0: normal stores; XP4296 when given and no loop can take it): see :mod:`passes.patterns.x86_stream`.

C, float32 contraction (gemm / bmm nest) with ``micro="MRxNR"`` (and ``kc``, ``mc``, ``nc``) ->
the whole nest becomes a cache-blocked, register-tiled AVX-512 kernel (packed A/B panels, an
MR x NR tile of ``_mm512_fmadd_ps`` accumulators): see :mod:`passes.patterns.x86_gemm`. The same
parameters on an int8 / uint8 x int8 -> int32 contraction give the VNNI form (k in groups of 4,
``_mm512_dpbusd_epi32``; a signed A goes in as ``a + 128`` with ``128 * column sums of B``
subtracted): see :mod:`passes.patterns.x86_gemm_i8`; the element types pick the form. That form
carries an AMX tile path under the compile-time guard ``XP_USE_AMX`` unless ``amx=False``
(:mod:`passes.patterns.x86_gemm_amx`). A bfloat16 x bfloat16 -> float contraction (both operands
widened to float) takes :mod:`passes.patterns.x86_gemm_bf16`: ``_mm512_dpbf16_ps`` on k pairs under
``XP_USE_AVX512BF16``, bf16 widened to float and FMA otherwise, AMX ``_tile_dpbf16ps`` first under
``XP_USE_AMX`` unless ``amx=False``.
Without ``micro`` a c program gets the loop vectorizer as before.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from .base import PassError
from .patterns import common as U
from .patterns import bang as PB

NAME = "tensorize"


# ------------------------------------------------------------------------------ BANG elementwise
def _bang_elementwise_sites(program, func, ops=None, strict=False):
    """[(loop, replacement stmt)] for every elementwise loop over NRAM buffers."""
    bufs = U.buffer_decls(func, program)
    macros = program.macro_table()
    lets = U.decl_lets(func)
    sites = []
    for loop in [n for n in walk(func.body) if isinstance(n, N.For)]:
        if loop.binding is not None or not _is_zero(loop.lo) or not _is_one(loop.step):
            continue
        if any(isinstance(n, (N.For, N.CFor, N.While, N.Barrier, N.If)) for n in walk(loop.body)):
            continue
        stmts = [s for s in U.inline_lets(loop.body.stmts) if not isinstance(s, N.Comment)]
        if len(stmts) != 1 or not isinstance(stmts[0], N.Assign) or stmts[0].op != "=":
            continue
        st = stmts[0]
        consts = _const_lets_before(func, loop, lets)
        if consts:      # ``const float zero = 0.0f; ... y[i] = v > zero ? v : zero``: the constant's value
            st = st.with_(value=substitute(st.value, consts))
        tgt = st.target
        if not (isinstance(tgt, N.Index) and isinstance(tgt.base, N.Var) and U.is_var(tgt.index, loop.var)):
            continue
        dst = tgt.base.name
        if dst not in bufs or bufs[dst].scope != "nram":
            continue
        loads, ok = [], True
        for n in walk(st.value):
            if isinstance(n, N.Index):
                if not (isinstance(n.base, N.Var) and U.is_var(n.index, loop.var) and n.base.name in bufs
                        and bufs[n.base.name].scope == "nram"):
                    ok = False
                    break
                if n.base.name not in loads:
                    loads.append(n.base.name)
            elif isinstance(n, N.Var) and n.name == loop.var:
                pass
        if not ok or not loads:
            continue
        # the loop variable may appear only as the index of the accesses
        n_idx = sum(1 for n in walk(st.value) if isinstance(n, N.Index))
        n_var = sum(1 for n in walk(st.value) if isinstance(n, N.Var) and n.name == loop.var)
        if n_var != n_idx:
            continue
        dts = {U.scalar_dtype(bufs[b].type.elem) for b in [dst] + loads}
        if len(dts) != 1 or next(iter(dts)) not in PB.VECTOR_DTYPES:
            continue
        dt = next(iter(dts))
        m = PB.match_elementwise(st.value, loads)
        if m is None or (ops and m[0] not in ops):
            continue
        name, order = m
        unit = U.VECTOR_RULE_BYTES // U.ELEM_BYTES[dt]
        bound = U.upper_bound(loop.hi, lets)
        caps = {b: U.const_size(bufs[b], macros) for b in [dst] + list(order)}
        if bound is None:
            if strict:
                raise PassError(NAME, f"loop '{loop.var}' matches {name} but its trip count has no known bound "
                                      f"within the NRAM buffers", loop)
            continue
        padded = -(-bound // unit) * unit
        small = [b for b, c in caps.items() if c is None or c < padded]
        if small:
            raise PassError(NAME, f"NRAM buffer '{small[0]}' holds {caps[small[0]]} elements, fewer than the "
                                  f"padded vector length {padded} that {name} needs", bufs[small[0]]
                            if bufs[small[0]].loc else loop)
        n_expr = U.round_up(loop.hi, unit)
        call = U.call(name, N.Var(dst), *[N.Var(b) for b in order], n_expr)
        sites.append((loop, call.with_(loc=loop.loc)))
    return sites


def _const_lets_before(func, loop, lets: dict) -> dict:
    """{name: constant} of the scalars declared at the top level of ``func`` before the statement
    holding ``loop``, with a numeric constant initializer, declared once and never assigned
    (``lets``: :func:`~passes.patterns.common.decl_lets`): their value wherever the loop reads them."""
    out = {}
    for s in func.body.stmts:
        if s is loop or any(n is loop for n in walk(s)):
            return out
        if (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and isinstance(s.init, N.Const)
                and isinstance(s.init.value, (int, float)) and lets.get(s.name) is s.init):
            out[s.name] = s.init
    return {}


def _is_zero(e):
    return isinstance(e, N.Const) and e.value == 0


def _is_one(e):
    return isinstance(e, N.Const) and e.value == 1


# ------------------------------------------------------------------------------ dispatch
def _sites(program, entry, target=None, ops=None, stream=None, **_):
    if target is not None and target != program.dialect:
        raise PassError(NAME, f"program is {program.dialect}, not yet {target}", None, "XP4002")
    try:
        func = U.kernel_func(program, entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}'", None, "XP4002")
    if program.dialect == "bang":
        from .patterns import rows as R
        from .patterns import bang_rows as BR
        from .patterns import bang_pool as BP
        from .patterns import bang_conv as BC
        sites = BP.pool_sites(program, func, ops)      # a whole-nest pool: nothing else to match
        sites = sites or BC.conv_sites(program, func, ops)     # likewise a whole-nest convolution
        if not sites:
            from .patterns import bang_matmul_i8 as I8
            sites = _bang_elementwise_sites(program, func, ops) + R.matmul_sites(program, func, ops)
            sites += I8.sites(program, func, ops)       # int8 contractions: the exact fixed-point form
            sites += BR.row_vector_sites(program, func, ops, skip=[s[0] for s in sites])
    elif program.dialect == "c":
        from .patterns import x86 as PX
        from .patterns.x86_stream import STREAM_MIN
        if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int) or stream < 0):
            raise PassError(NAME, f"stream must be a whole number of elements >= 0 (0: normal stores), not "
                                  f"{stream!r}", func, "XP4296")
        notes = []
        sites = PX.sites(program, func, ops, STREAM_MIN if stream is None else stream, notes, stream is None)
        if stream and sites and not any(k == "stream" for k, _ in notes):
            why = "; ".join(w for k, w in notes if k == "refused") or "no vectorized loop stores elementwise"
            raise PassError(NAME, f"non-temporal stores (stream={stream}) refused: {why}", func, "XP4296")
    else:
        sites = []
    if not sites:
        raise PassError(NAME, f"no loop nest of '{entry}' matches a {program.dialect} instruction", func, "XP4002")
    return func, sites


# ------------------------------------------------------------------------------ cuda / hip matrix units
def _simt_plan(program, entry, target=None, ops=None, **_):
    from .patterns import simt_tile as ST
    if target is not None and target != program.dialect:
        raise PassError(NAME, f"program is {program.dialect}, not yet {target}", None, "XP4002")
    try:
        func = U.kernel_func(program, entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}'", None, "XP4002")
    try:
        ct, _ = ST.from_tiled(program, func)
    except ST.NotMatmul:
        if any(isinstance(n, N.Decl) and n.scope == "shared" for n in walk(func)):
            raise PassError(NAME, f"kernel '{entry}' stages data in shared memory in a form tensorize does not "
                                  f"know", func, "XP4002")
        try:
            ct = ST.analyse(program, func)
        except ST.NotMatmul as e:
            node = e.node if getattr(e.node, "loc", None) is not None else func
            raise PassError(NAME, f"no loop nest of '{entry}' matches a {program.dialect} matrix instruction "
                                  f"({e.why})", node, "XP4002")
    dts = ct.dtypes
    ld = N.Var(ST.PREFIX + "LOAD")

    def widen(op):      # the load itself, or the load converted exactly to float
        return op == ld or (isinstance(op, N.Cast) and op.expr == ld) or (
            isinstance(op, (N.Call, N.Intrinsic)) and (getattr(op, "func", None) or getattr(op, "name", None))
            in ("__half2float", "static_cast<float>") and len(op.args) == 1 and op.args[0] == ld)
    plain = all(widen(op) for op in (ct.op_a, ct.op_b))
    if program.dialect == "hip":
        instr = "__builtin_amdgcn_mfma_f32_16x16x4f32"
        if dts["A"] == dts["B"] == "float16" and ct.acc_dtype == dts["C"] == "float32" and \
                _half_spelling(func, ct) in ("_Float16", "half", "__half"):
            instr = "__builtin_amdgcn_mfma_f32_16x16x16f16"     # half inputs widened, float sums
        elif dts["A"] == dts["B"] == "bfloat16" and ct.acc_dtype == dts["C"] == "float32":
            instr = "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k"  # bfloat16 inputs widened, float sums
        elif dts["A"] in ("int8", "uint8") and dts["B"] == "int8" and dts["C"] == "int32" and \
                ct.acc_dtype in ("int32", "uint32"):
            instr = "__builtin_amdgcn_mfma_i32_16x16x16i8"      # int32 sums (uint8 A: offset by 128)
            if not all(_int_widen(op, ld) for op in (ct.op_a, ct.op_b)):
                raise PassError(NAME, "the 8-bit product operands are not loads widened to int32", ct.root,
                                "XP4002")
        elif dts["A"] != "float32" or dts["B"] != "float32" or ct.acc_dtype != "float32" or dts["C"] != "float32":
            raise PassError(NAME, f"matmul over {dts['A']} x {dts['B']} -> {dts['C']}: only float32 maps to "
                                  f"{instr} here", ct.root, "XP4002")
        if not plain:
            raise PassError(NAME, "the product operands are not plain loads", ct.root, "XP4002")
    elif dts["A"] in ("int8", "uint8") and dts["B"] == "int8" and dts["C"] == "int32" and \
            ct.acc_dtype in ("int32", "uint32"):
        instr = "__dp4a"                 # cuda: four byte products per step (uint8 A: offset by 128)
        if not all(_int_widen(op, ld) for op in (ct.op_a, ct.op_b)):
            raise PassError(NAME, "the 8-bit product operands are not loads widened to int32", ct.root, "XP4002")
    else:
        instr = "wmma::mma_sync"
        if dts["A"] == "float32" or dts["B"] == "float32":
            raise PassError(NAME, f"matmul of float32 '{ct.A}' x '{ct.B}': WMMA would round the inputs to half "
                                  f"(float32 numerics are never changed)", ct.root, "XP4001")
        if dts["A"] != "float16" or dts["B"] != "float16" or ct.acc_dtype != "float32" or dts["C"] != "float32":
            raise PassError(NAME, f"matmul over {dts['A']} x {dts['B']} -> {dts['C']}: WMMA here needs half "
                                  f"inputs and a float accumulator", ct.root, "XP4002")
        if not plain:
            raise PassError(NAME, "the product operands are not plain (widened) loads", ct.root, "XP4002")
    if ops and instr not in ops:
        raise PassError(NAME, f"{instr} not among the requested ops", ct.root, "XP4002")
    return ct, instr


def _int_widen(op, ld) -> bool:
    """The load itself or the load converted to a 32/64-bit integer (value-preserving for 8-bit
    elements)."""
    while isinstance(op, N.Cast):
        if not (isinstance(op.type, N.Scalar) and op.type.dtype in ("int32", "uint32", "int64")):
            return False
        op = op.expr
    return op == ld


def _half_spelling(func, ct):
    """How the kernel spells the element type of its half operands (``_Float16`` or ``half``):
    the f16 MFMA's vector operand type is built on ``_Float16``, so a ``half`` operand is
    converted on the way into the LDS tile."""
    sp = set()
    for p in func.params:
        if p.name in (ct.A, ct.B) and isinstance(p.type, N.Pointer):
            sp.add(getattr(p.type.elem, "spelling", None))
    return sp.pop() if len(sp) == 1 else None


#: the block-tiled WMMA form's parameters (passes/patterns/simt_wmma_block.py)
BLOCK_PARAMS = ("tile", "tile_n", "warps", "bk", "double")
#: the block-tiled WMMA form the default cuda plans try first for a half matmul: a 64 x 64 tile
#: per block of 8 warps (2 fragments each), k slices of 32, double-buffered; the fastest of six
#: shapes in three side-by-side runs on an H100 (benchmarks/RESULTS.md, thirteenth session;
#: docs/decisions.md, 2026-12-05 "Half matmuls to cuda: block-tiled WMMA")
WMMA_BLOCK_DEFAULT = {"tile": 64, "warps": 8, "bk": 32, "double": True}


def _block_params(params) -> dict | None:
    """The block-tiled form's parameters, or None when none is given (the one-warp form)."""
    if not any(params.get(k) is not None for k in BLOCK_PARAMS):
        return None
    try:
        BM = int(params.get("tile") or 64)
        BN = int(params.get("tile_n") or BM)
        W = int(params.get("warps") or 4)
        BK = int(params.get("bk") or 32)
    except (TypeError, ValueError):
        raise PassError(NAME, f"block-tiled WMMA: parameters {params}: integers expected", None, "XP4292")
    return {"BM": BM, "BN": BN, "warps": W, "BK": BK, "double": bool(params.get("double"))}


def _block_plan(program, entry, **params):
    """(Contraction, block parameters) of the block-tiled WMMA form, or PassError: XP4292 for
    parameters that make no valid form, XP4293 for a kernel the form does not compute."""
    from .patterns import simt_wmma_block as WB
    bp = _block_params(params)
    why = WB.check_params(bp["BM"], bp["BN"], bp["warps"], bp["BK"], bp["double"])
    if why:
        raise PassError(NAME, f"block-tiled WMMA: {why}", None, "XP4292")
    if program.dialect != "cuda":
        raise PassError(NAME, f"block-tiled WMMA: program is {program.dialect}; the form is written for cuda",
                        None, "XP4293")
    try:
        ct, instr = _simt_plan(program, entry, **params)
    except PassError as e:
        raise PassError(NAME, f"block-tiled WMMA: {e.why}", None, "XP4293") from None
    why = WB.check_kernel(ct) if instr == "wmma::mma_sync" else f"the kernel maps to {instr}, not WMMA"
    if why:
        raise PassError(NAME, f"block-tiled WMMA: {why}", ct.root, "XP4293")
    from .patterns import common as PU
    # (what stays of the kernel is its prelude: the shared tiles of a cache step are replaced)
    have = PU.static_bytes(program, ct.func.with_(body=N.Block(tuple(ct.prelude))), "shared")
    need = WB.shared_bytes(bp["BM"], bp["BN"], bp["warps"], bp["BK"], bp["double"])
    if have + need > WB.SHARED_LIMIT:
        raise PassError(NAME, f"block-tiled WMMA: {have + need} bytes of shared memory, more than "
                              f"{WB.SHARED_LIMIT}", ct.root, "XP4292")
    return ct, bp


def _simt_apply(program, entry, **params):
    from .patterns import simt_tile as ST
    if _block_params(params) is not None:
        from .patterns import simt_wmma_block as WB
        ct, bp = _block_plan(program, entry, **params)
        prog = ST.rebuild(program, ct, WB.body(ct, bp["BM"], bp["BN"], bp["warps"], bp["BK"], bp["double"]),
                          _wmma_includes(program))
        return prog, WB.launch(ct, bp["BM"], bp["BN"], bp["warps"])
    ct, instr = _simt_plan(program, entry, **params)
    if program.dialect == "hip":
        from .patterns import mfma_variant as MV
        extra = [] if any(isinstance(it, N.Typedef) and it.name == "floatx4" for it in program.items) else \
            ["typedef float floatx4 __attribute__((ext_vector_type(4)));"]
        if not MV.has_guard(it.text for it in program.items if isinstance(it, (N.Directive, N.Raw))):
            extra.insert(0, MV.guard())      # XP_USE_MFMA: 1 on CDNA, 0 elsewhere (RDNA3, host, NVIDIA)
        if instr.endswith("16x16x16f16"):
            if not any(isinstance(it, N.Typedef) and it.name == "halfx4" for it in program.items):
                extra.append("typedef _Float16 halfx4 __attribute__((ext_vector_type(4)));")
            # a hip 'half' (hip_fp16.h's __half) goes through float into _Float16: exact both ways
            via = "" if _half_spelling(U.kernel_func(program, entry), ct) == "_Float16" else "(float)"
            return ST.rebuild(program, ct, ST.mfma_body(ct, half=True, via=via), extra), ST.launch(ct, "hip", 64, 1, 16, 16)
        if instr.endswith("16x16x16bf16_1k"):
            return _mfma_bf16(program, ct, extra)
        if instr.endswith("16x16x16i8"):
            if not any(isinstance(it, N.Typedef) and it.name == "intx4" for it in program.items):
                extra = [t for t in extra if "floatx4" not in t] + \
                    ["typedef int intx4 __attribute__((ext_vector_type(4)));"]
            return ST.rebuild(program, ct, ST.mfma_body(ct, int8=True), extra), ST.launch(ct, "hip", 64, 1, 16, 16)
        prog = ST.rebuild(program, ct, ST.mfma_body(ct), extra)
        return prog, ST.launch(ct, "hip", 64, 1, 16, 16)
    if instr == "__dp4a":
        return ST.rebuild(program, ct, ST.tiled_body(ct, "cuda", 16, dp4a=True)), ST.launch(ct, "cuda", 16, 16, 16, 16)
    prog = ST.rebuild(program, ct, ST.wmma_body(ct), _wmma_includes(program))
    return prog, ST.launch(ct, "cuda", 32, 1, 16, 16)


def _mfma_bf16(program, ct, extra):
    """The bfloat16 MFMA form (passes/patterns/simt_tile.py ``mfma_body(bf16=True)``): its guard
    names only the architectures with the bf16 "1k" builtin (gfx908 has none: it takes the plain
    path); a program whose own guard names gfx908 is refused (that guard would pick a builtin
    gfx908 cannot compile)."""
    from .patterns import mfma_variant as MV
    from .patterns import simt_tile as ST
    texts = [it.text for it in program.items if isinstance(it, (N.Directive, N.Raw))]
    if MV.has_guard(texts):
        if "gfx908" in MV.guard_archs(texts):
            raise PassError(NAME, "the program's XP_USE_MFMA guard selects gfx908, which has no "
                                  "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", ct.root, "XP4002")
    else:
        extra = [MV.guard(MV.CDNA_BF16) if t == MV.guard() else t for t in extra]
    if not any(isinstance(it, N.Typedef) and it.name == "shortx4" for it in program.items):
        extra.append("typedef short shortx4 __attribute__((ext_vector_type(4)));")
    return ST.rebuild(program, ct, ST.mfma_body(ct, bf16=True), extra), ST.launch(ct, "hip", 64, 1, 16, 16)


def _wmma_includes(program) -> list[str]:
    """The top-level lines a WMMA kernel needs that the program does not have yet."""
    texts = [it.text for it in program.items if isinstance(it, (N.Directive, N.Raw))]
    extra = []
    if not any("mma.h" in t for t in texts):
        extra.append("#include <mma.h>")
    if not any("cuda_fp16.h" in t for t in texts):
        extra.append("#include <cuda_fp16.h>")
    if not any(isinstance(it, N.Using) for it in program.items):
        extra.append("using namespace nvcuda;")
    return extra


# ------------------------------------------------------------------------------ c register-tiled gemm
GEMM_PARAMS = ("micro", "kc", "mc", "nc", "amx")     # amx: int8 and bf16 only (the forms with AMX = True)


def _gemm_plan(program, entry, target=None, ops=None, **params):
    from .patterns import x86_gemm as XG
    if target is not None and target != program.dialect:
        raise PassError(NAME, f"program is {program.dialect}, not yet {target}", None, "XP4002")
    extra = sorted(set(params) - set(GEMM_PARAMS) - {"require"})
    if extra:
        raise PassError(NAME, f"unknown parameter(s) {', '.join(extra)} for the register-tiled gemm", None, "XP4210")
    try:
        func = U.kernel_func(program, entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}'", None, "XP4002")
    tp = {k: v for k, v in params.items() if k in GEMM_PARAMS}
    try:
        form = _gemm_form(program, func)
        if "amx" in tp and not hasattr(form, "AMX"):
            raise XG.Refused(f"amx={tp['amx']!r}: the AMX variant is a form of the int8 and bfloat16 contractions only",
                             code="param")
        tile = form.tile_params(**tp)
    except XG.Refused as e:
        code = "XP4210" if e.code == "param" else e.code
        raise PassError(NAME, f"register-tiled gemm: {e.why}", e.node if e.node is not None else func, code)
    if ops and form.OP not in ops:
        raise PassError(NAME, f"{form.OP} not among the requested ops", func, "XP4002")
    return func, tile, form


def _gemm_form(program, func):
    """The register-tiled form the contraction takes: float32 (x86_gemm, FMA), bfloat16 (x86_gemm_bf16,
    dpbf16 / FMA / AMX) or 8-bit integer (x86_gemm_i8, VNNI); Refused with the reason that names the kernel's types otherwise."""
    from .patterns import x86_gemm as XG
    from .patterns import x86_gemm_i8 as XG8
    from .patterns import x86_gemm_bf16 as XGB
    try:
        XG.analyse(program, func)
        return XG
    except XG.Refused as e32:
        try:
            ct = XG.read(program, func).ct
        except XG.Refused:
            ct = None
        if ct is not None and "bfloat16" in (ct.dtypes["A"], ct.dtypes["B"]):
            XGB.analyse(program, func)         # its own reason when it refuses
            return XGB
        try:
            XG8.analyse(program, func)
            return XG8
        except XG.Refused as e8:
            if not getattr(e8, "read", False):
                raise e32                  # not an integer contraction: the float form's reason
            if e8.why.startswith("not an 8-bit"):
                raise XG.Refused(f"{e32.why}; and {e8.why}", e8.node, e8.code)
            raise e8


def _gemm_apply(program, entry, **params):
    from .patterns import x86_gemm as XG
    func, tile, form = _gemm_plan(program, entry, **params)
    try:
        return form.rewrite_program(program, func, tile)
    except XG.Refused as e:
        raise PassError(NAME, f"register-tiled gemm: {e.why}", e.node if e.node is not None else func, e.code)


def _is_gemm(program, params) -> bool:
    return program.dialect == "c" and params.get("micro") is not None


def check(program: N.Program, *, entry: str, **params) -> None:
    if _is_gemm(program, params):
        _gemm_plan(program, entry, **params)
        return
    if program.dialect in ("cuda", "hip"):
        if _block_params(params) is not None:
            _block_plan(program, entry, **params)
            return
        _simt_plan(program, entry, **params)
        return
    _sites(program, entry, **params)


def apply(program: N.Program, *, entry: str, **params):
    if _is_gemm(program, params):
        return _gemm_apply(program, entry, **params)
    if program.dialect in ("cuda", "hip"):
        return _simt_apply(program, entry, **params)
    func, sites = _sites(program, entry, **params)
    body = func.body
    done = []
    for loop, repl in sites:
        try:
            body = U.replace_stmt(body, loop, list(repl) if isinstance(repl, (list, tuple)) else [repl])
        except KeyError:
            # two sites where one loop nests in the other (a row loop and its inner loop): the
            # replacement applied first was built from the original statements, the other one's
            # loop is gone with it; the first stands (the program is tested as always)
            from xpiler.ir.visit import walk
            if not any(any(n is loop for n in walk(o)) or any(n is o for n in walk(loop)) for o in done):
                raise
            continue
        done.append(loop)
    if program.dialect == "bang":
        from .patterns import bang_rows as BR
        body = BR.hoist_scratch(body)          # scratch rows a replacement declared -> kernel top
    out = U.replace_func(program, func, func.with_(body=body))
    if program.dialect == "c":
        from .patterns import x86 as PX
        out = PX.finish(out)        # includes + vector-math helpers the new loops call
    return out


def applied_ops(program: N.Program, entry: str, **params) -> list[str]:
    """Names of the instructions apply() would introduce (for reports and tests)."""
    if _is_gemm(program, params):
        func, tile, form = _gemm_plan(program, entry, **params)
        return list(form.ops_of(program, func, tile) if hasattr(form, "ops_of") else form.OPS)
    if program.dialect in ("cuda", "hip"):
        return [_simt_plan(program, entry, **params)[1]]
    _, sites = _sites(program, entry, **params)
    out = []
    for _, r in sites:
        for n in walk(r if not isinstance(r, list) else N.Block(tuple(r))):
            if isinstance(n, N.Intrinsic) and (n.name.startswith("__bang") or n.name.startswith("_mm512")):
                out.append(n.name)
    return sorted(set(out))


def candidates(program: N.Program, target: str) -> list[dict]:
    out = []
    for f in program.kernels or program.funcs:
        try:
            check(program, entry=f.name, target=target)
            out.append({"target": target})
        except PassError:
            pass
        if target == "c" and program.dialect == "c":
            # non-temporal stores (patterns/x86_stream.py): where a loop can take them, the choice the
            # default did not make is a step of its own (normal stores where the default streams, the
            # default threshold where it leaves a vector-math loop to normal stores)
            from .patterns.x86_stream import STREAM_MIN
            try:
                check(program, entry=f.name, target=target, stream=STREAM_MIN)
                default = applied_ops(program, f.name, target=target)
                out.append({"target": target, "stream": 0 if "_mm512_stream_ps" in default else STREAM_MIN})
            except PassError:
                pass
        if target == "c" and program.dialect == "c":
            # the register-tiled gemm (passes/patterns/x86_gemm.py), one step per tile choice
            from .patterns.x86_gemm import Refused
            try:
                choices = _gemm_form(program, f).CHOICES
            except Refused:
                choices = ()
            for micro, kc in choices:
                try:
                    check(program, entry=f.name, target=target, micro=micro, kc=kc)
                    out.append({"target": target, "micro": micro, "kc": kc})
                except PassError:
                    break       # the nest is refused for every tile alike
        if target == "cuda" and program.dialect == "cuda":
            # the block-tiled WMMA form (passes/patterns/simt_wmma_block.py), one step per shape
            from .patterns.simt_wmma_block import SHAPES
            for BM, BN, W, BK, dbl in SHAPES:
                p = {"target": target, "tile": BM, "tile_n": BN, "warps": W, "bk": BK, "double": dbl}
                try:
                    check(program, entry=f.name, **p)
                    out.append(p)
                except PassError as e:
                    if e.code == "XP4293":
                        break   # the kernel is refused for every shape alike
        break
    return out
