"""Evaluate an IR scalar expression over numpy arrays (float64), for semantic matching.

``evaluate(expr, env)``: Var names are looked up in ``env`` (arrays or numbers); an access
``buf[index]`` is looked up as ``env[("load", buf)]``.  Math calls use the registry's numpy
semantics, so the evaluator and the instruction descriptions speak the same language.
Raises :class:`NotEvaluable` for anything else (pointer arithmetic, calls of user functions,
assignments inside expressions): tensorize then refuses instead of guessing.
"""
from __future__ import annotations

import numpy as np

from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY


class NotEvaluable(Exception):
    pass


_BIN = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
        "<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal, "&&": np.logical_and, "||": np.logical_or}


def evaluate(e, env: dict):
    with np.errstate(all="ignore"):
        return _ev(e, env)


def _ev(e, env):
    if isinstance(e, N.Const):
        if isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
            return np.float64(e.value)
        if isinstance(e.value, bool):
            return np.float64(1.0 if e.value else 0.0)
        raise NotEvaluable(f"constant {e.value!r}")
    if isinstance(e, N.Var):
        if e.name in env:
            return env[e.name]
        raise NotEvaluable(f"free variable {e.name}")
    if isinstance(e, N.Index) and isinstance(e.base, N.Var):
        key = ("load", e.base.name)
        if key in env:
            return env[key]
        raise NotEvaluable(f"access {e.base.name}[...]")
    if isinstance(e, N.BinOp) and e.op in _BIN:
        a, b = _ev(e.lhs, env), _ev(e.rhs, env)
        r = _BIN[e.op](a, b)
        return r.astype(np.float64) if isinstance(r, np.ndarray) else np.float64(r)
    if isinstance(e, N.UnOp):
        a = _ev(e.operand, env)
        if e.op == "-":
            return -a
        if e.op == "+":
            return a
        if e.op == "!":
            return np.logical_not(a).astype(np.float64)
        raise NotEvaluable(f"unary {e.op}")
    if isinstance(e, N.Cond):
        c, t, f = _ev(e.cond, env), _ev(e.then, env), _ev(e.else_, env)
        return np.where(c != 0, t, f).astype(np.float64)
    if isinstance(e, N.Cast):
        if isinstance(e.type, N.Scalar) and e.type.dtype in ("float32", "float64", "float16"):
            return np.asarray(_ev(e.expr, env), np.float64)
        raise NotEvaluable("integer cast")
    if isinstance(e, (N.Intrinsic, N.Call)):
        name = e.name if isinstance(e, N.Intrinsic) else e.func
        d = REGISTRY.get(name) if isinstance(name, str) else None
        if d is None or d.category != "math" or d.semantics is None:
            raise NotEvaluable(f"call {name}")
        args = [_ev(a, env) for a in e.args]
        return np.asarray(d.semantics(*args), np.float64)
    raise NotEvaluable(type(e).__name__)


def probes(n: int = 96, lo: float = -8.0, hi: float = 8.0, seed: int = 7) -> np.ndarray:
    """Probe values: zeros, signs, small and large magnitudes, and random points."""
    rng = np.random.default_rng(seed)
    fixed = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-3, -1e-3, 3.0, -3.0, hi, lo], np.float64)
    return np.concatenate([fixed, rng.uniform(lo, hi, n - len(fixed))])


def same(a, b, rtol=1e-5, atol=1e-6) -> bool:
    a = np.broadcast_to(np.asarray(a, np.float64), np.shape(b) if np.ndim(b) else np.shape(a))
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
