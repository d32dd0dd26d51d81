"""Collapse: a loop and the one constant-trip lane loop directly inside it become one flat loop.

``fuse(program, entry=..., mode="collapse", loop="v")`` (the fuse pass's ``collapse`` mode; the
work is done here). A detensorized AVX-512 kernel (and C written the same way) walks its data in
vectors: each iteration ``v`` handles ``L`` contiguous elements with a lane loop ``l < L``. On a
GPU that form gives each thread ``L`` contiguous elements (adjacent threads ``L`` elements apart:
uncoalesced). The flat loop walks the elements themselves, so binding spreads them one per
thread.

Before (after fusing the lane loops and contracting the lane array)::

    for (int v = 0; v < nvec; ++v) {
        int i = v * 16;
        for (int l = 0; l < 16; ++l) {
            float xv = x[i + l];
            y[i + l] = xv > zero ? xv : zero;
        }
    }

After::

    for (int v_l = 0; v_l < nvec * 16; ++v_l) {
        float xv = x[v_l];
        y[v_l] = xv > zero ? xv : zero;
    }

Legality (:func:`check`, exact structural rules, then the dependence test; every refusal is a
``PassError`` XP4001 naming the statement):

1. the outer loop ``v`` runs ``0 .. H`` by 1 (``<``); ``H`` reads nothing the body assigns;
2. its body is, apart from comments, scalar declarations (the *prefix*) followed by exactly one
   loop ``l`` that runs ``0 .. L`` by 1 with ``L`` an integer constant > 0, unbound; nothing
   after it (a statement after the lane loop, e.g. one reading a lane array, is refused);
3. a prefix declaration is a scalar with a pure initializer (no memory read, call or
   assignment) that the body never assigns; one whose value depends on ``v`` must be an
   integer and is substituted into its uses; the others (loop-invariant) stay, at the top of
   the flat body; a local array in the prefix is refused (contract it first);
4. neither ``v`` nor ``l`` is assigned in the body; after the substitution every use of ``v``
   and ``l`` lies in an integer expression ``a_v*v + a_l*l + r`` (``+ - *`` by constants,
   ``r`` free of both) with ``a_v == L * a_l``, ``a_l != 0``: it equals ``a_l * e + r`` for
   ``e = v*L + l``. Any other use (``v*8 + l`` with ``L = 16``, ``l < rest``, ``l`` alone) is
   refused: with it, ``e`` would not name one element per iteration.

The map ``(v, l) -> e = v*L + l`` is a bijection from ``[0, H) x [0, L)`` onto ``[0, H*L)``
(``L`` constant > 0; inverse ``v = e / L``, ``l = e % L``) and increasing in the lexicographic
order of ``(v, l)``: the flat loop runs the same statement instances in the same order, so the
rewrite itself preserves every dependence. The pass exists to give binding one flat loop to
spread over threads, so it also requires (5) that the flat loop carry no dependence
(``passes/dependence.py``, Z3): a nest whose loops carry one is refused with that dependence
named, since binding would refuse the flat loop anyway.

The flat bound is printed ``H * L``; the original nest computed indices up to ``H*L - 1`` in
the same integer type, so only ``H*L == 2^31`` exactly (int) could newly overflow.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, vars_used, walk

from .base import PassError
from . import dependence as D

NAME = "fuse"
MODE = "collapse"
INT_DTYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "char"}


def _int_const(e):
    if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, N.UnOp) and e.op == "-":
        v = _int_const(e.operand)
        return None if v is None else -v
    return None


def _const(v: int) -> N.Const:
    return N.Const(v, "int32", str(v))


def _pure(e) -> bool:
    return not any(isinstance(n, (N.Index, N.Call, N.Intrinsic, N.AssignExpr))
                   or isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--")
                   for n in walk(e))


def _lin(e, v: str, l: str):
    """``(a_v, a_l, rest)`` with ``e == a_v*v + a_l*l + rest`` (rest: an expression free of
    ``v`` and ``l``, or None for 0), or None when ``e`` is not of that form."""
    names = vars_used(e)
    if v not in names and l not in names:
        return (0, 0, e)
    if isinstance(e, N.Var):
        return (1, 0, None) if e.name == v else (0, 1, None)
    if isinstance(e, N.UnOp) and e.op == "-":
        x = _lin(e.operand, v, l)
        return None if x is None else (-x[0], -x[1], None if x[2] is None else N.UnOp("-", x[2]))
    if isinstance(e, N.UnOp) and e.op == "+":
        return _lin(e.operand, v, l)
    if isinstance(e, N.BinOp) and e.op in ("+", "-"):
        a, b = _lin(e.lhs, v, l), _lin(e.rhs, v, l)
        if a is None or b is None:
            return None
        s = 1 if e.op == "+" else -1
        if a[2] is None and b[2] is None:
            rest = None
        elif b[2] is None:
            rest = a[2]
        elif a[2] is None:
            rest = b[2] if s == 1 else N.UnOp("-", b[2])
        else:
            rest = N.BinOp(e.op, a[2], b[2])
        return (a[0] + s * b[0], a[1] + s * b[1], rest)
    if isinstance(e, N.BinOp) and e.op == "*":
        for k, x in ((_int_const(e.lhs), e.rhs), (_int_const(e.rhs), e.lhs)):
            if k is not None:
                y = _lin(x, v, l)
                if y is None:
                    return None
                return (k * y[0], k * y[1], None if y[2] is None else N.BinOp("*", _const(k), y[2]))
    return None


def _flatten_uses(node, v: str, l: str, L: int, e: str):
    """``node`` with every maximal ``a_l*(v*L + l) + r`` replaced by ``a_l*e + r``, top-down."""
    def go(x):
        if isinstance(x, N.Expr):
            names = vars_used(x)
            if v not in names and l not in names:
                return x
            f = _lin(x, v, l)
            if f is not None and f[1] != 0 and f[0] == L * f[1]:
                flat = N.Var(e) if f[1] == 1 else N.BinOp("*", _const(f[1]), N.Var(e))
                return flat if f[2] is None else N.BinOp("+", flat, f[2])
        if isinstance(x, tuple):
            return tuple(go(y) for y in x)
        if not isinstance(x, N.Node):
            return x
        from dataclasses import fields, replace
        ch = {}
        for fl in fields(x):
            if fl.name == "loc":
                continue
            val = getattr(x, fl.name)
            if isinstance(val, (N.Node, tuple)):
                nv = go(val)
                if nv is not val:
                    ch[fl.name] = nv
        return replace(x, **ch) if ch else x
    return go(node)


def _line(node) -> str:
    ln = getattr(getattr(node, "loc", None), "line", None)
    return f" (line {ln})" if ln else ""


def _fresh(func: N.Func, base: str) -> str:
    used = {n.name for n in walk(func) if isinstance(n, (N.Var, N.Decl))} | \
           {n.var for n in walk(func) if isinstance(n, N.For)} | {p.name for p in func.params}
    name, k = base, 1
    while name in used:
        name, k = f"{base}{k}", k + 1
    return name


def plan(program: N.Program, func: N.Func, outer: N.For) -> dict:
    """Check rules 1-4 (see the module text); the flat loop and what it replaces, or PassError."""
    if outer.cmp != "<" or _int_const(outer.lo) != 0 or _int_const(outer.step) != 1:
        raise PassError(NAME, f"collapse: loop '{outer.var}'{_line(outer)} does not run 0 .. H by 1", outer)
    if isinstance(outer.binding, str) and outer.binding != "omp":
        raise PassError(NAME, f"collapse: loop '{outer.var}' is already bound to '{outer.binding}'", outer)
    body = D.strip_comments(outer.body.stmts)
    k = next((i for i, s in enumerate(body) if not isinstance(s, N.Decl)), len(body))
    prefix, rest = body[:k], body[k:]
    if not rest or not isinstance(rest[0], N.For):
        at = rest[0] if rest else outer
        raise PassError(NAME, f"collapse: the body of loop '{outer.var}' is not declarations followed by one "
                              f"lane loop (statement{_line(at)})", at)
    inner = rest[0]
    if len(rest) > 1:
        raise PassError(NAME, f"collapse: a statement{_line(rest[1])} follows the lane loop '{inner.var}' in the "
                              f"body of '{outer.var}' (it would run once per element)", rest[1])
    L = _int_const(inner.hi)
    if inner.cmp != "<" or _int_const(inner.lo) != 0 or _int_const(inner.step) != 1 or L is None or L <= 0:
        raise PassError(NAME, f"collapse: the lane loop '{inner.var}'{_line(inner)} does not run 0 .. L by 1 "
                              f"with a constant L > 0", inner)
    if inner.binding is not None:
        raise PassError(NAME, f"collapse: the lane loop '{inner.var}' is bound to '{inner.binding}'", inner)
    assigned = D.assigned_names(outer.body)
    for x in (outer.var, inner.var):
        if x in D.assigned_names(inner.body) or x == outer.var and x in assigned:
            raise PassError(NAME, f"collapse: the loop variable '{x}' is assigned in the loop", outer)
    if vars_used(outer.hi) & assigned:
        raise PassError(NAME, f"collapse: the bound of loop '{outer.var}' reads "
                              f"{sorted(vars_used(outer.hi) & assigned)}, which its body assigns", outer)
    subst, kept = {}, []
    for d in prefix:
        if isinstance(d.type, N.Array):
            raise PassError(NAME, f"collapse: '{d.name}'{_line(d)} is an array of each iteration of "
                                  f"'{outer.var}' (a lane array: contract it first)", d)
        if not isinstance(d.type, N.Scalar) or d.init is None or not _pure(d.init) or d.name in assigned:
            raise PassError(NAME, f"collapse: '{d.name}'{_line(d)} in the body of '{outer.var}' is not a "
                                  f"pure, never-assigned scalar", d)
        init = substitute(d.init, subst) if subst else d.init
        if outer.var in vars_used(init):
            if d.type.dtype not in INT_DTYPES:
                raise PassError(NAME, f"collapse: '{d.name}'{_line(d)} depends on '{outer.var}' and is not an "
                                      f"integer", d)
            subst[d.name] = init
        else:
            kept.append(d.with_(init=init))
    e = _fresh(func, f"{outer.var}_{inner.var}")
    ibody = substitute(inner.body, subst) if subst else inner.body
    flat_body = _flatten_uses(ibody, outer.var, inner.var, L, e)
    for n in walk(flat_body):
        if isinstance(n, N.Var) and n.name in (outer.var, inner.var):
            stmt = next((s for s in walk(flat_body) if isinstance(s, N.Stmt) and not isinstance(s, N.Block)
                         and any(x is n for x in walk(s))), inner)
            raise PassError(NAME, f"collapse: '{n.name}' is used{_line(stmt)} other than through the flat index "
                                  f"{outer.var}*{L} + {inner.var} (two iterations could name one element, or "
                                  f"the value depends on the lane): not a bijection onto the elements", stmt)
    hi = N.BinOp("*", outer.hi, _const(L))
    flat = outer.with_(var=e, hi=hi, body=N.Block(tuple(kept) + tuple(flat_body.stmts), loc=inner.body.loc))
    return {"outer": outer, "inner": inner, "flat": flat, "L": L}


def check(program: N.Program, func: N.Func, outer: N.For) -> dict:
    """Rules 1-5: the plan of :func:`plan`, the new program, and the dependence test on the flat
    loop."""
    p = plan(program, func, outer)
    new_func = D.replace_node(func, outer, p["flat"])
    new_prog = program.with_(items=tuple(new_func if it is func else it for it in program.items))
    flat = next(lp for lp in walk(new_func) if isinstance(lp, N.For) and lp.var == p["flat"].var)
    dep = D.check_parallel(new_prog, new_func, flat)
    if dep is not None:
        raise PassError(NAME, f"collapse: loops '{outer.var}' and '{p['inner'].var}' carry a dependence, so the "
                              f"flat loop could not be spread over threads: {dep}", dep.stmt or outer)
    p["program"] = new_prog
    return p


def collapse(program: N.Program, func: N.Func, outer: N.For) -> N.Program:
    return check(program, func, outer)["program"]


def candidates(program: N.Program) -> list:
    out = []
    for f in program.kernels or program.funcs:
        if f.body is None:
            continue
        for lp in (n for n in walk(f.body) if isinstance(n, N.For)):
            try:
                check(program, f, lp)
            except PassError:
                continue
            out.append({"entry": f.name, "mode": MODE, "loop": D.loop_ref(f, lp)})
    return out
