"""Function-like macros that are pure expressions.

The front end keeps a use of a function-like ``#define`` whose body parses as an expression as a
call node (``OUT_DIM(H, k, s)`` for ``#define OUT_DIM(x, k, s) (((x) - (k)) / (s) + 1)``); the
dependence analysis expands it through ``Program.macros``.  The uniformity checks of binding and
phases ("may every thread compute this declaration?") must not take such a use for a call with
effects: a macro is pure when its body assigns nothing, increments nothing and calls only the
pure math functions (``dependence.PURE_CALLS``), math intrinsics or other pure macros.  Its
arguments are checked where it is used, like any other sub-expression (a use is pure when the
body and the arguments are: the expansion only copies arguments).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import walk

from . import dependence as D


def pure_macros(program) -> frozenset:
    """Names of the function-like macros of ``program`` whose body is a pure expression."""
    if program is None:
        return frozenset()
    cands = {m.name: m.expr for m in getattr(program, "macros", ()) if m.params is not None and m.expr is not None}
    pure: set = set()
    changed = True
    while changed:                       # a macro may use another (least fixpoint: cycles stay impure)
        changed = False
        for name, expr in cands.items():
            if name not in pure and is_pure(expr, pure):
                pure.add(name)
                changed = True
    return frozenset(pure)


def is_pure(e, pure=frozenset()) -> bool:
    """No assignment, increment or call with effects in ``e``; calls of the functions in ``pure``
    (pure function-like macros) count as pure."""
    for n in walk(e):
        if isinstance(n, N.Call) and not (isinstance(n.func, str) and (n.func in D.PURE_CALLS or n.func in pure)):
            return False
        if isinstance(n, N.AssignExpr) or isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
            return False
        if isinstance(n, N.Intrinsic):
            d = REGISTRY.get(n.name)
            if d is None or d.category != "math":
                return False
    return True
