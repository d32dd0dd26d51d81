"""Guards as loop bounds: an ``if`` around loops in the body of a row loop becomes a loop itself.

``binding(rows="block")`` (passes/block_rows.py) spreads the loops that are statements of the
row body over the block's threads and refuses a loop nested in an ``if``. A vector kernel's
masked tail is exactly that (``if (tail) { for (l = 0; l < 16; ++l) ... }``). This step rewrites
each ``if`` without ``else`` among the row body's statements whose branch holds a loop:

* the branch is one loop (possibly inside nested braces) and the condition ``C`` reads no memory,
  calls nothing impure and names no variable the loop assigns::

      if (C) { for (l = lo; l < hi; l += s) S }   ->   for (l = lo; l < (C ? hi : lo); l += s) S

  (``C`` false: no iteration, as before; ``C`` cannot change while the loop runs);
* otherwise the branch runs in a loop of at most one iteration, ``C`` side-effect free::

      if (C) { S }   ->   for (int g = 0; g < (C ? 1 : 0); ++g) { S }

  (after one iteration ``g = 1`` is never below the bound); refused when ``S`` holds a ``break``
  or ``continue`` outside its own loops (they would bind to the new loop).

Parameters: ``entry``, ``loop`` (the row loop's variable; default: the only top-level loop of
the entry). Refusals: ``PassError`` XP4001 naming the ``if``; XP4002 when no such ``if`` exists.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .base import PassError
from . import phases

NAME = "guard_loops"


def _loops(s) -> bool:
    return any(isinstance(n, (N.For, N.CFor, N.While)) for n in walk(s))


def _only_loop(s):
    """The single loop of the branch ``s`` (through nested braces and comments), or None."""
    while isinstance(s, N.Block):
        body = [x for x in s.stmts if not isinstance(x, (N.Comment, N.Pragma))]
        if len(body) != 1:
            return None
        s = body[0]
    return s if isinstance(s, N.For) and s.binding is None and s.cmp == "<" else None


def _reads_memory(e) -> bool:
    return any(isinstance(n, (N.Index, N.Member, N.Call, N.Intrinsic)) or isinstance(n, N.UnOp) and n.op == "*"
               for n in walk(e))


def _assigned(s) -> set:
    out = set()
    for n in walk(s):
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            out.add(n.target.name)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
            out.add(n.operand.name)
        elif isinstance(n, N.Decl):
            out.add(n.name)
        elif isinstance(n, N.For):
            out.add(n.var)
    return out


def _loose_exit(s) -> N.Node | None:
    """A break / continue of ``s`` not inside one of its own loops (or switches)."""
    if isinstance(s, (N.Break, N.Continue)):
        return s
    if isinstance(s, (N.For, N.CFor, N.While)) or type(s).__name__ in ("Switch", "DoWhile"):
        return None
    if isinstance(s, N.Node):
        for c in s.children():
            if isinstance(c, N.Stmt):
                got = _loose_exit(c)
                if got is not None:
                    return got
            elif isinstance(c, tuple):
                for x in c:
                    if isinstance(x, N.Stmt):
                        got = _loose_exit(x)
                        if got is not None:
                            return got
    return None


def _row(fn, loop):
    tops = [s for s in fn.body.stmts if isinstance(s, N.For)]
    if loop is None:
        if len(tops) != 1:
            raise PassError(NAME, f"'{fn.name}' has {len(tops)} top-level loops; name the row loop (loop=)", fn, "XP4002")
        return tops[0]
    for s in tops:
        if s.var == loop:
            return s
    raise PassError(NAME, f"no top-level loop '{loop}' in '{fn.name}'", fn, "XP4002")


def _one(s: N.If, fn, counter):
    if s.else_ is not None:
        raise PassError(NAME, "an 'if' with an 'else' around loops has no loop form here", s)
    if not phases._pure(s.cond):
        raise PassError(NAME, "the condition of the 'if' has side effects", s)
    lp = _only_loop(s.then)
    if lp is not None and not _reads_memory(s.cond) and not ({n.name for n in walk(s.cond) if isinstance(n, N.Var)}
                                                               & _assigned(lp)):
        return lp.with_(hi=N.Cond(s.cond, lp.hi, lp.lo), loc=s.loc)
    bad = _loose_exit(s.then)
    if bad is not None:
        raise PassError(NAME, "the branch breaks or continues outside its own loops", bad)
    names = {n.name for n in walk(fn) if isinstance(n, (N.Var, N.Decl))} | {n.var for n in walk(fn) if isinstance(n, N.For)}
    while f"xp_guard{counter[0]}" in names:
        counter[0] += 1
    g = f"xp_guard{counter[0]}"
    counter[0] += 1
    one, zero = N.Const(1, "int32", "1"), N.Const(0, "int32", "0")
    body = s.then if isinstance(s.then, N.Block) else N.Block((s.then,), loc=s.loc)
    return N.For(g, zero, N.Cond(s.cond, one, zero), one, body, var_type=N.Scalar("int32", "int"), loc=s.loc)


def apply(program, *, entry: str, loop: str | None = None, **_):
    try:
        fn = program.func(entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}' with a body", None, "XP4002") from None
    row = _row(fn, loop)
    counter, changed, stmts = [0], False, []
    for s in row.body.stmts:
        if isinstance(s, N.If) and _loops(s):
            stmts.append(_one(s, fn, counter))
            changed = True
        else:
            stmts.append(s)
    if not changed:
        raise PassError(NAME, f"no 'if' around loops in the body of loop '{row.var}'", row, "XP4002")
    new_row = row.with_(body=row.body.with_(stmts=tuple(stmts)))
    new_fn = fn.with_(body=fn.body.with_(stmts=tuple(new_row if s is row else s for s in fn.body.stmts)))
    return program.with_(items=tuple(new_fn if it is fn else it for it in program.items))


def candidates(program, target: str | None = None) -> list[dict]:
    out = []
    for fn in program.funcs:
        if fn.body is None:
            continue
        for s in fn.body.stmts:
            if isinstance(s, N.For):
                try:
                    apply(program, entry=fn.name, loop=s.var)
                except PassError:
                    continue
                out.append({"entry": fn.name, "loop": s.var})
    return out
