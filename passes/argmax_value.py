"""A max / min whose index nobody reads: the scalar arg-search loop becomes a max / min fold.

``__bang_max(dst, src, n)`` writes the maximum to ``dst[0]`` and its index to ``dst[1]``; detensorize
lowers it to a scalar search (``if (x > bv) { bv = x; best = i; }``), which tensorize cannot
vectorize because of ``best``. A row kernel usually reads only ``dst[0]`` (softmax.mlu). When
``dst`` is a local array of the function and every other use of it is ``dst[k]`` with a constant
``k != 1``, the index store is dead; this step drops it and writes the value as a fold::

    float bv = X0;                       // as lowered: X0 = (float)src[0]
    if (bv == bv) {                      // X0 not NaN (a NaN first element stays the result)
        for (i = 1; i < n; ++i) { const float x = E(i); bv = fmaxf(bv, x); }
        if (bv == 0.0f) {                // +0 / -0: the first of them wins in the search; redo it
            bv = X0;
            for (i = 1; i < n; ++i) { const float x = E(i); if (x > bv) { bv = x; } }
        }
    }
    dst[0] = bv;

Why it is exact: with ``X0`` not NaN the search keeps the first largest non-NaN element (a NaN
``x`` never compares greater), and ``fmaxf`` also drops NaN operands, so both give the largest
non-NaN value; two non-NaN floats that compare equal are the same bits unless they are +0 and
-0, which is the case re-run by the original search. ``X0`` NaN: the search never replaces it,
and the fold is skipped. ``E`` and ``X0`` read memory the loop does not write (nothing is
written in it but ``bv``), so reading them again gives the same values.

Matched form (the lowering's output, passes/lowering/bang.py ``lower_argext``): a block
``int best = 0; float bv = X0; for (i = 1; i < n; ++i) { const float x = E; if (x > bv) { bv = x;
best = i; } } dst[0] = bv; dst[1] = (float)best;`` (``<`` and ``fminf`` for a min). Refusals
(XP4001, naming the buffer): ``dst`` is a parameter or global, its address or an element at a
non-constant index is used, or ``dst[1]`` is read; ``best`` is used elsewhere; ``E`` or ``n`` has
side effects. XP4002 when no such block exists.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError, applying_steps
from . import phases

NAME = "argmax_value"


def _const_int(e):
    return e.value if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


def _var(e, name=None):
    return isinstance(e, N.Var) and (name is None or e.name == name)


def _strip(e):
    while isinstance(e, N.Cast):
        e = e.expr
    return e


def _unbrace(s):
    while isinstance(s, N.Block) and len(s.stmts) == 1:
        s = s.stmts[0]
    return s


def _match(blk: N.Block):
    """(best, bv, loop, x, E, op, dst, X0, index of the first statement) or None."""
    st = [s for s in blk.stmts if not isinstance(s, (N.Comment, N.Pragma))]
    for k in range(len(st) - 4):
        d_best, d_bv, lp, a0, a1 = st[k:k + 5]
        if not (isinstance(d_best, N.Decl) and isinstance(d_bv, N.Decl) and isinstance(lp, N.For)
                and isinstance(a0, N.Assign) and isinstance(a1, N.Assign)):
            continue
        if _const_int(d_best.init) != 0 or d_bv.init is None or not isinstance(d_bv.type, N.Scalar) \
                or d_bv.type.dtype != "float32":
            continue
        body = [s for s in lp.body.stmts if not isinstance(s, N.Comment)]
        if lp.binding is not None or _const_int(lp.lo) != 1 or _const_int(lp.step) != 1 or len(body) != 2:
            continue
        dx, cond = body
        if not (isinstance(dx, N.Decl) and isinstance(cond, N.If) and cond.else_ is None
                and isinstance(cond.cond, N.BinOp) and cond.cond.op in (">", "<")
                and _var(cond.cond.lhs, dx.name) and _var(cond.cond.rhs, d_bv.name)):
            continue
        then = _unbrace(cond.then)
        ts = then.stmts if isinstance(then, N.Block) else (then,)
        if len(ts) != 2 or not all(isinstance(s, N.Assign) and s.op == "=" for s in ts):
            continue
        if not (_var(ts[0].target, d_bv.name) and _var(ts[0].value, dx.name)
                and _var(ts[1].target, d_best.name) and _var(ts[1].value, lp.var)):
            continue
        if not (isinstance(a0.target, N.Index) and isinstance(a1.target, N.Index) and a0.op == "=" and a1.op == "="
                and _var(a0.target.base) and _var(a1.target.base, a0.target.base.name)
                and _const_int(a0.target.index) == 0 and _const_int(a1.target.index) == 1
                and _var(a0.value, d_bv.name) and _var(_strip(a1.value), d_best.name)):
            continue
        return d_best, d_bv, lp, dx, cond.cond.op, a0, a1, blk.stmts.index(d_best)
    return None


def _check(fn, d_best, lp, dx, a1):
    dst = a1.target.base.name
    local = [d for d in walk(fn.body) if isinstance(d, N.Decl) and d.name == dst]
    if len(local) != 1 or not isinstance(local[0].type, N.Array) or local[0].scope not in ("local", "nram"):
        raise PassError(NAME, f"'{dst}' is not one local array of '{fn.name}'; its index slot may be read "
                              "elsewhere", a1)
    # every use of dst is dst[k] with a constant k != 1, apart from the index store itself
    parents = {}
    for n in walk(fn.body):
        for c in n.children():
            if isinstance(c, N.Node):
                parents.setdefault(id(c), n)
    for n in walk(fn.body):
        if _var(n, dst):
            p = parents.get(id(n))
            if p is a1.target:
                continue
            k = _const_int(p.index) if isinstance(p, N.Index) and p.base is n else None
            gp = parents.get(id(p))
            store = isinstance(gp, N.Assign) and gp.op == "=" and gp.target is p   # dst[1] = ...: no read
            if k is None or k == 1 and not store:
                raise PassError(NAME, f"'{dst}' is used other than as {dst}[k] with a constant k != 1, so "
                                      f"the index in {dst}[1] may be read", n)
    if sum(1 for n in walk(fn.body) if _var(n, d_best.name)) != 2:
        raise PassError(NAME, f"'{d_best.name}' is used outside the search", d_best)
    for e in (dx.init, lp.hi):
        if not phases._pure(e):
            raise PassError(NAME, "the searched element or the bound has side effects", lp)


def _fold(d_bv, lp, dx, op, a0):
    bv = N.Var(d_bv.name)
    fn = "fmaxf" if op == ">" else "fminf"
    fold_body = N.Block((dx, N.Assign(bv, "=", N.Call(fn, (bv, N.Var(dx.name))))), loc=lp.loc)
    fold = lp.with_(body=fold_body)
    redo_if = N.If(N.BinOp(op, N.Var(dx.name), bv), N.Block((N.Assign(bv, "=", N.Var(dx.name)),)))
    redo = lp.with_(body=N.Block((dx, redo_if), loc=lp.loc))
    zero = N.Const(0.0, "float32", "0.0f")
    again = N.If(N.BinOp("==", bv, zero), N.Block((N.Assign(bv, "=", d_bv.init), redo)))
    guard = N.If(N.BinOp("==", bv, bv), N.Block((fold, again)))
    return [d_bv, guard, a0]


def apply(program, *, entry: str | None = None, **_):
    done, refusal, items = 0, None, []
    for it in program.items:
        if not isinstance(it, N.Func) or it.body is None or entry is not None and it.name != entry:
            items.append(it)
            continue

        def one(n):
            nonlocal done, refusal
            if not isinstance(n, N.Block):
                return n
            m = _match(n)
            if m is None:
                return n
            d_best, d_bv, lp, dx, op, a0, a1, k = m
            try:
                _check(it, d_best, lp, dx, a1)
            except PassError as e:
                refusal = refusal or e
                return n
            done += 1
            stmts = list(n.stmts)
            end = stmts.index(a1)
            return n.with_(stmts=tuple(stmts[:k] + _fold(d_bv, lp, dx, op, a0) + stmts[end + 1:]))
        items.append(rewrite(it, one))
    if not done:
        if refusal is not None:
            raise refusal
        raise PassError(NAME, "no max / min search whose index is never read", None, "XP4002")
    return program.with_(items=tuple(items))


check, candidates = applying_steps(apply)
