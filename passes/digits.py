"""Flattened-index injectivity: is a subscript a one-to-one function of a loop variable that was
split into digits with ``/`` and ``%``?

Public kernels often run one flat loop ``for (idx = 0; idx < N*C*H*W; idx++)``, take it apart
(``n = idx / (C*H*W)``, ``c = (idx / (H*W)) % C``, ``h = (idx / W) % H``, ``w = idx % W``) and
store to a permuted position (``out[((n*H + h)*W + w)*C + c]``).  The Z3 query of
:mod:`passes.dependence` sees products of unknown sizes under ``/`` and ``%`` (non-linear) and
answers "unknown".  This module proves such stores injective symbolically:

1. every maximal ``/`` / ``%`` chain over the loop variable ``v`` is read as a *digit*
   ``(v / S) % D`` (``S``, ``D`` monomials over sizes; ``D`` absent for the top digit):
   ``v / A / B = v / (A*B)``, ``(v % (A*B)) / A = (v / A) % B``, ``(v % (A*B)) % A = v % A``;
2. the digits must form a complete chain: the lowest has ``S = 1``, each next ``S`` is the
   previous ``S*D``, the top one has no ``D`` or ``S*D = hi`` (the loop's trip count).  Then
   ``v = sum(digit * S)``, so the tuple of digits determines ``v``;
3. the subscript must be linear in the digits, ``sum(R_d * digit_d) + rest`` with ``rest`` free of
   anything that changes between iterations, and the ``R_d`` a mixed radix: in some order
   ``R = g, g*X_1, g*X_1*X_2, ...`` where ``X_d`` is the digit's range (``D``, or ``hi / S`` for
   the top digit).  Distinct digit tuples then give distinct subscripts.

Assumption (stated in docs/passes/binding.md): the sizes that appear as divisors and radices are
at least 1 whenever the loop runs, as tensor sizes are; ``v`` runs from 0 with step 1.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .patterns.polyz import NotPoly, poly

_PH = "xpd_digit_"


def _mono(p):
    """(coefficient, atoms) of a one-monomial polynomial with a positive coefficient, else None."""
    if len(p) != 1:
        return None
    (m, c), = p.items()
    return (c, m) if c > 0 else None


def _mul(a, b):
    return (a[0] * b[0], tuple(sorted(a[1] + b[1])))


def _div(a, b):
    """a / b for monomials when exact, else None."""
    if a[0] % b[0]:
        return None
    rest = list(a[1])
    for x in b[1]:
        if x not in rest:
            return None
        rest.remove(x)
    return (a[0] // b[0], tuple(rest))


ONE = (1, ())


def _strip(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in _INTS:
        e = e.expr
    return e


_INTS = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}


def injective(e: N.Expr, var: str, hi: N.Expr, varying: set) -> bool:
    """True when ``e`` (lets already substituted) takes distinct values for distinct ``var`` in
    ``[0, hi)``; ``varying``: other names whose value changes between iterations."""
    digits = []                              # [(S mono, D mono or None)]

    def size(x):
        try:
            p = poly(_strip(x))
        except NotPoly:
            return None
        if any(set(m) & (varying | {var}) for m in p):
            return None
        return _mono(p)

    def digit(x):
        """(S, D) when x is a digit chain over var, else None."""
        x = _strip(x)
        if isinstance(x, N.Var) and x.name == var:
            return (ONE, None)
        if isinstance(x, N.BinOp) and x.op in ("/", "%"):
            inner = digit(x.lhs)
            k = size(x.rhs)
            if inner is None or k is None:
                return None
            S, D = inner
            if x.op == "/":
                if D is None:
                    return (_mul(S, k), None)
                rest = _div(D, k)
                return None if rest is None else (_mul(S, k), None if rest == ONE else rest)
            if D is None:
                return (S, k)
            return (S, k) if _div(D, k) is not None else None
        return None

    def replace(x):
        d = digit(x)
        if d is not None:
            if d not in digits:
                digits.append(d)
            return N.Var(f"{_PH}{digits.index(d)}")
        if isinstance(x, N.BinOp):
            return N.BinOp(x.op, replace(x.lhs), replace(x.rhs))
        if isinstance(x, N.UnOp) and x.op in ("-", "+"):
            return N.UnOp(x.op, replace(x.operand))
        if isinstance(x, N.Cast):
            return x.with_(expr=replace(x.expr))
        return x

    try:
        p = poly(replace(_strip(e)))
    except NotPoly:
        return False
    hi_m = size(hi)
    if not digits:
        return False
    # 2. the digits form the complete chain of var
    by_s = {}
    for k, (S, D) in enumerate(digits):
        if S in by_s:
            return False
        by_s[S] = k
    rng, S = {}, ONE
    for _ in range(len(digits)):
        k = by_s.get(S)
        if k is None:
            return False
        D = digits[k][1]
        if D is None or (hi_m is not None and _mul(S, D) == hi_m):
            rng[k] = D if D is not None else (_div(hi_m, S) if hi_m is not None else None)
            if len(rng) != len(digits):
                return False            # digits above the top one
            break
        rng[k] = D
        S = _mul(S, D)
    else:
        return False
    # 3. linear in the digits, coefficients a mixed radix, the rest iteration-invariant
    coef = {}
    for m, c in p.items():
        ds = [x for x in m if x.startswith(_PH)]
        if len(ds) > 1:
            return False
        if set(m) & (varying | {var}):
            return False
        if ds:
            k = int(ds[0][len(_PH):])
            rest = list(m)
            rest.remove(ds[0])
            coef.setdefault(k, {})[tuple(sorted(rest))] = c
    if set(coef) != set(range(len(digits))):
        return False
    monos = {}
    for k, q in coef.items():
        mq = _mono(q) if q else None
        if mq is None:
            mq = _mono({m: -c for m, c in q.items()})     # a negated radix still separates
        if mq is None:
            return False
        monos[k] = mq
    for start in monos:
        stride, todo, ok = monos[start], dict(monos), True
        while todo:
            k = next((k for k, m in todo.items() if m == stride), None)
            if k is None:
                ok = False
                break
            del todo[k]
            if todo:
                if rng.get(k) is None:
                    ok = False
                    break
                stride = _mul(stride, rng[k])
        if ok:
            return True
    return False


def names(e) -> set:
    return {n.name for n in walk(e) if isinstance(n, N.Var)}
