"""Guard sketch: a comparison ``a OP b`` in an if, a ternary or a non-canonical loop condition
gets an operator hole over ``< <= > >=`` and an offset hole on ``b`` (-2..2).

Fixes: ``<`` for ``<=`` and the reverse, a guard off by one or two, a flipped comparison.
Cannot fix: a guard on the wrong variable or size, a missing guard, ``==``/``!=`` tests."""
from __future__ import annotations

from xpiler.ir import nodes as N

from ._base import Hole, Sketch, addv, pick

DATA = {
    "kind": "guard",
    "replaces": "one ordering comparison in a condition",
    "holes": {"op": "index into ['<', '<=', '>', '>='] (as written first)", "off": "added to the right side, -2..2"},
    "cost": "1 if the operator changed, + |off|",
}
OPS = ["<", "<=", ">", ">="]


def build(region) -> Sketch | None:
    e = region.node
    if not (isinstance(e, N.BinOp) and e.op in OPS):
        return None
    holes = [Hole("op", 0, 3, OPS.index(e.op), metric="changed"), Hole("off", -2, 2, 0)]

    def inst(vals):
        rhs = addv(e.rhs, vals["off"])
        return pick(vals["op"], [N.BinOp(op, e.lhs, rhs) for op in OPS])

    return Sketch("guard", "expr", holes, inst)
