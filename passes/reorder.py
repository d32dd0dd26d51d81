"""Reorder (interchange) two perfectly nested loops.

``reorder(program, entry=..., loop="i")`` swaps loop ``i`` with the single loop that forms its
body (``inner`` may name it explicitly).  Loop attributes (binding, pragmas, declared type)
travel with their loop.

Before::

    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            B[j * M + i] = A[i * N + j];

After::

    for (int j = 0; j < N; ++j)
        for (int i = 0; i < M; ++i)
            B[j * M + i] = A[i * N + j];

Legality (:func:`check_reorder`): the nest is perfect (the outer body is exactly the inner
loop, comments aside), rectangular (the inner bounds do not use the outer variable), and no
dependence has direction vector ``(<, >)`` on (outer, inner): Z3 looks for two iteration
pairs (o1, i1) < (o2, i2) with o1 < o2 and i1 > i2 touching one element, at least one a write
(``passes/dependence.py``; subscripts through pointer aliases and size products included).
A scalar updated in the body and declared outside the nest also refuses the swap (the
order of its updates would change).  Refusals are XP4001 naming the loop and its line.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .base import PassError
from . import dependence as D
from .split import _func, _loop

NAME = "reorder"


def apply(program: N.Program, *, entry: str, loop=None, inner=None, **_) -> N.Program:
    func, outer, inn = check(program, entry=entry, loop=loop, inner=inner)
    return reorder(program, func, outer, inn)


def check(program: N.Program, *, entry: str, loop=None, inner=None, **_):
    func = _func(program, entry)
    outer = _loop(func, loop)
    inn = check_perfect_nest(outer)
    if inner is not None:
        want = _loop(func, inner)
        if want is not inn:
            raise PassError(NAME, f"loop '{want.var}' is not the loop directly inside '{outer.var}'", want)
    check_reorder(program, func, outer, inn)
    return func, outer, inn


def check_perfect_nest(outer: N.For) -> N.For:
    body = D.strip_comments(outer.body.stmts)
    if len(body) != 1 or not isinstance(body[0], N.For):
        what = "no loop" if not any(isinstance(s, N.For) for s in body) else "other statements besides the loop"
        raise PassError(NAME, f"loop '{outer.var}' is not perfectly nested: its body holds {what}", outer)
    return body[0]


def check_reorder(program, func, outer: N.For, inner: N.For) -> None:
    why = D.interchange_violation(program, func, outer, inner)
    if why is not None:
        raise PassError(NAME, f"cannot swap loops '{outer.var}' and '{inner.var}': {why}", outer)


def reorder(program: N.Program, func: N.Func, outer: N.For, inner: N.For) -> N.Program:
    comments = tuple(s for s in outer.body.stmts if s is not inner)
    new_inner = outer.with_(body=N.Block(comments + tuple(inner.body.stmts), loc=inner.body.loc))
    new_outer = inner.with_(body=N.Block((new_inner,), loc=outer.body.loc))
    new_func = D.replace_node(func, outer, new_outer)
    return program.with_(items=tuple(new_func if it is func else it for it in program.items))


def candidates(program: N.Program, target: str) -> list:
    out = []
    for f in program.kernels or program.funcs:
        if f.body is None:
            continue
        for lp in (n for n in walk(f.body) if isinstance(n, N.For)):
            try:
                inn = check_perfect_nest(lp)
                check_reorder(program, f, lp, inn)
            except PassError:
                continue
            out.append({"entry": f.name, "loop": D.loop_ref(f, lp)})
    return out
