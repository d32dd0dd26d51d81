"""Stride sketch: the step of a canonical loop gets a choice hole: as written, +1, -1, +2, -2,
twice, half.

Fixes: a loop that steps by the wrong amount by one, two, or a factor of two (a tile or vector
width doubled or halved). Cannot fix: a step that is another size entirely (``+= blockDim.x``
for ``+= gridDim.x * blockDim.x``), strides inside a strided copy (see copy)."""
from __future__ import annotations

from xpiler.ir import nodes as N

from ._base import Hole, Sketch, add_const, const, is_int_const, pick

DATA = {
    "kind": "stride",
    "replaces": "the step of a canonical for loop",
    "holes": {"step": "index into [as written, +1, -1, +2, -2, *2, /2]"},
    "cost": "1 when changed",
}


def choices(s):
    out = [s, add_const(s, 1), add_const(s, -1), add_const(s, 2), add_const(s, -2)]
    if is_int_const(s):
        out += [const(s.value * 2)] + ([const(s.value // 2)] if s.value % 2 == 0 and s.value > 1 else [])
    else:
        out += [N.BinOp("*", s, const(2)), N.BinOp("/", s, const(2))]
    return [c for c in out if not (is_int_const(c) and c.value <= 0)]


def build(region) -> Sketch | None:
    f = region.node
    if not isinstance(f, N.For):
        return None
    ch = choices(f.step)

    def inst(vals):
        return f.with_(step=pick(vals["step"], ch))

    return Sketch("stride", "expr", [Hole("step", 0, len(ch) - 1, 0, metric="changed")], inst)
