"""Fuse two adjacent loops with the same bounds into one.

``fuse(program, entry=..., loop="c#2")`` fuses the named loop with the loop that follows it in
the same block (comments between them are kept in front of the fused loop).  The second
body's loop variable is renamed to the first's.  When the first body declares a name the
second body also uses, each body stays in its own braces so no declaration is shadowed.

Declarations without initializer between the two loops (a lane array declared just before the
loop that fills it) move in front of the fused loop too, unless the first loop names them.

Before::

    for (int c = 0; c < cols; ++c)
        t[c] = x[c] - m;
    for (int k = 0; k < cols; ++k)
        y[k] = t[k] * s;

After::

    for (int c = 0; c < cols; ++c) {
        t[c] = x[c] - m;
        y[c] = t[c] * s;
    }

Legality (:func:`check_fuse`): same ``lo``/``hi``/``step`` (structurally) and same binding;
the first loop does not assign anything the bounds read; no *fusion-preventing* (backward)
dependence: no iteration x of the second body may touch an element that a later iteration
x' > x of the first body touches, at least one access a write (Z3, ``passes/dependence.py``);
no scalar computed by one loop and used by the other.  Refusals are XP4001 naming the loop
and its line.

``mode="collapse"`` (``fuse(program, entry=..., mode="collapse", loop="v")``) joins a loop with the
constant-trip lane loop nested directly inside it into one flat loop over ``v*L + l``; its rules
and proof are in ``passes/collapse.py``. ``candidates()`` lists plain fusions only; the tuner
offers collapse on the route of ``xpiler/schedule/routes_lanes.py``.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from .base import PassError
from . import dependence as D
from .split import _func, _loop

NAME = "fuse"


def apply(program: N.Program, *, entry: str, loop=None, mode: str = "fuse", **_) -> N.Program:
    if mode == "collapse":     # a loop and the lane loop inside it -> one flat loop (passes/collapse.py)
        from . import collapse
        func = _func(program, entry)
        return collapse.collapse(program, func, _loop(func, loop))
    func, first, second = check(program, entry=entry, loop=loop, mode=mode)
    return fuse(program, func, first, second)


def check(program: N.Program, *, entry: str, loop=None, mode: str = "fuse", **_):
    if mode not in ("fuse", "collapse"):
        raise PassError(NAME, f"unknown mode '{mode}' (fuse | collapse)", None)
    func = _func(program, entry)
    if mode == "collapse":
        from . import collapse
        return collapse.check(program, func, _loop(func, loop))
    first = _loop(func, loop)
    second = next_loop(func, first)
    check_fuse(program, func, first, second)
    return func, first, second


def next_loop(func: N.Func, first: N.For) -> N.For:
    blk = D.parent_block(func, first)
    stmts = list(blk.stmts) if blk is not None else []
    k = next(i for i, s in enumerate(stmts) if s is first) if blk is not None else -1
    rest = D.strip_comments(stmts[k + 1:]) if k >= 0 else []
    # declarations without initializer between the loops (a lane array declared before the loop
    # that fills it) have no effect where they stand: they move in front of the fused loop,
    # unless the first loop names them (it would then see the moved declaration)
    used1 = {n.name for n in walk(first) if isinstance(n, N.Var)} | {first.var}
    while rest and _movable_decl(rest[0]) and rest[0].name not in used1:
        rest = rest[1:]
    if not rest or not isinstance(rest[0], N.For):
        raise PassError(NAME, f"loop '{first.var}' is not followed by another loop in the same block", first)
    return rest[0]


def _movable_decl(s) -> bool:
    return isinstance(s, N.Decl) and s.init is None and not s.ctor and s.scope == "local" and not s.storage


def check_fuse(program, func: N.Func, first: N.For, second: N.For) -> None:
    for f in ("lo", "hi", "step"):
        if getattr(first, f) != getattr(second, f):
            raise PassError(NAME, f"loops '{first.var}' and '{second.var}' (line "
                                  f"{getattr(second.loc, 'line', '?')}) have different bounds", first)
    if first.binding != second.binding:
        raise PassError(NAME, f"loops '{first.var}' and '{second.var}' are bound differently", first)
    bound_names = {n.name for x in (second.lo, second.hi, second.step) for n in walk(x) if isinstance(n, N.Var)}
    touched = D.assigned_names(first.body) & bound_names
    if touched:
        raise PassError(NAME, f"loop '{first.var}' assigns {sorted(touched)} that the bounds of the next loop "
                              f"read", first)
    if first.var != second.var and first.var in {n.name for n in walk(second.body) if isinstance(n, N.Var)}:
        raise PassError(NAME, f"the body of loop '{second.var}' uses '{first.var}' from outside: renaming its "
                              f"variable would capture it", second)
    why = D.fusion_violation(program, func, first, second)
    if why is not None:
        raise PassError(NAME, f"cannot fuse '{first.var}' with the loop at line "
                              f"{getattr(second.loc, 'line', '?')}: {why}", first)


def fuse(program: N.Program, func: N.Func, first: N.For, second: N.For) -> N.Program:
    body2 = second.body if second.var == first.var else substitute(second.body, {second.var: N.Var(first.var)})
    decl1 = {s.name for s in first.body.stmts if isinstance(s, N.Decl)}
    decl2 = {s.name for s in body2.stmts if isinstance(s, N.Decl)}
    used2 = {n.name for n in walk(body2) if isinstance(n, N.Var)}
    if decl1 & (decl2 | used2):
        stmts = (N.Block(first.body.stmts), N.Block(body2.stmts))
    else:
        stmts = tuple(first.body.stmts) + tuple(body2.stmts)
    fused = first.with_(body=N.Block(stmts, loc=first.body.loc),
                        pragmas=first.pragmas + tuple(p for p in second.pragmas if p not in first.pragmas))
    blk = D.parent_block(func, first)
    stmts = list(blk.stmts)
    k1 = next(i for i, s in enumerate(stmts) if s is first)
    k2 = next(i for i, s in enumerate(stmts) if s is second)
    between = stmts[k1 + 1:k2]          # comments and declarations: they move in front of the fused loop
    out = stmts[:k1] + between + [fused] + stmts[k2 + 1:]
    new_blk = blk.with_(stmts=tuple(out))
    new_func = D.replace_node(func, blk, new_blk)
    return program.with_(items=tuple(new_func if it is func else it for it in program.items))


def candidates(program: N.Program, target: str) -> list:
    out = []
    for f in program.kernels or program.funcs:
        if f.body is None:
            continue
        for lp in (n for n in walk(f.body) if isinstance(n, N.For)):
            try:
                nxt = next_loop(f, lp)
                check_fuse(program, f, lp, nxt)
            except PassError:
                continue
            out.append({"entry": f.name, "loop": D.loop_ref(f, lp)})
    return out
