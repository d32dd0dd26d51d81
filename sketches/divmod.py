"""Floor-div/mod sketch: an integer ``a / b`` or ``a % b`` gets an operator hole (``/`` or
``%``) and a divisor hole: for a constant divisor c the values c-2..c+2 (>= 1), 2c and c/2;
for a symbolic divisor (a size) the size as written, +1 or -1.

Fixes: div and mod swapped at one place, a divisor off by one or by a factor of two. Cannot
fix: a dividend that is wrong (see affine_index), a divisor that is another size, div/mod
swapped at two places at once (one site per repair)."""
from __future__ import annotations

from xpiler.ir import nodes as N

from ._base import Hole, Sketch, add_const, const, is_int_const, pick

DATA = {
    "kind": "divmod",
    "replaces": "an integer a / b or a % b",
    "holes": {"op": "0 = '/', 1 = '%'", "div": "index into the divisor choices (0 = as written)"},
    "cost": "1 per changed hole",
}


def divisor_choices(b):
    if is_int_const(b):
        c = b.value
        vals = [c] + [c + d for d in (-1, 1, -2, 2)] + [2 * c] + ([c // 2] if c % 2 == 0 else [])
        seen, out = set(), []
        for v in vals:
            if v >= 1 and v not in seen:
                seen.add(v)
                out.append(const(v))
        return out
    return [b, add_const(b, 1), add_const(b, -1)]


def build(region) -> Sketch | None:
    e = region.node
    if not (isinstance(e, N.BinOp) and e.op in ("/", "%")):
        return None
    ch = divisor_choices(e.rhs)
    holes = [Hole("op", 0, 1, 0 if e.op == "/" else 1, metric="changed"),
             Hole("div", 0, len(ch) - 1, 0, metric="changed")]

    def inst(vals):
        d = pick(vals["div"], ch)
        return pick(vals["op"], [N.BinOp("/", e.lhs, d), N.BinOp("%", e.lhs, d)])

    return Sketch("divmod", "expr", holes, inst)
