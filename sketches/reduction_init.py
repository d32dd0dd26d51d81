"""Reduction init sketch: the constant a reduction variable starts from (a scalar declared or
assigned a constant and then updated in place: ``+=``, ``*=``, ``v = max(v, ...)``) gets a
choice hole over the identities of the usual reductions: 0, 1, -FLT_MAX, FLT_MAX (floats) or
0, 1, INT_MIN, INT_MAX (integers), the value as written first.

Fixes: a sum started at 1, a max started at 0, a product started at 0. Cannot fix: a
reduction started from a data element, an accumulator reset in the wrong place."""
from __future__ import annotations

from xpiler.ir import nodes as N

from ._base import Hole, Sketch, pick

DATA = {
    "kind": "reduction_init",
    "replaces": "the constant initial value of a reduction variable",
    "holes": {"init": "index into [as written, 0, 1, lowest, highest]"},
    "cost": "1 when changed",
}
F_MAX = "3.402823466e+38f"


def choices(c: N.Const):
    isf = isinstance(c.value, float) or c.dtype.startswith(("float", "bfloat"))
    if isf:
        cands = [N.Const(0.0, "float32", "0.0f"), N.Const(1.0, "float32", "1.0f"),
                 N.Const(-3.402823466e38, "float32", "-" + F_MAX), N.Const(3.402823466e38, "float32", F_MAX)]
    else:
        cands = [N.Const(0, "int32", "0"), N.Const(1, "int32", "1"),
                 N.Const(-2147483647 - 1, "int32", "(-2147483647 - 1)"), N.Const(2147483647, "int32", "2147483647")]
    return [c] + [x for x in cands if x.value != c.value]


def build(region) -> Sketch | None:
    c = region.node
    if not isinstance(c, N.Const) or isinstance(c.value, (bool, str)) or c.value is None:
        return None
    ch = choices(c)
    return Sketch("reduction_init", "expr", [Hole("init", 0, len(ch) - 1, 0, metric="changed")],
                  lambda vals: pick(vals["init"], ch))
