"""Horner forms of a polynomial of the model (:mod:`xpiler.ir.poly`) and their printing as IR.

unband_conv and unstage_planes print a lifted index as nested products over the sizes,
``((n * Cin + ci) * H + ho * stride + kh) * W + wo * stride + kw``: of the Horner forms over
every order of the sizes, the one with the fewest C operators, printed in the order the suite's
C sources use. Atoms are names (strings); the coefficients are integers.

A form is one of
* an ``int`` (a constant) or a ``str`` (an atom);
* ``("+", terms)``: a sum of two or more forms, none of them a sum;
* ``("*", c, factors)``: the integer ``c`` times the atoms and sums of ``factors`` (repeats
  allowed; at most one sum in a Horner form). ``("*", 1, [a])`` is never built: it is ``a``.
"""
from __future__ import annotations

import itertools

from . import nodes as N
from . import poly


# ------------------------------------------------------------------ building forms
def _term(c: int, atoms) -> object:
    atoms = sorted(atoms)
    if not atoms:
        return c
    if c == 1 and len(atoms) == 1:
        return atoms[0]
    return ("*", c, atoms)


def _terms(f) -> list:
    return list(f[1]) if isinstance(f, tuple) and f[0] == "+" else [f]


def _plus(a, b):
    """a + b, sums flattened (their terms never combine here: ``b`` is free of the generator
    ``a`` was multiplied by)."""
    if a == 0:
        return b
    if b == 0:
        return a
    ts = _terms(a) + _terms(b)
    return ts[0] if len(ts) == 1 else ("+", ts)


def _times(f, g: str):
    """f * g for an atom ``g``."""
    if isinstance(f, int):
        return _term(f, [g]) if f else 0
    if isinstance(f, str):
        return ("*", 1, [f, g])
    if f[0] == "*":
        return ("*", f[1], list(f[2]) + [g])
    return ("*", 1, [f, g])


def expanded(p: dict):
    """``p`` as a sum of monomials."""
    out = 0
    for m, c in p.items():
        out = _plus(out, _term(c, m))
    return out


def horner(p: dict, gens) -> object:
    """``p`` nested in ``gens``, the first outermost: ``(c_n * x + c_{n-1}) * x + ... + c_0`` over
    ``x = gens[0]``, each ``c_k`` nested in the other generators; the last one's coefficients
    expanded."""
    if not gens:
        return expanded(p)
    x, rest = gens[0], gens[1:]
    form = 0
    for k in range(max(poly.degree(p, x), 0), -1, -1):
        form = _plus(_times(form, x) if form != 0 else 0, horner(poly.coeff(p, x, k), rest))
    return form


def to_poly(f) -> dict:
    """The polynomial a form denotes (the printer's self-check)."""
    if isinstance(f, int):
        return poly.const(f)
    if isinstance(f, str):
        return {(f,): 1}
    if f[0] == "+":
        out: dict = {}
        for t in f[1]:
            out = poly.add(out, to_poly(t))
        return out
    out = poly.const(f[1])
    for x in f[2]:
        out = poly.mul(out, to_poly(x), key=str)
    return out


# ------------------------------------------------------------------ the operator count
def _negative(f) -> bool:
    return (isinstance(f, int) and f < 0) or (isinstance(f, tuple) and f[0] == "*" and f[1] < 0)


def _negated(f):
    if isinstance(f, int):
        return -f
    if isinstance(f, tuple) and f[0] == "*":
        return _term(-f[1], f[2]) if all(isinstance(x, str) for x in f[2]) and len(f[2]) == 1 \
            else ("*", -f[1], f[2])
    raise ValueError(f)


def _bases(fs) -> list:
    """Distinct factors with their multiplicity, in first-seen order."""
    out: list = []
    for x in fs:
        for i, (b, k) in enumerate(out):
            if b == x:
                out[i] = (b, k + 1)
                break
        else:
            out.append((x, 1))
    return out


def ops(f, in_sum: bool = False) -> int:
    """C operators of the printed form: ``+``/``-`` between terms, ``*`` between factors (``x * x``
    for a square), a leading unary minus (a negative constant, or a sum of negative terms)."""
    if isinstance(f, int):
        return 1 if f < 0 and not in_sum else 0
    if isinstance(f, str):
        return 0
    if f[0] == "+":
        ts = f[1]
        n = len(ts) - 1 + sum(ops(_negated(t) if _negative(t) else t, True) for t in ts)
        return n + (1 if all(_negative(t) for t in ts) else 0)
    c, fs = f[1], f[2]
    bs = _bases(fs)
    n = (1 if abs(c) != 1 else 0) + len(bs) - 1 + sum(1 for _, k in bs if k > 1)
    n += sum(ops(b) for b, _ in bs if not isinstance(b, str))
    return n + (1 if c < 0 and not in_sum else 0)


def fewest_ops(p: dict, loopvars: set, max_sizes: int = 6):
    """The form of ``p`` to print: of the Horner forms over each order of its sizes (the atoms
    not in ``loopvars``, orders tried in the permutation order of the sorted names; more than
    ``max_sizes`` are not searched), the first with fewer operators than every earlier one and
    than the expanded sum."""
    sizes = sorted(poly.atoms(p) - set(loopvars))
    best = expanded(p)
    if len(sizes) <= max_sizes:
        nbest = ops(best)
        for order in itertools.permutations(sizes):
            h = horner(p, order)
            n = ops(h)
            if n < nbest:
                best, nbest = h, n
    assert poly.add(to_poly(best), p, -1) == {}, "a Horner form that is not the polynomial"
    return best


# ------------------------------------------------------------------ the printing order
# Ranks of kinds, as a total order: constants, atoms (and their powers), products, sums.
_NUM, _ATOM, _PROD, _SUM = range(4)


def depth(f) -> int:
    """Nesting of the form: 0 for a constant, an atom or a power of one atom; a product one more
    than its deepest factor (its coefficient counts as a factor of depth 0); a sum one more than
    its deepest term."""
    if isinstance(f, (int, str)):
        return 0
    if f[0] == "+":
        return 1 + max(depth(t) for t in f[1])
    bs = _bases(f[2])
    if f[1] == 1 and len(bs) == 1:
        return 0 if isinstance(bs[0][0], str) else depth(bs[0][0])
    return 1 + max([0] + [depth(b) for b, _ in bs])


def key(f):
    """The order of terms of one sign and depth in a sum (and of factors of one kind in a
    product): constants by value; ``c * x ** k`` by atom, power, coefficient; other products by
    their number of distinct factors, then those factors (atoms by name and power, then sums),
    then the coefficient; sums by their number of terms, then their terms."""
    if isinstance(f, int):
        return (_NUM, f)
    if isinstance(f, str):
        return (_ATOM, f, 1, 1)
    if f[0] == "+":
        return (_SUM, len(f[1]), tuple(sorted(key(t) for t in f[1])), 1, 1)
    c, bs = f[1], _bases(f[2])
    if len(bs) == 1 and isinstance(bs[0][0], str):
        return (_ATOM, bs[0][0], bs[0][1], c)
    fk = sorted((_ATOM, b, k, 1) if isinstance(b, str) else key(b) for b, k in bs)
    return (_PROD, len(bs), tuple(fk), 1, c)


def to_ir(f, leaf, loopvars=frozenset(), coeff_first: bool = False, deep_first: bool = True) -> N.Expr:
    """A form as IR: a sum's positive terms first, then deeper terms first (shallower first
    without ``deep_first``), then :func:`key` (a negative term placed as its negation); a
    negative term after the first as ``- t``. A product's sum factor first, then loop counters
    (``loopvars``) by name, then other atoms by name, then the coefficient (first instead with
    ``coeff_first``). ``leaf(atom)`` is the IR of an atom."""
    def sub(x):
        return to_ir(x, leaf, loopvars, coeff_first, deep_first)
    if isinstance(f, int):
        return poly._lit(f) if f >= 0 else N.UnOp("-", poly._lit(-f))
    if isinstance(f, str):
        return leaf(f)
    if f[0] == "+":
        def order(t):
            a = _negated(t) if _negative(t) else t
            return _negative(t), -depth(a) if deep_first else depth(a), key(a)
        ts = sorted(f[1], key=order)
        e = sub(ts[0])
        for t in ts[1:]:
            e = N.BinOp("-", e, sub(_negated(t))) if _negative(t) else N.BinOp("+", e, sub(t))
        return e
    c, fs = f[1], list(f[2])
    fs.sort(key=lambda x: (isinstance(x, str), x not in loopvars if isinstance(x, str) else False, key(x)))
    parts = [sub(x) for x in fs]
    if c != 1:
        parts.insert(0 if coeff_first else len(parts), sub(c))
    e = parts[0]
    for x in parts[1:]:
        e = N.BinOp("*", e, x)
    return e
