"""Loop-carried dependence and legality queries, decided exactly over the integers with Z3.

For a loop L and two accesses A (in iteration i) and B (in iteration i') to the same buffer,
at least one a write, a dependence carried by L exists when there are iterations
i < i' of L (and any iterations of the loops inside L, independently for each side) that
satisfy the loop bounds and make every index equal.  Symbols that are not loop variables
(parameters, builtins) are shared by both sides and unconstrained except for the
``assume`` constraints (e.g. sizes >= 1).  A non-affine index is a conservative dependence.

Queries: ``carried(loop)``, ``check_parallel(loop)`` (why a loop cannot be made parallel),
``check_interchange(outer, inner)`` (a dependence with direction (<, >) forbids it).
Scalars written in the body and live across iterations (``s += x``) are reported as
'scalar' dependences (reductions), so a parallelizing pass must privatize or reduce them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import z3

from . import nodes as N
from . import smt
from .affine import Affine, Context, accesses, to_affine
from .visit import walk


@dataclass
class Dependence:
    buffer: str
    kind: str                 # flow | anti | output | scalar | unknown
    src: object               # statement of the earlier access
    dst: object               # statement of the later access
    reason: str = ""
    witness: Optional[dict] = None

    def __str__(self):
        line = getattr(getattr(self.src, "loc", None), "line", "?")
        return f"{self.kind} dependence on '{self.buffer}' (line {line}): {self.reason}"


def _sym(name, side, loopvars, cache):
    key = (name, side if name in loopvars else None)
    if key not in cache:
        safe = name.replace(".", "_").replace(":", "_")
        cache[key] = z3.Int(f"{safe}__{key[1]}" if key[1] else safe)
    return cache[key]


def _z3(aff: Affine, side, loopvars, cache):
    e = z3.IntVal(aff.const)
    for k, v in aff.coeffs:
        t = z3.IntVal(v)
        for x in k.split("*"):
            t = t * _sym(x, side, loopvars, cache)
        e = e + t
    return e


def _bounds(loop: N.For, side, loopvars, cache, ctx, cons):
    v = _sym(loop.var, side, loopvars, cache)
    lo, hi, st = to_affine(loop.lo, ctx), to_affine(loop.hi, ctx), to_affine(loop.step, ctx)
    if lo is not None:
        cons.append(v >= _z3(lo, side, loopvars, cache))
    if hi is not None:
        cons.append(v < _z3(hi, side, loopvars, cache))
    if lo is not None and st is not None and st.is_const() and st.const > 1:
        k = z3.Int(f"k_{loop.var}__{side}")
        cons.append(k >= 0)
        cons.append(v == _z3(lo, side, loopvars, cache) + st.const * k)
    return v


def carried(loop: N.For, ctx: Optional[Context] = None, assume=(), stop_at_first=False) -> list:
    """Dependences carried by ``loop`` (see module doc)."""
    ctx = ctx or Context()
    acc = accesses(loop.body, ctx)
    inner_loops = [n for n in walk(loop.body) if isinstance(n, N.For)]
    loopvars = {loop.var} | {l.var for l in inner_loops}
    local_decls = {n.name for n in walk(loop.body) if isinstance(n, N.Decl)}
    deps = []
    by_buf: dict = {}
    for a in acc:
        if a.buffer in local_decls:
            continue  # private to an iteration
        by_buf.setdefault(a.buffer, []).append(a)
    for buf, lst in by_buf.items():
        for i, a in enumerate(lst):
            for b in lst[i:]:
                if a.mode == "r" and b.mode == "r":
                    continue
                d = _pair(loop, a, b, ctx, loopvars, assume)
                if d is not None:
                    deps.append(d)
                    if stop_at_first:
                        return deps
                elif a is not b:
                    d = _pair(loop, b, a, ctx, loopvars, assume)
                    if d is not None:
                        deps.append(d)
                        if stop_at_first:
                            return deps
    deps.extend(_scalar_deps(loop, local_decls))
    return deps


def _kind(a, b):
    if a.mode != "r" and b.mode == "r":
        return "flow"
    if a.mode == "r" and b.mode != "r":
        return "anti"
    return "output"


def _pair(loop, a, b, ctx, loopvars, assume):
    if a.extent is not None or b.extent is not None:
        # intrinsic footprints: overlap of [off, off + extent) ranges
        return _pair_ranges(loop, a, b, ctx, loopvars, assume)
    if not a.affine or not b.affine or len(a.indices) != len(b.indices):
        return Dependence(a.buffer, "unknown", a.stmt, b.stmt, "non-affine or mismatched index")
    cache: dict = {}
    cons = list(assume)
    s = smt.solver(2000)
    va = _bounds(loop, "a", loopvars, cache, ctx, cons)
    vb = _bounds(loop, "b", loopvars, cache, ctx, cons)
    for l in a.loops:
        if l is not loop and l.var in loopvars and _inside(l, loop):
            _bounds(l, "a", loopvars, cache, ctx, cons)
    for l in b.loops:
        if l is not loop and l.var in loopvars and _inside(l, loop):
            _bounds(l, "b", loopvars, cache, ctx, cons)
    cons.append(va < vb)
    for x, y in zip(a.indices, b.indices):
        cons.append(_z3(x, "a", loopvars, cache) == _z3(y, "b", loopvars, cache))
    s.add(*cons)
    r = s.check()
    if r == z3.unsat:
        return None
    wit = None
    if r == z3.sat:
        m = s.model()
        wit = {str(d): m[d].as_long() for d in m.decls() if z3.is_int_value(m[d])}
    return Dependence(a.buffer, _kind(a, b), a.stmt, b.stmt,
                      "solver found iterations touching the same element" if r == z3.sat else "solver gave up",
                      wit)


def _pair_ranges(loop, a, b, ctx, loopvars, assume):
    ea, eb = _extent_affine(a, ctx), _extent_affine(b, ctx)
    if a.indices[0] is None or b.indices[0] is None or ea is None or eb is None:
        return Dependence(a.buffer, "unknown", a.stmt, b.stmt, "intrinsic footprint not affine")
    cache: dict = {}
    cons = list(assume)
    va = _bounds(loop, "a", loopvars, cache, ctx, cons)
    vb = _bounds(loop, "b", loopvars, cache, ctx, cons)
    for acc, side in ((a, "a"), (b, "b")):
        for l in acc.loops:
            if l is not loop and _inside(l, loop):
                _bounds(l, side, loopvars, cache, ctx, cons)
    oa, ob = _z3(a.indices[0], "a", loopvars, cache), _z3(b.indices[0], "b", loopvars, cache)
    xa, xb = _z3(ea, "a", loopvars, cache), _z3(eb, "b", loopvars, cache)
    cons += [va < vb, oa < ob + xb, ob < oa + xa]
    s = smt.solver(2000)
    s.add(*cons)
    r = s.check()
    if r == z3.unsat:
        return None
    return Dependence(a.buffer, _kind(a, b), a.stmt, b.stmt, "intrinsic footprints overlap across iterations")


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


def _inside(inner, outer):
    return any(n is inner for n in walk(outer.body))


def _scalar_deps(loop, local_decls):
    """Scalars assigned in the body that are not private (declared outside): carried."""
    deps = []
    seen = set()
    for n in walk(loop.body):
        tgt = None
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            tgt = n.target.name
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") and isinstance(n.operand, N.Var):
            tgt = n.operand.name
        if tgt and tgt not in local_decls and tgt not in seen and tgt != loop.var and \
                not any(isinstance(l, N.For) and l.var == tgt for l in walk(loop.body)):
            seen.add(tgt)
            op = getattr(n, "op", "=")
            deps.append(Dependence(tgt, "scalar", n, n, "reduction" if op in ("+=", "*=", "-=") else
                                   "scalar written in every iteration"))
    return deps


def check_parallel(loop: N.For, ctx=None, assume=()) -> Optional[str]:
    """None if the iterations of ``loop`` are independent, else why not (first dependence)."""
    deps = carried(loop, ctx, assume, stop_at_first=True)
    return str(deps[0]) if deps else None


def check_interchange(outer: N.For, inner: N.For, ctx=None, assume=()) -> Optional[str]:
    """None if swapping ``outer`` and its directly nested ``inner`` keeps every dependence."""
    ctx = ctx or Context()
    if not _inside(inner, outer):
        return f"loop {inner.var} is not inside loop {outer.var}"
    for x in (inner.lo, inner.hi, inner.step):
        if outer.var in {n.name for n in walk(x) if isinstance(n, N.Var)}:
            return f"bounds of {inner.var} depend on {outer.var} (not a rectangular nest)"
    acc = accesses(outer.body, ctx)
    loopvars = {l.var for l in walk(outer) if isinstance(l, N.For)}
    by_buf: dict = {}
    for a in acc:
        by_buf.setdefault(a.buffer, []).append(a)
    for buf, lst in by_buf.items():
        for a in lst:
            for b in lst:
                if a.mode == "r" and b.mode == "r":
                    continue
                if not a.affine or not b.affine or len(a.indices) != len(b.indices) or a.extent or b.extent:
                    return f"access to '{buf}' is not affine"
                cache: dict = {}
                cons = list(assume)
                oa = _bounds(outer, "a", loopvars, cache, ctx, cons)
                ob = _bounds(outer, "b", loopvars, cache, ctx, cons)
                ia = _bounds(inner, "a", loopvars, cache, ctx, cons)
                ib = _bounds(inner, "b", loopvars, cache, ctx, cons)
                for acc_, side in ((a, "a"), (b, "b")):
                    for l in acc_.loops:
                        if l is not outer and l is not inner and _inside(l, outer):
                            _bounds(l, side, loopvars, cache, ctx, cons)
                cons += [oa < ob, ia > ib]
                for x, y in zip(a.indices, b.indices):
                    cons.append(_z3(x, "a", loopvars, cache) == _z3(y, "b", loopvars, cache))
                s = smt.solver(2000)
                s.add(*cons)
                if s.check() != z3.unsat:
                    line = getattr(getattr(a.stmt, "loc", None), "line", "?")
                    return (f"dependence on '{buf}' (line {line}) has direction (<, >) for "
                            f"({outer.var}, {inner.var})")
    return None


def sizes_positive(*names) -> list:
    """Assumptions 'name >= 1' for size parameters."""
    return [z3.Int(n) >= 1 for n in names]
