"""A local buffer filled by a copy nest and then only read: each read becomes the copied element.

A BANG source stages its operands on chip (``__memcpy`` into NRAM / WRAM) before a vector op;
after detensorize and loop recovery, its c form copies them into local arrays first, e.g.
gemv.mlu::

    for (int k0 = 0; k0 < K; k0 += BK) {
        const int kb = ...;
        for (j3 = 0; j3 < kb; ++j3) x_chunk[j3] = (x + k0)[j3];
        for (s5 = 0; s5 < mb - 1 + 1; ++s5) for (j4 = 0; j4 < kb; ++j4)
            w_tile[s5 * kb + j4] = (A + m0 * K + k0)[s5 * K + j4];
        ... for (n6 = 0; n6 < mb; ++n6) { ...; for (k7 = 0; k7 < kb; ++k7)
                acc += x_chunk[k7] * w_tile[n6 * kb + k7]; ... }
    }

On the CPU that copy is one more pass over the data. In the statement list holding it, the copy
goes and every read ``W[n6 * kb + k7]`` becomes the copied value ``(A + m0 * K + k0)[n6 * K + k7]``,
which tensorize then reads directly (and x86_rows takes eight rows at a time).

Exact when (all checked; the loop is left as it is otherwise):

* ``W`` is a local array declared once, used only as ``W[...]`` (no pointer to it), written only by
  the copy nest ``C``, and read only in the statements after ``C`` in the same list: every read
  sees what ``C`` wrote in the same execution of the list;
* ``C`` is ``for (s = 0; s < E1; ++s) for (j = 0; j < E2; ++j) W[s * E2 + j] = V(s, j)`` (or one
  loop, ``W[j] = V(j)``), whose subscript (compared as a polynomial) writes each element once, and
  ``V`` is effect-free and reads only buffers the function never writes;
* each read is ``W[i]`` with ``i`` equal (as a polynomial) to the copy's subscript at ``s := a,
  j := b``, where ``a`` and ``b`` are the counters of loops around the read ``for (a = 0; a < E1'; ++a)``,
  ``E1'`` equal to ``E1`` (and ``E2'`` to ``E2``) as polynomials: the element was written by
  iteration ``(a, b)``, so it holds ``V(a, b)``;
* no variable that ``V``, ``E1`` or ``E2`` reads is assigned in the statements after ``C`` (nor
  the read loops' counters inside them), so ``V(a, b)`` evaluated at the read is the value copied.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from . import common as U
from . import polyz as PZ
from .x86_rows import _pure


class NoForward(Exception):
    pass


def _vars(e) -> set:
    return {n.name for n in walk(e) if isinstance(n, N.Var)}


def _unwrap(s):
    while isinstance(s, N.Block):
        items = [x for x in s.stmts if not isinstance(x, N.Comment)]
        if len(items) != 1:
            return s
        s = items[0]
    return s


def _canon(loop) -> bool:
    return isinstance(loop, N.For) and loop.binding is None and loop.cmp == "<" and \
        isinstance(loop.lo, N.Const) and loop.lo.value == 0 and isinstance(loop.step, N.Const) and loop.step.value == 1


def _peq(a, b) -> bool:
    try:
        return PZ.poly(a) == PZ.poly(b)
    except PZ.NotPoly:
        return False


def _copy(s):
    """``(W, [(s, E1)], (j, E2), index, V)`` when ``s`` is a copy nest (see the docstring), else None."""
    s = _unwrap(s)
    if not _canon(s):
        return None
    loops = [s]
    inner = _unwrap(s.body)
    if _canon(inner):
        loops.append(inner)
        inner = _unwrap(inner.body)
    if not (isinstance(inner, N.Assign) and inner.op == "=" and isinstance(inner.target, N.Index)
            and isinstance(inner.target.base, N.Var)):
        return None
    W, idx = inner.target.base.name, inner.target.index
    j = loops[-1]
    want = N.Var(j.var) if len(loops) == 1 else N.BinOp("+", N.BinOp("*", N.Var(loops[0].var), j.hi), N.Var(j.var))
    if not _peq(idx, want):
        return None
    return W, loops, idx, inner.value


def _loops_around(root, target):
    """The For loops from ``root`` down to ``target`` (a node), outermost first, else None."""
    def rec(n, path):
        if n is target:
            return path
        kids = []
        for f in getattr(n, "__dataclass_fields__", {}):
            v = getattr(n, f)
            if isinstance(v, N.Node):
                kids.append(v)
            elif isinstance(v, tuple):
                kids += [x for x in v if isinstance(x, N.Node)]
        for k in kids:
            r = rec(k, path + [n] if isinstance(n, N.For) else path)
            if r is not None:
                return r
        return None
    return rec(root, [])


def forward_block(func, stmts: list):
    """``stmts`` with each forwardable copy nest gone and its reads replaced, and whether any was."""
    bufs = {p.name for p in func.params if isinstance(p.type, N.Pointer)} | \
        {n.name for n in walk(func.body) if isinstance(n, N.Decl) and isinstance(n.type, (N.Pointer, N.Array))}
    written_bufs = set()
    for n in walk(func.body):
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Index):
            b = n.target
            while isinstance(b, N.Index):
                b = b.base
            written_bufs |= _vars(b) & bufs
    decls = {}
    for n in walk(func.body):
        if isinstance(n, N.Decl):
            decls.setdefault(n.name, []).append(n)
    lets = U.decl_lets(func)
    changed = False
    i = 0
    while i < len(stmts):
        c = _copy(stmts[i])
        if c is None:
            i += 1
            continue
        W, loops, idx, V = c
        new = _forward_one(func, stmts, i, W, loops, V, written_bufs, decls, lets, bufs)
        if new is None:
            i += 1
            continue
        stmts, changed = new, True
    return stmts, changed


def _roots(e, lets):
    """Buffer names an expression's memory reads go through (pointer lets followed)."""
    out = set()
    for n in walk(e):
        if isinstance(n, N.Index):
            b = n.base
            while isinstance(b, N.Index):
                b = b.base
            for v in _vars(b):
                out.add(v)
                seen = set()
                while v in lets and v not in seen:
                    seen.add(v)
                    more = _vars(lets[v])
                    out |= more
                    v = next(iter(more)) if len(more) == 1 else v
    return out


def _forward_one(func, stmts, i, W, loops, V, written_bufs, decls, lets, bufs):
    d = decls.get(W, [])
    if len(d) != 1 or not isinstance(d[0].type, N.Array) or d[0].scope not in (None, "", "local"):
        return None
    if not _pure(V) or ((_roots(V, lets) & bufs) & (written_bufs - {W})) or W in _vars(V):
        return None
    # every use of W is W[...]; its writes are the copy's only
    uses = [n for n in walk(func.body) if isinstance(n, N.Var) and n.name == W]
    bases = [n for n in walk(func.body) if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name == W]
    if len(uses) != len(bases):
        return None
    writes = [n for n in walk(func.body) if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Index)
              and isinstance(n.target.base, N.Var) and n.target.base.name == W]
    if len(writes) != 1 or not any(w is x for w in writes for x in walk(stmts[i])):
        return None
    after = N.Block(tuple(stmts[i + 1:]))
    reads = [n for n in walk(after) if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name == W]
    outside = [n for n in bases if not any(n is r for r in reads) and not any(n is w.target for w in writes)]
    if outside or not reads:
        return None
    free = _vars(V) | {v for l in loops for v in _vars(l.hi)}
    free -= {l.var for l in loops}
    if free & U.assigned_names(after):
        return None
    svars = [l.var for l in loops]
    repl = {}
    for r in reads:
        path = _loops_around(after, r)
        if path is None:
            return None
        cand = [l for l in path if _canon(l)]
        found = None
        # the read's loops that stand for the copy's (s, j): bounds equal, counters never assigned
        from itertools import permutations
        for pick in permutations(cand, len(loops)):
            if not all(_peq(p.hi, l.hi) for p, l in zip(pick, loops)):
                continue
            if any(p.var in U.assigned_names(p.body) for p in pick):
                continue
            sub = {s: N.Var(p.var) for s, p in zip(svars, pick)}
            want = substitute(writes[0].target.index, sub)
            if _peq(r.index, want):
                found = sub
                break
        if found is None:
            return None
        repl[id(r)] = substitute(V, found)
    new_after = rewrite(after, lambda n: repl.get(id(n), n))
    return stmts[:i] + list(new_after.stmts)


def forward_loop(func, loop):
    """``loop`` with its body's copy nests forwarded (recursively in nested blocks), else None."""
    if not isinstance(loop, N.For):
        return None
    stmts, changed = forward_block(func, list(loop.body.stmts))
    if not changed:
        return None
    return loop.with_(body=N.Block(tuple(stmts)))
