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
    "cost": "1 for the other strictness of the same direction (< for <=), 3 for the opposite direction, + |off|",
}
OPS = ["<", "<=", ">", ">="]


def build(region) -> Sketch | None:
    e = region.node
    if not (isinstance(e, N.BinOp) and e.op in OPS):
        return None
    o = OPS.index(e.op)
    # cost of each operator: the other strictness in the same direction (< for <=) is an
    # off-by-one (1); the opposite direction negates or reverses the guard (3: tried last, as a
    # negated guard can route every tested size around a bug into another branch)
    costs = tuple(0 if k == o else (1 if (k < 2) == (o < 2) else 3) for k in range(4))
    holes = [Hole("op", 0, 3, o, metric="table", costs=costs), Hole("off", -2, 2, 0)]

    def inst(vals):
        rhs = addv(e.rhs, vals["off"])
        return pick(vals["op"], [N.BinOp(op, e.lhs, rhs) for op in OPS])

    return Sketch("guard", "expr", holes, inst)
