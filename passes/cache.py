"""cache: stage the global-memory data of a parallel loop through on-chip memory.

BANG, elementwise task-stride loop (what binding produces from a serial c loop)::

    for (int i = taskId; i < n; i += taskDim) {          // For(i, 0, n, 1, binding="taskId")
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }

becomes (chunk = 8192 floats, a multiple of the 128-byte vector rule)::

    __nram__ float x_nram[8192];
    __nram__ float y_nram[8192];
    for (int i_c = taskId * 8192; i_c < n; i_c += taskDim * 8192) {
        int i_len = min(8192, n - i_c);
        __memcpy(x_nram, x + i_c, i_len * sizeof(float), GDRAM2NRAM);
        for (int i = 0; i < i_len; ++i) {
            float v = x_nram[i];
            y_nram[i] = v > 0.0f ? v : 0.0f;
        }
        __memcpy(y + i_c, y_nram, i_len * sizeof(float), NRAM2GDRAM);
    }

BANG, row loop of a matrix kernel (gemm / gemv: every global access is ``P[i*S + r]`` with
``r`` independent of ``i``, or does not depend on ``i`` at all): a block of ``rows`` rows of
every row-indexed buffer goes to NRAM (one contiguous copy per buffer), the operands that do
not depend on ``i`` (B of gemm, x of gemv) go once per task to WRAM (``GDRAM2WRAM``) when
they are only read by a multiply (weights) and to NRAM otherwise.  The on-chip sizes depend
on runtime sizes, so the staged version runs under a guard (``if (K * N <= CAP && ...)``)
and the original loop stays as the fallback: never wrong, fast when it fits.

CUDA/HIP, matmul-like nest (``C[i][j] = sum_k A[i][k] * B[k][j]``, what binding makes of
gemm.c / bmm.c: i bound to ``global.x``, or i/j to ``global.y``/``global.x``): the kernel becomes a
shared-memory (LDS on hip) tiled kernel, blocks of ``tile`` x ``tile`` threads, one element of C
per thread (see :mod:`passes.patterns.simt_tile`)::

    __shared__ float xp_As[256];  __shared__ float xp_Bs[256];          // tile = 16
    const int xp_i = blockIdx.y * 16 + threadIdx.y, xp_j = blockIdx.x * 16 + threadIdx.x;
    float xp_acc = 0;
    for (int xp_k0 = 0; xp_k0 < K; xp_k0 += 16) {
        xp_As[ty * 16 + tx] = (xp_i < M && xp_k0 + tx < K) ? A[xp_i * K + xp_k0 + tx] : (float)0;
        xp_Bs[ty * 16 + tx] = (xp_k0 + ty < K && xp_j < N) ? B[(xp_k0 + ty) * N + xp_j] : (float)0;
        __syncthreads();
        for (int xp_kk = 0; xp_kk < 16; ++xp_kk) xp_acc += xp_As[ty * 16 + xp_kk] * xp_Bs[xp_kk * 16 + tx];
        __syncthreads();
    }
    if (xp_i < M && xp_j < N) C[xp_i * N + xp_j] = xp_acc;

and ``apply`` returns ``(program, {"grid": ["(N + 15) / 16", "(M + 15) / 16", batch or 1],
"block": [16, 16, 1]})``.  The sum runs over k in the original order (zero padding adds +-0).

Legality (``check``): XP4002 when there is no task-bound loop of the right shape;
XP4001 naming the buffer when an access is not staged-able (index not the loop index / not a
row of the loop) or when the fixed staging buffers overflow NRAM (512 KiB) / WRAM (1 MiB).
Parameters: ``chunk`` (elements per staged chunk, elementwise), ``rows`` (rows per block,
row loops), ``double`` (reserve room for double buffering: the pipeline pass needs 2x).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

try:
    from .base import PassError
    from .patterns import common as U
except ImportError:  # imported as a top-level package in a source checkout
    from xpiler.passes.base import PassError
    from xpiler.passes.patterns import common as U

NAME = "cache"
CHUNKS = (8192, 4096, 2048, 1024, 512, 256, 128)
ROW_CAPS = (16384, 8192, 4096)          # elements of one staged row buffer (row loops)


# ------------------------------------------------------------------------------ analysis
@dataclass
class ElementwisePlan:
    loop: N.For
    reads: list = field(default_factory=list)        # buffer names copied in
    writes: list = field(default_factory=list)       # buffer names copied out
    dtypes: dict = field(default_factory=dict)


def _bound_loops(func: N.Func, binding: str) -> list:
    return [n for n in walk(func.body) if isinstance(n, N.For) and n.binding == binding]


def _is_one(e) -> bool:
    return isinstance(e, N.Const) and e.value == 1


def analyse_elementwise(program: N.Program, func: N.Func, loop: N.For) -> ElementwisePlan:
    """Every global access of the loop body is ``P[i]`` (i the loop variable)."""
    ptrs = U.pointer_params(func)
    if not _is_one(loop.step):
        raise PassError(NAME, f"loop '{loop.var}' has a non-unit step", loop, "XP4002")
    for n in walk(loop.body):
        if isinstance(n, (N.Barrier, N.Return, N.Break, N.Continue, N.For, N.CFor, N.While)):
            raise PassError(NAME, f"loop '{loop.var}' body holds a {type(n).__name__}: not an elementwise loop",
                            n if getattr(n, "loc", None) else loop, "XP4002")
    stmts = U.inline_lets(loop.body.stmts)
    plan = ElementwisePlan(loop)
    uncond_writes = set()
    for s in stmts:
        if isinstance(s, N.Assign) and isinstance(s.target, N.Index) and isinstance(s.target.base, N.Var) \
                and s.op == "=":
            uncond_writes.add(s.target.base.name)
    body = N.Block(tuple(stmts))
    written, read = set(), set()
    for n in walk(body):
        if isinstance(n, N.Assign) and isinstance(n.target, N.Index) and isinstance(n.target.base, N.Var):
            written.add(n.target.base.name)
            if n.op != "=":
                read.add(n.target.base.name)
    for n in walk(body):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in ptrs:
            if not U.is_var(n.index, loop.var):
                raise PassError(NAME, f"buffer '{n.base.name}' is accessed at another index than '{loop.var}' "
                                      f"in loop '{loop.var}': not an elementwise chunk", n.base.loc and n or loop)
        elif isinstance(n, N.Var) and n.name in ptrs:
            pass
    # every use of a pointer must be an indexed access
    uses = sum(1 for n in walk(body) if isinstance(n, N.Var) and n.name in ptrs)
    idx_uses = sum(1 for n in walk(body) if isinstance(n, N.Index) and isinstance(n.base, N.Var)
                   and n.base.name in ptrs)
    if uses != idx_uses:
        bad = next(n.name for n in walk(body) if isinstance(n, N.Var) and n.name in ptrs)
        raise PassError(NAME, f"buffer '{bad}' is used as a pointer (not only indexed) in loop '{loop.var}'", loop)
    for n in walk(body):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in ptrs:
            nm = n.base.name
            if nm not in written:
                read.add(nm)
    order = [p.name for p in func.params if p.name in ptrs]
    plan.writes = [b for b in order if b in written]
    plan.reads = [b for b in order if b in read or (b in written and b not in uncond_writes)]
    if not plan.writes:
        raise PassError(NAME, f"loop '{loop.var}' writes no global buffer", loop, "XP4002")
    plan.dtypes = {b: ptrs[b] for b in order if b in written or b in read}
    return plan


def _pick_chunk(program, func, plan: ElementwisePlan, chunk, double: bool) -> int:
    have = U.static_bytes(program, func, "nram")
    per_elem = sum(U.ELEM_BYTES[d] for d in plan.dtypes.values()) * (2 if double else 1)
    if chunk in (None, "auto"):
        for c in CHUNKS:
            if have + c * per_elem <= U.NRAM_BYTES // 2:
                return c
        chunk = CHUNKS[-1]
    chunk = int(chunk)
    unit = max(U.VECTOR_RULE_BYTES // U.ELEM_BYTES[d] for d in plan.dtypes.values())
    if chunk <= 0 or chunk % unit:
        raise PassError(NAME, f"chunk {chunk} is not a multiple of {unit} elements (the 128-byte vector rule)",
                        plan.loop)
    used = have
    for b, d in plan.dtypes.items():
        used += chunk * U.ELEM_BYTES[d] * (2 if double else 1)
        if used > U.NRAM_BYTES:
            raise PassError(NAME, f"staging buffer '{b}' ({chunk} x {U.ELEM_BYTES[d]} bytes) does not fit NRAM: "
                                  f"{used} of {U.NRAM_BYTES} bytes needed", plan.loop)
    return chunk


# ------------------------------------------------------------------------------ rewrite
def _stage_elementwise(program, func, plan: ElementwisePlan, chunk: int) -> N.Func:
    loop = plan.loop
    c0 = U.fresh(func, f"{loop.var}_c")
    ln = U.fresh(func, f"{loop.var}_len")
    names = {b: U.fresh(func, f"{b}_nram") for b in plan.dtypes}
    decls = [N.Decl(names[b], N.Array(N.Scalar(d), (U.C(chunk),)), scope="nram") for b, d in plan.dtypes.items()]
    hi = loop.hi
    start = U.add(loop.lo, N.Const(0)) if False else loop.lo

    def restage(n):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in names and \
                U.is_var(n.index, loop.var):
            return N.Index(N.Var(names[n.base.name]), N.Var(loop.var), loc=n.loc)
        return n
    body = rewrite(loop.body, restage)
    # any other use of the loop variable is the global index c0 + i
    body = rewrite(body, lambda n: n)
    body = _subst_index_value(body, loop.var, N.BinOp("+", N.Var(c0), N.Var(loop.var)), set(names.values()))
    inner = N.For(loop.var, U.C(0), N.Var(ln), U.C(1), body, var_type=N.Scalar("int32", "int"), loc=loop.loc)
    stmts = [U.int_decl(ln, N.Intrinsic("min", (U.C(chunk), N.BinOp("-", hi, N.Var(c0)))))]
    for b in plan.reads:
        stmts.append(U.call("__memcpy", N.Var(names[b]), N.BinOp("+", N.Var(b), N.Var(c0)),
                            N.BinOp("*", N.Var(ln), U.sizeof(plan.dtypes[b])), N.Var("GDRAM2NRAM")))
    stmts.append(inner)
    for b in plan.writes:
        stmts.append(U.call("__memcpy", N.BinOp("+", N.Var(b), N.Var(c0)), N.Var(names[b]),
                            N.BinOp("*", N.Var(ln), U.sizeof(plan.dtypes[b])), N.Var("NRAM2GDRAM")))
    outer = N.For(c0, start, hi, U.C(chunk), N.Block(tuple(stmts)), binding=loop.binding,
                  var_type=N.Scalar("int32", "int"), loc=loop.loc)
    new_body = U.replace_stmt(func.body, loop, [outer])
    new_body = new_body.with_(stmts=tuple(decls) + new_body.stmts)
    return func.with_(body=new_body)


def _subst_index_value(body, var, value, staged):
    """Replace uses of ``var`` by ``value`` except as the index of a staged buffer."""
    def rec(n):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in staged and \
                isinstance(n.index, N.Var) and n.index.name == var:
            return n
        if isinstance(n, N.Var) and n.name == var:
            return value
        if isinstance(n, N.Node):
            from dataclasses import fields, replace
            ch = {}
            for f in fields(n):
                if f.name == "loc":
                    continue
                v = getattr(n, f.name)
                if isinstance(v, N.Node):
                    nv = rec(v)
                    if nv is not v:
                        ch[f.name] = nv
                elif isinstance(v, tuple):
                    nv = tuple(rec(x) if isinstance(x, N.Node) else x for x in v)
                    if any(a is not b for a, b in zip(nv, v)):
                        ch[f.name] = nv
            return replace(n, **ch) if ch else n
        return n
    return rec(body)


# ------------------------------------------------------------------------------ row loops (gemm/gemv)
try:
    from .patterns import rows as R
    from .patterns import bang_rows_stage as RS
except ImportError:
    from xpiler.passes.patterns import rows as R
    from xpiler.passes.patterns import bang_rows_stage as RS


# ------------------------------------------------------------------------------ protocol
def _plan(program: N.Program, entry: str, target=None, chunk="auto", rows="auto", double=False, **_):
    if target is not None and target != program.dialect:
        raise PassError(NAME, f"program is {program.dialect}, not yet {target}", None, "XP4002")
    try:
        func = U.kernel_func(program, entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}'", None, "XP4002")
    if program.dialect != "bang":
        raise PassError(NAME, f"no staging rule for dialect {program.dialect} yet", func, "XP4002")
    if U.static_bytes(program, func, "nram") and any(
            isinstance(n, N.Intrinsic) and n.name in ("__memcpy", "__memcpy_async") for n in walk(func)):
        raise PassError(NAME, f"kernel '{entry}' already stages its data on chip", func, "XP4002")
    loops = _bound_loops(func, "taskId")
    if not loops:
        raise PassError(NAME, f"kernel '{entry}' has no task-bound loop to stage", func, "XP4002")
    loop = loops[0]
    try:
        plan = analyse_elementwise(program, func, loop)
    except PassError as first:
        try:
            rplan = R.analyse_rows(program, func, loop)
        except PassError as e2:
            try:
                rplan = R.analyse_batched(program, func, loop)
            except PassError:
                raise first if first.code == "XP4001" or e2.code == "XP4002" else e2
            return "rows", func, rplan, R.pick_caps(program, func, rplan, rows)
        S = RS.stride_of(rplan)
        if S is not None:          # norm-like rows: padded row stride for the vector unit
            return "vrows", func, (rplan, S), RS.pick_caps(program, func, rplan)
        return "rows", func, rplan, R.pick_caps(program, func, rplan, rows)
    return "elementwise", func, plan, _pick_chunk(program, func, plan, chunk, double)


# ------------------------------------------------------------------------------ cuda / hip tiles
SIMT_TILES = (8, 16, 32)


def plan_simt(program: N.Program, entry: str, tile="auto", double=False, pass_name=NAME, simple=True):
    """(Contraction, tile) for a cuda/hip matmul-like kernel, or PassError."""
    from .patterns import simt_tile as ST
    try:
        func = U.kernel_func(program, entry)
    except KeyError:
        raise PassError(pass_name, f"no function '{entry}'", None, "XP4002")
    try:
        ct = ST.analyse(program, func, wider=True)
    except ST.NotMatmul as e:
        node = e.node if getattr(e.node, "loc", None) is not None else func
        raise PassError(pass_name, f"kernel '{entry}': {e.why}", node, "XP4001" if e.illegal else "XP4002")
    if ct.per_row and (double or not simple):
        raise PassError(pass_name, f"kernel '{entry}': the per-row form (the row operand '{ct.A}' has no column "
                                   f"index) has one tile and no register-blocked or double-buffered variant",
                        ct.root, "XP4001")
    T = 16 if tile in (None, "auto") else int(tile)
    if T <= 0 or T * T > 1024:
        raise PassError(pass_name, f"tile {T}: a block of {T}x{T} threads exceeds 1024 threads", ct.root)
    need = T * T * (U.ELEM_BYTES[ct.dtypes["A"]] + (0 if ct.per_row else U.ELEM_BYTES[ct.dtypes["B"]])) * \
        (2 if double else 1)
    if ct.per_row:                   # the k-offset table of the split per-row form (cuda, hip)
        need += ST.rowvec_split_bytes(ct, program.dialect, T)
    have = U.static_bytes(program, func, "shared")
    if have + need > U.SHARED_BYTES:
        raise PassError(pass_name, f"tile {T}: buffers '{ct.A}'/'{ct.B}' need {have + need} bytes of shared "
                                   f"memory, more than {U.SHARED_BYTES}", ct.root)
    return ct, T


def plan_regtile(program: N.Program, entry: str, tile, thread_tile, bk, double=False, pass_name=NAME):
    """(Contraction, BM, TM, BK) for the register-blocked form (passes/patterns/simt_regtile.py)."""
    from .patterns import simt_regtile as RT
    if double:
        raise PassError(pass_name, "the register-blocked form has one buffer (no double=True)", None, "XP4001")
    ct, _ = plan_simt(program, entry, "auto", False, pass_name, simple=False)
    BM, TM, BK = int(tile), int(thread_tile), int(bk or 8)
    why = RT.check_shape(ct, BM, TM, BK)
    if why:
        raise PassError(pass_name, f"kernel '{entry}': {why}", ct.root, "XP4001")
    need = 4 * BK * (2 * BM + 1)
    have = U.static_bytes(program, ct.func, "shared")
    if have + need > U.SHARED_BYTES:
        raise PassError(pass_name, f"tile {BM}x{BK}: {have + need} bytes of shared memory, more than "
                                   f"{U.SHARED_BYTES}", ct.root)
    return ct, BM, TM, BK


def plan_wide(program: N.Program, entry: str, tile, tile_n, thread_tile, bk, vec, double=False, pass_name=NAME,
              thread_tile_n=None, prefetch=False):
    """(Contraction, BM, BN, TM, TN, BK, prefetch) for the wide register-blocked form (``vec=4``:
    float4 reads of shared memory, passes/patterns/simt_regtile.py ``body_wide``)."""
    from .patterns import simt_regtile as RT
    if int(vec) != RT.VEC:
        raise PassError(pass_name, f"vec={vec}: the wide register-blocked form reads float{RT.VEC} only", None,
                        "XP4001")
    if double:
        raise PassError(pass_name, "the register-blocked form has one buffer (no double=True)", None, "XP4001")
    ct, _ = plan_simt(program, entry, "auto", False, pass_name, simple=False)
    BM, TM, BK = int(tile), int(thread_tile), int(bk or 8)
    BN, TN, prefetch = int(tile_n or tile), int(thread_tile_n or thread_tile), bool(prefetch)
    why = RT.check_wide(ct, BM, BN, TM, TN, BK, prefetch)
    if why:
        raise PassError(pass_name, f"kernel '{entry}': {why}", ct.root, "XP4001")
    bt = RT.b_by_k(ct, program.dialect)          # B staged k-fastest (its rows padded)
    need = RT.wide_shared_bytes(BM, BN, BK, bt)
    from .patterns import simt_kparts as KP
    if KP.applies(program.dialect, prefetch):    # the k-offset tables of the split loaders
        need += KP.table_bytes(KP.splits(ct, BK, BN, (BM // TM) * (BN // TN), bt))
    have = U.static_bytes(program, ct.func, "shared")
    if have + need > U.SHARED_BYTES:
        raise PassError(pass_name, f"tile {BM}x{BN}x{BK}: {have + need} bytes of shared memory, more than "
                                   f"{U.SHARED_BYTES}", ct.root)
    return ct, BM, BN, TM, TN, BK, prefetch


def _square_only(tile, tile_n, thread_tile, thread_tile_n, prefetch, pass_name=NAME):
    """The parameters only the wide form (``vec=4``) takes: refused elsewhere, with the reason."""
    if tile_n is not None and str(tile_n) != str(tile):
        raise PassError(pass_name, f"tile_n={tile_n}: a rectangular tile needs the wide form (vec=4)", None,
                        "XP4001")
    if thread_tile_n is not None and str(thread_tile_n) != str(thread_tile):
        raise PassError(pass_name, f"thread_tile_n={thread_tile_n}: a rectangular thread tile needs the wide "
                                   f"form (vec=4)", None, "XP4001")
    if prefetch:
        raise PassError(pass_name, "prefetch: only the wide register-blocked form (vec=4) prefetches", None,
                        "XP4001")


def _wide_params(target, BM, BN, TM, TN, BK, prefetch, vec) -> dict:
    """A wide-form candidate; the keys a default leaves out stay out (one canonical step text)."""
    p = {"target": target, "tile": BM, "tile_n": BN, "thread_tile": TM, "bk": BK, "vec": vec}
    if TN != TM:
        p["thread_tile_n"] = TN
    if prefetch:
        p["prefetch"] = True
    return p


def apply_simt(program, entry, tile="auto", double=False, pass_name=NAME, thread_tile=None, bk=None,
               tile_n=None, vec=None, thread_tile_n=None, prefetch=False):
    from .patterns import simt_tile as ST
    if thread_tile and vec:
        from .patterns import simt_regtile as RT
        ct, BM, BN, TM, TN, BK, pf = plan_wide(program, entry, tile, tile_n, thread_tile, bk, vec, double, pass_name,
                                               thread_tile_n, prefetch)
        return (ST.rebuild(program, ct, RT.body_wide(ct, program.dialect, BM, BN, TM, TN, BK, pf)),
                RT.launch_wide(ct, program.dialect, BM, BN, TM, TN))
    _square_only(tile, tile_n, thread_tile, thread_tile_n, prefetch, pass_name)
    if thread_tile:
        from .patterns import simt_regtile as RT
        ct, BM, TM, BK = plan_regtile(program, entry, tile, thread_tile, bk, double, pass_name)
        return ST.rebuild(program, ct, RT.body(ct, program.dialect, BM, TM, BK)), RT.launch(ct, program.dialect,
                                                                                            BM, TM)
    ct, T = plan_simt(program, entry, tile, double, pass_name)
    if ct.per_row:
        return ST.rebuild(program, ct, ST.rowvec_body(ct, program.dialect, T)), ST.launch_rowvec(ct, program.dialect, T)
    prog = ST.rebuild(program, ct, ST.tiled_body(ct, program.dialect, T, bool(double)))
    return prog, ST.launch(ct, program.dialect, T, T, T, T)


#: the wide register-blocked form the default cuda plans try first for a float32 matmul
#: (64 x 64 tile, 4 x 4 per thread, k slices of 16, float4 shared reads, register prefetch: 1.06x
#: of cuBLAS on gemm 1024^3 and 1.01x on bmm 16 x 256^3 on the H200; docs/decisions.md 2026-12-05)
WIDE_DEFAULT = {"tile": 64, "thread_tile": 4, "bk": 16, "vec": 4, "prefetch": True}


def _as_alternative(program: N.Program, entry: str, params: dict) -> dict:
    """``as_alternative=True``: these parameters are one alternative of a plan step
    (xpiler/schedule/plans.py). Besides the form's own checks, they refuse (XP4002) every matmul
    whose A, B and C are not all float32: half operands keep the WMMA / MFMA routes. Where every
    step is applied (``xpiler/schedule/step.py: apply_program``) any refusal of such a step becomes
    an :class:`~xpiler.passes.base.AlternativeRefused`, so the plan proposes its next alternative.
    Returns the parameters without the flag."""
    rest = {k: v for k, v in params.items() if k != "as_alternative"}
    ct, _ = plan_simt(program, entry, "auto", False, NAME, simple=False)
    if any(ct.dtypes.get(x) != "float32" for x in ("A", "B", "C")):
        raise PassError(NAME, f"kernel '{entry}': operands {ct.dtypes}: not a float32 matmul", ct.root, "XP4002")
    return rest


def check(program: N.Program, *, entry: str, **params) -> None:
    if params.get("as_alternative"):
        params = _as_alternative(program, entry, params)
    if program.dialect in ("cuda", "hip") and params.get("target") in (None, program.dialect):
        if params.get("thread_tile") and params.get("vec"):
            plan_wide(program, entry, params.get("tile", 128), params.get("tile_n"), params["thread_tile"],
                      params.get("bk"), params["vec"], params.get("double", False),
                      thread_tile_n=params.get("thread_tile_n"), prefetch=params.get("prefetch", False))
            return
        _square_only(params.get("tile"), params.get("tile_n"), params.get("thread_tile"),
                     params.get("thread_tile_n"), params.get("prefetch", False))
        if params.get("thread_tile"):
            plan_regtile(program, entry, params.get("tile", 64), params["thread_tile"], params.get("bk"),
                         params.get("double", False))
            return
        plan_simt(program, entry, params.get("tile", "auto"), params.get("double", False))
        return
    _plan(program, entry, **params)


def apply(program: N.Program, *, entry: str, **params):
    if params.get("as_alternative"):
        params = _as_alternative(program, entry, params)
    if program.dialect in ("cuda", "hip") and params.get("target") in (None, program.dialect):
        return apply_simt(program, entry, params.get("tile", "auto"), params.get("double", False),
                          thread_tile=params.get("thread_tile"), bk=params.get("bk"),
                          tile_n=params.get("tile_n"), vec=params.get("vec"),
                          thread_tile_n=params.get("thread_tile_n"), prefetch=params.get("prefetch", False))
    kind, func, plan, size = _plan(program, entry, **params)
    if kind == "elementwise":
        nf = _stage_elementwise(program, func, plan, size)
    elif kind == "vrows":
        nf = RS.stage(program, func, plan[0], plan[1], size)
    else:
        nf = R.stage_rows(program, func, plan, size)
    return U.replace_func(program, func, nf)


def candidates(program: N.Program, target: str) -> list[dict]:
    if target in ("cuda", "hip"):
        from .patterns.simt_regtile import SHAPES, VEC, WIDE_SHAPES
        out = []
        for p in [{"target": target, "tile": t} for t in SIMT_TILES] + \
                 [{"target": target, "tile": bm, "thread_tile": tm, "bk": bk} for bm, tm, bk in SHAPES] + \
                 [_wide_params(target, *shape, VEC) for shape in WIDE_SHAPES]:
            try:
                for f in program.kernels:
                    check(program, entry=f.name, **p)
                    out.append(p)
                    break
            except PassError:
                pass
        return out
    if target != "bang":
        return []
    out = []
    for c in CHUNKS[:5]:
        for d in (False, True):
            p = {"target": target, "chunk": c, "double": d}
            try:
                for f in program.kernels:
                    check(program, entry=f.name, **p)
                    out.append(p)
                    break
            except PassError:
                pass
    return out
