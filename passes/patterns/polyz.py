"""Integer polynomials over IR expressions and a Z3 front end: what the normalization steps
(passes/untile.py, passes/unblock.py) use to compare subscripts and prove facts under loop ranges.

``poly`` reads ``+ - *`` (integer casts stripped) into ``{monomial: coefficient}`` over variable
names with the one polynomial model of the analyses (:mod:`xpiler.ir.poly`); ``Z`` maps integer
expressions and comparisons to Z3 with C's truncating ``/`` and ``%``; ``_valid(hyps, goal)`` is
true only when Z3 proves the goal (a timeout counts as not proven)."""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir import smt
from xpiler.ir.poly import NotPoly  # noqa: F401  (what the normalization steps catch)
from xpiler.ir import z3term as T

from . import common as U


class Refused(T.Untranslatable):
    """What the provers raise for a term they do not read (``why``, ``node``)."""


class _Names(P.Reader):
    """The provers' reading: integer casts read through, leaves are variable names (a
    :class:`_PolyExpr` gives the polynomial it holds), anything else is :class:`NotPoly`."""

    def known(self, e):
        return dict(e.p) if isinstance(e, _PolyExpr) else None

    def strip(self, e):
        return U.strip_casts(e)

    def leaf(self, e):
        if isinstance(e, N.Var):
            return {(e.name,): 1}
        raise NotPoly()


poly = _Names().read            # {monomial (sorted var names): int coefficient}; NotPoly if not one
pvars = P.atoms
psub = P.subst
pexpr = P.ranked_expr           # back to IR: loop variables (rank) first, terms by their leading loop


class Z(T.Terms):
    """The provers' reading of :class:`xpiler.ir.z3term.Terms`: policy REFUSE (a term the model
    does not describe is :class:`Refused`, never assumed), names are plain ``Int`` s, only
    ``+ - * / %`` (C's), ``int32``/``int64`` casts, comparisons and ``&& || !``, plus the
    ceiling ``cdiv(a, C)`` of a launch size. ``reads`` adds optional constructs (unblock: ``c ? a : b``)."""

    reads = frozenset()
    int_casts = bool_casts = frozenset({"int32", "int64", "uint32", "uint64"})
    int_why = "an index or bound is not integer arithmetic the prover reads"
    bool_why = "a condition is not a comparison the prover reads"

    def __init__(self):
        super().__init__(T.REFUSE)
        self.vars = {}

    def refusal(self, why, node):
        return Refused(why, node)

    def v(self, name):
        if name not in self.vars:
            self.vars[name] = z3.Int(name)
        return self.vars[name]

    def name(self, e, depth):
        if isinstance(e, N.Var):
            return self.v(e.name)
        raise self.refusal(self.int_why, e)

    def special(self, e, depth):
        if isinstance(e, _PolyExpr):
            return self.int(pexpr(e.p, {}), depth + 1)
        if isinstance(e, N.Call) and getattr(e.func, "name", e.func) == "cdiv" and len(e.args) == 2 \
                and isinstance(U.strip_casts(e.args[1]), N.Const) and isinstance(U.strip_casts(e.args[1]).value, int) \
                and U.strip_casts(e.args[1]).value > 0:
            # a launch size loop recovery keeps as written (a hip/cuda spec's grid 'cdiv(M,16)'):
            # the mathematical ceiling, as xpiler/expr.py evaluates it; z3's '/' floors for b > 0
            a, b = self.int(e.args[0], depth + 1), U.strip_casts(e.args[1]).value
            return -((-a) / b)
        return None


def _valid(hyps, goal) -> bool:
    s = smt.solver(5000)
    s.add(*hyps)
    s.add(z3.Not(goal))
    return s.check() == z3.unsat


def _const(e):
    e = U.strip_casts(e)
    return e.value if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


def _access(e):
    """(base name, [subscripts]) of a[i][j]..., else None."""
    idx = []
    while isinstance(e, N.Index):
        idx.append(e.index)
        e = e.base
    return (e.name, idx[::-1]) if isinstance(e, N.Var) else None


class _PolyExpr(N.Var):
    """A subscript held as a polynomial until it is printed back (see :func:`_pretty`)."""

    def __init__(self, p):
        object.__setattr__(self, "name", "__poly__")
        object.__setattr__(self, "loc", None)
        object.__setattr__(self, "p", p)

    def __eq__(self, other):
        return isinstance(other, _PolyExpr) and self.p == other.p

    def __hash__(self):
        return hash(tuple(sorted(self.p.items())))


def poly_eq(a, b) -> bool:
    try:
        return poly(a) == poly(b)
    except NotPoly:
        return a == b


def _mixed_radix(idx, outs) -> bool:
    """idx = v1 * s1 + v2 * s2 + ... + rest with 0 <= v_n < X_n, s_1 = 1 and s_(n+1) = s_n * X_n
    (a row-major position): distinct output points have distinct positions."""
    try:
        p = poly(idx)
        ext = {v: poly(hi) for v, lo, hi in outs if _const(lo) == 0}
    except NotPoly:
        return False
    if len(ext) != len(outs):
        return False
    coef = {}
    for m, c in p.items():
        vs = [v for v in m if v in ext]
        if len(vs) > 1:
            return False
        if vs:
            rest = list(m)
            rest.remove(vs[0])
            coef.setdefault(vs[0], {})[tuple(rest)] = c
    if set(coef) != set(ext):
        return False
    stride, todo = {(): 1}, dict(coef)
    while todo:
        v = next((v for v, c in todo.items() if c == stride), None)
        if v is None:
            return False
        del todo[v]
        stride = psub({("xpu_s", "xpu_x"): 1}, "xpu_s", stride)
        stride = psub(stride, "xpu_x", ext[v])
    return True
