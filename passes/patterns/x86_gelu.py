"""Recognize exact gelu, ``0.5 * x * (1 + erf(x * c))`` with c = 1/sqrt(2), in a vectorized
expression, so that the c vectorizer (:mod:`passes.patterns.x86_vec`) writes one call of the
gelu-specific helper ``xp_gelu512(x)`` (:mod:`passes.patterns.x86_math`) instead of
``0.5 * x * (1 + xp_erf512(x * c))``.

Accepted spellings: the product's factors in any order and grouping (``0.5f * v * (...)``,
``v * 0.5f * (...)``, ``(...) * v * 0.5``), ``1 + erf(..)`` or ``erf(..) + 1``, ``erff`` / ``erf``
(also ``std::erf``), and the argument ``x * c`` / ``c * x`` with c any constant expression equal
to 1/sqrt(2) within float32 rounding (``0.70710678f``, ``(float)M_SQRT1_2``, a double literal,
``1/sqrtf(2)``) or ``x / c`` with c = sqrt(2) (``x / sqrtf(2.0f)``, ``x / M_SQRT2``).  Casts to
float around constants are looked through.  Anything else (another constant, x differing
between the two places, a third varying factor) is not gelu and is left to the general
translation.  The vectorizer's probe check evaluates the scalar expression against gelu on
probe values as well, so a wrong match is refused, not printed.
"""
from __future__ import annotations

import math

from xpiler.ir import nodes as N

from . import scalar_eval as SE

ERF_NAMES = ("erff", "erf", "std::erf")
_CONSTS = {"M_SQRT1_2": 1.0 / math.sqrt(2.0), "M_SQRT2": math.sqrt(2.0)}
_REL = 2.0 ** -22           # float32 rounding of the constant, and a little


def _const(e, depends):
    if depends(e):
        return None
    try:
        v = SE.evaluate(e, dict(_CONSTS))
    except SE.NotEvaluable:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _near(v, want):
    return v is not None and abs(v - want) <= _REL * want


def _factors(e):
    e = _strip_float_cast(e)
    if isinstance(e, N.BinOp) and e.op == "*":
        return _factors(e.lhs) + _factors(e.rhs)
    return [e]


def _strip_float_cast(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in ("float32", "float64"):
        e = e.expr
    return e


def _erf_arg(e, depends):
    """x of ``1 + erf(x)`` / ``erf(x) + 1``, else None."""
    e = _strip_float_cast(e)
    if not (isinstance(e, N.BinOp) and e.op == "+"):
        return None
    for one, call in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        call = _strip_float_cast(call)
        name = call.name if isinstance(call, N.Intrinsic) else getattr(call, "func", None)
        if _near(_const(one, depends), 1.0) and isinstance(call, (N.Call, N.Intrinsic)) and \
                name in ERF_NAMES and len(call.args) == 1:
            return call.args[0]
    return None


def _scaled(arg, depends):
    """x when ``arg`` is x / sqrt(2) in one of the accepted spellings, else None."""
    arg = _strip_float_cast(arg)
    if not isinstance(arg, N.BinOp):
        return None
    if arg.op == "/" and _near(_const(arg.rhs, depends), math.sqrt(2.0)):
        return arg.lhs
    if arg.op == "*":
        for x, k in ((arg.lhs, arg.rhs), (arg.rhs, arg.lhs)):
            if _near(_const(k, depends), 1.0 / math.sqrt(2.0)) and depends(x):
                return x
    return None


def match(e, depends):
    """x when ``e`` is exact gelu of x, else None (``depends(e)``: e varies over the lanes)."""
    if not (isinstance(e, N.BinOp) and e.op == "*"):
        return None
    fs = _factors(e)
    erf_terms = [(k, _erf_arg(f, depends)) for k, f in enumerate(fs)]
    erf_terms = [(k, a) for k, a in erf_terms if a is not None]
    if len(erf_terms) != 1:
        return None
    k, arg = erf_terms[0]
    x = _scaled(arg, depends)
    if x is None:
        return None
    rest = fs[:k] + fs[k + 1:]
    varying = [f for f in rest if depends(f)]
    consts = [_const(f, depends) for f in rest if not depends(f)]
    if len(varying) != 1 or any(c is None for c in consts) or not _near(math.prod(consts), 0.5):
        return None
    if _strip_float_cast(varying[0]) != _strip_float_cast(x):
        return None
    return varying[0]
