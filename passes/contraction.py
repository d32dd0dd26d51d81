"""Contraction: the inverse of expansion — a per-iteration array back into a scalar (register).

After fusion (or after loop recovery when two phases end up in one loop) a temporary that was
expanded into one element per iteration may only be used inside one iteration.  Contraction
replaces that array by one scalar declared in the loop body.

Before (``apply(p, entry="f", array="t")``)::

    float t[n];
    for (int i = 0; i < n; ++i) {
        t[i] = x[i] * 2.0f;
        y[i] = t[i] + 1.0f;
    }

After::

    for (int i = 0; i < n; ++i) {
        float t = x[i] * 2.0f;
        y[i] = t + 1.0f;
    }

Legality (:func:`check`, a simple dependence / liveness test): the array is a local of the
function, declared once, one-dimensional and without initializer; every use is ``a[e]`` with
one and the same index expression ``e`` (no bare ``a`` passed on, no other index); all uses lie
in the body of one loop ``L`` (the innermost loop holding them all) and no variable of ``e`` is
written inside ``L``'s body; and the first statement of ``L``'s body that touches ``a`` is the
plain store ``a[e] = v`` (not under a condition, ``v`` not reading ``a``).  Then every read of
an iteration sees the value that iteration wrote, nothing flows between iterations, and the
array is dead after ``L``: one scalar suffices.

``mode="lanes"``: a lane-array accumulator (``acc[l] = acc[l] OP f`` in lane loops, then a horizontal
reduction over the lanes) becomes one scalar reduction; see ``passes/lane_accumulators.py``.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError

NAME = "contraction"


def _fn(program, entry):
    try:
        return program.func(entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}' with a body", None) from None


def _paths(node, pred, path=()):
    """(path of enclosing statements, node) for every node below ``node`` matching ``pred``; the
    path lists the For/CFor/While/If/Block statements from the outside in."""
    out = []
    if isinstance(node, tuple):
        for x in node:
            out.extend(_paths(x, pred, path))
        return out
    if not isinstance(node, N.Node):
        return out
    if pred(node):
        out.append((path, node))
    p2 = path + (node,) if isinstance(node, (N.For, N.CFor, N.While, N.If, N.Block)) else path
    for c in node.children():
        out.extend(_paths(c, pred, p2))
    return out


def _written(node) -> set:
    out = set()
    for n in walk(node):
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            out.add(n.target.name)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
            out.add(n.operand.name)
        elif isinstance(n, N.Decl):
            out.add(n.name)
    return out


def _touches(node, name) -> bool:
    return any(isinstance(n, N.Var) and n.name == name for n in walk(node))


def _scope_of(fn, decls, loop, array):
    """The declaration of ``array`` whose block holds the loop named ``loop`` (when the name is
    declared more than once, e.g. once per lane group of a detensorized kernel), and that block."""
    from .dependence import find_loop
    lp = find_loop(fn, loop)
    if lp is None:
        raise PassError(NAME, f"no loop '{loop}' in '{fn.name}'", fn)
    for d in decls:
        blk = next((b for b in walk(fn.body) if isinstance(b, N.Block) and any(s is d for s in b.stmts)), None)
        if blk is not None and any(x is lp for x in walk(blk)):
            inner = [x for x in walk(blk) if isinstance(x, N.Decl) and x.name == array and x is not d]
            if inner:
                raise PassError(NAME, f"'{array}' is declared again inside the scope of its declaration", inner[0])
            return d, blk
    raise PassError(NAME, f"no declaration of '{array}' encloses loop '{loop}'", lp)


def check(program, *, entry: str, array: str | None = None, loop=None, **_):
    """Returns (function, the array's Decl, the loop L, the index expression). ``loop`` (a loop
    reference, only needed when ``array`` is declared more than once): the declaration whose
    block holds that loop is the one contracted; only the uses in that block are its uses."""
    if _.get("mode") == "lanes":       # mode="lanes": passes/lane_accumulators.py
        from . import lane_accumulators
        return lane_accumulators.plan(program, entry=entry, array=array)
    if array is None:
        raise PassError(NAME, "no array given (parameter 'array')", None, "XP4002")
    fn = _fn(program, entry)
    decls = [n for n in walk(fn.body) if isinstance(n, N.Decl) and n.name == array]
    if not decls:
        raise PassError(NAME, f"no local array '{array}' in '{entry}'", fn)
    scope = None
    if len(decls) > 1 and loop is None:
        raise PassError(NAME, f"'{array}' is declared {len(decls)} times in '{entry}' (name one by loop=)", decls[1])
    if len(decls) > 1:
        d, scope = _scope_of(fn, decls, loop, array)
    else:
        d = decls[0]
    if not isinstance(d.type, N.Array) or d.scope != "local":
        raise PassError(NAME, f"'{array}' is not a local array", d)
    if len(d.type.dims) != 1 or d.init is not None:
        raise PassError(NAME, f"'{array}' is multi-dimensional or initialized; only 1-D temporaries contract", d)
    uses = _paths(fn.body, lambda n: isinstance(n, N.Var) and n.name == array)
    idx = _paths(fn.body, lambda n: isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name == array)
    if scope is not None:       # the other declarations' uses are not this array's
        mine = {id(x) for x in walk(scope)}
        uses = [u for u in uses if id(u[1]) in mine]
        idx = [u for u in idx if id(u[1]) in mine]
    if not idx:
        raise PassError(NAME, f"'{array}' is never used", d, "XP4002")
    if len(idx) != len(uses):
        raise PassError(NAME, f"'{array}' is used other than as '{array}[...]' (its address escapes)", d)
    index = idx[0][1].index
    for _, n in idx:
        if n.index != index:
            raise PassError(NAME, f"'{array}' is accessed at two different indices; an element written by one "
                                  "iteration may be read by another", n)
    # the innermost loop that holds every access
    common = None
    for path, _ in idx:
        loops = [s for s in path if isinstance(s, (N.For, N.CFor, N.While))]
        if common is None:
            common = loops
        else:
            k = 0
            while k < min(len(common), len(loops)) and common[k] is loops[k]:
                k += 1
            common = common[:k]
    if not common:
        raise PassError(NAME, f"the uses of '{array}' are not all inside one loop", d)
    loop = common[-1]
    body = loop.body if isinstance(loop.body, N.Block) else N.Block((loop.body,))
    changed = _written(body)
    from xpiler.ir.visit import vars_used
    if vars_used(index) & changed:
        raise PassError(NAME, f"the index of '{array}' changes inside the loop body", loop)
    first = next((s for s in body.stmts if _touches(s, array)), None)
    if not (isinstance(first, N.Assign) and first.op == "=" and isinstance(first.target, N.Index)
            and isinstance(first.target.base, N.Var) and first.target.base.name == array
            and not _touches(first.value, array)):
        raise PassError(NAME, f"the first use of '{array}' in each iteration is not an unconditional store "
                              f"'{array}[...] = ...'; a value could flow between iterations", first or loop)
    return fn, d, loop, index


def apply(program, *, entry: str, array: str | None = None, **params):
    if params.get("mode") == "lanes":     # a lane-array accumulator -> one scalar reduction
        from . import lane_accumulators
        return lane_accumulators.apply(program, entry=entry, array=array)
    if params.get("mode") not in (None, "array"):
        raise PassError(NAME, f"unknown mode {params.get('mode')!r} (modes: 'array', 'lanes')", None, "XP4002")
    fn, d, loop, index = check(program, entry=entry, array=array, **params)
    body = loop.body if isinstance(loop.body, N.Block) else N.Block((loop.body,))

    def scalarize(n):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name == array and n.index == index:
            return N.Var(array, loc=n.loc)
        return n

    stmts = []
    done = False
    for s in body.stmts:
        if not done and isinstance(s, N.Assign) and isinstance(s.target, N.Index) and \
                isinstance(s.target.base, N.Var) and s.target.base.name == array:
            stmts.append(N.Decl(array, d.type.elem, s.value, "local", loc=s.loc))
            done = True
            continue
        stmts.append(rewrite(s, scalarize))
    new_loop = loop.with_(body=N.Block(tuple(stmts), loc=body.loc))

    def rebuild(node):
        # replace the loop (by identity), drop the array's declaration
        if node is loop:
            return new_loop
        if isinstance(node, N.Block):
            return node.with_(stmts=tuple(rebuild(s) for s in node.stmts if s is not d))
        if isinstance(node, (N.For, N.While, N.CFor)):
            b = node.body
            nb = rebuild(b)
            return node if nb is b else node.with_(body=nb)
        if isinstance(node, N.If):
            t = rebuild(node.then)
            e = rebuild(node.else_) if node.else_ is not None else None
            return node.with_(then=t, else_=e)
        return node

    new_fn = fn.with_(body=rebuild(fn.body))
    return program.with_(items=tuple(new_fn if it is fn else it for it in program.items))


def candidates(program, target: str) -> list[dict]:
    """Every local 1-D array of every function that passes :func:`check`."""
    out = []
    for fn in program.funcs:
        if fn.body is None:
            continue
        for n in walk(fn.body):
            if isinstance(n, N.Decl) and isinstance(n.type, N.Array) and n.scope == "local":
                same = sum(1 for x in walk(fn.body) if isinstance(x, N.Decl) and x.name == n.name)
                try:
                    if same == 1:
                        check(program, entry=fn.name, array=n.name)
                        out.append({"entry": fn.name, "array": n.name})
                        continue
                    # declared more than once: name this declaration by a loop in its block
                    blk = next(b for b in walk(fn.body) if isinstance(b, N.Block) and any(s is n for s in b.stmts))
                    lp = next((x for x in walk(blk) if isinstance(x, N.For)), None)
                    if lp is None:
                        continue
                    from .dependence import loop_ref
                    ref = loop_ref(fn, lp)
                    check(program, entry=fn.name, array=n.name, loop=ref)
                    out.append({"entry": fn.name, "array": n.name, "loop": ref})
                except PassError:
                    continue
    return out
