"""Expansion: give every iteration (or every recovered thread) its own copy of a temporary.

Scalar / array expansion (privatisation made explicit): a variable declared inside the body
of a loop is replaced by an array with one element per iteration, declared before the loop
and indexed by the iteration number.  After expansion the value written by iteration ``i``
survives the end of that iteration, which is what loop fission needs: loop recovery calls
:func:`expand_vars` for the variables of a SIMT thread that are live across a barrier
(fission point), with the linear thread id as the index.

Before (``apply(p, entry="f", loop="i", vars=["t"])``)::

    for (int i = 0; i < n; ++i) {
        float t = x[i] * 2.0f;
        y[i] = t + 1.0f;
    }

After::

    float t[n];
    for (int i = 0; i < n; ++i) {
        t[i] = x[i] * 2.0f;
        y[i] = t[i] + 1.0f;
    }

Legality (:func:`check`): the loop exists, is canonical (``For``), and each variable is
declared exactly once in the function, directly in the loop body, with no array initializer.
The trip count ``(hi - lo + step - 1) / step`` becomes the array extent (a VLA when it is not
constant; gcc accepts it).  Expansion never changes the values a program computes: every use
of the variable in the iteration reads the element that iteration wrote.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError

NAME = "expansion"


# ------------------------------------------------------------------------------ helpers
def _strip_const(t):
    if isinstance(t, (N.Scalar, N.Named, N.Vector)) and getattr(t, "const", False):
        return t.with_(const=False)
    if isinstance(t, N.Array):
        return t.with_(elem=_strip_const(t.elem))
    if isinstance(t, N.Pointer) and t.const:
        return t.with_(const=False)
    return t


def expanded_decl(decl: N.Decl, extent: N.Expr, name: str | None = None) -> N.Decl:
    """The hoisted array declaration for ``decl``: ``T name[extent]`` (``T name[extent][d..]``
    for an array variable)."""
    t = _strip_const(decl.type)
    if isinstance(t, N.Array):
        nt = N.Array(t.elem, (extent,) + tuple(t.dims))
    else:
        nt = N.Array(t, (extent,))
    return N.Decl(name or decl.name, nt, None, "local", loc=decl.loc)


def expand_vars(stmts, decls: dict, index: N.Expr, outside_index: N.Expr | None = None):
    """Rewrite ``stmts`` (a tuple of statements) so each variable of ``decls`` (name -> its
    Decl) is accessed as ``name[index]``; its Decl becomes an assignment of the initializer
    (or disappears).  Returns the new statements.  The caller declares the arrays
    (:func:`expanded_decl`)."""
    names = set(decls)

    def fn(n):
        if isinstance(n, N.Var) and n.name in names:
            return N.Index(n, index, loc=n.loc)
        return n

    def stmt_fn(s):
        if isinstance(s, N.Decl) and s.name in names:
            if s.init is None:
                return None
            # the caller rewrites the expressions of a replacement statement (target included)
            return init_as_stores(s)
        return s

    return _map_stmts(tuple(stmts), stmt_fn, fn)


def init_as_stores(d: N.Decl):
    """The initialization of ``d`` as assignment statement(s) to ``d.name`` (an initializer list
    becomes a compound literal for a struct / vector, element stores for an array)."""
    if not isinstance(d.init, N.InitList):
        return N.Assign(N.Var(d.name), "=", d.init, loc=d.loc)
    t = _strip_const(d.type)
    if not isinstance(t, N.Array):
        return N.Assign(N.Var(d.name), "=", N.CompoundLit(t, d.init), loc=d.loc)
    if len(t.dims) != 1 or any(isinstance(x, N.InitList) for x in d.init.items):
        raise PassError(NAME, f"cannot move the initializer list of '{d.name}' (nested)", d)
    stores = [N.Assign(N.Index(N.Var(d.name), N.Const(k)), "=", x) for k, x in enumerate(d.init.items)]
    n = t.dims[0]
    if n is None or isinstance(n, N.Const) and n.value == len(stores):
        return N.Block(tuple(stores), loc=d.loc)
    j = "xp_k"
    zero = N.Assign(N.Index(N.Var(d.name), N.Var(j)), "=", N.Const(0))
    stores.append(N.For(j, N.Const(len(stores)), n, N.Const(1), N.Block((zero,)), None,
                        N.Scalar("int32", "int")))
    return N.Block(tuple(stores), loc=d.loc)


def _map_stmts(stmts, stmt_fn, expr_fn):
    """Apply ``stmt_fn`` (may return None to drop) to every statement, ``expr_fn`` bottom-up to
    every expression, recursing into compound statements."""
    out = []
    for s in stmts:
        s2 = stmt_fn(s)
        if s2 is None:
            continue
        if s2 is not s:   # a replacement statement: only its expressions are left to rewrite
            out.append(rewrite(s2, expr_fn))
            continue
        out.append(_map_stmt(s, stmt_fn, expr_fn))
    return tuple(out)


def _sub(s, stmt_fn, expr_fn):
    if s is None:
        return None
    if isinstance(s, N.Block):
        return N.Block(_map_stmts(s.stmts, stmt_fn, expr_fn), loc=s.loc)
    r = _map_stmts((s,), stmt_fn, expr_fn)
    if len(r) == 1:
        return r[0]
    return N.Block(r, loc=s.loc)


def _map_stmt(s, stmt_fn, expr_fn):
    if isinstance(s, N.Block):
        return N.Block(_map_stmts(s.stmts, stmt_fn, expr_fn), loc=s.loc)
    if isinstance(s, N.For):
        return s.with_(lo=rewrite(s.lo, expr_fn), hi=rewrite(s.hi, expr_fn), step=rewrite(s.step, expr_fn),
                       body=_sub(s.body, stmt_fn, expr_fn))
    if isinstance(s, N.CFor):
        init = s.init
        if isinstance(init, N.Node):
            init = _sub(init, stmt_fn, expr_fn)
        return s.with_(init=init, cond=rewrite(s.cond, expr_fn), next=rewrite(s.next, expr_fn),
                       body=_sub(s.body, stmt_fn, expr_fn) or N.Block(()))
    if isinstance(s, N.While):
        return s.with_(cond=rewrite(s.cond, expr_fn), body=_sub(s.body, stmt_fn, expr_fn) or N.Block(()))
    if isinstance(s, N.If):
        return s.with_(cond=rewrite(s.cond, expr_fn), then=_sub(s.then, stmt_fn, expr_fn) or N.Block(()),
                       else_=_sub(s.else_, stmt_fn, expr_fn))
    return rewrite(s, expr_fn)


def trip_count(loop: N.For) -> N.Expr:
    lo, hi, step = loop.lo, loop.hi, loop.step
    if all(isinstance(e, N.Const) and isinstance(e.value, int) for e in (lo, hi, step)):
        return N.Const(max(0, -(-(hi.value - lo.value) // step.value)))
    span = hi if isinstance(lo, N.Const) and lo.value == 0 else N.BinOp("-", hi, lo)
    if isinstance(step, N.Const) and step.value == 1:
        return span
    bump = N.Const(step.value - 1) if isinstance(step, N.Const) and isinstance(step.value, int) else \
        N.BinOp("-", step, N.Const(1))
    return N.BinOp("/", N.BinOp("+", span, bump), step)


def iteration_index(loop: N.For) -> N.Expr:
    idx = N.Var(loop.var)
    if not (isinstance(loop.lo, N.Const) and loop.lo.value == 0):
        idx = N.BinOp("-", idx, loop.lo)
    if not (isinstance(loop.step, N.Const) and loop.step.value == 1):
        idx = N.BinOp("/", idx, loop.step)
    return idx


# ------------------------------------------------------------------------------ the pass
def _find(program, entry, loop):
    try:
        fn = program.func(entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}' with a body", None) from None
    loops = [n for n in walk(fn.body) if isinstance(n, N.For) and n.var == loop]
    if not loops:
        raise PassError(NAME, f"no canonical loop over '{loop}' in '{entry}'", fn)
    if len(loops) > 1:
        raise PassError(NAME, f"loop variable '{loop}' names {len(loops)} loops in '{entry}'", loops[1])
    return fn, loops[0]


def _body_decls(loop: N.For) -> dict:
    return {s.name: s for s in loop.body.stmts if isinstance(s, N.Decl) and s.scope == "local"}


def check(program, *, entry: str, loop: str | None = None, vars=None, **_):
    if loop is None:
        raise PassError(NAME, "no loop given (parameter 'loop')", None, "XP4002")
    fn, lp = _find(program, entry, loop)
    decls = _body_decls(lp)
    names = list(vars) if vars else [n for n, d in decls.items() if not isinstance(d.type, N.Array) or d.init is None]
    if not names:
        raise PassError(NAME, f"loop '{loop}' declares no local variable to expand", lp, "XP4002")
    counts = {}
    for n in walk(fn.body):
        if isinstance(n, N.Decl):
            counts[n.name] = counts.get(n.name, 0) + 1
    for v in names:
        if v not in decls:
            raise PassError(NAME, f"'{v}' is not declared directly in the body of loop '{loop}'", lp)
        d = decls[v]
        if counts.get(v, 0) != 1 or v in {p.name for p in fn.params}:
            raise PassError(NAME, f"'{v}' is declared more than once in '{entry}'; expansion needs one name", d)
        if isinstance(d.init, N.InitList):
            raise PassError(NAME, f"'{v}' has an initializer list", d)
        if "static" in d.storage:
            raise PassError(NAME, f"'{v}' is static (shared by all iterations already)", d)
    if program.dialect in ("cuda", "hip", "bang") and not isinstance(trip_count(lp), N.Const):
        # the expanded array's length is the trip count: a cuda/hip/bang local array needs a
        # constant one (nvcc: "expression must have a constant value")
        raise PassError(NAME, f"loop '{loop}' has no constant trip count: an expanded local array of "
                              f"{program.dialect} needs a constant size", lp)
    return fn, lp, names


def apply(program, *, entry: str, loop: str | None = None, vars=None, **params):
    fn, lp, names = check(program, entry=entry, loop=loop, vars=vars, **params)
    decls = _body_decls(lp)
    chosen = {v: decls[v] for v in names}
    extent = trip_count(lp)
    body = expand_vars(lp.body.stmts, chosen, iteration_index(lp))
    new_loop = lp.with_(body=N.Block(body, loc=lp.body.loc))
    hoisted = tuple(expanded_decl(chosen[v], extent) for v in names)

    def replace_loop(stmts):
        out = []
        for s in stmts:
            if s is lp:
                out.extend(hoisted)
                out.append(new_loop)
            else:
                out.append(_descend(s))
        return tuple(out)

    def _descend(s):
        if isinstance(s, N.Block):
            return s.with_(stmts=replace_loop(s.stmts))
        if isinstance(s, (N.For, N.While)) or isinstance(s, N.CFor):
            b = s.body if isinstance(s.body, N.Block) else N.Block((s.body,))
            nb = _descend(b)
            return s if nb is b and b is s.body else s.with_(body=nb)
        if isinstance(s, N.If):
            t = _descend(s.then if isinstance(s.then, N.Block) else N.Block((s.then,)))
            e = s.else_
            if e is not None:
                e = _descend(e if isinstance(e, N.Block) else N.Block((e,)))
            return s.with_(then=t, else_=e)
        return s

    new_fn = fn.with_(body=N.Block(replace_loop(fn.body.stmts), loc=fn.body.loc))
    items = tuple(new_fn if it is fn else it for it in program.items)
    return program.with_(items=items)


def candidates(program, target: str) -> list[dict]:
    """Every (loop, its body's scalar locals) of every function body: expanding all of them is
    always legal when check passes; the search decides whether it pays."""
    out = []
    for fn in program.funcs:
        if fn.body is None:
            continue
        for lp in (n for n in walk(fn.body) if isinstance(n, N.For)):
            vs = [d.name for d in lp.body.stmts if isinstance(d, N.Decl) and d.scope == "local"
                  and not isinstance(d.init, N.InitList)]
            if not vs:
                continue
            params = {"entry": fn.name, "loop": lp.var, "vars": vs}
            try:
                check(program, **params)
            except PassError:
                continue
            out.append(params)
    return out
