"""Second half of :mod:`passes.unblock`: the recovered BANG task loop around a plain row loop
becomes one loop over all rows (and batches), the form the contraction recogniser reads.

    for (task = 0; task < T; ++task) {              // recovered source tasks, T constant
        <local arrays no longer read, the loops that only fill them, integer lets>
        [for (b = h(task); b < BATCH; b += S) { <lets> ]
            for (i = lo(task); i < hi(task); ++i) BODY(b, i)
        [}]
    }

becomes ``for (i = 0; i < M; ++i) BODY`` or ``for (t = 0; t < BATCH * M; ++t) { int b = t / M;
int i = t % M; <lets>; BODY }`` where ``hi(task)`` is ``min(M, ...)``.  Proven with Z3 (lets
expanded, T unrolled): every (b, i) in [0, BATCH) x [0, M) is covered by exactly one task, and
every covered pair lies in that range; BODY reads only buffers the kernel never writes and its
stores are injective over (b, i, j), so the iterations are independent and may run in any order.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from .patterns import common as U
from .patterns.polyz import Refused, _access, _const, _mixed_radix, _valid


def _vars(e):
    return {n.name for n in walk(e) if isinstance(n, N.Var)}


def _flat(stmts):
    out = []
    for s in stmts:
        if isinstance(s, N.Block):
            out += _flat(s.stmts)
        elif not isinstance(s, (N.Comment, N.Pragma)):
            out.append(s)
    return out


def merge(body: N.Block, iloop: N.For, ub) -> N.Block:
    """``body`` (the function body) with the task loop around ``iloop`` merged; ``ub`` is the
    :class:`passes.unblock._Unblock` whose let facts and Z3 helpers are used."""
    top = _flat(body.stmts)
    if len(top) != 1 or not isinstance(top[0], N.For):
        raise Refused("the function body is not one task loop", top[0] if top else None)
    task = top[0]
    T = _const(task.hi)
    if not (_const(task.lo) == 0 and _const(task.step) == 1 and T and 0 < T <= 64 and task.binding is None):
        raise Refused("the outer loop is not a task loop 0..T with a constant T", task)
    tstmts = _flat(task.body.stmts)
    holder = next((s for s in tstmts if any(x is iloop for x in walk(s))), None)
    batch = holder if holder is not iloop else None
    inner = [iloop]
    if batch is not None:
        if not (isinstance(batch, N.For) and batch.binding is None and (_const(batch.step) or 0) > 0):
            raise Refused("the row loop is not inside a batch loop of constant step", batch)
        inner = _flat(batch.body.stmts)
        if not inner or inner[-1] is not iloop or not all(
                isinstance(s, N.Decl) and s.init is not None for s in inner[:-1]):
            raise Refused("the batch loop body is not 'lets; row loop'", batch)
    # what stays: the row body; everything else in the task body must be lets or dead local arrays
    live = _vars(iloop.body) | _vars(iloop.hi) | _vars(iloop.lo)
    for s in inner[:-1]:
        live |= _vars(s.init)
    arrays = {s.name for s in tstmts if isinstance(s, N.Decl) and isinstance(s.type, N.Array)}
    if arrays & live:
        raise Refused(f"the rows still use the task-local arrays {sorted(arrays & live)}", task)
    for s in tstmts:
        if s is holder or (isinstance(s, N.Decl) and (isinstance(s.type, N.Array) or s.init is not None)):
            continue
        writes = [a for a in walk(s) if isinstance(a, (N.Assign, N.AssignExpr))]
        if any(isinstance(n, (N.Call, N.Intrinsic)) for n in walk(s)) or not writes or not all(
                (_access(U.normalize_ptr_index(a.target)) or ("",))[0] in arrays for a in writes):
            raise Refused("the task body holds a statement other than lets and fills of unused local arrays", s)
    # let expansion (only facts: names declared once, never reassigned)
    def expand(e):
        for _ in range(12):
            names = _vars(e) & set(ub.lets)
            if not names:
                return e
            e = substitute(e, {n: ub.lets[n] for n in names})
        raise Refused("a let chain is too deep to expand", e)
    lo_i, hi_i = expand(iloop.lo), expand(iloop.hi)
    M = _task_free_min(hi_i, task.var)
    Bx = expand(batch.hi) if batch is not None else None
    if M is None:
        raise Refused("the row bound is not min(M, ...) with M the same in every task", iloop)
    if (_vars(M) | (_vars(Bx) if batch is not None else set())) & ub.written_names:
        raise Refused("the row or batch bound is assigned in the function", iloop)
    z = ub.z
    tv = z.v(task.var)
    b, i = z.v("xpb_b"), z.v("xpb_i")

    def cover(t):
        s = lambda e: z3.substitute(z.int(e), (tv, t))
        c = [s(lo_i) <= i, i < s(hi_i)]
        if batch is not None:
            h, S = s(expand(batch.lo)), _const(batch.step)
            c += [b >= h, (b - h) % S == 0, b < s(expand(batch.hi))]
        return z3.And(*c)

    if batch is not None and task.var in _vars(Bx):
        raise Refused("the batch bound differs between tasks", batch)
    D = [i >= 0, i < z.int(M)] + ([b >= 0, b < z.int(Bx)] if batch is not None else [])
    t1, t2 = z3.Ints("xpb_t1 xpb_t2")
    if not _valid(D, z3.Or(*[cover(z3.IntVal(c)) for c in range(T)])):
        raise Refused("some row (or batch) is not computed by any task", task)
    if not _valid([t1 >= 0, t1 < T, t2 >= 0, t2 < T, t1 != t2, cover(t1)], z3.Not(cover(t2))):
        raise Refused("two tasks compute the same row", task)
    if not _valid([t1 >= 0, t1 < T, cover(t1)], z3.And(*D)):
        raise Refused("a task computes a row outside [0, M)", task)
    # the rows are independent: reads from never-written buffers, stores injective over (b, i, j)
    names = {"b": batch.var if batch is not None else None, "i": iloop.var}
    lets = [s for s in inner[:-1]]
    stores = [a for a in walk(iloop.body) if isinstance(a, (N.Assign, N.AssignExpr))
              and isinstance(U.normalize_ptr_index(a.target), N.Index)]
    for n in walk(iloop.body):
        if isinstance(n, N.Index):
            root = ub._root(_access(U.normalize_ptr_index(n))[0]) if _access(U.normalize_ptr_index(n)) else None
            if root in ub.written_bufs and not any(n is a.target for a in stores):
                raise Refused(f"the rows read '{root}', which the kernel writes", n)
    if len(stores) != 1:
        raise Refused("the rows do not store exactly one element each", iloop)
    st = stores[0]
    jl = [f for f in walk(iloop.body) if isinstance(f, N.For)]
    jloop = jl[0]
    inl = U.inline_lets(lets + [N.ExprStmt(st.target)])[-1].expr
    base = U.normalize_ptr_index(inl)
    if not isinstance(base, N.Index) or not isinstance(base.base, N.Var) or base.base.name not in ub.ptrs:
        raise Refused("the row store is not into a global buffer", st)
    cidx = expand(base.index)
    j, j2, i2, b2 = z.v(jloop.var), z3.Int("xpb_j2"), z3.Int("xpb_i2"), z3.Int("xpb_b2")
    ren = lambda e, bb, ii, jj: z3.substitute(z.int(e), *[(z.v(names["i"]), ii), (z.v(jloop.var), jj)] +
                                              ([(z.v(names["b"]), bb)] if batch is not None else []))
    dom = lambda bb, ii, jj: [ii >= 0, ii < z.int(M), jj >= z.int(jloop.lo), jj < z.int(jloop.hi)] + (
        [bb >= 0, bb < z.int(Bx)] if batch is not None else [])
    outs = [(iloop.var, U.C(0), M), (jloop.var, jloop.lo, expand(jloop.hi))] + (
        [(batch.var, U.C(0), Bx)] if batch is not None else [])
    if _const(jloop.lo) != 0 or task.var in _vars(expand(jloop.hi)) or not _mixed_radix(cidx, outs) and not _valid(
            dom(b, i, j) + dom(b2, i2, j2) + [ren(cidx, b, i, j) == ren(cidx, b2, i2, j2)],
            z3.And(i == i2, j == j2, b == b2) if batch is not None else z3.And(i == i2, j == j2)):
        raise Refused("two rows may store the same element", st)
    # the merged loop
    ibody = _flat(iloop.body.stmts)
    if task.var in _vars(iloop.body):
        raise Refused("the rows depend on the task index", iloop)
    if batch is None:
        declared = {d.name for d in walk(task.body) if isinstance(d, N.Decl)} - \
            {d.name for d in walk(iloop.body) if isinstance(d, N.Decl)}
        if _vars(iloop.body) & declared:
            raise Refused("the rows depend on task-local values", iloop)
        return N.Block((iloop.with_(lo=U.C(0), hi=M, pragmas=()),))
    t = U.fresh(ub.func, "t")
    head = [U.int_decl(batch.var, N.BinOp("/", N.Var(t), M)), U.int_decl(iloop.var, N.BinOp("%", N.Var(t), M))]
    need, keep = _vars(N.Block(tuple(ibody))), []
    for s in reversed(lets):
        if s.name in need:
            keep.insert(0, s)
            need |= _vars(s.init)
    declared = {d.name for d in walk(task.body) if isinstance(d, N.Decl)} - {d.name for d in keep} - \
        {d.name for d in walk(iloop.body) if isinstance(d, N.Decl)}
    if (task.var in need) or (need & declared):
        raise Refused("the rows depend on the task index or on task-local values", iloop)
    loop = N.For(t, U.C(0), N.BinOp("*", Bx, M), U.C(1), N.Block(tuple(head + keep + ibody)),
                 var_type=U.scalar_type("int32"), loc=task.loc)
    return N.Block((loop,))


def _task_free_min(e, tv):
    e = U.strip_casts(e)
    if isinstance(e, N.Cond) and isinstance(e.cond, N.BinOp) and e.cond.op in ("<", "<="):
        a, b = e.cond.lhs, e.cond.rhs
        same = lambda x, y: repr(_strip_loc(x)) == repr(_strip_loc(y))
        if same(e.then, a) and same(e.else_, b) or same(e.then, b) and same(e.else_, a):
            for x in (a, b):
                if tv not in _vars(x):
                    return x
    return None


def _strip_loc(e):
    from xpiler.printers import printer_for
    return printer_for("c").expr(e)
