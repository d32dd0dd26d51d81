"""Copy sketch: a BANG ``__memcpy``/``__memcpy_async`` gets a size hole and a direction hole.
The size ``X * sizeof(T)`` becomes ``(X + d) * sizeof(T)`` (d = -2..2 elements); a size of
another form gets d bytes (d in -8, -4, -2, -1, 1, 2, 4, 8). The direction is any of the
four GDRAM/NRAM directions.

Fixes: a copy one or two elements short or long, a reversed or wrong direction. Cannot fix:
a copy from the wrong address (see affine_index on its offset), strides and segment counts
of the strided form, a copy size that is another size."""
from __future__ import annotations

from xpiler.ir import nodes as N

from ._base import Hole, Sketch, add_const, addv, is_sym, pick

DATA = {
    "kind": "copy",
    "replaces": "the size and direction arguments of a __memcpy",
    "holes": {"size": "elements added (X * sizeof(T) form, -2..2) or bytes added (index into BYTE_STEPS)",
              "dir": "index into DIRECTIONS (as written first)"},
    "cost": "|size| (elements) or 1 (bytes) + 1 if the direction changed",
}
DIRECTIONS = ["GDRAM2NRAM", "NRAM2GDRAM", "NRAM2NRAM", "GDRAM2GDRAM", "NRAM2WRAM", "GDRAM2WRAM",
              "NRAM2SRAM", "SRAM2NRAM", "GDRAM2SRAM", "SRAM2GDRAM"]
BYTE_STEPS = [0, -8, -4, -2, -1, 1, 2, 4, 8]


def _elem_form(size):
    """(X, sizeof node, X is the left factor) when size is X * sizeof(T) or sizeof(T) * X."""
    if isinstance(size, N.BinOp) and size.op == "*":
        if isinstance(size.rhs, N.SizeOf):
            return size.lhs, size.rhs, True
        if isinstance(size.lhs, N.SizeOf):
            return size.rhs, size.lhs, False
    return None


def build(region) -> Sketch | None:
    c = region.node
    if not (isinstance(c, N.Intrinsic) and c.name in ("__memcpy", "__memcpy_async") and len(c.args) >= 4):
        return None
    size, d = c.args[2], c.args[3]
    if not isinstance(d, N.Var) or d.name not in DIRECTIONS:
        return None
    dirs = [d.name] + [x for x in DIRECTIONS[:4] if x != d.name]
    ef = _elem_form(size)
    holes = [Hole("dir", 0, len(dirs) - 1, 0, metric="changed")]
    if ef is not None:
        holes.append(Hole("size", -2, 2, 0))
    else:
        holes.append(Hole("size", 0, len(BYTE_STEPS) - 1, 0, metric="changed"))

    def inst(vals):
        if ef is not None:
            x, so, left = ef
            nx = addv(x, vals["size"])
            ns = size if (not is_sym(vals["size"]) and vals["size"] == 0) else \
                (N.BinOp("*", nx, so) if left else N.BinOp("*", so, nx))
        else:
            ns = pick(vals["size"], [add_const(size, b) for b in BYTE_STEPS])
        args = list(c.args)
        args[2], args[3] = ns, pick(vals["dir"], [N.Var(d) for d in dirs])
        return c.with_(args=tuple(args))

    return Sketch("copy", "expr", holes, inst)
