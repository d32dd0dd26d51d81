"""Loop bound sketch: a canonical loop ``for (v = lo; v < hi; v += s)`` gets an offset hole on
its upper bound (``< hi`` vs ``<= hi`` is ``hi`` vs ``hi + 1``) and one on its lower bound,
each -2..2.

Fixes: off-by-one (or two) trip counts at either end. Cannot fix: a bound that is the wrong
size (``< N`` for ``< M``), a missing remainder loop, a non-canonical loop (while, decreasing
loops are not regions)."""
from __future__ import annotations

from xpiler.ir import nodes as N

from ._base import Hole, Sketch, addv

DATA = {
    "kind": "bound",
    "replaces": "the bounds of a canonical for loop",
    "holes": {"hi": "offset added to the exclusive upper bound, -2..2",
              "lo": "offset added to the lower bound, -2..2"},
    "cost": "|hi| + |lo|",
}


def build(region) -> Sketch | None:
    f = region.node
    if not isinstance(f, N.For):
        return None
    holes = [Hole("hi", -2, 2, 0), Hole("lo", -2, 2, 0, weight=1)]

    def inst(vals):
        return f.with_(hi=addv(f.hi, vals["hi"]), lo=addv(f.lo, vals["lo"]))

    return Sketch("bound", "expr", holes, inst)
