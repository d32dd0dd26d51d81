"""Grid sizing from the problem: binding's ``retarget`` mode with ``regrid=True`` (cuda <-> hip).

A SIMT source often caps its grid (``blocks = min(cdiv(n, 256), 32)``: a few blocks per compute
unit on the GPU it was written for) and walks the rest with a grid-stride loop. Retarget keeps
that launch; on a GPU with more multiprocessors the cap leaves most of them idle (relu.hip ->
cuda ran at 0.05x PyTorch on the H200 with 32 blocks). When the kernel's result cannot depend on
its launch shape, the launch is a free parameter: ``grid = min(cdiv(trip, block), cap)`` for a
block size and a cap (or none) the search chooses.

Legality (:func:`check`, every refusal a ``PassError`` XP4001 naming the statement): the entry is

    <scalar declarations with side-effect-free initialisers, reading no memory;
     pointer declarations T *q = (T *)p of a pointer parameter p>
    for (i = blockIdx.x * blockDim.x + threadIdx.x; i < E; i += S) BODY
    <a tail: statements that only the first threads run, passes/regrid_tail.py>

where ``S`` is ``blockDim.x * gridDim.x`` (either order) or a scalar declared above with that
value and never assigned, the start may be a never-assigned scalar declared as that index,
``E`` is an expression over the kernel's integer parameters (after the declarations and macros
are substituted), ``i`` is not assigned in ``BODY``, and no parallel builtin (``threadIdx``,
``blockIdx``, ``blockDim``, ``gridDim``, ``warpSize``), nor the stride or index scalar, appears
anywhere else in the entry but in the tail's global indices (checked there); there is no barrier,
shared or device-global declaration, warp collective or matrix fragment. Then the thread with global index ``g`` runs exactly the iterations
``g, g + G*B, g + 2*G*B, ...`` below ``E``: for every positive grid ``G`` and block ``B`` each
``i`` in ``[lo, E)`` runs exactly once, by one thread, with the same ``BODY``; nothing a thread
computes depends on which thread it is; the tail's own argument is in passes/regrid_tail.py.
(Iterations of different threads still run in an
unspecified order, as they did under the source's launch, so the kernel's own race freedom is
unchanged; the migration's tests check the result as for every step.)
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import walk

from .base import PassError
from . import dependence as D

NAME = "binding"
BLOCK_SIZES = (256, 512)              # offered by binding.candidates() with regrid
GRID_CAPS = (None, 4096)
_PARALLEL = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.", "warpSize")


def _is(n, name: str) -> bool:
    return isinstance(n, N.Builtin) and n.name == name


def _product(e, a: str, b: str) -> bool:
    return isinstance(e, N.BinOp) and e.op == "*" and (
        _is(e.lhs, a) and _is(e.rhs, b) or _is(e.lhs, b) and _is(e.rhs, a))


def _global_index(e) -> bool:
    """``blockIdx.x * blockDim.x + threadIdx.x`` in any order of the sum and the product."""
    if not (isinstance(e, N.BinOp) and e.op == "+"):
        return False
    return (_product(e.lhs, "blockIdx.x", "blockDim.x") and _is(e.rhs, "threadIdx.x")
            or _product(e.rhs, "blockIdx.x", "blockDim.x") and _is(e.lhs, "threadIdx.x"))


def _stmts(body):
    out = []
    for s in body.stmts:
        if isinstance(s, N.Block):
            out += _stmts(s)
        elif not isinstance(s, (N.Comment, N.Pragma)):
            out.append(s)
    return out


def check(program: N.Program, func: N.Func, block: int | None = None) -> dict:
    """The plan ``{"loop": For, "trip": text over the parameters}`` or a PassError. ``block``: the
    block size of the launch to be chosen (statements after the loop, passes/regrid_tail.py, must
    run in threads below it; None: the smallest of :data:`BLOCK_SIZES`)."""
    from .binding import trip_count_expr     # binding imports this module
    from . import regrid_tail
    if func.body is None:
        raise PassError(NAME, "regrid needs the kernel's body", func)
    stmts = _stmts(func.body)
    loops = [s for s in stmts if isinstance(s, N.For)]
    if len(loops) != 1:
        raise PassError(NAME, f"regrid needs exactly one top-level grid-stride loop, found {len(loops)}", func)
    loop = loops[0]
    at = next(k for k, s in enumerate(stmts) if s is loop)
    before, after = stmts[:at], stmts[at + 1:]
    assigned = D.assigned_names(func.body)
    stride_vars, gidx_vars, aliases = set(), set(), {}
    for s in before:
        if isinstance(s, N.Decl) and isinstance(s.type, N.Pointer) and s.init is not None and s.name not in assigned:
            alias = regrid_tail.pointer_alias(s, func)
            if alias is not None:            # T *q = (T *)p: the same buffer, read in W-element units
                aliases[s.name] = alias
                continue
        if not (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None):
            raise PassError(NAME, "regrid: a statement outside the grid-stride loop is not a scalar declaration", s)
        if s.name in assigned or any(isinstance(n, (N.Index, N.Call, N.Intrinsic, N.AssignExpr))
                                     or isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--")
                                     for n in walk(s.init)):
            raise PassError(NAME, f"regrid: '{s.name}' is not a pure, never-assigned scalar", s)
        if _product(s.init, "blockDim.x", "gridDim.x"):
            stride_vars.add(s.name)
        elif _global_index(s.init):
            gidx_vars.add(s.name)
    if getattr(loop, "binding", None) or getattr(loop, "cmp", "<") != "<":
        raise PassError(NAME, "regrid: the loop is not an ordinary `<` grid-stride loop", loop)
    if not (_global_index(loop.lo) or isinstance(loop.lo, N.Var) and loop.lo.name in gidx_vars):
        raise PassError(NAME, "regrid: the loop does not start at blockIdx.x * blockDim.x + threadIdx.x", loop)
    if not (_product(loop.step, "blockDim.x", "gridDim.x")
            or isinstance(loop.step, N.Var) and loop.step.name in stride_vars):
        raise PassError(NAME, "regrid: the loop's stride is not blockDim.x * gridDim.x", loop)
    if loop.var in D.assigned_names(loop.body):
        raise PassError(NAME, f"regrid: the loop variable '{loop.var}' is assigned in the loop", loop)
    # the stride and the thread's index are read only by the loop's header (and the tail, below)
    launch_vars = stride_vars | gidx_vars
    parts = [(loop.hi, loop), (loop.body, loop)] + [(s.init, s) for s in before if isinstance(s, N.Decl)]
    for part, where in parts:
        for n in walk(part):
            if isinstance(n, N.Var) and n.name in launch_vars:
                raise PassError(NAME, f"regrid: '{n.name}' (the grid's stride or the thread's index) is read outside "
                                      f"the grid-stride loop's header", where)
    # every parallel builtin is one of the loop header's (or the stride / index declarations')
    allowed = {id(n) for n in walk(loop.lo)} | {id(n) for n in walk(loop.step)}
    for s in before:
        if isinstance(s, N.Decl) and s.name in launch_vars:
            allowed |= {id(n) for n in walk(s.init)}
    if after:
        allowed |= regrid_tail.check(program, func, loop, after, is_gidx=_global_index, gidx_names=gidx_vars,
                                     stride_names=stride_vars, aliases=aliases,
                                     block=block if block is not None else min(BLOCK_SIZES))
    for n in walk(func.body):
        if isinstance(n, N.Builtin) and n.name.startswith(_PARALLEL) and id(n) not in allowed:
            raise PassError(NAME, f"regrid: '{n.name}' is used outside the grid-stride loop's header", n)
        check_independent_thread(n, "regrid: ")
    trip = trip_count_expr(program, func, N.For(loop.var, N.Const(0, "int32", "0"), loop.hi,
                                                N.Const(1, "int32", "1"), N.Block(())))
    if trip is None:
        raise PassError(NAME, "regrid: the loop's bound is not an expression over the kernel's integer "
                              "parameters", loop)
    return {"loop": loop, "trip": trip}


def check_independent_thread(n, prefix: str = "", pass_name: str = NAME) -> None:
    """PassError (XP4001) when node ``n`` ties a thread to the others of its block or grid: a
    barrier or matrix fragment, a declaration that is not thread-local, a warp or matrix
    collective. Shared by regrid and vectorize_simt, which both relaunch a kernel's threads."""
    if isinstance(n, (N.Barrier, N.Fragment)):
        raise PassError(pass_name, f"{prefix}the kernel has a barrier or a matrix fragment", n)
    if isinstance(n, N.Decl) and (n.scope != "local" or set(n.storage or ()) & {"__shared__", "__device__"}):
        raise PassError(pass_name, f"{prefix}'{n.name}' is not a thread-local variable", n)
    if isinstance(n, N.Intrinsic):
        d = REGISTRY.get(n.name)
        if d is not None and d.category in ("warp", "wmma", "mfma"):
            raise PassError(pass_name, f"{prefix}'{n.name}' is a {d.category} collective", n)


def launch(plan: dict, block: int, grid_cap) -> dict:
    """The launch over the kernel's parameters: ``grid = max(min(cdiv(trip, block), cap), 1)``."""
    g = f"({plan['trip']} + {block - 1}) / {block}"
    if grid_cap:
        g = f"min({g}, {int(grid_cap)})"
    return {"grid": [f"max({g}, 1)", 1, 1], "block": [int(block), 1, 1]}
