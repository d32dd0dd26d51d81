"""Affine index sketch: an integer index expression ``c0 + sum(c_k * t_k)`` (terms t_k as
written: loop and thread variables, sizes, products of them, opaque sub-expressions such as a
division) gets an integer coefficient hole per term and an offset hole, plus a hole per
enclosing loop variable the expression does not use (coefficient 0 as written).

Fixes: a wrong integer coefficient or offset (``2*i`` for ``i``, ``i*W + j + 1`` for
``i*W + j``), a dropped or extra loop-variable term. Cannot fix: a wrong symbolic factor
(``i*H`` for ``i*W``), a term over a variable that is not an enclosing loop variable, a
non-affine mistake (a wrong division, see divmod), or a change larger than the domain."""
from __future__ import annotations

from xpiler.ir import nodes as N

from ._base import Hole, Sketch, addv, const, is_int_const, is_sym, scale

DATA = {
    "kind": "affine_index",
    "replaces": "an integer index expression (array subscript, pointer offset of a copy)",
    "holes": {"c<k>": "coefficient of term k, as written +-2",
              "off": "constant offset, as written +-2",
              "add_<v>": "coefficient of an enclosing loop variable not in the expression, -1..1 (weight 2)"},
    "cost": "sum of |hole - as written| (weighted)",
}
SPAN = 2


def terms(e):
    """(list of [coef, key, expr], const) for an integer expression, or None. Terms keep their
    first-seen order; keys are the structural repr of the term (loc is not part of it)."""
    out: dict = {}
    order: list = []

    def add(key, ex, c):
        if key not in out:
            out[key] = [0, ex]
            order.append(key)
        out[key][0] += c

    def go(x, sign) -> int:
        if is_int_const(x):
            return sign * x.value
        if isinstance(x, N.BinOp) and x.op in ("+", "-"):
            return go(x.lhs, sign) + go(x.rhs, sign if x.op == "+" else -sign)
        if isinstance(x, N.UnOp) and x.op == "-":
            return go(x.operand, -sign)
        if isinstance(x, N.BinOp) and x.op == "*" and is_int_const(x.lhs):
            return _scaled(x.rhs, sign * x.lhs.value)
        if isinstance(x, N.BinOp) and x.op == "*" and is_int_const(x.rhs):
            return _scaled(x.lhs, sign * x.rhs.value)
        if isinstance(x, N.Const):
            raise ValueError("not an integer expression")
        add(repr(x), x, sign)
        return 0

    def _scaled(x, c):
        if c == 0:
            return 0
        # distribute only over a sum of terms; otherwise the scaled thing is one term
        if isinstance(x, N.BinOp) and x.op in ("+", "-") or isinstance(x, N.UnOp) and x.op == "-":
            sub, k = terms(x) or (None, None)
            if sub is None:
                raise ValueError
            for cc, key, ex in sub:
                add(key, ex, c * cc)
            return c * k
        add(repr(x), x, c)
        return 0

    try:
        k = go(e, 1)
    except (ValueError, TypeError):
        return None
    return [[out[key][0], key, out[key][1]] for key in order], k


def rebuild(ts, k: int):
    """The expression sum(c * t) + k, terms in order, zero coefficients dropped."""
    e = None
    for c, _, ex in ts:
        if c == 0:
            continue
        t = ex if abs(c) == 1 else N.BinOp("*", const(abs(c)), ex)
        if e is None:
            e = t if c > 0 else N.UnOp("-", t)
        else:
            e = N.BinOp("+" if c > 0 else "-", e, t)
    if e is None:
        return const(k)
    if k:
        e = N.BinOp("+" if k > 0 else "-", e, const(abs(k)))
    return e


def build(region) -> Sketch | None:
    e = region.node
    dec = terms(e)
    if dec is None:
        return None
    ts, k = dec
    if not ts and not region.loops:
        return None
    holes = [Hole(f"c{i}", c - SPAN, c + SPAN, c) for i, (c, _, _) in enumerate(ts)]
    holes.append(Hole("off", k - SPAN, k + SPAN, k))
    used = {key for _, key, _ in ts}
    extra_vars = []
    for lp in region.loops:
        v = N.Var(lp.var)
        if repr(v) not in used and lp.var not in {x.name for x in _vars(e)}:
            extra_vars.append(v)
            holes.append(Hole(f"add_{lp.var}", -1, 1, 0, weight=2))

    def inst(vals):
        nts = [[vals[f"c{i}"], key, ex] for i, (_, key, ex) in enumerate(ts)]
        nts += [[vals[f"add_{v.name}"], repr(v), v] for v in extra_vars]
        if is_sym(vals["off"]):   # the parametric form: sum(hole * term) + hole
            e = vals["off"]
            for c, _, ex in nts:
                e = N.BinOp("+", e, scale(c, ex))
            return e
        return rebuild(nts, vals["off"])

    return Sketch("affine_index", "expr", holes, inst)


def _vars(e):
    from xpiler.ir.visit import walk
    return [n for n in walk(e) if isinstance(n, N.Var)]
