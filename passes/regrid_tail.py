"""Statements after a grid-stride loop that only the first threads run: regrid's tail rule.

A kernel that moves its elements in vectors often finishes the last few with the first threads
of the grid (examples/add/add_vec4.cu)::

    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = tid; i < n / 4; i += blockDim.x * gridDim.x) ...float4 body...
    int t = n / 4 * 4 + tid;
    if (t < n) c[t] = a[t] + b[t];

Under a launch of ``T`` threads the tail runs for the global indices ``g < T`` whose condition
holds. :func:`check` accepts such statements when, under every launch ``regrid`` may choose, that
set of threads and what each of them does stay the same:

1. **The tail reads the launch only through g.** After the loop come scalar declarations whose
   values read no memory, and ``if`` statements without ``else`` whose conditions read no memory
   (every thread evaluates them, whatever the launch). Where they name the thread, it
   is through ``g`` = ``blockIdx.x * blockDim.x + threadIdx.x`` (written out, or a never-assigned
   scalar declared with that value). Nothing else in them reads a parallel builtin, the loop's
   stride or the loop variable.
2. **Only threads below K pass a condition**, ``K`` = min(the program's block size, the new
   block size): the condition, with the declarations substituted, implies ``g < K`` for every
   value of the kernel's parameters (Z3; C's truncated ``/`` and ``%``). The program's launch must
   be a one-dimensional block of constant size (its grid and block y, z are 1). A launch has at least
   one block, so the old launch ran every thread that passes and so does the new one; each
   ``if`` runs its body in the same threads with the same ``g``, as before.
3. **The tail and the loop touch different elements.** The tail is ordered after its own
   thread's iterations, and those change with the launch. So no element of a buffer that a tail
   statement accesses may be one that an iteration ``0 <= i < E`` of the loop accesses, where
   either side writes (Z3, each pair of accesses on its own, under the ``if``'s condition). An
   access through a pointer declared before the loop as ``(float4 *)p`` of a parameter ``p``
   (one element of which is ``W`` elements of ``p``'s type, :mod:`xpiler.ir.lanes`, the rule
   the dependence test reads cast pointers with) covers elements ``W*j .. W*j + W-1`` of ``p``.
   Any other pointer use in the loop or the tail (arithmetic, an address, a call) is refused.
   Buffers with different names are taken as distinct, as in the dependence test.

Then the iterations run once each (regrid's own argument) and the tail's statements run in the
same threads, touching nothing the iterations touch: the kernel's result does not depend on the
launch. Every refusal is a ``PassError`` (XP4001) naming the statement.
"""
from __future__ import annotations

from xpiler.ir import lanes as L
from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError
from . import dependence as D

NAME = "binding"
GIDX = "xp_gidx"          # the global thread index in the proofs
_PARALLEL = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.", "warpSize")


def _pure(e) -> bool:
    return not any(isinstance(n, (N.Index, N.Call, N.Intrinsic, N.AssignExpr)) or
                   isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--") for n in walk(e))


def source_block(program: N.Program, func: N.Func):
    """The program's block size when its launch is one-dimensional with a constant block, else None."""
    lc = program.launch_of(func.name)
    if lc is None or lc.block is None:
        return None
    block, grid = tuple(lc.block), tuple(lc.grid or (1, 1, 1))
    try:
        x = int(block[0])
        rest = [int(v) for v in block[1:] + grid[1:]]
    except (TypeError, ValueError):
        return None
    return x if x > 0 and all(v == 1 for v in rest) else None


def check(program: N.Program, func: N.Func, loop: N.For, after: list, *, is_gidx, gidx_names: set,
          stride_names: set, aliases: dict, block: int) -> set:
    """PassError unless the statements ``after`` the grid-stride ``loop`` meet the rule of the
    module; returns the ids of the parallel builtins they may hold (those of global indices).
    ``is_gidx(e)``: ``e`` is the global index written out; ``aliases``: pointer name ->
    (parameter, lanes) of the pointer declarations before the loop."""
    allowed = set()
    for s in after:
        for n in walk(s):
            if is_gidx(n):
                allowed |= {id(b) for b in walk(n)}
    for s in after:
        for n in walk(s):
            if isinstance(n, N.Builtin) and n.name.startswith(_PARALLEL) and id(n) not in allowed:
                raise PassError(NAME, f"regrid: '{n.name}' after the grid-stride loop is not part of the global "
                                      f"thread index", s)
            if isinstance(n, N.Var) and (n.name in stride_names or n.name == loop.var and loop.var_type is None):
                raise PassError(NAME, f"regrid: '{n.name}' after the grid-stride loop depends on the launch", s)
    assigned = D.assigned_names(func.body)
    for s in after:
        if isinstance(s, N.Decl) and isinstance(s.type, N.Scalar):
            if s.init is None or s.name in assigned or not _pure(s.init):
                raise PassError(NAME, f"regrid: '{s.name}' after the grid-stride loop is not a pure, never-assigned "
                                      f"scalar", s)
        elif not (isinstance(s, N.If) and s.else_ is None):
            raise PassError(NAME, "regrid: a statement outside the grid-stride loop is not a scalar declaration, "
                                  "nor an `if` without `else` that only the first threads pass", s)
        elif not _pure(s.cond):
            raise PassError(NAME, "regrid: the condition after the grid-stride loop reads memory (every thread "
                                  "reads it, whatever the launch)", s)
    src = source_block(program, func)
    if src is None:
        raise PassError(NAME, "regrid: statements follow the grid-stride loop, and the program's launch is not a "
                              "one-dimensional block of known size (the threads that ran them are not known)",
                        after[0])
    K = min(src, block)
    # the proofs read the function with every global index as one name
    gfunc = rewrite(func, lambda n: N.Var(GIDX) if is_gidx(n) else n)
    gfunc = rewrite(gfunc, lambda n: N.Var(GIDX) if isinstance(n, N.Var) and n.name in gidx_names else n)
    gstmts, stmts = _top(gfunc.body), _top(func.body)
    gloop = gstmts[next(k for k, s in enumerate(stmts) if s is loop)]
    loop_acc = _accesses(gloop.body, aliases, func, loop)
    for s in after:
        if not isinstance(s, N.If):
            continue
        gs = gstmts[next(k for k, t in enumerate(stmts) if t is s)]
        env = D._make_env(program, gfunc, N.Block((gs, gloop)), (), True)
        g = env.sym(GIDX, "a")
        cond = D.to_z3_bool(gs.cond, "a", env)
        if D._solve(env.cons + [g >= 0, cond, g >= K]) != "unsat":
            raise PassError(NAME, f"regrid: the condition after the grid-stride loop is not proven to hold only for "
                                  f"global thread indices below {K} (the block size), so the threads that pass it "
                                  f"would change with the launch", s)
        for a in _accesses(gs, aliases, func, s):
            for w in loop_acc:
                if a[0] != w[0] or a[3] == "r" and w[3] == "r":
                    continue
                if not _apart(program, gfunc, gs, gloop, a, w, K):
                    raise PassError(NAME, f"regrid: the statement after the grid-stride loop may touch an element of "
                                          f"'{a[0]}' that the loop {'writes' if w[3] != 'r' else 'reads'} (its thread "
                                          f"runs other iterations under another launch)", s)
    return allowed


def _top(body) -> list:
    out = []
    for s in body.stmts:
        if isinstance(s, N.Block):
            out += _top(s)
        elif not isinstance(s, (N.Comment, N.Pragma)):
            out.append(s)
    return out


def lanes_of(ptr_type, param: N.Param):
    """Elements of ``param`` one element of a ``ptr_type`` pointer covers (1 for its own type, 4
    for float4 of float), None when not a whole number or not known: the shared rule of
    :func:`xpiler.ir.lanes.lanes_of`, which the dependence test reads cast pointers with too."""
    return L.lanes_of(getattr(ptr_type, "elem", None), L.element_type(param.type))


def pointer_alias(decl: N.Decl, func: N.Func):
    """``(parameter, lanes)`` of ``T *q = (T *)p`` (or ``= p``), ``p`` a pointer parameter, else None."""
    e = decl.init
    while isinstance(e, N.Cast) and isinstance(e.type, N.Pointer):
        e = e.expr
    params = {p.name: p for p in func.params if isinstance(p.type, N.Pointer)}
    if not (isinstance(e, N.Var) and e.name in params):
        return None
    lanes = lanes_of(decl.type, params[e.name])
    return None if lanes is None else (e.name, lanes)


def _accesses(region, aliases: dict, func: N.Func, where) -> list:
    """``(parameter, first element, lanes, mode, loops)`` of every access to a pointer parameter
    in ``region``; PassError for any other use of a pointer (arithmetic, an address, a call, a
    pointer of unknown target)."""
    params = {p.name: p for p in func.params if isinstance(p.type, (N.Pointer, N.Array))}
    pointers = set(params) | {d.name for d in walk(func.body) if isinstance(d, N.Decl)
                              and isinstance(d.type, (N.Pointer, N.Array))}
    local = {d.name for d in walk(region) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}
    out = []

    def ref(b):
        """(parameter, lanes), "local" (a thread's own array), or None (unknown)."""
        if isinstance(b, N.Var):
            if b.name in local:
                return "local"
            if b.name in params:
                return (b.name, 1) if isinstance(params[b.name].type, N.Pointer) else None
            return aliases.get(b.name)
        if isinstance(b, N.Cast) and isinstance(b.type, N.Pointer) and isinstance(b.expr, N.Var) and \
                b.expr.name in params and isinstance(params[b.expr.name].type, N.Pointer):
            lanes = lanes_of(b.type, params[b.expr.name])
            return None if lanes is None else (b.expr.name, lanes)
        return None

    def visit(n, parent, mode, loops):
        if isinstance(n, N.Index):
            r = ref(n.base)
            if r is None:
                raise PassError(NAME, "regrid: an element is reached through a pointer whose target is not known "
                                      "(only parameters, their casts and pointers declared as such are read)", where)
            if isinstance(parent, N.UnOp) and parent.op == "&":
                raise PassError(NAME, "regrid: the address of an element is taken", where)
            if r != "local":
                buf, lanes = r
                lo = n.index if lanes == 1 else N.BinOp("*", N.Const(lanes, "int32", str(lanes)), n.index)
                out.append((buf, lo, lanes, mode, loops))
            visit(n.index, n, "r", loops)
            return
        if isinstance(n, N.Var) and n.name in pointers and n.name not in local:
            raise PassError(NAME, f"regrid: '{n.name}' is used as a pointer, not indexed (the elements it reaches "
                                  f"are not known)", where)
        if isinstance(n, (N.Assign, N.AssignExpr)):
            visit(n.value, n, "r", loops)
            tgt, whole = n.target, n.op == "="
            while isinstance(tgt, N.Member):        # a lane of a vector element: the rest is kept
                tgt, whole = tgt.base, False
            visit(tgt, n, "w" if whole else "rw", loops)
            return
        if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
            visit(n.operand, n, "rw", loops)
            return
        if isinstance(n, N.UnOp) and n.op == "*":
            raise PassError(NAME, "regrid: memory is read through `*` (the element is not known)", where)
        inner = loops + (n,) if isinstance(n, N.For) else loops
        for c in n.children():
            visit(c, n, "r", inner)
    visit(region, None, "r", ())
    return out


def _apart(program, gfunc, stmt, gloop, a, w, K) -> bool:
    """No element the tail's access ``a`` (in ``stmt``) touches is one that access ``w`` touches
    in an iteration ``0 <= i < E`` of the loop: the overlap constraints are unsatisfiable."""
    env = D._make_env(program, gfunc, N.Block((stmt, gloop)), (), True)
    g, i = env.sym(GIDX, "a"), env.sym(gloop.var, "b")
    cons = [g >= 0, g < K, D.to_z3_bool(stmt.cond, "a", env), i >= 0, i < D.to_z3(gloop.hi, "b", env)]
    for side, loops in (("a", a[4]), ("b", w[4])):
        for lp in loops:
            if isinstance(lp, N.For):
                D._bounds(lp, side, env)
    la, lw = D.to_z3(a[1], "a", env), D.to_z3(w[1], "b", env)
    cons += [la < lw + w[2], lw < la + a[2]]
    return D._solve(env.cons + cons) == "unsat"
