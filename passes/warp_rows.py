"""One warp per row: binding's ``rows="warp"`` form for cuda / hip.

For short rows a whole block per row (``rows="block"``, ``passes/block_rows.py``) leaves most of
its threads idle and pays a block barrier per reduction. Here each warp of a block takes a row of
its own: the row loop is warp-stride (its first row ``blockIdx.x * (blockDim.x / warpSize) +
threadIdx.x / warpSize``, its step ``gridDim.x * (blockDim.x / warpSize)``), each column loop is
spread over the warp's lanes (``lo + lane * step``, step ``warpSize * step``, ``lane =
threadIdx.x % warpSize``), and:

* a column loop's reductions give each lane a partial (as in ``block_rows``) folded by an xor
  butterfly of warp shuffles (``passes/warp_reduce.py``, step 1 only): every lane ends with the
  row's total, with no shared memory and no block barrier;
* a statement that stores outside a loop runs in lane 0;
* where ``block_rows`` puts a ``__syncthreads()`` between phases (a phase that stored, then
  one that may read it; a statement every lane ran read memory, then a phase that stores), this
  form puts a warp barrier: ``__syncwarp()`` on cuda, on hip a wavefront-scope release fence,
  ``__builtin_amdgcn_wave_barrier()`` and an acquire fence (what binding's cuda -> hip retarget
  writes for ``__syncwarp()``).  A shuffle synchronises the lanes but is not relied on to order
  memory, so a reduction phase counts as a phase like any other here.

The rows a block holds depend on ``warpSize`` (32 on NVIDIA and RDNA, 64 on CDNA); the grid is
sized for 32-lane warps (``ceil(rows / (B / 32))`` blocks, or the grid cap) and the row loop's
stride covers the rest when warps are wider.  Legality is ``block_rows.plan``'s (the same
refusals, XP4001), plus ``warp_reduce``'s block-size and type checks (a block of whole warps of
the widest width; a reduction type with a shuffle); a row body without a reduction is refused
(XP4002: a map gains nothing from a warp per row over one element per thread).

Launch ``{"grid": [ceil(rows / (B / 32)), 1, 1], "block": [B, 1, 1]}``.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from .base import PassError
from . import block_rows
from . import phases
from . import warp_reduce

NAME = "binding"
BLOCK_SIZES = (128, 256)          # offered by binding.candidates(): 4 / 8 rows per block (32 lanes)
GRID_CAPS = (None, 1024)


def plan(program, func: N.Func, row: N.For, target: str, block: int) -> dict:
    """The one-warp-per-row plan of ``row``; raises PassError."""
    if target not in ("cuda", "hip"):
        raise PassError(NAME, f"rows='warp' binds rows to cuda/hip warps, not {target}", row)
    warp_reduce.check_reduce("shuffle", target, block, row)
    pl = block_rows.plan(program, func, row, target, block)
    types = {d.name: d.type for d in walk(func.body) if isinstance(d, N.Decl)}
    for s, how, reds in pl["units"]:
        if how == "par":
            for acc in reds:
                warp_reduce.check_type(types[acc], target, acc, s)
    if not any(reds for _, how, reds in pl["units"] if how == "par"):
        raise PassError(NAME, f"rows='warp': the body of loop '{row.var}' reduces nothing (a warp per row serves "
                              f"row reductions; a map binds one element per thread)", block_rows._at(row, func),
                        "XP4002")
    return pl


def _warp_barrier(target: str) -> N.Stmt:
    if target == "cuda":
        return N.Barrier("warp")

    def fence(order):
        return N.ExprStmt(N.Call("__builtin_amdgcn_fence", (N.Var(order), N.Const("wavefront", "str", '"wavefront"'))))
    return N.Block((fence("__ATOMIC_RELEASE"), N.ExprStmt(N.Call("__builtin_amdgcn_wave_barrier", ())),
                    fence("__ATOMIC_ACQUIRE")))


def _spread(s: N.For, reds: dict, types: dict, lane: N.Var, target: str, fresh) -> N.Block:
    """The column loop over the warp's lanes, each reduction folded by a butterfly."""
    warp = N.Builtin("warpSize")
    pre, post, mapping = [], [], {}
    for acc, r in reds.items():
        t = types[acc]
        t = N.Scalar(t.dtype, t.spelling)
        p = fresh(f"{acc}_part")
        mapping[acc] = N.Var(p)
        init = N.Var(acc) if r.op in phases.IDEMPOTENT else \
            N.Const(phases.IDENTITY[r.op], "int32", str(phases.IDENTITY[r.op]))
        pre.append(N.Decl(p, t, init))
        post += warp_reduce.butterfly(N.Var(acc), N.Var(p), t, r.op, target, fresh)
    lo = N.BinOp("+", s.lo, N.BinOp("*", lane, s.step)) if not _is_one(s.step) else N.BinOp("+", s.lo, lane)
    step = warp if _is_one(s.step) else N.BinOp("*", warp, s.step)
    loop = s.with_(body=substitute(s.body, mapping), lo=lo, step=step, binding=None)
    return N.Block(tuple(pre) + (loop,) + tuple(post), loc=s.loc)


def _is_one(e) -> bool:
    return isinstance(e, N.Const) and e.value == 1


def build(program, func: N.Func, pl: dict, target: str, trip, grid_cap, fresh):
    """(new body of ``func``, launch): see the module doc."""
    B, row = pl["block"], pl["row"]
    warp = N.Builtin("warpSize")
    tid = N.Builtin("threadIdx.x")
    lane = N.Var(fresh("xp_lane"))
    per_block = N.BinOp("/", N.Builtin("blockDim.x"), warp)
    types = {d.name: d.type for d in walk(func.body) if isinstance(d, N.Decl)}
    out = []
    pending = written = False

    def barrier():
        nonlocal pending, written
        out.append(_warp_barrier(target))
        pending = written = False
    for s, how, reds in pl["units"]:
        if how == "keep":
            out.append(s)
            continue
        if written:
            barrier()
        if how == "all":
            out.append(s)
            pending = pending or block_rows._reads_memory(s)
            continue
        if how == "once":
            if pending:
                barrier()
            out.append(N.If(N.BinOp("==", lane, N.Const(0)), s if isinstance(s, N.Block) else N.Block((s,)),
                            loc=s.loc))
            written = True
            continue
        if pending and phases.writes_memory(s):
            barrier()
        out.append(_spread(s, reds, types, lane, target, fresh))
        pending = pending or block_rows._reads_memory(s)
        written = phases.writes_memory(s)
    first = N.BinOp("+", N.BinOp("*", N.Builtin("blockIdx.x"), per_block), N.BinOp("/", tid, warp))
    stride = N.BinOp("*", N.Builtin("gridDim.x"), per_block)
    if not _is_one(row.step):
        first, stride = N.BinOp("*", first, row.step), N.BinOp("*", stride, row.step)
    bound = row.with_(body=row.body.with_(stmts=tuple(out)), lo=N.BinOp("+", row.lo, first), step=stride,
                      binding=None, pragmas=tuple(p for p in row.pragmas if not p.startswith(("omp", "xpiler "))))
    decl = N.Decl(lane.name, N.Scalar("int32", "int"), N.BinOp("%", tid, warp))
    stmts = (decl,) + tuple(bound if s is row else s for s in func.body.stmts)
    rows_per_block = B // warp_reduce.WARP_MIN[target]
    if trip is None:
        from .binding import FALLBACK_GRID
        grid = FALLBACK_GRID if grid_cap is None else min(FALLBACK_GRID, grid_cap)
    else:
        grid = f"({trip} + {rows_per_block - 1}) / {rows_per_block}"
        if grid_cap:
            grid = f"min({grid}, {grid_cap})"
    return func.body.with_(stmts=stmts), {"grid": [grid, 1, 1], "block": [B, 1, 1]}
