"""Buffer footprints per loop level: which elements of each buffer one iteration of a loop
touches (all loops inside it running fully).  This is what the cache pass needs to size an
on-chip tile (shared memory / NRAM) and what the tiling passes use to stay within memory.

``footprint(loop, env, ctx)`` evaluates with concrete values for the symbols outside the loop
(sizes, tile constants, the outer loop variables: missing ones default to their loop's lower
bound or 0) and gives, per buffer, the bounding box per dimension, the element count of that
box and whether it was reads, writes or both.  Non-affine accesses make the box unknown (None).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import nodes as N
from .affine import Affine, Context, accesses, to_affine
from .visit import walk


@dataclass
class Footprint:
    buffer: str
    box: Optional[list]        # [(lo, hi)] inclusive per dimension, or None when unknown
    modes: set

    @property
    def elements(self) -> Optional[int]:
        if self.box is None:
            return None
        n = 1
        for lo, hi in self.box:
            n *= max(0, hi - lo + 1)
        return n


def _interval(aff: Affine, ranges: dict):
    lo = hi = aff.const
    for k, c in aff.coeffs:
        a, b = c, c
        for x in k.split("*"):
            if x not in ranges:
                return None
            p, q = ranges[x]
            cands = (a * p, a * q, b * p, b * q)
            a, b = min(cands), max(cands)
        lo += a
        hi += b
    return lo, hi


def footprint(loop: N.For, env: Optional[dict] = None, ctx: Optional[Context] = None) -> dict:
    """{buffer: Footprint} for ONE iteration of ``loop`` (its var fixed at ``env`` or its lo)."""
    ctx = ctx or Context()
    env = dict(env or {})
    base = {k: (v, v) for k, v in env.items()}
    lo0 = to_affine(loop.lo, ctx)
    if loop.var not in base:
        iv = _interval(lo0, base) if lo0 is not None else None
        base[loop.var] = (iv[0], iv[0]) if iv else (0, 0)
    inner = [n for n in walk(loop.body) if isinstance(n, N.For)]
    ranges = dict(base)
    for l in inner:   # pre-order: outer loops first, so their ranges are known for the inner bounds
        lo, hi = to_affine(l.lo, ctx), to_affine(l.hi, ctx)
        a = _interval(lo, ranges) if lo is not None else None
        b = _interval(hi, ranges) if hi is not None else None
        if a is None or b is None:
            continue
        ranges[l.var] = (a[0], b[1] - 1)
    out: dict = {}
    for acc in accesses(loop.body, ctx):
        fp = out.setdefault(acc.buffer, Footprint(acc.buffer, [], set()))
        fp.modes.add(acc.mode)
        if fp.box is None:
            continue
        dims = []
        for ix in acc.indices:
            iv = _interval(ix, ranges) if ix is not None else None
            if iv is None:
                dims = None
                break
            dims.append(iv)
        if dims is not None and acc.lanes != 1:      # an element of a cast pointer: lanes elements
            dims[-1] = (dims[-1][0], dims[-1][1] + acc.lanes - 1)
        if dims is not None and acc.extent is not None:
            ext = _extent_affine(acc, ctx)
            e = _interval(ext, ranges) if ext is not None else None
            if e is None:
                dims = None
            else:
                dims[0] = (dims[0][0], dims[0][1] + e[1] - 1)
        if dims is None:
            fp.box = None
            continue
        if not fp.box:
            fp.box = dims
        elif len(fp.box) == len(dims):
            fp.box = [(min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(fp.box, dims)]
        else:
            fp.box = None
    return out


def footprints_per_level(func: N.Func, env: Optional[dict] = None, ctx: Optional[Context] = None) -> dict:
    """{loop var: {buffer: Footprint}} for every canonical loop of ``func``, outermost first.
    Loop variables of the enclosing loops are fixed at their first iteration."""
    ctx = ctx or Context()
    res: dict = {}

    def visit(node, env_):
        if isinstance(node, N.For):
            res.setdefault(node.var, footprint(node, env_, ctx))
            lo = to_affine(node.lo, ctx)
            iv = _interval(lo, {k: (v, v) for k, v in env_.items()}) if lo is not None else None
            env_ = dict(env_, **{node.var: iv[0] if iv else 0})
        for c in node.children() if isinstance(node, N.Node) else ():
            if isinstance(c, N.Stmt):
                visit(c, env_)

    visit(func.body if isinstance(func, N.Func) else func, dict(env or {}))
    return res


# ------------------------------------------------ the element count of an intrinsic effect
def _strip_sizeof(e):
    """x * sizeof(T) -> x (a byte count as an element count); None when there is no such factor."""
    if isinstance(e, N.BinOp) and e.op == "*":
        if isinstance(e.rhs, N.SizeOf):
            return e.lhs
        if isinstance(e.lhs, N.SizeOf):
            return e.rhs
        inner = _strip_sizeof(e.lhs)
        if inner is not None:
            return N.BinOp("*", inner, e.rhs)
    if isinstance(e, N.SizeOf):
        return N.Const(1, "int32", "1")
    return None


def _extent_affine(acc, ctx):
    """The element count an intrinsic effect covers, as an Affine, or None."""
    if acc.extent is None:
        return Affine.of({}, 1)
    text, env, unit = acc.extent
    vals = {}
    for k, v in env.items():
        if v is None:
            vals[k] = None
            continue
        if unit == "byte" and isinstance(v, N.Expr) and k != "dir":
            v2 = _strip_sizeof(v)
            vals[k] = to_affine(v2, ctx) if v2 is not None else _Unknown()
        else:
            vals[k] = to_affine(v, ctx) if isinstance(v, N.Expr) else None
            if vals[k] is None:
                vals[k] = _Unknown()
    try:
        r = eval(text, {"__builtins__": {}}, vals)
    except Exception:
        return None
    if isinstance(r, int):
        return Affine.of({}, r)
    return r if isinstance(r, Affine) else None


class _Unknown:
    """Stands for an argument whose value is not affine: poisons any arithmetic."""

    def __add__(self, o):
        return self
    __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __floordiv__ = __add__
