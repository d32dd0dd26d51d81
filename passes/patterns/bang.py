"""BANG instruction descriptions for tensorize.

Elementwise / activation ops: the description IS the registry's numpy semantics
(``REGISTRY[name].semantics(dst, src[, src2], n)``).  A candidate loop body
``dst[i] = E(a[i][, b[i]])`` matches an op when E, evaluated on probe vectors
(:func:`passes.patterns.scalar_eval.probes`), equals the op's semantics on the same vectors;
so ``v > 0 ? v : 0``, ``fmaxf(v, 0.0f)`` and ``max(v, 0)`` all select ``__bang_active_relu``
without a table of spellings.  The loop-nest shape (one unit-stride store over NRAM buffers,
loads of the same index) is matched structurally by the pass.

Matrix ops are described as loop nests over row-major buffers (the pass matches the nest
structure and the index functions; the scalar statement must be a multiply-accumulate):

* ``__bang_matmul(dst, lhs, rhs, M, K, N)``:  for m, n: dst[m*N + n] = sum_k lhs[m*K + k] * rhs[k*N + n]
  (lhs NRAM, rhs WRAM, dst NRAM)
* ``__bang_mlp(dst, src, w, K, N)``:          for n:    dst[n] = sum_k src[k] * w[n*K + k]
  (src NRAM, w WRAM, dst NRAM)
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from xpiler.ir.intrinsics import REGISTRY

from .scalar_eval import NotEvaluable, evaluate, probes, same

#: unary ops in preference order (the first that matches wins: __bang_active_recip before __bang_recip)
UNARY = ("__bang_active_relu", "__bang_active_sigmoid", "__bang_active_gelu", "__bang_active_gelup",
         "__bang_active_exp", "__bang_active_sign", "__bang_active_tanh", "__bang_active_recip", "__bang_sqrt",
         "__bang_rsqrt", "__bang_square", "__bang_abs", "__bang_sin")
#: binary ops (dst, a, b, n)
BINARY = ("__bang_add", "__bang_sub", "__bang_mul", "__bang_maxequal", "__bang_minequal", "__bang_div")
#: dtypes the vector unit handles
VECTOR_DTYPES = ("float32", "float16")


def _run(name: str, *inputs: np.ndarray) -> np.ndarray:
    n = len(inputs[0])
    dst = np.zeros(n, np.float64)
    with np.errstate(all="ignore"):
        REGISTRY[name].semantics(dst, *inputs, n)
    return dst


def match_elementwise(expr, loads: list[str]) -> Optional[tuple[str, tuple]]:
    """(op name, load order) when ``expr`` (over ``loads``: buffer names read at the loop index)
    computes one BANG elementwise op; None otherwise."""
    x = probes()
    if len(loads) == 1:
        try:
            got = evaluate(expr, {("load", loads[0]): x})
        except NotEvaluable:
            return None
        for name in UNARY:
            if same(got, _run(name, x)):
                return name, (loads[0],)
        return None
    if len(loads) == 2:
        y = probes(seed=11)[::-1].copy()
        y[y == 0] = 0.25          # keep divisions finite on both sides
        try:
            got = evaluate(expr, {("load", loads[0]): x, ("load", loads[1]): y})
        except NotEvaluable:
            return None
        for name in BINARY:
            if same(got, _run(name, x, y)):
                return name, (loads[0], loads[1])
            if same(got, _run(name, y, x)):
                return name, (loads[1], loads[0])
    return None
