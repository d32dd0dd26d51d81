"""Integer polynomials over IR expressions and a Z3 front end: what the normalization steps
(passes/untile.py, passes/unblock.py) use to compare subscripts and prove facts under loop ranges.

``poly`` reads ``+ - *`` (casts stripped) into ``{monomial: coefficient}``; ``Z`` maps integer
expressions and comparisons to Z3 with C's truncating ``/`` and ``%``; ``_valid(hyps, goal)`` is
true only when Z3 proves the goal (a timeout counts as not proven)."""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt
from xpiler.ir import z3term as T

from . import common as U


class Refused(T.Untranslatable):
    """What the provers raise for a term they do not read (``why``, ``node``)."""


class NotPoly(Exception):
    pass


def poly(e) -> dict:
    """{monomial (sorted var names): int coefficient} of an integer expression (+, -, *, casts)."""
    if isinstance(e, _PolyExpr):
        return dict(e.p)
    e = U.strip_casts(e)
    if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return {(): e.value} if e.value else {}
    if isinstance(e, N.Var):
        return {(e.name,): 1}
    if isinstance(e, N.UnOp) and e.op in ("-", "+"):
        p = poly(e.operand)
        return {m: -c for m, c in p.items()} if e.op == "-" else p
    if isinstance(e, N.BinOp) and e.op in ("+", "-", "*"):
        a, b = poly(e.lhs), poly(e.rhs)
        if e.op == "*":
            out = {}
            for ma, ca in a.items():
                for mb, cb in b.items():
                    m = tuple(sorted(ma + mb))
                    out[m] = out.get(m, 0) + ca * cb
        else:
            out = dict(a)
            for m, c in b.items():
                out[m] = out.get(m, 0) + (c if e.op == "+" else -c)
        return {m: c for m, c in out.items() if c}
    raise NotPoly()


def pvars(p) -> set:
    return {v for m in p for v in m}


def psub(p, v, q) -> dict:
    """p with variable v replaced by polynomial q."""
    out = {}
    for m, c in p.items():
        k = m.count(v)
        rest = tuple(x for x in m if x != v)
        term = {rest: c}
        for _ in range(k):
            nt = {}
            for mt, ct in term.items():
                for mq, cq in q.items():
                    mm = tuple(sorted(mt + mq))
                    nt[mm] = nt.get(mm, 0) + ct * cq
            term = nt
        for mt, ct in term.items():
            out[mt] = out.get(mt, 0) + ct
    return {m: c for m, c in out.items() if c}


def pexpr(p, rank: dict) -> N.Expr:
    """Back to IR: loop variables (``rank``) first, terms ordered by their leading loop."""
    def key(m):
        return min((rank.get(v, 99) for v in m), default=100), m
    terms = []
    for m in sorted(p, key=key):
        c = p[m]
        vs = sorted(m, key=lambda v: (rank.get(v, 99), v))
        e = None
        for v in vs:
            e = N.Var(v) if e is None else N.BinOp("*", e, N.Var(v))
        if e is None:
            e = U.C(abs(c))
        elif abs(c) != 1:
            e = N.BinOp("*", e, U.C(abs(c)))
        terms.append((c < 0, e))
    if not terms:
        return U.C(0)
    neg, out = terms[0]
    out = N.UnOp("-", out) if neg else out
    for neg, e in terms[1:]:
        out = N.BinOp("-" if neg else "+", out, e)
    return out


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
