"""Modulo indices as a loop nest: a loop that reads ``seg[i % m]`` becomes rows of ``m``.

BANG's cycle operations (``__bang_cycle_mul(dst, src, seg, n, m)``: ``dst[i] = src[i] * seg[i % m]``)
are lowered by detensorize as one flat loop over ``n`` elements with a ``%`` in the index. The x86
vectorizer (passes/tensorize.py) cannot give ``seg[i % m]`` contiguous loads, so the loop stays
scalar, with an integer division per element (layernorm.mlu, rmsnorm.mlu -> c). This step writes
``i = s * m + j`` with ``0 <= j < m``, so ``i % m`` is ``j``::

    for (i = 0; i < n; ++i) S(i, i % m)
      ->
    if (m > 0) {
        const int q = n / m;
        for (s = 0; s < q; ++s)
            for (j = 0; j < m; ++j) S(s * m + j, j)
        for (j = 0; j < n - q * m; ++j) S(q * m + j, j)        // the last, partial row
    } else {
        for (i = 0; i < n; ++i) S(i, i % m)                     // as written
    }

The rows visit ``i = 0 .. n - 1`` in the same order as the original loop (row s, then row s + 1;
the partial row last), so every statement runs with the same ``i`` in the same order: no
dependence question arises. For ``i >= 0`` and ``m > 0``, C's ``i % m`` is ``j``. ``n <= 0``:
``q <= 0`` and ``n - q * m <= 0`` (``q`` truncates toward zero), so nothing runs, as before.

Legality (each refusal is ``PassError`` XP4001 naming the loop; XP4002 when no loop qualifies):
the loop is sequential, starts at 0, steps by 1 and tests ``<``, its variable is declared in its
header as a signed ``int`` / ``long`` (the new variables take that type); ``n`` and ``m`` read no memory,
call nothing impure and name no variable the body assigns or declares (so both are the same at
every iteration); ``m`` does not name ``i``; the body does not assign ``i`` and has no ``break`` or
``continue`` of this loop (they would bind to the new inner loop). Parameters: ``entry`` (default:
every function), ``loop`` (a loop variable; default: every qualifying sequential loop; a bound
loop, e.g. the OpenMP task loop reading ``task % 4``, is not looked at unless named).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from .base import PassError, applying_steps
from .guard_loops import _assigned, _loose_exit, _reads_memory
from . import phases

NAME = "modulo_split"
INT = N.Scalar("int32", "int")


def _text(e) -> str:
    from xpiler.printers import printer_for
    return printer_for("c").expr(e)


def _is_int(e, v) -> bool:
    return isinstance(e, N.Const) and e.value == v and not isinstance(e.value, bool) and isinstance(e.value, int)


def _modulus(loop: N.For):
    """The ``m`` of the first ``i % m`` in the body (None when there is none)."""
    for n in walk(loop.body):
        if isinstance(n, N.BinOp) and n.op == "%" and isinstance(n.lhs, N.Var) and n.lhs.name == loop.var:
            return n.rhs
    return None


def _check(loop: N.For, m) -> None:
    if loop.binding is not None:
        raise PassError(NAME, f"loop '{loop.var}' is bound to {loop.binding}", loop)
    if loop.cmp != "<" or not _is_int(loop.lo, 0) or not _is_int(loop.step, 1):
        raise PassError(NAME, f"loop '{loop.var}' does not run 0, 1, ... (< n) by steps of 1", loop)
    ty = loop.var_type
    if not (isinstance(ty, N.Scalar) and ty.dtype in ("int32", "int64")):
        raise PassError(NAME, f"loop '{loop.var}' is not declared in its header as a signed int or long; the "
                              "row and column variables would need its type", loop)
    assigned = _assigned(loop.body)
    if loop.var in assigned:
        raise PassError(NAME, f"the body of loop '{loop.var}' assigns or redeclares '{loop.var}'", loop)
    for what, e in (("the bound", loop.hi), ("the modulus", m)):
        if _reads_memory(e) or not phases._pure(e):
            raise PassError(NAME, f"{what} '{_text(e)}' of loop '{loop.var}' reads memory or calls a function", loop)
        changed = {x.name for x in walk(e) if isinstance(x, N.Var)} & assigned
        if changed:
            raise PassError(NAME, f"{what} '{_text(e)}' names '{sorted(changed)[0]}', which the body of "
                                  f"loop '{loop.var}' assigns", loop)
    if loop.var in {x.name for x in walk(m) if isinstance(x, N.Var)}:
        raise PassError(NAME, f"the modulus '{_text(m)}' names the loop variable '{loop.var}'", loop)
    bad = _loose_exit(loop.body)
    if bad is not None:
        raise PassError(NAME, f"the body of loop '{loop.var}' breaks or continues it; the exit would bind to "
                              "the new inner loop", bad)


def _split(loop: N.For, m, fresh) -> N.Stmt:
    mt = _text(m)
    s, j, q = fresh("xp_row"), fresh("xp_col"), fresh("xp_rows")
    ty = loop.var_type or INT

    def body_at(base):
        def fold(n):
            if isinstance(n, N.BinOp) and n.op == "%" and isinstance(n.lhs, N.Var) and n.lhs.name == loop.var \
                    and _text(n.rhs) == mt:
                return N.Var(j)
            return n
        b = rewrite(loop.body, fold)
        return substitute(b, {loop.var: N.BinOp("+", base, N.Var(j))})

    zero, one = N.Const(0, "int32", "0"), N.Const(1, "int32", "1")
    inner = N.For(j, zero, m, one, body_at(N.BinOp("*", N.Var(s), m)), var_type=ty, loc=loop.loc)
    rows = N.For(s, zero, N.Var(q), one, N.Block((inner,), loc=loop.loc), var_type=ty, loc=loop.loc)
    tail = N.For(j, zero, N.BinOp("-", loop.hi, N.BinOp("*", N.Var(q), m)), one,
                 body_at(N.BinOp("*", N.Var(q), m)), var_type=ty, loc=loop.loc)
    split = N.Block((N.Decl(q, _const(ty), N.BinOp("/", loop.hi, m), loc=loop.loc), rows, tail), loc=loop.loc)
    return N.If(N.BinOp(">", m, zero), split, N.Block((loop,), loc=loop.loc), loc=loop.loc)


def _const(ty):
    from dataclasses import replace
    return replace(ty, const=True) if isinstance(ty, N.Scalar) else ty


def _fresh_factory(fn):
    names = {n.name for n in walk(fn) if isinstance(n, (N.Var, N.Decl))} | {n.var for n in walk(fn) if isinstance(n, N.For)}
    counter = [0]

    def fresh(base):
        while f"{base}{counter[0]}" in names:
            counter[0] += 1
        name = f"{base}{counter[0]}"
        names.add(name)
        counter[0] += 1
        return name
    return fresh


def apply(program, *, entry: str | None = None, loop: str | None = None, **_):
    refusal, done, items = None, 0, []
    for it in program.items:
        if not isinstance(it, N.Func) or it.body is None or entry is not None and it.name != entry:
            items.append(it)
            continue
        fresh = _fresh_factory(it)
        originals = set()

        def one(n):
            nonlocal refusal, done
            if not isinstance(n, N.For) or id(n) in originals or loop is not None and n.var != loop:
                return n
            if n.binding is not None and loop is None:   # a parallel loop is not a row of elements
                return n
            m = _modulus(n)
            if m is None:
                return n
            try:
                _check(n, m)
            except PassError as e:
                refusal = refusal or e
                return n
            originals.add(id(n))
            done += 1
            return _split(n, m, fresh)
        items.append(rewrite(it, one))
    if not done:
        if refusal is not None:
            raise refusal
        raise PassError(NAME, "no loop indexes by its own variable modulo a loop-invariant value", None, "XP4002")
    return program.with_(items=tuple(items))


check, candidates = applying_steps(apply)
