"""Shared-memory un-staging (the SIMT side of passes/decache.py): a read-only global slice that
the threads of a block copied cooperatively into shared memory (LDS) is read from global memory
again, and the staging copy disappears.

After loop recovery a block that staged, say, one filter of a convolution looks like::

    for (int bx = 0; bx < nbx; ++bx) {
        float filt[...];                                   // the block's shared array
        int co = row % Cout;
        for (int tx = 0; tx < 64; ++tx)                    // the staging phase
            for (int e = tx; e < Cin * KW; e += 64)
                filt[e] = weight[(long)co * Cin * KW + e];
        for (int tx = 0; tx < 64; ++tx) { ... sum += x[ci * L + k] * filt[ci * KW + k]; ... }
    }

:func:`unshare` rewrites every read ``filt[i]`` after the staging phase into the staged value at
``i`` (``weight[(long)co * Cin * KW + (ci * KW + k)]``) and deletes the staging phase and the
array, so the block has one phase left that the partition normalization of loop recovery (and
after it the cache and tensorize passes of any target) can read as a plain loop nest.

Legality (all must hold, else the block is kept as it is and the reason is noted):

* the staging phase is a nest of one or two constant-extent thread loops ``t1 < T1``
  (``t2 < T2``) whose innermost body holds at most a lane declaration ``lane = t1 * T2 + t2``
  and copy loops ``for (e = lane; e < E; e += T1 * T2) S[e] = V(e);`` (pure scalar
  declarations may precede the store). The lanes ``0 .. T1*T2-1`` each start once and stride by
  their number, so every ``e`` in ``[0, E)`` is written exactly once and nothing else is;
* ``S`` is an array declared (without initializer) in the same block before the phase and is
  named nowhere but in its declaration, that store and element reads ``S[i]`` in the
  statements after the phase (no second write, no pointer taken into it);
* ``V`` reads memory only through pointer parameters that the function never stores through,
  calls nothing but math, and depends on ``e`` and on names fixed for the whole block (kernel
  parameters no statement assigns, loops around the block, pure declarations of the block made
  before the phase): none of them is assigned, re-declared or used as a loop variable after
  the phase, so ``V(i)`` at a read is the value the phase stored at ``i``;
* at every read ``S[i]``, ``0 <= i < E`` is proved by Z3 under the ranges of the loops and the
  branch conditions around the read (pure declarations on the way are used as definitions): the
  element read is one the phase wrote.

With these, each read returns exactly the value it returned before (the staged value of that
element, converted to the array's element type, which the rewrite keeps with a cast when the
types differ), and the phase wrote nothing else, so dropping it changes no result.
"""
from __future__ import annotations

import sys

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import rewrite, substitute, walk

from . import dependence as D
from .decache import _count, _is_int, _pure, _vars   # the same helpers as the BANG un-staging

NAME = "unshare"


class Refused(Exception):
    """This block is not un-shared; the message says why."""


_OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}


def _real(stmts) -> list:
    return [s for s in stmts if not isinstance(s, N.Comment)]


class _Ctx:
    def __init__(self, fn: N.Func, program, assume: tuple = ()):
        self.fn = fn
        self.params = {p.name: p.type for p in fn.params}
        self.decls = {}
        for d in walk(fn.body):
            if isinstance(d, N.Decl):
                self.decls.setdefault(d.name, []).append(d)
        self.loopvars = {}
        for l in walk(fn.body):
            if isinstance(l, N.For):
                self.loopvars[l.var] = self.loopvars.get(l.var, 0) + 1
        # names changed by a statement (loop variables are not counted here: they are fixed in
        # their body, and the block's enclosing loops are passed separately)
        self.assigned = D.assigned_names(fn.body) - {l.var for l in walk(fn.body) if isinstance(l, N.For)}
        self.macros = {m.name: m for m in (program.macros if program is not None else ())}
        self.stored = set()       # pointer parameters stored through (directly or by an alias)
        ptr_params = {p for p, t in self.params.items() if isinstance(t, N.Pointer)}
        for n in walk(fn.body):
            tgt = n.target if isinstance(n, (N.Assign, N.AssignExpr)) else None
            if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
                tgt = n.operand
            if tgt is not None and not isinstance(tgt, N.Var):
                for v in _vars(tgt):
                    self.stored |= self.roots(v, ptr_params)
        # the spec's preconditions on integer parameters that keep their value (never assigned,
        # re-declared or used as a loop variable): facts of every proof
        self.facts = []
        def fixed(name):
            t = self.params.get(name)
            return isinstance(t, N.Scalar) and t.dtype in D.INT_DTYPES and name not in self.assigned and \
                name not in self.decls and name not in self.loopvars
        for name, op, k in assume:
            if fixed(name) and op in _OPS and (isinstance(k, int) or fixed(k)):
                self.facts.append(lambda env, name=name, op=op, k=k: _OPS[op](
                    z3.Int(name), k if isinstance(k, int) else z3.Int(k)))

    def roots(self, v, ptr_params, seen=()) -> set:
        """The pointer parameters a name may point into (all of them when that is not known)."""
        if v in self.params and v not in self.decls:
            return {v} if v in ptr_params else set()
        ds = self.decls.get(v, [])
        if not ds and v not in self.params:
            return set()        # a loop variable or a macro: no pointer
        if ds and all(isinstance(d.type, N.Scalar) for d in ds):
            return set()        # an integer (an index), however often declared
        if len(ds) == 1 and not isinstance(ds[0].type, (N.Pointer, N.Array)):
            return set()
        if len(ds) == 1 and isinstance(ds[0].type, N.Array):
            return set()
        if len(ds) == 1 and ds[0].init is not None and v not in self.assigned and v not in seen:
            out = set()
            for w in _vars(ds[0].init):
                out |= self.roots(w, ptr_params, seen + (v,))
            return out
        return set(ptr_params)

    def stable(self, e) -> bool:
        """No name of ``e`` is changed by an assignment anywhere in the function."""
        return not (_vars(e) & self.assigned)

    def env(self, lets: dict) -> D.Z3Env:
        return D.Z3Env(loopvars=set(), lets=dict(lets), macros=self.macros, int_params=set(), varying=set())

    def proves(self, hyps, goal_fn, lets: dict) -> bool:
        env = self.env(lets)
        try:
            hs = [h(env) for h in hyps]
            g = goal_fn(env)
        except Exception:           # an expression Z3 cannot take: not proven
            return False
        s = smt.solver(D.TIMEOUT_MS)
        s.add(*env.cons)
        s.add(*[f(env) for f in self.facts])
        s.add(*hs)
        s.add(z3.Not(g))
        return s.check() == z3.unsat


class _Copy:
    """One copy loop ``for (e = lane; e < E; e += T) { lets; [if (g)] P[e] = V; }`` (``P`` the
    block's array or a pointer into it)."""

    def __init__(self, loop: N.For, lane, total: int, ctx: _Ctx, lane_lets: dict):
        self.loop = loop
        if not (isinstance(loop.lo, N.Var) and loop.lo.name == lane):
            raise Refused(f"copy loop '{loop.var}' does not start at the thread's lane")
        if not ctx.proves([], lambda env: D.to_z3(loop.step, "a", env) == total, {}):
            raise Refused(f"copy loop '{loop.var}' does not stride by the {total} lanes of the block")
        body = _real(loop.body.stmts)
        lets = {}
        for s in body[:-1]:
            if not (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None and _pure(s.init)):
                raise Refused(f"copy loop '{loop.var}' holds more than declarations and one store")
            lets[s.name] = substitute(s.init, lets)
        st = body[-1] if body else None
        self.guard = None
        if isinstance(st, N.If) and st.else_ is None and _pure(st.cond):
            inner = _real(st.then.stmts) if isinstance(st.then, N.Block) else [st.then]
            if len(inner) == 1:
                self.guard, st = substitute(st.cond, lets), inner[0]
        if not (isinstance(st, N.Assign) and st.op == "=" and isinstance(st.target, N.Index) and
                isinstance(st.target.base, N.Var) and isinstance(st.target.index, N.Var) and
                st.target.index.name == loop.var):
            raise Refused(f"copy loop '{loop.var}' does not end in one store 'S[{loop.var}] = ...'")
        self.pointer = st.target.base.name
        self.array = self.pointer           # the array it points into (set by the block)
        self.var = loop.var
        self.extent = loop.hi
        self.value = substitute(st.value, lets)
        names = _vars(self.value) | _vars(self.guard) if self.guard is not None else _vars(self.value)
        if lane in names or set(lane_lets) & names or lane in _vars(self.extent):
            raise Refused(f"the value staged into '{self.pointer}' depends on the thread")
        for n in walk((self.value, self.guard) if self.guard is not None else self.value):
            if isinstance(n, (N.Call, N.AssignExpr, N.Comma, N.Member)) or (
                    isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&")) or (
                    isinstance(n, N.Intrinsic) and (REGISTRY.get(n.name) is None or
                                                    REGISTRY[n.name].category != "math")):
                raise Refused(f"the value staged into '{self.pointer}' is not a plain read of global memory")
            if isinstance(n, N.Index) or (isinstance(n, N.UnOp) and n.op == "*"):
                base = n.base if isinstance(n, N.Index) else n.operand
                ptrs = {v for v in _vars(base) if isinstance(
                    ctx.params.get(v) if v not in ctx.decls else ctx.decls[v][0].type, (N.Pointer, N.Array))}
                ptr_params = {p for p, t in ctx.params.items() if isinstance(t, N.Pointer)}
                roots = set()
                for v in ptrs:
                    if v in ctx.decls and (len(ctx.decls[v]) != 1 or isinstance(ctx.decls[v][0].type, N.Array)):
                        roots.add("?")
                    roots |= ctx.roots(v, ptr_params) or {"?"}
                if not ptrs or "?" in roots or roots & (ctx.stored | ctx.assigned) or ptrs & ctx.assigned:
                    raise Refused(f"the value staged into '{self.pointer}' reads memory that is not a "
                                  "read-only kernel parameter")


def _terms(e, sign=1):
    """``e`` as signed summands: [(sign, term)]."""
    if isinstance(e, N.BinOp) and e.op in ("+", "-"):
        return _terms(e.lhs, sign) + _terms(e.rhs, sign if e.op == "+" else -sign)
    return [(sign, e)]


def _factors(e):
    if isinstance(e, N.BinOp) and e.op == "*":
        return _factors(e.lhs) + _factors(e.rhs)
    return [e]


def _product(fs):
    out = None
    for f in fs:
        out = f if out is None else N.BinOp("*", out, f)
    return out if out is not None else N.Const(1, "int32", "1")


def _signed_sum(terms):
    out = None
    for sg, t in terms:
        if out is None:
            out = t if sg > 0 else N.UnOp("-", t)
        else:
            out = N.BinOp("+" if sg > 0 else "-", out, t)
    return out if out is not None else N.Const(0, "int32", "0")


def _simplify_at_read(val, hyps, lets, ctx: "_Ctx"):
    """The staged value ``val`` at one read, simplified under the facts there (each step proved
    by Z3, else left as it is):

    * ``x / d`` and ``x % d``, where the summands of ``x`` that have ``d`` as a factor make
      ``q * d`` and the others ``r``: with ``q >= 0`` and ``0 <= r < d`` proved, ``x / d`` is
      ``q`` and ``x % d`` is ``r`` (C's division truncates, and ``x >= 0`` here);
    * ``c ? a : b`` is ``a`` where ``c`` is proved, ``b`` where ``!c`` is.

    A staged window ``field[e]`` of a halo tile, ``e = (ty*s + kh) * span_w + tx*s + kw``, so gives
    back the row ``row0 + ty*s + kh`` and column ``col0 + tx*s + kw`` of the image it was copied
    from, and the copy's border test (``r < H ? src[...] : 0``) goes where the read is inside."""
    def divmod_fn(n):
        if not (isinstance(n, N.BinOp) and n.op in ("/", "%")):
            return n
        d = n.rhs
        x = n.lhs
        keep = _vars(d)
        out_lets = {k: v for k, v in lets.items() if k not in keep}
        for _ in range(8):          # the pure declarations on the way, written out (not the divisor's)
            y = substitute(x, out_lets)
            if y == x:
                break
            x = y
        q, r = [], []
        for sg, t in _terms(x):
            fs = _factors(t)
            k = next((i for i, f in enumerate(fs) if f == d), None)
            if k is None:
                r.append((sg, t))
            else:
                q.append((sg, _product(fs[:k] + fs[k + 1:])))
        if not q:
            return n
        qe, re_ = _signed_sum(q), _signed_sum(r)
        if not ctx.proves(hyps, lambda env: z3.And(D.to_z3(qe, "a", env) >= 0, D.to_z3(re_, "a", env) >= 0,
                                                   D.to_z3(re_, "a", env) < D.to_z3(d, "a", env)), lets):
            return n
        return qe if n.op == "/" else re_

    def cond_fn(n):
        if isinstance(n, N.Cond) and _pure(n.cond):
            if ctx.proves(hyps, lambda env: D.to_z3_bool(n.cond, "a", env), lets):
                return n.then
            if ctx.proves(hyps, lambda env: z3.Not(D.to_z3_bool(n.cond, "a", env)), lets):
                return n.else_
        return n
    return rewrite(rewrite(val, divmod_fn), cond_fn)


def _phase(s, ctx: _Ctx):
    """The copy loops of a staging phase ``s`` (thread loops around copy loops), or Refused."""
    loops, cur = [], s
    while isinstance(cur, N.For) and len(loops) < 2:
        if not (_is_int(cur.lo, 0) and _is_int(cur.step, 1) and _is_int(cur.hi) and cur.hi.value > 0):
            break
        loops.append(cur)
        inner = _real(cur.body.stmts)
        if len(inner) == 1 and isinstance(inner[0], N.For) and len(loops) < 2 and \
                _is_int(inner[0].lo, 0) and _is_int(inner[0].hi):
            cur = inner[0]
            continue
        break
    if not loops:
        raise Refused("not a thread loop")
    body = _real(loops[-1].body.stmts)
    total = 1
    for l in loops:
        total *= l.hi.value
    lane_lets = {}
    if len(loops) == 1:
        lane = loops[0].var
    else:
        if not (body and isinstance(body[0], N.Decl) and isinstance(body[0].type, N.Scalar) and
                body[0].init is not None):
            raise Refused("two thread loops without a lane declaration")
        d = body[0]
        t1, t2 = loops[0].var, loops[1].var
        if not ctx.proves([], lambda env: D.to_z3(d.init, "a", env) ==
                          z3.Int(t1) * loops[1].hi.value + z3.Int(t2), {}):
            raise Refused(f"lane '{d.name}' is not {t1} * {loops[1].hi.value} + {t2}")
        lane, lane_lets, body = d.name, {d.name: d.init}, body[1:]
    if not body or not all(isinstance(x, N.For) for x in body):
        raise Refused("the thread loop holds more than copy loops")
    copies = [_Copy(x, lane, total, ctx, lane_lets) for x in body]
    if len({c.array for c in copies}) != len(copies):
        raise Refused("two copy loops store to one array")
    return loops, copies


def _alias(init, fam: dict):
    """(root array, offset terms) when ``init`` is ``P`` or ``P + off`` for ``P`` in ``fam``."""
    e = init
    while isinstance(e, N.Cast):
        e = e.expr
    if isinstance(e, N.Var) and e.name in fam:
        return fam[e.name]
    if isinstance(e, N.BinOp) and e.op == "+":
        for p, off in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            inner = _alias(p, fam)
            if inner is not None and _pure(off) and not (_vars(off) & set(fam)):
                root, terms = inner
                return root, terms + (off,)
    return None


def _reads(stmts, fam: dict, hyps: list, lets: dict, bound: frozenset, ctx: _Ctx, out: list):
    """Every element read through the array or a pointer into it (``fam``: name -> (array,
    offset terms)) in ``stmts``, with the facts that hold there (loop ranges, branch conditions,
    pure declarations on the way); Refused at any other use. Only names that no statement
    assigns enter a fact (a loop variable: only when its body does not assign it), and a name
    bound twice on the way (shadowing) is refused, so every Z3 symbol stands for one value at
    the read."""
    for s in stmts:
        if isinstance(s, N.Comment):
            continue
        if isinstance(s, N.Block):
            _reads(s.stmts, dict(fam), hyps, dict(lets), bound, ctx, out)
            continue
        if isinstance(s, N.For):
            for e in (s.lo, s.hi, s.step):
                _expr_reads(e, fam, hyps, lets, out)
            if s.var in bound or s.var in fam:
                raise Refused(f"loop variable '{s.var}' shadows another name on the way to a read")
            v, lo, hi, step = s.var, s.lo, s.hi, s.step
            h = list(hyps)
            if v not in ctx.assigned and v not in _vars((lo, hi, step)) and ctx.stable((lo, hi, step)):
                h.append(lambda env, v=v, lo=lo: z3.Int(v) >= D.to_z3(lo, "a", env))
                h.append(lambda env, v=v, hi=hi: z3.Int(v) < D.to_z3(hi, "a", env))
                h.append(lambda env, step=step: D.to_z3(step, "a", env) > 0)
            inner = dict(lets)
            inner.pop(v, None)
            _reads(s.body.stmts, dict(fam), h, inner, bound | {v}, ctx, out)
            continue
        if isinstance(s, N.If):
            _expr_reads(s.cond, fam, hyps, lets, out)
            c = s.cond
            ok = ctx.stable(c) and _pure(c)
            then_h = hyps + ([lambda env, c=c: D.to_z3_bool(c, "a", env)] if ok else [])
            _reads([s.then], dict(fam), then_h, dict(lets), bound, ctx, out)
            if s.else_ is not None:
                else_h = hyps + ([lambda env, c=c: z3.Not(D.to_z3_bool(c, "a", env))] if ok else [])
                _reads([s.else_], dict(fam), else_h, dict(lets), bound, ctx, out)
            continue
        if isinstance(s, N.Decl):
            if s.name in bound or s.name in fam:
                raise Refused(f"'{s.name}' is declared twice on the way to a read")
            bound = bound | {s.name}
            al = _alias(s.init, fam) if s.init is not None and isinstance(s.type, N.Pointer) else None
            if al is not None:
                if len(ctx.decls.get(s.name, [])) != 1 or s.name in ctx.assigned or not ctx.stable(al[1]):
                    raise Refused(f"pointer '{s.name}' into the staged array changes")
                _expr_reads(tuple(al[1]), fam, hyps, lets, out)
                fam[s.name] = al
                out.append(("alias", s.name))
                continue
            if s.init is not None:
                _expr_reads(s.init, fam, hyps, lets, out)
            # (a name declared again elsewhere is fine: on this way it is bound once, as checked above)
            if isinstance(s.type, N.Scalar) and s.init is not None and _pure(s.init) and ctx.stable(s.init) and \
                    s.name not in ctx.assigned:
                lets[s.name] = s.init
            else:
                lets.pop(s.name, None)
            continue
        if isinstance(s, N.Assign):
            if isinstance(s.target, N.Index) and isinstance(s.target.base, N.Var) and s.target.base.name in fam:
                raise Refused(f"'{s.target.base.name}' is written again after the staging phase")
            _expr_reads(s.target, fam, hyps, lets, out)
            _expr_reads(s.value, fam, hyps, lets, out)
            continue
        if isinstance(s, (N.ExprStmt, N.Return)):
            _expr_reads(s, fam, hyps, lets, out)
            continue
        if _vars(s) & set(fam):
            raise Refused(f"the staged array is used in a {type(s).__name__} statement")


def _expr_reads(e, fam, hyps, lets, out):
    if e is None:
        return
    idx_nodes = [n for n in walk(e) if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in fam]
    if len(idx_nodes) != sum(_count(e, f) for f in fam):
        raise Refused("the staged array is used other than as an element read")
    for n in walk(e):
        if isinstance(n, (N.AssignExpr, N.UnOp)) and (
                isinstance(n, N.AssignExpr) or n.op in ("++", "--", "p++", "p--", "&")) and \
                _vars(n.target if isinstance(n, N.AssignExpr) else n.operand) & set(fam):
            raise Refused("the staged array is written or its address taken after the staging phase")
    for n in idx_nodes:
        root, terms = fam[n.base.name]
        out.append((n, root, terms, list(hyps), dict(lets)))


def _fixed_names(copy: _Copy, before: list, outer_loops: set, ctx: _Ctx, after) -> None:
    """The names of the staged value and extent keep their value from the phase to every read."""
    block_lets = {s.name for s in before if isinstance(s, N.Decl)}
    rebound = {d.name for d in walk(tuple(after)) if isinstance(d, N.Decl)} | {
        l.var for l in walk(tuple(after)) if isinstance(l, N.For)}
    names = _vars(copy.value) | _vars(copy.extent) | (_vars(copy.guard) if copy.guard is not None else set())
    for v in names - {copy.var}:
        if v in ctx.macros:
            continue
        if v in rebound or v in ctx.assigned:
            raise Refused(f"'{v}' (in the value staged into '{copy.pointer}') changes or is re-declared "
                          "after the staging phase")
        if (v in ctx.params and v not in ctx.decls) or v in outer_loops:
            continue
        if v in block_lets and len(ctx.decls.get(v, [])) == 1:
            continue
        raise Refused(f"'{v}' (in the value staged into '{copy.pointer}') is not fixed for the block")


def _sum(terms):
    out = None
    for t in terms:
        out = t if out is None else N.BinOp("+", out, t)
    return out if out is not None else N.Const(0, "int32", "0")


def _strip_decls(st, names):
    """``st`` without the declarations of ``names`` (None when ``st`` is one)."""
    if isinstance(st, N.Decl) and st.name in names:
        return None
    if isinstance(st, N.Block):
        return st.with_(stmts=tuple(x for x in (_strip_decls(y, names) for y in st.stmts) if x is not None))
    if isinstance(st, N.For):
        return st.with_(body=_strip_decls(st.body, names))
    if isinstance(st, N.If):
        return st.with_(then=_strip_decls(st.then, names) or N.Block(()),
                        else_=None if st.else_ is None else (_strip_decls(st.else_, names) or N.Block(())))
    return st


def _unshare_block(stmts: list, outer_loops: set, outer_decls: list, ctx: _Ctx):
    """New statements of a block with one staging phase un-shared, or Refused / None (no phase)."""
    why = None
    for k, s in enumerate(stmts):
        if not isinstance(s, N.For):
            continue
        local = {d.name: d for d in list(outer_decls) + stmts[:k] if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}
        try:
            loops, copies = _phase(s, ctx)
        except Refused:
            # a loop that stores into an array of the block looked like a staging phase: say why
            # it was kept; any other loop is simply not one
            if any(isinstance(n, N.Assign) and isinstance(n.target, N.Index) and
                   isinstance(n.target.base, N.Var) and n.target.base.name in local for n in walk(s)):
                why = why or sys.exc_info()[1]
            continue
        before, after = list(outer_decls) + stmts[:k], stmts[k + 1:]
        own_before = stmts[:k]
        # the arrays of the block (or of blocks around it) and the pointers into them declared
        # before the phase
        fam = {}
        for d in before:
            if not isinstance(d, N.Decl):
                continue
            if d.name in local:
                fam[d.name] = (d.name, ())
            elif isinstance(d.type, N.Pointer) and d.init is not None:
                al = _alias(d.init, fam)
                if al is not None:
                    if len(ctx.decls.get(d.name, [])) != 1 or d.name in ctx.assigned or not ctx.stable(al[1]):
                        raise Refused(f"pointer '{d.name}' into the staged array changes")
                    fam[d.name] = al
        for c in copies:
            if c.pointer not in fam:
                raise Refused(f"'{c.pointer}' is not an array of the block or a pointer into one")
            c.array, c.offset = fam[c.pointer]
            _fixed_names(c, before, outer_loops, ctx, after)
        roots = {c.array for c in copies}
        for r in roots:
            d = local[r]
            if len(ctx.decls.get(r, [])) != 1 or d.init is not None or not isinstance(d.type.elem, N.Scalar) or \
                    len(d.type.dims) != 1:
                raise Refused(f"'{r}' is not a one-dimensional array declared once in the block")
        names = {f for f, (r, _) in fam.items() if r in roots}
        fam = {f: fam[f] for f in names}
        # the family is named only by its declarations (before), the phase and the reads (after)
        uses_before = sum(_count(d.init, f) for d in before if isinstance(d, N.Decl) and d.name in names
                          and d.init is not None for f in names)
        in_decls = {f: sum(_count(d.init, f) for d in before if isinstance(d, N.Decl) and d.name in names
                           and d.init is not None) for f in names}
        if any(_count(ctx.fn.body, f) != _count(s, f) + _count(tuple(after), f) + in_decls[f] for f in names) or \
                sum(_count(tuple(before), f) for f in names) != uses_before:
            raise Refused(f"'{sorted(roots)[0]}' is used outside the block after its staging phase")
        lets = {d.name: d.init for d in before if isinstance(d, N.Decl) and isinstance(d.type, N.Scalar)
                and d.init is not None and _pure(d.init) and ctx.stable(d.init) and len(ctx.decls.get(d.name, [])) == 1
                and d.name not in ctx.assigned}
        # two copy loops into one array write disjoint parts of it
        for x, c1 in enumerate(copies):
            for c2 in copies[x + 1:]:
                if c1.array == c2.array and not ctx.proves([], lambda env, c1=c1, c2=c2: z3.Or(
                        D.to_z3(_sum(c1.offset + (c1.extent,)), "a", env) <= D.to_z3(_sum(c2.offset), "a", env),
                        D.to_z3(_sum(c2.offset + (c2.extent,)), "a", env) <= D.to_z3(_sum(c1.offset), "a", env)),
                        lets):
                    raise Refused(f"copy loops '{c1.var}' and '{c2.var}' may write the same elements")
        reads = []
        _reads(after, dict(fam), [], dict(lets), frozenset(lets), ctx, reads)
        names |= {r[1] for r in reads if r[0] == "alias"}
        reads = [r for r in reads if r[0] != "alias"]
        repl = {}
        for node, root, terms, hyps, rlets in reads:
            if not _pure(node.index) or not ctx.stable(node.index):
                raise Refused(f"the index of a read of '{node.base.name}' is not a fixed integer expression")
            elem = local[root].type.elem
            at = terms + (node.index,)
            for c in copies:
                if c.array != root:
                    continue
                n_off = len(c.offset)
                rel = _sum(at[n_off:]) if at[:n_off] == c.offset else N.BinOp("-", _sum(at), _sum(c.offset))
                goal = [lambda env, rel=rel, c=c: D.to_z3(rel, "a", env) >= 0,
                        lambda env, rel=rel, c=c: D.to_z3(rel, "a", env) < D.to_z3(c.extent, "a", env)]
                if c.guard is not None:
                    g = _simplify_at_read(substitute(c.guard, {c.var: rel}), hyps, {**lets, **rlets}, ctx)
                    goal.append(lambda env, g=g: D.to_z3_bool(g, "a", env))
                if ctx.proves(hyps, lambda env, goal=goal: z3.And(*[f(env) for f in goal]), {**lets, **rlets}):
                    break
            else:
                raise Refused(f"a read of '{node.base.name}' may lie outside what the staging phase wrote")
            val = _simplify_at_read(substitute(c.value, {c.var: rel}), hyps, {**lets, **rlets}, ctx)
            if not (isinstance(c.value, N.Index) and isinstance(c.value.base, N.Var) and
                    isinstance(ctx.params.get(c.value.base.name), N.Pointer) and
                    isinstance(ctx.params[c.value.base.name].elem, N.Scalar) and
                    ctx.params[c.value.base.name].elem.dtype == elem.dtype):
                val = N.Cast(elem.with_(const=False) if elem.const else elem, val, loc=node.loc)
            repl[id(node)] = val
        new_after = [rewrite(x, lambda n: repl.get(id(n), n)) for x in after] if repl else list(after)
        # pointer declarations into the array made after the phase go with it
        new_after = [x for x in (_strip_decls(y, names) for y in new_after) if x is not None]
        left = {f for f in names if _count(tuple(new_after), f)}
        if left:
            raise Refused(f"'{sorted(left)[0]}' is still named after the reads were rewritten")
        out = [d for d in own_before if not (isinstance(d, N.Decl) and d.name in names)] + new_after
        return out, sorted(roots), names
    if why is not None:
        raise why
    return None


def unshare(fn: N.Func, program=None, assume: tuple = ()):
    """``fn`` with every legal shared-memory staging phase removed: (new function, notes).
    A note is ``(arrays, None)`` for an un-shared phase, or ``(None, why)`` when a block that held
    a staging phase was kept. One phase at a time, innermost block first; the facts about the
    function are taken again after each."""
    notes, refused = [], set()
    for _ in range(16):
        ctx = _Ctx(fn, program, assume)
        found = []

        def attempt(blk: N.Block, outer: set, decls: list):
            """The block with one phase un-shared (in it or below), or None."""
            seen = list(decls)
            for x, st in enumerate(blk.stmts):
                inner = _attempt_stmt(st, outer, seen)
                if inner is not None:
                    return blk.with_(stmts=blk.stmts[:x] + (inner,) + blk.stmts[x + 1:])
                if isinstance(st, N.Decl):
                    seen.append(st)
            key = id(blk)
            if key in refused:
                return None
            try:
                res = _unshare_block(list(blk.stmts), outer, decls, ctx)
            except Refused as e:
                notes.append((None, str(e)))
                refused.add(key)
                return None
            if res is None:
                return None
            stmts, arrays, names = res
            found.append((arrays, names))
            return blk.with_(stmts=tuple(stmts))

        def _attempt_stmt(st, outer, decls):
            if isinstance(st, N.Block):
                return attempt(st, outer, decls)
            if isinstance(st, N.For):
                b = attempt(st.body, outer | {st.var}, decls)
                return None if b is None else st.with_(body=b)
            if isinstance(st, N.If):
                t = _attempt_stmt(st.then, outer, decls)
                if t is not None:
                    return st.with_(then=t)
                if st.else_ is not None:
                    e = _attempt_stmt(st.else_, outer, decls)
                    if e is not None:
                        return st.with_(else_=e)
            return None

        body = attempt(fn.body, set(), [])
        if body is None:
            break
        arrays, names = found[-1]
        notes.append((arrays, None))

        # the array and the pointers into it are named nowhere now: their declarations go
        fn = fn.with_(body=_strip_decls(body, names))
        refused = set()
    return fn, notes
