"""Flat output loops split back into (outer, channel) loops, so the channel loop can be vectorized.

A kernel migrated from one-thread-per-output cuda / hip code runs over a flat index and
splits it with ``%`` and ``/``::

    for (int idx = 0; idx < total; ++idx) { int c = idx % C; int t = idx / C; ... }

(``total`` is ``... * C``).  Lanes ``idx .. idx+15`` then belong to different channels and
possibly different windows, so no subscript advances by one per iteration.  ``split`` rewrites
the loop as::

    if (C > 0) {
        for (int t' = 0; t' < total / C; t'++)          // keeps the loop's omp binding
            for (int c' = 0; c' < C; c'++) { <body: idx % C -> c', idx / C -> t', idx -> t'*C + c'> }
    } else { <the original loop> }

Exactness: when ``C > 0`` and ``total == P * C`` (read from the program: ``total`` is ``P * C``
or ``C * P`` itself, or a local declared once with that value and never reassigned; ``C`` is
never assigned in the function), ``total / C == P`` and the pairs (t', c') visit
``idx = t'*C + c'`` for ``idx`` in ``[0, total)`` in the same order, with ``idx % C == c'`` and
``idx / C == t'`` (C's division rounds toward zero, and every idx is >= 0).  For ``C <= 0``
the original loop runs.  Anything else (another lower bound, a step other than 1, ``idx``
assigned in the body, two different divisors) is not split.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from . import common as U


def _product_has(e, cname):
    e = U.strip_casts(e)
    return isinstance(e, N.BinOp) and e.op == "*" and (U.is_var(e.lhs, cname) or U.is_var(e.rhs, cname))


def _divisor(body, j):
    """The one int variable ``C`` the body takes ``j % C`` / ``j / C`` of; None otherwise."""
    found = set()
    for n in walk(body):
        if isinstance(n, N.BinOp) and n.op in ("%", "/") and U.is_var(n.lhs, j):
            r = U.strip_casts(n.rhs)
            if not isinstance(r, N.Var):
                return None
            found.add(r.name)
    return found.pop() if len(found) == 1 else None


def split(func, loop):
    """(replacement statements, inner loop) or None when the loop is not a flat index split by
    one divisor as described above."""
    j = loop.var
    if not (isinstance(loop.lo, N.Const) and loop.lo.value == 0 and isinstance(loop.step, N.Const)
            and loop.step.value == 1) or loop.binding not in (None, "omp"):
        return None
    if j in U.assigned_names(loop.body):
        return None
    cname = _divisor(loop.body, j)
    if cname is None:
        return None
    params = {p.name: p for p in func.params}
    if cname not in params or not isinstance(params[cname].type, N.Scalar) or \
            params[cname].type.dtype not in ("int32", "int64") or cname in U.assigned_names(func.body):
        return None
    hi = U.strip_casts(loop.hi)
    if not _product_has(hi, cname):
        lets = U.decl_lets(func)
        if not (isinstance(hi, N.Var) and hi.name in lets and _product_has(lets[hi.name], cname)):
            return None
    tv, cv = U.fresh(func, f"{j}_outer"), U.fresh(func, f"{j}_ch")
    C = N.Var(cname)

    def fn(n):
        if isinstance(n, N.BinOp) and n.op in ("%", "/") and U.is_var(n.lhs, j) and U.is_var(n.rhs, cname):
            return N.Var(cv if n.op == "%" else tv)
        return n
    body = rewrite(loop.body, fn)
    body = rewrite(body, lambda n: N.BinOp("+", N.BinOp("*", N.Var(tv), C), N.Var(cv))
                   if isinstance(n, N.Var) and n.name == j else n)
    it = loop.var_type or N.Scalar("int32", "int")
    inner = N.For(cv, U.C(0), C, U.C(1), body, var_type=it, cmp="<", loc=loop.loc)
    outer = N.For(tv, U.C(0), N.BinOp("/", loop.hi, C), U.C(1), N.Block((inner,)), binding=loop.binding,
                  var_type=it, pragmas=loop.pragmas, cmp="<", loc=loop.loc)
    tail = [] if loop.var_type is not None else [N.Assign(N.Var(j), "=", N.Cond(N.BinOp(">", loop.hi, U.C(0)),
                                                                                loop.hi, U.C(0)))]
    guard = N.If(N.BinOp(">", C, U.C(0)), N.Block(tuple([outer] + tail)), N.Block((loop,)))
    return [guard], inner
