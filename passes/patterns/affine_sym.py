"""Index expressions as polynomials (sympy), for proving that a loop nest addresses memory the
way an instruction's description does.

* :func:`to_poly` — an integer IR expression over loop variables and kernel parameters as a
  sympy expression. Loop variables become symbols; a ``/`` or ``%`` (or call) free of loop
  variables becomes one *opaque* symbol named by its printed text (so the same subexpression
  spelled twice is the same symbol); anything else that mixes a loop variable into a non-polynomial
  operation raises :class:`NotAffine`.
* :func:`mixed_radix` — the flat-index decomposition ``c = f % C; t = f / C; w = t % W; n = t / W``
  (the way a SIMT kernel splits one thread index into coordinates) replaced by fresh digit
  variables.  For ``0 <= f < X * D1 * ... * Dm`` with every ``Dk > 0`` the truncating division
  and remainder of a non-negative ``f`` give exactly the mixed-radix digits, so ``f`` ranges over
  the product of the digit ranges, once each.  The extent of the top digit must be a polynomial
  quotient ``hi / (D1*...*Dm)``; the caller must guard ``Dk > 0`` and ``X > 0`` at run time.
* :func:`c_text` — a sympy polynomial back to C text (opaque symbols print as their source text).
"""
from __future__ import annotations

import sympy as sp

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

_INT = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


class NotAffine(Exception):
    def __init__(self, why, node=None):
        super().__init__(why)
        self.why, self.node = why, node


def _txt(e) -> str:
    from xpiler.printers import printer_for
    return printer_for("c").expr(e)


class Space:
    """Symbol table: loop variables, parameters and opaque subexpressions."""

    def __init__(self, loopvars=()):
        self.loopvars = set(loopvars)
        self.opaque: dict[str, str] = {}        # symbol name -> C text

    def sym(self, name: str) -> sp.Symbol:
        return sp.Symbol(name, integer=True)

    def to_poly(self, e):
        e = _strip_int_casts(e)
        if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return sp.Integer(e.value)
        if isinstance(e, N.Var):
            return self.sym(e.name)
        if isinstance(e, N.UnOp) and e.op in ("-", "+"):
            v = self.to_poly(e.operand)
            return -v if e.op == "-" else v
        if isinstance(e, N.BinOp) and e.op in ("+", "-", "*"):
            a, b = self.to_poly(e.lhs), self.to_poly(e.rhs)
            return a + b if e.op == "+" else a - b if e.op == "-" else a * b
        if any(isinstance(n, N.Var) and n.name in self.loopvars for n in walk(e)):
            raise NotAffine(f"'{_txt(e)}' is not a polynomial in the loop indices", e)
        if isinstance(e, (N.BinOp, N.Call, N.Intrinsic, N.Cond, N.SizeOf)) and not any(
                isinstance(n, (N.Index, N.AssignExpr)) or (isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--"))
                for n in walk(e)):
            text = _txt(e)
            name = "xp_q%d" % (list(self.opaque.values()).index(text) if text in self.opaque.values()
                               else len(self.opaque))
            self.opaque[name] = text
            return self.sym(name)
        raise NotAffine(f"'{_txt(e)}' is not an index expression over parameters", e)


def _strip_int_casts(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in _INT:
        e = e.expr
    return e


def equal(a, b) -> bool:
    return sp.expand(a - b) == 0


def quotient(a, b):
    """a / b when it is a polynomial (exact division of polynomials), else None."""
    if b == 0:
        return None
    if not (sp.sympify(a).free_symbols | sp.sympify(b).free_symbols):     # numbers: sympy's div needs a symbol
        q = sp.sympify(a) / sp.sympify(b)
        return q if q.is_integer else None
    q, r = sp.div(sp.expand(a), sp.expand(b), *sorted((a.free_symbols | b.free_symbols), key=str))
    return sp.expand(q) if sp.expand(r) == 0 else None


def coeffs(expr, gens):
    """{gen: coefficient} and the constant term of an expression affine in ``gens`` (NotAffine
    when a generator appears with degree > 1 or multiplied by another generator)."""
    expr = sp.expand(expr)
    out = {}
    for g in gens:
        c = expr.coeff(g, 1)
        if any(s in c.free_symbols for s in gens):
            raise NotAffine(f"the index is not affine in {g}")
        out[g] = sp.expand(c)
    const = sp.expand(expr - sum(out[g] * g for g in gens))
    if any(s in const.free_symbols for s in gens):
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


# ------------------------------------------------------------------------------ back to C
def c_text(expr, space: Space) -> str:
    expr = sp.expand(expr)

    def atom(x):
        if x.is_Integer:
            return str(int(x))
        if x.is_Symbol:
            return f"({space.opaque[x.name]})" if x.name in space.opaque else x.name
        if x.is_Pow and x.exp.is_Integer and x.exp > 0:
            return " * ".join([atom(x.base)] * int(x.exp))
        raise NotAffine(f"cannot print {x}")

    def term(t):
        c, rest = t.as_coeff_Mul()
        factors = [atom(f) for f in sp.Mul.make_args(rest)] if rest != 1 else []
        c = int(c)
        body = " * ".join(([str(abs(c))] if abs(c) != 1 or not factors else []) + factors)
        return ("-" if c < 0 else "+"), body
    if expr == 0:
        return "0"
    parts = [term(t) for t in sorted(sp.Add.make_args(expr), key=str)]
    s = ("-" if parts[0][0] == "-" else "") + parts[0][1]
    for sign, body in parts[1:]:
        s += f" {sign} {body}"
    return f"({s})"
