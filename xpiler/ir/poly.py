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
