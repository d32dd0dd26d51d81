"""Contiguous task slices collapse into one loop over the whole range (a step of loop
recovery's normalization, tried when the strided / guarded forms do not apply).

A BANG kernel usually gives each task one contiguous slice of ``[0, n)`` and walks it in
chunks. After loop recovery and un-staging (``passes/decache.py``) that reads::

    for (int task = 0; task < 4; ++task) {
        int share = n / 4;
        int extra = n % 4;
        int count = share + (task < extra ? 1 : 0);
        int start = task * share + (task < extra ? task : extra);
        for (int off = 0; off < count; off += CHUNK) {
            int valid = count - off < CHUNK ? count - off : CHUNK;
            for (int j = 0; j < valid; ++j)
                y[start + off + j] = f(x[start + off + j]);
        }
    }

and becomes ``for (int i = 0; i < n; ++i) y[i] = f(x[i]);``.

Recognized shape: one partition loop (``task``) whose body is pure scalar declarations and one
*work loop*, either

* a chunk loop ``for (off = lo; off < hi; off += C)`` (``C`` a positive constant) holding pure
  declarations and one lane loop ``for (j = 0; j < V; ++j) B`` with ``V == min(C, hi - off)``
  for every chunk (proven by Z3 from the declarations): task ``p`` then visits the elements
  ``P(p) + k`` for ``k`` in ``[lo, hi)``, in increasing order, once each; or
* an element loop ``for (k = lo; k < hi; ++k) B``: the same set.

``P`` (the slice base) is read off the body: every use of the partition index, of the loop
variables and of values computed from them must be an integer expression equal (as a
polynomial over the kernel's own names) to ``P + off + j`` (``P + k``) plus terms free of them;
such an expression becomes ``i`` plus those terms. Any other use (``task`` read directly, the
lane count ``valid`` used as a value) is refused.

Legality:

* **tiling**: with the task count ``T`` a constant, Z3 proves that for every value of the
  kernel's parameters and every integer ``i``, the number of tasks whose slice
  ``[P(p) + lo(p), P(p) + hi(p))`` holds ``i`` is 1 when ``L <= i < H`` and 0 otherwise, for
  the first pair ``(L, H)`` found among ``L`` in {0, the start of task 0} and ``H`` in {an
  integer parameter, a task-invariant declaration, the end of the last task}. Overlapping
  slices, gaps or a slice outside ``[L, H)`` are refused. Empty or negative counts are allowed
  (such a task does nothing either way);
* **independence**: the iterations of the collapsed loop carry no dependence
  (``passes/dependence.py``: ``check_parallel``, which also refuses a scalar kept across
  iterations). With that, running the elements in any order (here: ``i`` ascending) gives the
  result of the task loops;
* the declarations are never assigned, the body has no ``break`` or ``return`` leaving it,
  and no partition array (a private buffer not removed by un-staging) is left.

An element loop marked :data:`ROWS_PRAGMA` (a row loop written by row un-staging,
``passes/unstage_rows.py``, whose body indexes memory as ``r * cols + c``) takes ``P = 0`` when its
element index does not advance by one: its elements are the counter's values, and the tiling
proof, the conversion of every use and the independence check are the same as for any other.

Refusals raise :class:`Refused` with the reason (loop recovery keeps the plain loops).
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir.poly import add as poly_add
from xpiler.ir import smt
from xpiler.ir.visit import outside_loops, substitute, walk

from . import dependence as D
from .decache import _flatten, _pure, _vars

MAX_TASKS = 4096
#: the tiling proof (:meth:`_Collapse._tiles`) writes one term per task into each Z3 query. Measured
#: 2026-12-06 on add.mlu -> cuda with the search's task counts: 64 tasks proved in 1.8 s; every
#: query at 256 tasks came back unknown after up to 12 s (ten queries, a minute, no proof), and at
#: 1024 / 4096 one query outlived a 90 s tuning budget by minutes. Above this count the collapse
#: is refused at once (the other normalizations of loop recovery still apply)
MAX_UNROLLED_TASKS = 64
#: pragma of a row loop written by row un-staging (passes/unstage_rows.py): a task's rows, each
#: one element of the collapsed loop however its body indexes memory (the tiling proof and the
#: conversion of every use below do not depend on the slice base)
ROWS_PRAGMA = "xpiler rows(unstaged)"
INT = N.Scalar("int32", "int")
_INT = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "char")


class Refused(Exception):
    """The partition is not a set of contiguous slices this module can collapse."""


def _const(e, macros):
    """The integer value of ``e`` (constants and object-like macros), else None."""
    env = D.Z3Env(loopvars=set(), lets={}, macros=macros, int_params=set(), varying=set())
    if _vars(e) - set(macros):
        return None
    t = z3.simplify(D.to_z3(e, "a", env))
    if env.cons or not z3.is_int_value(t):
        return None
    return t.as_long()


class _Collapse:
    def __init__(self, fn: N.Func, levels, program):
        from .loop_recovery import _Poly, _fold
        self._Poly, self._fold = _Poly, _fold
        self.fn, self.program = fn, program
        self.macros = {m.name: m for m in (program.macros if program is not None else ())}
        if len(levels) != 1:
            raise Refused("more than one partition level")
        self.tv = levels[0].var
        self.T = _const(levels[0].extent, self.macros)
        if self.T is None or not 1 <= self.T <= MAX_TASKS:
            raise Refused("the task count is not a constant")
        self.types = {p.name: p.type for p in fn.params}
        for d in walk(fn.body):
            if isinstance(d, N.Decl):
                self.types.setdefault(d.name, d.type)
            elif isinstance(d, N.For):
                self.types.setdefault(d.var, d.var_type or INT)
        self.assigned = D.assigned_names(fn.body)

    # ------------------------------------------------------------------ shape
    def run(self):
        stmts = list(self.fn.body.stmts)
        pos = [k for k, s in enumerate(stmts) if isinstance(s, N.For) and s.var == self.tv]
        if len(pos) != 1:
            raise Refused("no single partition loop")
        k0 = pos[0]
        before, loop, after = stmts[:k0], stmts[k0], stmts[k0 + 1:]
        if any(not isinstance(s, N.Comment) for s in after):
            raise Refused("statements follow the partition loop")
        if any(not (isinstance(s, N.Comment) or (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar)
                                                  and s.init is not None and _pure(s.init)))
               for s in before):
            raise Refused("statements other than declarations before the partition loop")
        if not (isinstance(loop.lo, N.Const) and loop.lo.value == 0 and isinstance(loop.step, N.Const)
                and loop.step.value == 1 and _const(loop.hi, self.macros) == self.T):
            raise Refused("the partition loop does not run over the tasks")
        decls, comments, work = self._split_body(_flatten(loop.body.stmts), "partition loop")
        dep = {self.tv}
        for d in decls:
            if _vars(d.init) & dep:
                dep.add(d.name)
        self.task_decls = decls
        if work.var_type is None:
            raise Refused(f"the counter of loop '{work.var}' is declared outside it")
        if not (_pure(work.lo) and _pure(work.hi) and _pure(work.step)):
            raise Refused(f"the bounds of loop '{work.var}' read memory")
        chunk = self._chunk_form(work, decls)
        if chunk is not None:
            chunk_decls, lane = chunk
            lanes_vars = [work.var, lane.var]
        elif isinstance(work.step, N.Const) and work.step.value == 1:
            chunk_decls, lane, lanes_vars = [], work, [work.var]
        else:
            raise Refused(f"loop '{work.var}' is neither an element loop nor a chunk loop over lanes "
                          "min(step, bound - start)")
        for d in decls + chunk_decls + [x for x in before if isinstance(x, N.Decl)]:
            if d.name in self.assigned:
                raise Refused(f"'{d.name}' is assigned")
        K = set(dep) | set(lanes_vars)
        hoist_chunk = []
        for d in chunk_decls:
            if _vars(d.init) & K:
                K.add(d.name)
            else:
                hoist_chunk.append(d)
        if _vars(work.lo) & set(lanes_vars) or _vars(work.hi) & set(lanes_vars):
            raise Refused(f"the bounds of loop '{work.var}' use its own variable")
        body = lane.body
        changed = D.assigned_names(body) & (K | _vars(work.lo) | _vars(work.hi) | _vars(lane.hi))
        if changed:
            raise Refused(f"the work assigns '{sorted(changed)[0]}', which defines the slices")
        for n in walk(body):
            if isinstance(n, (N.Return, N.Barrier, N.Raw)):
                raise Refused("an exit, barrier or label in the work")
        if any(isinstance(n, N.Break) for n in outside_loops(body)):
            raise Refused("a break leaves the work loop")
        self.K = K
        self.poly = self._Poly()
        # a row loop written by row un-staging (passes/unstage_rows.py) indexes its rows as
        # ``r * width + column``: its elements are the counter's values (P = 0, see _slice_base)
        self.rows_form = chunk is None and ROWS_PRAGMA in work.pragmas
        P = self._slice_base(body, lanes_vars)
        taken = _vars(self.fn) | {d.name for d in walk(self.fn) if isinstance(d, N.Decl)} | {
            l.var for l in walk(self.fn) if isinstance(l, N.For)} | {p.name for p in self.fn.params}
        # the lane variable's name is free once the loops are gone (names are unique here)
        i = "i" if "i" not in taken else lane.var
        self.i = "xp__elem"         # a placeholder name no kernel uses, renamed below
        if self.i in taken:
            raise Refused(f"the kernel uses the name '{self.i}'")
        self.G = self.poly.of(_sum([P] + [N.Var(v) for v in lanes_vars]))
        new_body = self._conv_stmt(body)
        left = _vars(new_body) & K
        if left:
            raise Refused(f"the work uses '{sorted(left)[0]}' other than through the element index")
        new_body = substitute(new_body, {self.i: N.Var(i)})
        S = N.BinOp("+", P, work.lo)
        E = N.BinOp("+", P, work.hi)
        if self.T > MAX_UNROLLED_TASKS:
            raise Refused(f"{self.T} tasks: the tiling proof unrolls every task, and above "
                          f"{MAX_UNROLLED_TASKS} it does not finish")
        L, H = self._tiling(S, E, decls, dep)
        ty = INT
        for v in (K & set(self.types)) - {self.tv}:
            t = self.types[v]
            if isinstance(t, N.Scalar) and t.dtype == "int64":
                ty = N.Scalar("int64", "long")
        new_loop = N.For(i, L, H, N.Const(1, "int32", "1"), new_body, None, ty, loc=lane.loc)
        inv = [d for d in decls if d.name not in dep] + hoist_chunk
        # the partition body's comments describe the per-task split that is gone: dropped
        out = list(before) + inv + [new_loop] + list(after)
        out = _drop_dead(out, {d.name for d in inv})
        new_fn = self.fn.with_(body=self.fn.body.with_(stmts=tuple(out)))
        loop_node = next(s for s in new_fn.body.stmts if isinstance(s, N.For) and s.var == i)
        d = D.check_parallel(self.program, new_fn, loop_node)
        if d is not None:
            raise Refused(f"the collapsed iterations are not independent: {d}")
        return new_fn

    def _split_body(self, stmts, where):
        decls, comments, work = [], [], None
        for s in stmts:
            if isinstance(s, N.Comment):
                comments.append(s)
            elif isinstance(s, N.Decl) and work is None and isinstance(s.type, N.Scalar) and \
                    s.init is not None and _pure(s.init):
                decls.append(s)
            elif isinstance(s, N.For) and work is None:
                work = s
            elif isinstance(s, N.Decl) and isinstance(s.type, N.Array):
                raise Refused(f"private buffer '{s.name}' is still staged in the {where}")
            else:
                raise Refused(f"a {type(s).__name__} statement in the {where} (only declarations and one loop)")
        if work is None:
            raise Refused(f"no loop in the {where}")
        return decls, comments, work

    def _chunk_form(self, work, decls):
        """(chunk declarations, lane loop) when ``work`` walks chunks of ``C`` lanes, else None."""
        C = _const(work.step, self.macros)
        if C is None or C <= 0:
            return None
        try:
            chunk_decls, _, lane = self._split_body(_flatten(work.body.stmts), f"loop '{work.var}'")
        except Refused:
            return None
        if not (isinstance(lane.lo, N.Const) and lane.lo.value == 0 and isinstance(lane.step, N.Const)
                and lane.step.value == 1 and lane.var_type is not None and _pure(lane.hi)):
            return None
        if not self._chunks_cover(work, lane, C, decls + chunk_decls):
            return None
        return chunk_decls, lane

    def _env(self, decls):
        return D.Z3Env(loopvars=set(), lets={d.name: d.init for d in decls}, macros=self.macros,
                       int_params=set(), varying=set())

    def _chunks_cover(self, work, lane, C, decls) -> bool:
        """For every chunk start off = lo + C*k < hi: the lane count equals min(C, hi - off)."""
        env = self._env(decls)
        off = D.to_z3(N.Var(work.var), "a", env)
        lo, hi = D.to_z3(work.lo, "a", env), D.to_z3(work.hi, "a", env)
        k = z3.Int("chunk_k")
        v = D.to_z3(lane.hi, "a", env)
        want = z3.If(hi - off < C, hi - off, z3.IntVal(C))
        s = smt.solver(D.TIMEOUT_MS)
        s.add(*env.cons)
        s.add(k >= 0, off == lo + C * k, off >= lo, off < hi, v != want)
        return s.check() == z3.unsat

    # ------------------------------------------------------------------ the element index
    def _int_expr(self, e) -> bool:
        if isinstance(e, N.Const):
            return isinstance(e.value, int) and not isinstance(e.value, bool)
        if isinstance(e, N.Var):
            t = self.types.get(e.name)
            if e.name in self.K or e.name == self.tv:
                return t is None or (isinstance(t, N.Scalar) and t.dtype in _INT)
            return isinstance(t, N.Scalar) and t.dtype in _INT or e.name in self.macros
        if isinstance(e, N.BinOp) and e.op in ("+", "-", "*", "/", "%"):
            return self._int_expr(e.lhs) and self._int_expr(e.rhs)
        if isinstance(e, N.UnOp) and e.op in ("-", "+"):
            return self._int_expr(e.operand)
        if isinstance(e, N.Cast):
            return isinstance(e.type, N.Scalar) and e.type.dtype in _INT and self._int_expr(e.expr)
        if isinstance(e, N.Cond):
            return self._int_expr(e.then) and self._int_expr(e.else_)
        return False

    def _k_free(self, p) -> bool:
        return not any(self.poly.atoms[a][1] & self.K for mono in p for a in mono)

    def _slice_base(self, body, lanes_vars):
        """P: the K-dependent part of the first element index, less the loop variables."""
        for n in walk(body):
            if isinstance(n, N.Index) and _vars(n.index) & self.K and self._int_expr(n.index):
                p = self.poly.of(n.index)
                for v in lanes_vars:
                    if p.get((v,)) != 1:
                        if self.rows_form:
                            return N.Const(0, "int32", "0")
                        raise Refused(f"the element index {_show(n.index)} does not advance by one with '{v}'")
                    p = poly_add(p, {(v,): 1}, -1)
                base = {m: c for m, c in p.items() if any(self.poly.atoms[a][1] & self.K for a in m)}
                bad = {a for m in base for a in m if self.poly.atoms[a][1] & (set(lanes_vars) | (
                    self.K - {self.tv} - {d.name for d in self.task_decls}))}
                if bad:
                    raise Refused(f"the element index {_show(n.index)} is not the slice base plus the lane")
                out = _expr_of(self.poly, base)
                return N.Const(0, "int32", "0") if out is None else out
        if len(lanes_vars) == 1:
            # an element loop whose counter is only read through values computed from it (the
            # rows of an un-banded task: n = row / Cout, co = row % Cout): its elements are the
            # counter's values, P = 0; the tiling proof and the conversion of every use below
            # do not depend on how P was chosen
            return N.Const(0, "int32", "0")
        raise Refused("no element index in the work")

    def _conv(self, e):
        if not isinstance(e, N.Expr) or not (_vars(e) & self.K):
            return e
        if self._int_expr(e):
            r = poly_add(self.poly.of(e), self.G, -1)
            if self._k_free(r):
                rest = _expr_of(self.poly, r)
                return N.Var(self.i) if rest is None else N.BinOp("+", N.Var(self.i), rest)
        if isinstance(e, N.Var):
            raise Refused(f"the work reads '{e.name}' other than through the element index")
        changes = {}
        from dataclasses import fields
        for f in fields(e):
            if f.name == "loc":
                continue
            v = getattr(e, f.name)
            if isinstance(v, N.Expr):
                nv = self._conv(v)
                if nv is not v:
                    changes[f.name] = nv
            elif isinstance(v, tuple) and any(isinstance(x, N.Expr) for x in v):
                nv = tuple(self._conv(x) for x in v)
                if any(a is not b for a, b in zip(nv, v)):
                    changes[f.name] = nv
        return e.with_(**changes) if changes else e

    def _conv_stmt(self, s):
        """Every maximal expression below statement ``s`` converted."""
        return _map_exprs(s, self._conv)

    # ------------------------------------------------------------------ tiling proof
    def _at(self, e, p, dep, decls):
        """``e`` for task ``p``: task-dependent declarations expanded, the task index a constant."""
        table = {d.name: d.init for d in decls if d.name in dep}
        for _ in range(16):
            if not (_vars(e) & set(table)):
                break
            e = substitute(e, table)
        return self._fold(substitute(e, {self.tv: N.Const(p, "int32", str(p))}))

    def _tiling(self, S, E, decls, dep):
        inv = [d for d in decls if d.name not in dep]
        Ls = [N.Const(0, "int32", "0"), self._at(S, 0, dep, decls)]
        Hs = [N.Var(p.name) for p in self.fn.params if isinstance(p.type, N.Scalar) and p.type.dtype in _INT]
        Hs += [N.Var(d.name) for d in inv if isinstance(d.type, N.Scalar) and d.type.dtype in _INT]
        Hs.append(self._at(E, self.T - 1, dep, decls))
        for L in Ls:
            for H in Hs:
                if self._tiles(S, E, L, H, decls, dep):
                    return L, H
        raise Refused("the task slices do not tile one range exactly once (overlap, gap, or unknown bounds)")

    def _tiles(self, S, E, L, H, decls, dep) -> bool:
        env = self._env(decls)
        i = z3.Int("elem_i")
        cover = []
        for p in range(self.T):
            env.lets[self.tv] = N.Const(p, "int32", str(p))
            s, e = D.to_z3(S, "a", env), D.to_z3(E, "a", env)
            cover.append(z3.If(z3.And(s <= i, i < e), 1, 0))
        env.lets.pop(self.tv, None)
        lo, hi = D.to_z3(L, "a", env), D.to_z3(H, "a", env)
        sol = smt.solver(4 * D.TIMEOUT_MS)
        sol.add(*env.cons)
        sol.add(z3.Sum(cover) != z3.If(z3.And(lo <= i, i < hi), 1, 0))
        return sol.check() == z3.unsat


# ---------------------------------------------------------------------- helpers
def _sum(terms):
    out = terms[0]
    for t in terms[1:]:
        out = N.BinOp("+", out, t)
    return out


def _show(e) -> str:
    from xpiler.expr import to_c
    try:
        return f"'{to_c(e)}'"
    except Exception:
        return "(an index)"


def _expr_of(poly, p):
    """An expression for polynomial ``p`` (None when it is zero)."""
    out = None
    for mono, c in sorted(p.items(), key=lambda kv: (len(kv[0]) == 0, kv[0])):
        term = poly.expr((abs(c), mono)) if mono else N.Const(abs(c), "int32", str(abs(c)))
        if out is None:
            out = term if c > 0 else N.UnOp("-", term)
        else:
            out = N.BinOp("+" if c > 0 else "-", out, term)
    return out


def _map_exprs(node, fn):
    """``node`` (a statement) with ``fn`` applied to each outermost expression below it."""
    from dataclasses import fields
    if isinstance(node, N.Expr):
        return fn(node)
    if not isinstance(node, N.Node) or isinstance(node, N.Type):
        return node
    changes = {}
    for f in fields(node):
        if f.name == "loc":
            continue
        v = getattr(node, f.name)
        if isinstance(v, N.Node):
            nv = _map_exprs(v, fn)
            if nv is not v:
                changes[f.name] = nv
        elif isinstance(v, tuple):
            nv = tuple(_map_exprs(x, fn) for x in v)
            if any(a is not b for a, b in zip(nv, v)):
                changes[f.name] = nv
    return node.with_(**changes) if changes else node


def _drop_dead(stmts, names):
    stmts = list(stmts)
    changed = True
    while changed:
        changed = False
        for k, s in enumerate(stmts):
            if isinstance(s, N.Decl) and s.name in names and s.name not in _vars(tuple(stmts[:k] + stmts[k + 1:])):
                del stmts[k]
                changed = True
                break
    return stmts


def collapse(fn: N.Func, levels, program) -> N.Func:
    """``fn`` with its task loop, chunk loop and lane loop collapsed, or raise :class:`Refused`."""
    return _Collapse(fn, levels, program).run()
