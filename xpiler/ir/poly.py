"""The one integer polynomial model of the analyses (issue 13; docs/ir.md, "Polynomials").

A polynomial is a dict ``{monomial: coefficient}``: a monomial is a tuple of atoms kept sorted
(by ``key`` when given, else by the atoms themselves), ``()`` is the constant monomial, and no
coefficient is zero. What an atom is depends on the reader that built it: variable names for the
provers of the normalization steps (``passes/patterns/polyz.py``) and for the access functions
(``ir/affine.py``), IR nodes for the dependence test (``passes/dependence.py``), whose atoms
include opaque subterms such as ``i / 4``. The operations below build their results in one fixed
insertion order (left operand first), so two readers that meet the same expression print and
translate it the same way every time.

:class:`Reader` turns an integer IR expression into a polynomial. It reads integer constants,
unary ``-`` (and ``+``), and binary ``+ - *``; a user decides, by overriding hooks, which casts
are read through, what a leaf is (a name, an opaque atom, a substituted macro), which other
operators fold, the order of atoms and the largest degree. A term the reader does not describe
raises :class:`NotPoly`.
"""
from __future__ import annotations

from . import nodes as N


class NotPoly(Exception):
    """An expression the reader does not read as a polynomial."""


def _order(m, key):
    return tuple(sorted(m, key=key))


def add(a: dict, b: dict, sign: int = 1) -> dict:
    """a + sign * b."""
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + (c if sign > 0 else -c)
    return {m: c for m, c in out.items() if c}


def neg(p: dict) -> dict:
    return {m: -c for m, c in p.items()}


def mul(a: dict, b: dict, key=None, max_degree=None) -> dict:
    """a * b; :class:`NotPoly` when a product of two monomials has more than ``max_degree`` atoms."""
    out: dict = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = _order(ma + mb, key)
            if max_degree is not None and len(m) > max_degree:
                raise NotPoly()
            out[m] = out.get(m, 0) + ca * cb
    return {m: c for m, c in out.items() if c}


def subst(p: dict, v, q: dict, key=None) -> dict:
    """p with atom ``v`` replaced by polynomial ``q`` (coefficients may be any numbers)."""
    out: dict = {}
    for m, c in p.items():
        k = m.count(v)
        term = {tuple(x for x in m if x != v): c}
        for _ in range(k):
            nt: dict = {}
            for mt, ct in term.items():
                for mq, cq in q.items():
                    mm = _order(mt + mq, key)
                    nt[mm] = nt.get(mm, 0) + ct * cq
            term = nt
        for mt, ct in term.items():
            out[mt] = out.get(mt, 0) + ct
    return {m: c for m, c in out.items() if c}


def const(c) -> dict:
    """The constant polynomial ``c``."""
    return {(): c} if c else {}


def value(p: dict):
    """The value of a constant polynomial, else None."""
    if not p:
        return 0
    if set(p) == {()}:
        return p[()]
    return None


def frozen(p: dict) -> tuple:
    """``p`` as a hashable key, independent of dict order (atoms must be orderable, e.g. names)."""
    return tuple(sorted(p.items()))


def degree(p: dict, v) -> int:
    """The largest power of atom ``v`` in ``p`` (-1 for the zero polynomial)."""
    return max((m.count(v) for m in p), default=-1)


def coeff(p: dict, v, k: int = 1, key=None) -> dict:
    """The coefficient of ``v ** k`` in ``p``: its monomials with ``v`` exactly ``k`` times, ``v`` removed."""
    out: dict = {}
    for m, c in p.items():
        if m.count(v) == k:
            r = _order([x for x in m if x != v], key)
            out[r] = out.get(r, 0) + c
    return {m: c for m, c in out.items() if c}


def divide_monomial(t: tuple, c: tuple):
    """``t / c`` for one-term polynomials given as (monomial, coefficient) pairs: the quotient
    pair when every atom of ``c`` is in ``t`` (with multiplicity) and the integer coefficient of
    ``c`` divides that of ``t``, else None."""
    (mt, ct), (mc, cc) = t, c
    rest = list(mt)
    for a in mc:
        if a not in rest:
            return None
        rest.remove(a)
    if ct % cc:
        return None
    return tuple(rest), ct // cc


def divide(f: dict, g: dict, gens: list, key=None):
    """(q, r) with ``f == q * g + r`` over the rationals, dividing recursively in ``gens`` (the
    first leading): while the remainder's leading coefficient in ``gens[0]`` is divisible by
    ``g``'s (in the other generators, exactly), one term of the quotient; stops at the first that
    is not: the dense recursive division over QQ (what unband_conv's witness was written
    against: sympy's ``div(f, g, *gens)`` before sympy left the project); every atom of ``f``
    and ``g`` must be in ``gens``. ZeroDivisionError for ``g == {}``."""
    from fractions import Fraction
    if not g:
        raise ZeroDivisionError("polynomial division by zero")
    if not gens:
        return ({(): Fraction(f[()]) / g[()]} if f else {}), {}
    x, others = gens[0], gens[1:]
    dg, dr = degree(g, x), degree(f, x)
    q, r = {}, f
    if dr < dg:
        return q, r
    lc_g = coeff(g, x, dg, key)
    while True:
        c, rem = divide(coeff(r, x, dr, key), lc_g, others, key)
        if rem:
            break
        term = mul(c, {(x,) * (dr - dg): 1}, key)
        q = add(q, term)
        r = add(r, mul(term, g, key), -1)
        prev, dr = dr, degree(r, x)
        if dr < dg:
            break
        if not dr < prev:
            raise NotPoly("the division does not terminate")
    return q, r


def atoms(p: dict) -> set:
    """Every atom of ``p``."""
    return {v for m in p for v in m}


def _int_const(e):
    return isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool)


class Reader:
    """Reads ``+ - *`` over integer constants and leaves; the hooks say the rest.

    ``key`` orders the atoms of a monomial; ``max_depth`` (when set) makes a subexpression
    deeper than it a leaf; ``max_degree`` refuses products with more atoms; ``unary_plus``
    reads ``+x`` as ``x`` (else ``+x`` is a leaf)."""

    key = None
    max_depth = None
    max_degree = None
    unary_plus = True

    def known(self, e):
        """A polynomial the reader already holds for ``e`` (before ``strip``), or None."""
        return None

    def strip(self, e):
        """``e`` without the casts the reader reads through."""
        return e

    def leaf(self, e):
        """The polynomial of an expression that is not ``+ - *`` of constants (default: refused)."""
        raise NotPoly()

    def other(self, e, depth):
        """The polynomial of another binary operator (a fold), or None to make it a leaf."""
        return None

    def read(self, e, depth: int = 0) -> dict:
        if self.max_depth is not None and depth > self.max_depth:
            return self.leaf(e)
        p = self.known(e)
        if p is not None:
            return p
        e = self.strip(e)
        if _int_const(e):
            return {(): e.value} if e.value else {}
        if isinstance(e, N.UnOp) and e.op == "-":
            return neg(self.read(e.operand, depth + 1))
        if isinstance(e, N.UnOp) and e.op == "+" and self.unary_plus:
            return self.read(e.operand, depth + 1)
        if isinstance(e, N.BinOp) and e.op in ("+", "-"):
            return add(self.read(e.lhs, depth + 1), self.read(e.rhs, depth + 1), 1 if e.op == "+" else -1)
        if isinstance(e, N.BinOp) and e.op == "*":
            return mul(self.read(e.lhs, depth + 1), self.read(e.rhs, depth + 1), self.key, self.max_degree)
        if isinstance(e, N.BinOp):
            p = self.other(e, depth)
            if p is not None:
                return p
        return self.leaf(e)

    def __call__(self, e) -> dict:
        return self.read(e)


# ------------------------------------------------------------------ back to IR: two printers
def _lit(v) -> N.Const:
    return N.Const(v, "int32", str(v))


def ranked_expr(p: dict, rank: dict) -> N.Expr:
    """A polynomial over names back to IR as a subscript is printed: terms ordered by their
    leading loop (``rank``: loop variable -> position; other names after them), names in a term
    by rank then name, a negative coefficient as ``- t``."""
    def order(m):
        return min((rank.get(v, 99) for v in m), default=100), m
    terms = []
    for m in sorted(p, key=order):
        c = p[m]
        vs = sorted(m, key=lambda v: (rank.get(v, 99), v))
        e = None
        for v in vs:
            e = N.Var(v) if e is None else N.BinOp("*", e, N.Var(v))
        if e is None:
            e = _lit(abs(c))
        elif abs(c) != 1:
            e = N.BinOp("*", e, _lit(abs(c)))
        terms.append((c < 0, e))
    if not terms:
        return _lit(0)
    neg_, out = terms[0]
    out = N.UnOp("-", out) if neg_ else out
    for neg_, e in terms[1:]:
        out = N.BinOp("-" if neg_ else "+", out, e)
    return out


def atom_expr(p: dict) -> N.Expr:
    """A polynomial over IR atoms back to IR as ``c * a * b + ...`` (monomials in ``repr`` order;
    what the dependence test translates to Z3, never printed)."""
    e = None
    for m, c in sorted(p.items(), key=lambda kv: repr(kv[0])):
        t = N.Const(c)
        for a in m:
            t = a if (t == N.Const(1)) else N.BinOp("*", t, a)
        e = t if e is None else N.BinOp("+", e, t)
    return e if e is not None else N.Const(0)
