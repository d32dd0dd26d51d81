"""Index expressions as polynomials of the one model (``xpiler/ir/poly.py``), for proving that a
loop nest addresses memory the way an instruction's description does (issue 13: this replaces
``affine_sym.py``, which did the same with sympy).

* :class:`Space` — a :class:`poly.Reader` over names: an integer IR expression over loop
  variables and kernel parameters as a polynomial whose atoms are names. Integer casts are read
  through; a ``/``, ``%``, call, ``?:`` or ``sizeof`` free of loop variables (and of memory
  reads and side effects) becomes one *opaque* atom ``xp_q<n>`` named by its printed C text (so
  the same subexpression spelled twice is the same atom); anything else that holds a loop
  variable raises :class:`NotAffine`. ``Space.nodes`` keeps the IR each opaque atom was read
  from (for printing it back as IR).
* :func:`equal`, :func:`quotient` (exact polynomial division with integer coefficients),
  :func:`coeffs` (the coefficients of an expression affine in some atoms) and :func:`prod`.
* :func:`mixed_radix` — the flat-index decomposition ``c = f % C; t = f / C; w = t % W; n = t / W``
  (the way a SIMT kernel splits one thread index into coordinates) replaced by fresh digit
  variables.  For ``0 <= f < X * D1 * ... * Dm`` with every ``Dk > 0`` the truncating division
  and remainder of a non-negative ``f`` give exactly the mixed-radix digits, so ``f`` ranges over
  the product of the digit ranges, once each.  The extent of the top digit must be a polynomial
  quotient ``hi / (D1*...*Dm)``; the caller must guard ``Dk > 0`` and ``X > 0`` at run time.
* :func:`ir` and :func:`c_text` — a polynomial back to IR / parenthesized C text in the model's
  order (:func:`poly.ranked_expr`: terms by their atoms' names, the constant last, a
  coefficient after the names), opaque atoms as the IR they were read from.
"""
from __future__ import annotations

from fractions import Fraction
from functools import reduce

from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir.visit import rewrite, substitute, walk

_INT = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


class NotAffine(Exception):
    def __init__(self, why, node=None):
        super().__init__(why)
        self.why, self.node = why, node


def _txt(e) -> str:
    from xpiler.printers import printer_for
    return printer_for("c").expr(e)


def _strip_int_casts(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in _INT:
        e = e.expr
    return e


def _impure(n) -> bool:
    return isinstance(n, (N.Index, N.AssignExpr)) or (isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--"))


class Space(P.Reader):
    """Reads index expressions over names; remembers the opaque atoms it made."""

    def __init__(self, loopvars=()):
        self.loopvars = set(loopvars)
        self.opaque: dict[str, str] = {}        # atom name -> C text
        self.plain: dict[str, N.Expr] = {}      # atom name -> the IR read (casts stripped)
        self.nodes: dict[str, N.Expr] = {}      # atom name -> the first IR read to it (casts kept)

    @staticmethod
    def sym(name: str) -> dict:
        return {(name,): 1}

    def strip(self, e):
        return _strip_int_casts(e)

    def read(self, e, depth: int = 0) -> dict:
        p = super().read(e, depth)
        if len(p) == 1:
            (m, c), = p.items()
            if c == 1 and len(m) == 1 and m[0] in self.opaque:
                self.nodes.setdefault(m[0], e)
        return p

    def leaf(self, e):
        if isinstance(e, N.Var):
            return self.sym(e.name)
        if any(isinstance(n, N.Var) and n.name in self.loopvars for n in walk(e)):
            raise NotAffine(f"'{_txt(e)}' is not a polynomial in the loop indices", e)
        if isinstance(e, (N.BinOp, N.Call, N.Intrinsic, N.Cond, N.SizeOf)) and not any(_impure(n) for n in walk(e)):
            text = _txt(e)
            names = [k for k, v in self.opaque.items() if v == text]
            name = names[0] if names else "xp_q%d" % len(self.opaque)
            self.opaque[name] = text
            self.plain.setdefault(name, e)
            return self.sym(name)
        raise NotAffine(f"'{_txt(e)}' is not an index expression over parameters", e)

    def to_poly(self, e) -> dict:
        return self.read(e)


def _p(x) -> dict:
    return P.const(x) if isinstance(x, int) else x


def equal(a, b) -> bool:
    return not P.add(_p(a), _p(b), -1)


def prod(ps) -> dict:
    return reduce(P.mul, [_p(x) for x in ps], P.const(1))


def quotient(a, b):
    """a / b when it is a polynomial with integer coefficients (exact division), else None."""
    a, b = _p(a), _p(b)
    if not b:
        return None
    gens = sorted(P.atoms(a) | P.atoms(b))
    try:
        q, r = P.divide(a, b, gens)
    except P.NotPoly:
        return None
    if r or any(Fraction(c).denominator != 1 for c in q.values()):
        return None
    return {m: int(c) for m, c in q.items()}


def coeffs(expr, gens):
    """{gen: coefficient} and the constant term of an expression affine in ``gens`` (NotAffine
    when a generator appears with degree > 1 or multiplied by another generator)."""
    out, gs = {}, set(gens)
    for g in gens:
        c = P.coeff(expr, g, 1)
        if P.atoms(c) & gs:
            raise NotAffine(f"the index is not affine in {g}")
        out[g] = c
    const = expr
    for g in gens:
        const = P.add(const, P.mul(out[g], Space.sym(g)), -1)
    if P.atoms(const) & gs:
        raise NotAffine("the index is not affine in the loop indices")
    return out, const


# ------------------------------------------------------------------------------ flat indices
def _depth(e, flat: str):
    """k when e is ``((flat / d1) / ...) / dk`` (k = 0: flat itself), else None; and the divisors."""
    ds = []
    e = _strip_int_casts(e)
    while isinstance(e, N.BinOp) and e.op == "/":
        ds.append(e.rhs)
        e = _strip_int_casts(e.lhs)
    if isinstance(e, N.Var) and e.name == flat:
        return list(reversed(ds))
    return None


def mixed_radix(exprs, flat: str, prefix: str):
    """Rewrite ``exprs`` (IR) so that the flat index ``flat`` appears only through digit
    variables ``{prefix}0 .. {prefix}m`` (``{prefix}m`` = the top digit). Returns
    (new exprs, [divisor IR per digit 0..m-1]); digits with no ``/`` or ``%`` at all: ([exprs], [])."""
    divs: list = []
    exprs = _split_product_divisors(exprs, flat)

    def note(ds, d):
        for k, x in enumerate(ds + [d]):
            if k < len(divs):
                if _txt(divs[k]) != _txt(x):
                    raise NotAffine(f"'{flat}' is split by inconsistent divisors '{_txt(divs[k])}' and '{_txt(x)}'")
            else:
                divs.append(x)
    for e in exprs:
        for n in walk(e):
            if isinstance(n, N.BinOp) and n.op in ("/", "%"):
                ds = _depth(n.lhs, flat)
                if ds is not None:
                    note(ds, n.rhs)
    m = len(divs)
    if not m:
        return list(exprs), []
    dig = [N.Var(f"{prefix}{k}") for k in range(m + 1)]

    def poly_from(k):     # the value of (flat / d1 / ... / dk) as digits
        acc = dig[m]
        for i in range(m - 1, k - 1, -1):
            acc = N.BinOp("+", N.BinOp("*", acc, divs[i]), dig[i])
        return acc

    def fn(n):
        if isinstance(n, N.BinOp) and n.op == "%":
            ds = _depth(n.lhs, flat)
            if ds is not None:
                return dig[len(ds)]
        ds = _depth(n, flat) if isinstance(n, (N.BinOp, N.Var, N.Cast)) else None
        if ds is not None:
            return dig[m] if len(ds) == m else poly_from(len(ds))
        return n
    out = [_topdown(e, fn) for e in exprs]
    for e in out:
        if any(isinstance(n, N.Var) and n.name == flat for n in walk(e)):
            raise NotAffine(f"'{flat}' is used in a way the digit decomposition does not cover")
    return out, divs


def _split_product_divisors(exprs, flat: str):
    """``q / (P * Q)`` with ``q`` a chain ``flat / d1 / ... / dk`` becomes ``(q / P) / Q`` when
    another division of the chain at that depth divides by ``P`` alone (or by ``Q``: the factors
    are swapped).  For ``q >= 0`` and ``P, Q > 0`` both are floor(q / (P Q)); the flat index starts
    at 0 and the emitters guard every digit extent > 0 (the divisors are those extents)."""
    def key(x):
        return _txt(_strip_int_casts(x))

    def prod(x):
        x = _strip_int_casts(x)
        return x if isinstance(x, N.BinOp) and x.op == "*" else None
    known: dict = {}
    for e in exprs:
        for n in walk(e):
            if isinstance(n, N.BinOp) and n.op in ("/", "%") and prod(n.rhs) is None:
                ds = _depth(n.lhs, flat)
                if ds is not None:
                    known.setdefault(len(ds), set()).add(key(n.rhs))

    def fn(n):
        if isinstance(n, N.BinOp) and n.op == "/" and prod(n.rhs) is not None:
            ds = _depth(n.lhs, flat)
            if ds is not None:
                pq = prod(n.rhs)
                for P, Q in ((pq.lhs, pq.rhs), (pq.rhs, pq.lhs)):
                    if key(P) in known.get(len(ds), ()):
                        return N.BinOp("/", N.BinOp("/", n.lhs, _strip_int_casts(P)), _strip_int_casts(Q))
        return n
    out = list(exprs)
    for _ in range(4):                  # products of up to five factors
        new = [rewrite(e, fn) for e in out]
        if all(a == b for a, b in zip(new, out)):
            break
        out = new
    return out


def _topdown(node, fn):
    """Like rewrite, but ``fn`` sees a node before its children; a replaced node is not entered."""
    from dataclasses import fields, replace
    if isinstance(node, tuple):
        return tuple(_topdown(x, fn) for x in node)
    if not isinstance(node, N.Node):
        return node
    r = fn(node)
    if r is not node:
        return r
    changes = {}
    for f in fields(node):
        v = getattr(node, f.name)
        if f.name != "loc" and isinstance(v, (N.Node, tuple)):
            nv = _topdown(v, fn)
            if nv is not v:
                changes[f.name] = nv
    return replace(node, **changes) if changes else node


# ------------------------------------------------------------------------------ back to IR / C
def ir(p: dict, space: Space, nodes: dict | None = None) -> N.Expr:
    """``p`` (integer coefficients) as IR in the model's order, each opaque atom replaced by the
    IR it was read from (``nodes``: default the casts-stripped reading)."""
    nodes = space.plain if nodes is None else nodes
    return substitute(P.ranked_expr(p, {}), {n: nodes[n] for n in P.atoms(p) if n in nodes})


def c_text(p: dict, space: Space) -> str:
    """``p`` as C text: ``0``, else parenthesized as a whole."""
    return f"({_txt(ir(p, space))})" if p else "0"
