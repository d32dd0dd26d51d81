"""Un-banding: a BANG task that walks its rows in *bands* and builds each output row as a weighted
sum of rows staged in NRAM becomes a plain loop over its rows computing each element as a
scalar contraction over global memory (a step of loop recovery's un-staging, before the task
slices collapse).

After detensorize and loop recovery, conv1d.mlu's task body reads (abridged)::

    float nram_buf[NRAM_FLOATS];
    ...pure declarations (rows, per, extra, row_begin, row_end, w_len, LT chain)...
    float *w_nram = nram_buf;  float *cols = w_nram + w_len;  float *acc = ...;  float *tmp = ...;
    for (x = 0; x < Cout * CK; ++x) w_nram[x] = weight[x];           // weight copy
    int r = row_begin;
    while (r < row_end) {                                             // one band per sample
        int n = r / Cout;  int co_begin = r % Cout;
        int co_end = co_begin + (row_end - r);  if (co_end > Cout) co_end = Cout;
        for (lo0 = 0; lo0 < Lo; lo0 += LT) {                          // chunks of LT lanes
            int len = min(Lo - lo0, LT);  int lenP = round_up(len, 32);
            for (x < CK * lenP) cols[x] = 0;                          // fills (ignored)
            for (ci < Cin) for (k < KW) {                             // gather nest
                float *dst = cols + (ci * KW + k) * lenP;
                if (stride == 1) for (i < len) dst[i] = (src + k)[i];
                else for (s < len - 1 + 1) for (z < 1) dst[s + z] = (src + k)[s * stride + z];
            }
            for (co = co_begin; co < co_end; ++co) {
                float *wrow = w_nram + co * CK;
                for (i < lenP) acc[i] = 0;
                for (j < CK) {
                    const float s = wrow[j];
                    for (i < lenP) tmp[i] = (cols + j * lenP)[i] * s;
                    for (i < lenP) acc[i] = acc[i] + tmp[i];
                }
                for (i < len) (output + (n * Cout + co) * Lo + lo0)[i] = acc[i];
            }
        }
        r += co_end - co_begin;
    }

:func:`unband` turns it into (the weight copy, the buffer and its pointers gone)::

    for (row = row_begin; row < row_end; ++row) {
        int n = row / Cout;  int co = row % Cout;
        for (lo = 0; lo < Lo; ++lo) {
            float acc = 0;
            for (ci < Cin) for (k < KW)
                acc += input[src offset at lo0 = 0, lane lo] * weight[co * CK + ci * KW + k];
            output[(n * Cout + co) * Lo + lo] = acc;
        }
    }

which task slices (``passes/task_slices.py``) then collapse into one loop over ``N * Cout`` rows:
the loop nest of ``conv1d.c``, which the cache and tensorize passes stage for cuda / hip.

Proof obligations (Z3 over the kernel's integer names; every one must hold or the task is left as
it is, with the reason):

* **band walk**: inside the band loop (``r_begin <= r < r_end`` with the task's declarations),
  the band's row count ``c = co_end - co_begin`` is the loop's step, every ``co`` of
  ``[co_begin, co_end)`` is the row ``r + co - co_begin`` (same quotient ``n``, remainder
  ``co``) and ``r + c <= r_end``. So the bands visit the rows ``r_begin .. r_end - 1`` in order,
  each once (a band with ``c <= 0`` would never advance ``r``: the source does not end, so no
  terminating run is changed by assuming ``c >= 1``);
* **chunks**: the lanes copied out of a chunk are ``min(LT, Lo - lo0)`` (``LT >= 1`` assumed
  likewise: with ``LT <= 0`` the chunk loop never ends), so the lanes ``lo0 + i`` are
  ``0 .. Lo - 1``, each once; every address the lift rewrites depends on ``lo0`` and ``i`` only
  through ``lo0 + i``;
* **gather**: the nest's loops run from 0 by 1, its two branches (``if (stride == 1)``) store the
  same lane from the same address under the branch condition, the rows it writes are
  ``j = l_1 * h_2 * ... + l_m`` (its loop indices as a mixed-radix number) and the product of
  its extents is the reduction's trip count;
* **staging**: the reduction reads ``cols`` exactly at the gathered row ``j`` and lane; the
  accumulator is zeroed, multiplied and added on every lane copied out (the padded lanes are
  never copied out, so dropping them is exact); the scratch ``tmp`` lane is written before it
  is read in each step; no store of the band touches the weight copy, the gathered rows, or a
  buffer the same step reads at another lane (all proved as disjoint offsets into the one NRAM
  array);
* **weights**: the scalar read ``wrow[j]`` lies inside the copied range, so it is
  ``weight[co * CK + j]``; no pointer parameter that the lift reads is stored to anywhere;
* **independence**: the new row loop carries no dependence (``dependence.check_parallel``), so
  running each row's chunks in full before the next row (the lift) instead of each chunk for all
  rows of a band (the source) gives the same stores.

* **trip count**: the gather nest runs as often as the reduction loop
  (``max(K, 0) == prod max(h_t, 0)``). With two *negative* extents (``Cin < 0`` and ``KW < 0``)
  their product is positive: the source would add that many products of zero-filled rows with
  weights (0 unless a weight is infinite or NaN) and the lift none, so this needs the spec's
  ``[preconditions]`` (conv1d.mlu.toml: ``Cin >= 1``, ``KW >= 1``), which the proofs take as
  facts (``assume``: integer parameters never assigned), as unshare does.

The sum runs over the same terms in the same order; ``acc += x * w`` may be contracted to an FMA
by the target compiler, as in the cache pass.

Refusals raise :class:`Refused`; :func:`unband` keeps a refused task as it is and returns the
reason as its note.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt
from xpiler.ir.visit import substitute, walk

from . import dependence as D
from .decache import _flatten, _pure, _vars
from .task_slices import _drop_dead

NAME = "unband"
PARTITION_PRAGMA = "xpiler independent(source tasks)"
INT = N.Scalar("int32", "int")
BUDGET_MS = 4000


_OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}


class Refused(Exception):
    """This task is not un-banded; the message says why."""


def _c(v) -> N.Const:
    return N.Const(v, "int32", str(v))


def _add(a, b):
    return N.BinOp("+", a, b)


def _sub(a, b):
    return N.BinOp("-", a, b)


def _mul(a, b):
    return N.BinOp("*", a, b)


def _f32(t) -> bool:
    return isinstance(t, N.Scalar) and t.dtype == "float32" or \
        isinstance(t, N.Pointer) and isinstance(t.elem, N.Scalar) and t.elem.dtype == "float32"


def _strip(e):
    """``e`` without casts to ``float`` or ``float *`` (no-ops on the float values and arrays
    this step accepts; any other cast stays, and the match then refuses)."""
    while isinstance(e, N.Cast) and _f32(e.type):
        e = e.expr
    return e


def _is_zero(e) -> bool:
    e = _strip(e)
    return isinstance(e, N.Const) and not isinstance(e.value, bool) and e.value == 0


def _unit_loop(s) -> bool:
    return (isinstance(s, N.For) and isinstance(s.lo, N.Const) and s.lo.value == 0
            and isinstance(s.step, N.Const) and s.step.value == 1 and _pure(s.hi))


def _stmts(s) -> list:
    return _flatten(list(s.stmts) if isinstance(s, N.Block) else [s])


def _drop_comments(stmts) -> list:
    return [s for s in stmts if not isinstance(s, N.Comment)]


class _Band:
    def __init__(self, fn: N.Func, program, assume: tuple = ()):
        self.fn, self.program = fn, program
        self.macros = {m.name: m for m in (program.macros if program is not None else ())}
        self.params = {p.name: p.type for p in fn.params}
        self.lets: dict = {}        # integer names -> their value (chains as conditionals)
        self.ptrs: dict = {}        # local pointer -> (root array or parameter, offset expr)
        self.privs: dict = {}       # private arrays of the task
        self.fresh = 0
        self.used: set = set()
        self.stored_params = {self._root_of(t) for t in self._store_targets(fn.body)} - {None}
        # the spec's preconditions on integer parameters that keep their value: facts of every proof
        assigned = D.assigned_names(fn.body)
        declared = {d.name for d in walk(fn.body) if isinstance(d, N.Decl)}

        def fixed(name):
            t = self.params.get(name)
            return isinstance(t, N.Scalar) and t.dtype in D.INT_DTYPES and name not in assigned \
                and name not in declared
        self.facts = [(n, op, k) for n, op, k in assume
                      if op in _OPS and fixed(n) and (isinstance(k, int) or fixed(k))]

    # ------------------------------------------------------------------ helpers
    def _store_targets(self, node):
        for n in walk(node):
            if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Index):
                yield n.target.base
            elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") and isinstance(n.operand, N.Index):
                yield n.operand.base

    def _root_of(self, e, depth=0):
        """The parameter or array a stored-through pointer expression points into; '?' when it
        cannot be followed (then every parameter counts as possibly stored to)."""
        if not hasattr(self, "_pdecls"):
            self._pdecls = {}
            for d in walk(self.fn.body):
                if isinstance(d, N.Decl) and isinstance(d.type, N.Pointer):
                    self._pdecls[d.name] = d.init if d.name not in self._pdecls else None
            for a in walk(self.fn.body):
                if isinstance(a, (N.Assign, N.AssignExpr)) and isinstance(a.target, N.Var) \
                        and a.target.name in self._pdecls:
                    self._pdecls[a.target.name] = None        # a reassigned pointer: not followed
        e = _strip(e)
        while isinstance(e, N.BinOp) and e.op in ("+", "-"):
            e = _strip(e.lhs)
        if not isinstance(e, N.Var) or depth > 20:
            return "?"
        if e.name in self.params:
            return e.name
        if e.name in self._pdecls:
            init = self._pdecls[e.name]
            return "?" if init is None else self._root_of(init, depth + 1)
        return e.name

    def addr(self, ptr, index=None, ptrs=None):
        """(root, offset) of ``ptr[index]`` (or of the pointer value ``ptr``)."""
        ptrs = self.ptrs if ptrs is None else ptrs
        e = _strip(ptr)
        if isinstance(e, N.Var):
            if e.name in ptrs:
                root, off = ptrs[e.name]
            elif e.name in self.privs or isinstance(self.params.get(e.name), N.Pointer):
                root, off = e.name, _c(0)
            else:
                raise Refused(f"pointer '{e.name}' is not followed to an array")
        elif isinstance(e, N.BinOp) and e.op in ("+", "-"):
            root, off = self.addr(e.lhs, ptrs=ptrs)
            if not self._int(e.rhs):
                raise Refused("a pointer offset that is not an integer expression")
            off = _add(off, e.rhs) if e.op == "+" else _sub(off, e.rhs)
        else:
            raise Refused("an address that is not a pointer plus an offset")
        if index is not None:
            if not self._int(index):
                raise Refused("an index that is not an integer expression")
            off = _add(off, index)
        return root, off

    def _int(self, e) -> bool:
        return _pure(e) and not any(isinstance(n, N.Const) and isinstance(n.value, float) for n in walk(e))

    def env(self, lets=None):
        return D.Z3Env(loopvars=set(), lets=dict(self.lets, **(lets or {})), macros=self.macros,
                       int_params=set(), varying=set())

    def prove(self, hyps, goal, lets=None, what="") -> None:
        """Z3: ``hyps`` (IR conditions) imply ``goal`` (an IR condition or a callable of the env)."""
        env = self.env(lets)
        s = smt.solver(BUDGET_MS)
        hs = [D.to_z3_bool(h, "a", env) for h in hyps]
        g = goal(env) if callable(goal) else D.to_z3_bool(goal, "a", env)
        s.add(*env.cons)
        s.add(*[_OPS[op](z3.Int(n), k if isinstance(k, int) else z3.Int(k)) for n, op, k in self.facts])
        s.add(*hs)
        s.add(z3.Not(g))
        if s.check() != z3.unsat:
            raise Refused(f"not proved: {what}")

    def name(self, base):
        taken = _vars(self.fn) | {d.name for d in walk(self.fn) if isinstance(d, N.Decl)} | {
            l.var for l in walk(self.fn) if isinstance(l, N.For)}
        cand = base
        while cand in taken or cand in self.used:
            self.fresh += 1
            cand = f"{base}_{self.fresh}"
        self.used.add(cand)
        return cand

    def chain(self, stmts, k, lets):
        """Read ``T v = e; if (c) v = e1; ...`` starting at ``stmts[k]``: the index after it."""
        d = stmts[k]
        lets[d.name] = d.init
        k += 1
        while k < len(stmts):
            s = stmts[k]
            if not (isinstance(s, N.If) and s.else_ is None and _pure(s.cond)):
                break
            body = _drop_comments(_stmts(s.then))
            if not (len(body) == 1 and isinstance(body[0], N.Assign) and body[0].op == "="
                    and isinstance(body[0].target, N.Var) and body[0].target.name == d.name
                    and _pure(body[0].value)):
                break
            prev = self.name(f"{d.name}__v")
            lets[prev] = lets[d.name]
            m = {d.name: N.Var(prev)}
            lets[d.name] = N.Cond(substitute(s.cond, m), substitute(body[0].value, m), N.Var(prev))
            k += 1
        return k

    def task_decl(self, stmts, k: int, kept: list) -> int | None:
        """One declaration of the task before the band loop: a private array (staged on chip), a
        pointer (its address), or a pure scalar chain (kept when it is a single declaration).
        Returns the index after it, or None when ``stmts[k]`` is none of these."""
        s = stmts[k]
        if isinstance(s, N.Decl) and isinstance(s.type, N.Array) and s.init is None:
            self.privs[s.name] = s
            return k + 1
        if isinstance(s, N.Decl) and isinstance(s.type, N.Pointer) and s.init is not None:
            self.ptrs[s.name] = self.addr(s.init)
            return k + 1
        if isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None and _pure(s.init):
            k2 = self.chain(stmts, k, self.lets)
            if k2 == k + 1:
                kept.append(s)
            return k2
        return None

    # ------------------------------------------------------------------ the task body
    def run(self, task: N.For) -> N.For:
        stmts = _drop_comments(_flatten(task.body.stmts))
        w = [k for k, s in enumerate(stmts) if isinstance(s, N.While)]
        if len(w) != 1:
            raise Refused("no single band loop (while) in the task")
        w = w[0]
        if stmts[w + 1:]:
            raise Refused("statements follow the band loop")
        rdecl = stmts[w - 1] if w else None
        if not (isinstance(rdecl, N.Decl) and isinstance(rdecl.type, N.Scalar) and rdecl.init is not None
                and _pure(rdecl.init)):
            raise Refused("the band counter is not declared right before the band loop")
        r = rdecl.name
        self.rtype = rdecl.type
        self.copies = []
        kept = []                    # task statements the lift may keep (pure integer declarations)
        k = 0
        while k < w - 1:
            s = stmts[k]
            k2 = self.task_decl(stmts, k, kept)
            if k2 is not None:
                k = k2
            elif isinstance(s, N.For):
                self.copies.append(self._copy(s))
                k += 1
            else:
                raise Refused(f"a {type(s).__name__} statement in the task before the band loop")
        if not self.privs:
            raise Refused("the task stages nothing in a private array")
        self.lets[r] = rdecl.init     # only for the proofs of the loop bounds below
        loop = stmts[w]
        if not (isinstance(loop.cond, N.BinOp) and loop.cond.op == "<" and isinstance(loop.cond.lhs, N.Var)
                and loop.cond.lhs.name == r and _pure(loop.cond.rhs)) or loop.do:
            raise Refused("the band loop is not 'while (r < end)'")
        del self.lets[r]
        r_begin, r_end = rdecl.init, loop.cond.rhs
        row = self._band(loop, r, r_begin, r_end, task)
        new_body = list(kept) + [row]
        new_body = _drop_dead(new_body, {d.name for d in new_body if isinstance(d, N.Decl)})
        new_task = task.with_(body=task.body.with_(stmts=tuple(new_body)))
        fn2 = self.fn.with_(body=self.fn.body.with_(stmts=tuple(
            new_task if s is task else s for s in self.fn.body.stmts)))
        loop_node = next(x for x in walk(fn2) if isinstance(x, N.For) and x.var == row.var)
        dep = D.check_parallel(self.program, fn2, loop_node)
        if dep is not None:
            raise Refused(f"the rows of a task are not independent: {dep}")
        return new_task

    def _copy(self, s: N.For):
        """A straight copy ``for (x = 0; x < E; ++x) priv[o + x] = param[p + x]``."""
        body = _drop_comments(_stmts(s.body))
        if not (_unit_loop(s) and len(body) == 1 and isinstance(body[0], N.Assign) and body[0].op == "="
                and isinstance(body[0].target, N.Index) and isinstance(_strip(body[0].value), N.Index)):
            raise Refused(f"loop '{s.var}' before the band loop is not a copy into the private array")
        droot, doff = self.addr(body[0].target.base, body[0].target.index)
        src = _strip(body[0].value)
        sroot, soff = self.addr(src.base, src.index)
        if droot not in self.privs or sroot not in self.params:
            raise Refused(f"loop '{s.var}' before the band loop is not a copy into the private array")
        x = N.Var(s.var)
        # both offsets are (base + x): the base is the offset at x = 0
        d0, s0 = substitute(doff, {s.var: _c(0)}), substitute(soff, {s.var: _c(0)})
        self.prove([], N.BinOp("==", doff, _add(d0, x)), what=f"copy loop '{s.var}' is a straight copy")
        self.prove([], N.BinOp("==", soff, _add(s0, x)), what=f"copy loop '{s.var}' is a straight copy")
        return {"root": droot, "dst0": d0, "param": sroot, "src0": s0, "n": s.hi}

    # ------------------------------------------------------------------ the band loop
    def _band(self, loop: N.While, r, r_begin, r_end, task) -> N.For:
        body = _drop_comments(_stmts(loop.body))
        if not (body and isinstance(body[-1], N.Assign) and isinstance(body[-1].target, N.Var)
                and body[-1].target.name == r and body[-1].op in ("+=", "=")):
            raise Refused("the band loop does not end by advancing its counter")
        step = body[-1].value if body[-1].op == "+=" else _sub(body[-1].value, N.Var(r))
        blets = {}
        k = 0
        decls = []
        while k < len(body) - 1 and isinstance(body[k], N.Decl):
            d = body[k]
            if not (isinstance(d.type, N.Scalar) and d.init is not None and _pure(d.init)):
                raise Refused(f"declaration '{d.name}' of the band is not a pure integer")
            decls.append(d)
            k = self.chain(body, k, blets)
        chunk = body[k:-1]
        if len(chunk) != 1 or not isinstance(chunk[0], N.For):
            raise Refused("the band body is not declarations, one chunk loop and the step")
        chunk = chunk[0]
        # quotient and remainder of the band's first row
        qd = [d for d in decls if isinstance(_strip(d.init), N.BinOp) and _strip(d.init).op == "/"
              and isinstance(_strip(_strip(d.init).lhs), N.Var) and _strip(_strip(d.init).lhs).name == r]
        rd = [d for d in decls if isinstance(_strip(d.init), N.BinOp) and _strip(d.init).op == "%"
              and isinstance(_strip(_strip(d.init).lhs), N.Var) and _strip(_strip(d.init).lhs).name == r]
        if len(qd) != 1 or len(rd) != 1 or _strip(qd[0].init).rhs != _strip(rd[0].init).rhs:
            raise Refused("the band does not split its first row as r / D and r % D")
        Dv = _strip(qd[0].init).rhs
        if _vars(Dv) & ({r} | set(blets)):
            raise Refused("the row divisor changes in the band")
        nname, cbname = qd[0].name, rd[0].name
        co_loop = self._co_loop(chunk)
        task_range = [N.BinOp(">=", N.Var(task.var), _c(0)), N.BinOp("<", N.Var(task.var), task.hi)]
        inband = task_range + [N.BinOp(">=", N.Var(r), r_begin), N.BinOp("<", N.Var(r), r_end),
                               N.BinOp(">=", step, _c(1))]
        co = N.Var(co_loop.var)
        co_in = inband + [N.BinOp(">=", co, co_loop.lo), N.BinOp("<", co, co_loop.hi)]
        row_of = _add(N.Var(r), _sub(co, N.Var(cbname)))
        self.prove(inband, N.BinOp("==", co_loop.lo, N.Var(cbname)), blets, "the row loop starts at the band's row")
        self.prove(inband, N.BinOp("==", _add(N.Var(r), step), _add(N.Var(r), _sub(co_loop.hi, co_loop.lo))),
                   blets, "the band's step is its row count")
        self.prove(inband, N.BinOp("<=", _add(N.Var(r), step), r_end), blets, "a band ends inside the task's rows")
        self.prove(co_in, N.BinOp("==", N.BinOp("/", row_of, Dv), N.Var(nname)), blets,
                   "every row of a band has the band's quotient")
        self.prove(co_in, N.BinOp("==", N.BinOp("%", row_of, Dv), co), blets,
                   "every row of a band is its remainder")
        self.prove(co_in, N.BinOp("&&", N.BinOp(">=", co, _c(0)), N.BinOp("<", co, Dv)), blets,
                   "the row remainder is in range")
        # the per-row work, with every band name in terms of the row
        rowv = N.Var(self.name("row"))
        m = {r: rowv}
        n_decl = N.Decl(nname, qd[0].type, substitute(qd[0].init, m))
        co_decl = N.Decl(co_loop.var, co_loop.var_type or INT, N.BinOp("%", rowv, Dv))
        lanes = self._chunk(chunk, co_loop, co_in, blets, nname)
        if _vars(lanes) & (set(blets) - {nname}):
            raise Refused("the row's work uses a band value other than its quotient")
        row_body = N.Block((n_decl, co_decl, lanes))
        return N.For(rowv.name, r_begin, r_end, _c(1), row_body, None, self.rtype, loc=loop.loc)

    def _co_loop(self, chunk: N.For) -> N.For:
        body = _drop_comments(_stmts(chunk.body))
        fors = [s for s in body if isinstance(s, N.For)]
        if not fors or not (isinstance(body[-1], N.For) and isinstance(body[-1].step, N.Const)
                            and body[-1].step.value == 1):
            raise Refused("the chunk does not end with a loop over the band's rows")
        return body[-1]

    # ------------------------------------------------------------------ one chunk
    def _chunk(self, chunk: N.For, co_loop: N.For, co_in, blets, nname) -> N.For:
        if not (isinstance(chunk.lo, N.Const) and chunk.lo.value == 0 and _pure(chunk.step) and _pure(chunk.hi)):
            raise Refused("the chunk loop does not start at 0 with a pure step")
        body = _drop_comments(_stmts(chunk.body))
        clets = dict(blets)
        k = 0
        while isinstance(body[k], N.Decl):
            d = body[k]
            if not (isinstance(d.type, N.Scalar) and d.init is not None and _pure(d.init)):
                raise Refused(f"declaration '{d.name}' of the chunk is not a pure integer")
            k2 = self.chain(body, k, clets)
            if k2 != k + 1:
                raise Refused(f"'{d.name}' of the chunk is assigned")
            k = k2
        stage, work = body[k:-1], body[-1]
        lo0, LT, Lo = N.Var(chunk.var), chunk.step, chunk.hi
        kk = N.Var(self.name("kk"))
        in_chunk = [N.BinOp(">=", LT, _c(1)), N.BinOp(">=", kk, _c(0)), N.BinOp("==", lo0, _mul(kk, LT)),
                    N.BinOp("<", lo0, Lo)]
        gathers = []
        fills = []
        for s in stage:
            if isinstance(s, N.For) and self._is_fill(s):
                fills.append(s)
            elif isinstance(s, N.For):
                gathers.append(s)
            else:
                raise Refused(f"a {type(s).__name__} statement in the chunk's staging")
        if len(gathers) != 1:
            raise Refused("the chunk does not gather its rows in one loop nest")
        if stage[-1] is not gathers[0]:
            raise Refused("a fill of the chunk follows its gather")
        g = self._gather(gathers[0], clets, in_chunk + co_in)
        red = self._reduction(co_loop, clets)
        V = red["valid"]
        hyp = in_chunk + co_in
        # lanes copied out: min(LT, Lo - lo0)
        self.prove(hyp, N.BinOp("==", V, N.Cond(N.BinOp("<", _sub(Lo, lo0), LT), _sub(Lo, lo0), LT)),
                   clets, "the lanes copied out of a chunk are min(step, rest)")
        self.prove(hyp, N.BinOp("==", g["valid"], V), clets, "the gather fills the lanes copied out")
        lane = N.Var(red["lane"])
        lane_hyp = hyp + [N.BinOp(">=", lane, _c(0)), N.BinOp("<", lane, V)]
        for cover in red["covers"]:
            self.prove(hyp + [N.BinOp(">", V, _c(0))], N.BinOp(">=", cover, V), clets,
                       "every lane loop covers the lanes copied out")
        # the reduction reads the gathered rows: cols read at (j, lane) == gather store at (l, lane)
        gl = [N.Var(v) for v, _ in g["loops"]]
        J = None
        for (v, hi) in g["loops"]:
            J = N.Var(v) if J is None else _add(_mul(J, hi), N.Var(v))
        jv = N.Var(red["j"])
        g_hyp = lane_hyp + [x for v, hi in g["loops"] for x in
                            (N.BinOp(">=", N.Var(v), _c(0)), N.BinOp("<", N.Var(v), hi))]
        glets = dict(clets, **g["lets"])
        if red["cols"][0] != g["dst"][0]:
            raise Refused("the reduction does not read the gathered array")
        read_at = substitute(red["cols"][1], {red["j"]: J, red["lane"]: lane})
        gst = substitute(g["dst"][1], {g["lane"]: lane})
        self.prove(g_hyp, N.BinOp("==", read_at, gst), glets, "the reduction reads row j of the gather")
        prod = None
        for _, hi in g["loops"]:
            prod = hi if prod is None else _mul(prod, hi)
        self.prove(hyp, N.BinOp("==", red["K"], prod), clets, "the gather's rows are the reduction's trip count")
        # ... and its loops run that often: with two negative extents the product is positive
        # but the nest runs zero times (the spec's preconditions, e.g. Cin >= 1, KW >= 1, rule it out)
        def runs(e):
            return N.Cond(N.BinOp(">", e, _c(0)), e, _c(0))
        count = None
        for _, hi in g["loops"]:
            count = runs(hi) if count is None else _mul(count, runs(hi))
        self.prove(hyp, N.BinOp("==", runs(red["K"]), count), clets,
                   "the gather nest runs as often as the reduction (its extents are not both negative; "
                   "a [preconditions] entry such as Cin >= 1 states it)")
        for v, hi in g["loops"]:
            if _vars(hi) & ({x for x, _ in g["loops"]} | {red["lane"], chunk.var, co_loop.var}):
                raise Refused("the gather nest is not rectangular")
        # a chunk's lanes (padded ones included) fit its step: the staged rows are LT apart at most
        cover = red["covers"][0]
        for c in red["covers"][1:]:
            self.prove(hyp, N.BinOp("==", c, cover), clets, "the lane loops of a row run over the same lanes")
        self.prove(hyp, N.BinOp("&&", N.BinOp("<=", cover, LT), N.BinOp(">=", cover, _c(0))), clets,
                   "a chunk's padded lanes fit its step")
        lemma = [N.BinOp("<=", cover, LT), N.BinOp(">=", cover, _c(0))]
        # disjoint stores: accumulator, scratch and gathered rows; the weight copy untouched
        self._disjoint(red, g, clets, lane_hyp + lemma, g_hyp)
        for f in fills:
            t = _drop_comments(_stmts(f.body))[0].target
            root, off = self.addr(t.base, t.index)
            fv = N.Var(f.var)
            for c in self.copies:
                if c["root"] != root:
                    continue
                self.prove(hyp + lemma + [N.BinOp(">=", fv, _c(0)), N.BinOp("<", fv, f.hi)],
                           N.BinOp("||", N.BinOp("<", off, c["dst0"]), N.BinOp(">=", off, _add(c["dst0"], c["n"]))),
                           clets, "a fill of the chunk is not the weight copy")
        # the weight read is inside the copied range
        wroot, woff = red["w"]
        cp = [c for c in self.copies if c["root"] == wroot]
        if len(cp) != 1:
            raise Refused("the reduction's scalar operand is not read from one copied range")
        cp = cp[0]
        j_hyp = hyp + [N.BinOp(">=", jv, _c(0)), N.BinOp("<", jv, red["K"])]
        rel = _sub(woff, cp["dst0"])
        self.prove(j_hyp, N.BinOp("&&", N.BinOp(">=", rel, _c(0)), N.BinOp("<", rel, cp["n"])), clets,
                   "the scalar operand is read inside the copied range")
        if {cp["param"], g["src"][0], "?"} & self.stored_params:
            raise Refused("an array the lift reads is stored to")
        # addresses in terms of lo0 + lane only
        lov = N.Var(self.name("lo"))
        def at(e, lets_):
            self.prove(lane_hyp + g_hyp, N.BinOp("==", e, substitute(e, {chunk.var: _c(0), red["lane"]: _add(lo0, lane),
                                                                      g["lane"]: _add(lo0, lane)})),
                       lets_, "an address depends on the chunk only through its element")
            return substitute(e, {chunk.var: _c(0), red["lane"]: lov, g["lane"]: lov})
        # chunk declarations (len, lenP) are inlined first, so that lo0 := 0 reaches inside them
        from .loop_recovery import _fold
        chunk_lets = {d: clets[d] for d in clets if d not in blets}
        src_off = at(self._inline(substitute(g["src"][1], {g["lane"]: lane}), chunk_lets), glets)
        out_off = at(self._inline(red["out"][1], chunk_lets), clets)
        w_idx = self._inline(_add(cp["src0"], substitute(rel, {red["j"]: J})), chunk_lets)
        if _vars(w_idx) & {chunk.var, red["lane"]}:
            raise Refused("the scalar operand depends on the chunk")
        for p_ in (g["src"][0], cp["param"], red["out"][0]):
            t = self.params.get(p_)
            if not (isinstance(t, N.Pointer) and isinstance(t.elem, N.Scalar) and t.elem.dtype == "float32"):
                raise Refused(f"'{p_}' is not a float array")
        # the lifted element
        src_off, out_off, w_idx = (_fold(_zero_terms(e)) for e in (src_off, out_off, w_idx))
        accn = self.name("sum")
        ety = red["type"]
        x = N.Index(N.Var(g["src"][0]), src_off)
        wv = N.Index(N.Var(cp["param"]), w_idx)
        inner = N.Assign(N.Var(accn), "+=", N.BinOp("*", x, wv))
        for v, hi in reversed(g["loops"]):
            inner = N.For(v, _c(0), hi, _c(1), N.Block((inner,)), None, INT)
        zero = N.Const(0.0, "float32", "0.0f") if ety.dtype == "float32" else N.Cast(ety, _c(0))
        lane_body = N.Block((N.Decl(accn, ety, zero), inner,
                             N.Assign(N.Index(N.Var(red["out"][0]), out_off), "=", N.Var(accn))))
        return N.For(lov.name, _c(0), Lo, _c(1), lane_body, None, chunk.var_type or INT)

    def _inline(self, e, lets):
        for _ in range(8):
            e2 = substitute(e, lets)
            if e2 == e:
                return e
            e = e2
        raise Refused("chunk declarations refer to each other too deeply")

    def _is_fill(self, s: N.For) -> bool:
        body = _drop_comments(_stmts(s.body))
        return (_unit_loop(s) and len(body) == 1 and isinstance(body[0], N.Assign) and body[0].op == "="
                and isinstance(body[0].target, N.Index) and _is_zero(body[0].value))

    # ------------------------------------------------------------------ the gather nest
    def _gather(self, s: N.For, clets, hyp):
        loops, lets, ptrs = [], {}, dict(self.ptrs)
        node = s
        while True:
            if not _unit_loop(node):
                raise Refused(f"gather loop '{node.var}' does not run from 0 by 1")
            loops.append((node.var, node.hi))
            body = _drop_comments(_stmts(node.body))
            while body and isinstance(body[0], N.Decl) and isinstance(body[0].type, N.Pointer) and body[0].init is not None:
                ptrs[body[0].name] = self.addr(body[0].init, ptrs=ptrs)
                body = body[1:]
            if len(body) != 1:
                raise Refused("the gather nest is not perfect")
            nxt = body[0]
            if isinstance(nxt, N.For) and not self._lane_store(nxt, ptrs, probe=True):
                node = nxt
                continue
            break
        if isinstance(nxt, N.If) and nxt.else_ is not None:
            a = self._lane_store(_single(nxt.then), ptrs)
            b = self._lane_store(_single(nxt.else_), ptrs)
            lane = N.Var(self.name("ln"))
            ghyp = hyp + [x for v, hi in loops for x in (N.BinOp(">=", N.Var(v), _c(0)), N.BinOp("<", N.Var(v), hi))]
            ma, mb = {a["lane"]: lane}, {b["lane"]: lane}
            self.prove(ghyp + [nxt.cond], N.BinOp("==", a["valid"], b["valid"]), clets, "the gather's branches store the same lanes")
            h2 = ghyp + [nxt.cond, N.BinOp(">=", lane, _c(0)), N.BinOp("<", lane, b["valid"])]
            if a["dst"][0] != b["dst"][0] or a["src"][0] != b["src"][0]:
                raise Refused("the gather's branches store different arrays")
            self.prove(h2, N.BinOp("==", substitute(a["dst"][1], ma), substitute(b["dst"][1], mb)), clets,
                       "the gather's branches store the same element")
            self.prove(h2, N.BinOp("==", substitute(a["src"][1], ma), substitute(b["src"][1], mb)), clets,
                       "the gather's branches load the same element")
            st = b
        elif isinstance(nxt, N.For):
            st = self._lane_store(nxt, ptrs)
        else:
            raise Refused("the gather nest does not end in a lane loop")
        if st["dst"][0] not in self.privs or st["src"][0] not in self.params:
            raise Refused("the gather does not copy a parameter array into the private array")
        st["loops"], st["lets"] = loops, lets
        return st

    def _lane_store(self, s, ptrs, probe=False):
        """``for (i < V) dst[i] = src[f(i)]`` (an inner ``for (z < 1)`` read as z = 0)."""
        try:
            if not (isinstance(s, N.For) and _unit_loop(s)):
                raise Refused("not a lane loop")
            body = _drop_comments(_stmts(s.body))
            if len(body) == 1 and isinstance(body[0], N.For) and _unit_loop(body[0]) and isinstance(body[0].hi, N.Const) and body[0].hi.value == 1:
                body = [substitute(x, {body[0].var: _c(0)}) for x in _drop_comments(_stmts(body[0].body))]
            if not (len(body) == 1 and isinstance(body[0], N.Assign) and body[0].op == "="
                    and isinstance(body[0].target, N.Index) and isinstance(_strip(body[0].value), N.Index)):
                raise Refused("the gather's lane loop is not one copy")
            dst = self.addr(body[0].target.base, body[0].target.index, ptrs=ptrs)
            v = _strip(body[0].value)
            src = self.addr(v.base, v.index, ptrs=ptrs)
            if dst[0] not in self.privs:
                raise Refused("the gather's lane loop does not store into the private array")
            # the store is the lane's own element: dst offset = base + i
            base = substitute(dst[1], {s.var: _c(0)})
            self.prove([], N.BinOp("==", dst[1], _add(base, N.Var(s.var))),
                       what="the gather stores lane i at element i")
        except Refused:
            if probe:
                return None
            raise
        return {"lane": s.var, "valid": s.hi, "dst": dst, "src": src}

    # ------------------------------------------------------------------ the reduction
    def _reduction(self, co_loop: N.For, clets):
        body = _drop_comments(_open_blocks(_stmts(co_loop.body)))
        ptrs = dict(self.ptrs)
        while body and isinstance(body[0], N.Decl) and isinstance(body[0].type, N.Pointer) and body[0].init is not None:
            ptrs[body[0].name] = self.addr(body[0].init, ptrs=ptrs)
            body = body[1:]
        if len(body) < 3:
            raise Refused("the row work is not zero, reduce, copy out")
        *zeros, red, out = body
        covers = []
        acc_root = None
        acc_offs = []
        for z in zeros:
            if not (isinstance(z, N.For) and self._is_fill(z)):
                raise Refused("the row work does not start by zeroing its accumulator")
            t = _drop_comments(_stmts(z.body))[0].target
            root, off = self.addr(t.base, t.index, ptrs=ptrs)
            acc_offs.append((off, z.var, z.hi))
            acc_root = root
        if not (isinstance(red, N.For) and _unit_loop(red)):
            raise Refused("the row work has no reduction loop from 0")
        j = red.var
        rb = _drop_comments(_open_blocks(_stmts(red.body)))
        scal = {}
        steps = []
        for s in rb:
            if isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None:
                v = _strip(s.init)
                if not isinstance(v, N.Index):
                    raise Refused("a scalar of the reduction step is not a load")
                scal[s.name] = self.addr(v.base, v.index, ptrs=ptrs)
            elif isinstance(s, N.For) and _unit_loop(s):
                b = _drop_comments(_stmts(s.body))
                if len(b) != 1 or not isinstance(b[0], N.Assign) or b[0].op != "=" or not isinstance(b[0].target, N.Index):
                    raise Refused("a lane loop of the reduction step is not one store")
                steps.append((s, b[0]))
            else:
                raise Refused(f"a {type(s).__name__} statement in the reduction step")
        if len(steps) != 2 or len(scal) != 1:
            raise Refused("the reduction step is not 'tmp = row * scalar; acc = acc + tmp'")
        (m_loop, m), (a_loop, a) = steps
        sname, w = next(iter(scal.items()))
        i_m, i_a = m_loop.var, a_loop.var
        mt = self.addr(m.target.base, m.target.index, ptrs=ptrs)
        mv = _strip(m.value)
        if not (isinstance(mv, N.BinOp) and mv.op == "*"):
            raise Refused("the first lane loop of the step is not a product")
        x, y = _strip(mv.lhs), _strip(mv.rhs)
        if isinstance(x, N.Var) and x.name == sname:
            x, y = y, x
        if not (isinstance(y, N.Var) and y.name == sname and isinstance(x, N.Index)):
            raise Refused("the product is not a staged row element times the scalar")
        cols = self.addr(x.base, x.index, ptrs=ptrs)
        at = self.addr(a.target.base, a.target.index, ptrs=ptrs)
        av = _strip(a.value)
        if not (isinstance(av, N.BinOp) and av.op == "+"):
            raise Refused("the second lane loop of the step is not a sum")
        l, rr = _strip(av.lhs), _strip(av.rhs)
        la = self.addr(l.base, l.index, ptrs=ptrs) if isinstance(l, N.Index) else None
        ra = self.addr(rr.base, rr.index, ptrs=ptrs) if isinstance(rr, N.Index) else None
        if la is None or ra is None:
            raise Refused("the sum does not add two staged lanes")
        if not (isinstance(out, N.For) and _unit_loop(out)):
            raise Refused("the row work does not end with a copy-out loop")
        ob = _drop_comments(_stmts(out.body))
        if not (len(ob) == 1 and isinstance(ob[0], N.Assign) and ob[0].op == "=" and isinstance(ob[0].target, N.Index)
                and isinstance(_strip(ob[0].value), N.Index)):
            raise Refused("the copy-out loop is not one store")
        o_dst = self.addr(ob[0].target.base, ob[0].target.index, ptrs=ptrs)
        o_src = self.addr(_strip(ob[0].value).base, _strip(ob[0].value).index, ptrs=ptrs)
        if o_dst[0] not in self.params:
            raise Refused("the copy-out does not store to a parameter array")
        lane = self.name("lane")
        L = N.Var(lane)
        mp = lambda v: {v: L}
        acc_at = lambda off, v: substitute(off, mp(v))
        # all lanes are the lane's own element of the one accumulator, scratch and rows
        same = [(at, i_a), (la, i_a), (o_src, out.var)] + [((acc_root, off), v) for off, v, _ in acc_offs]
        for (root, off), v in same:
            if root != acc_root:
                raise Refused("the accumulator is not one array")
        accs = [acc_at(off, v) for (root, off), v in same]
        for e in accs[1:]:
            self.prove([], N.BinOp("==", accs[0], e), clets, "every accumulator access is the lane's own element")
        tmp1, tmp2 = acc_at(mt[1], i_m), acc_at(ra[1], i_a)
        if mt[0] != ra[0]:
            raise Refused("the product is not the lane added")
        self.prove([], N.BinOp("==", tmp1, tmp2), clets, "the sum adds the lane's own product")
        ety = None
        for root in (acc_root,):
            arr = self.privs.get(root)
            if arr is not None:
                ety = arr.type.elem
        if not (isinstance(ety, N.Scalar) and ety.dtype == "float32"):
            raise Refused("the accumulator is not float")
        return {"lane": lane, "valid": out.hi, "covers": [h for _, _, h in acc_offs] + [m_loop.hi, a_loop.hi],
                "j": j, "K": red.hi, "cols": (cols[0], acc_at(cols[1], i_m)), "w": w,
                "acc": (acc_root, accs[0]), "tmp": (mt[0], tmp1), "out": (o_dst[0], acc_at(o_dst[1], out.var)),
                "type": ety}

    def _disjoint(self, red, g, clets, lane_hyp, g_hyp):
        """The accumulator, the scratch lanes, the gathered rows and the copied weights do not
        overlap inside the private array (every lane of every loop, padded ones included)."""
        lane = N.Var(red["lane"])
        j = N.Var(red["j"])
        other = N.Var(self.name("lane2"))
        hyp = [h for h in lane_hyp if not (isinstance(h, N.BinOp) and h.lhs == lane)]
        def lanes(v, hi):
            return [N.BinOp(">=", v, _c(0)), N.BinOp("<", v, hi)]
        bound = red["covers"][:1]
        lane_rng = [x for hi in bound for x in lanes(lane, hi)]
        oth_rng = [x for hi in bound for x in lanes(other, hi)]
        rows = lanes(j, red["K"])
        cols_at = substitute(red["cols"][1], {red["lane"]: other})
        acc, tmp = red["acc"][1], red["tmp"][1]
        tmp_o = substitute(tmp, {red["lane"]: other})
        facts = hyp + lane_rng + oth_rng + rows
        self.prove(facts, N.BinOp("!=", acc, cols_at), clets, "the accumulator is not a gathered row")
        self.prove(facts, N.BinOp("!=", tmp, cols_at), clets, "the scratch lanes are not a gathered row")
        self.prove(facts, N.BinOp("!=", acc, tmp_o), clets, "the accumulator is not the scratch")
        # the weight copy: every store of the band lies outside it
        for c in self.copies:
            hi = _add(c["dst0"], c["n"])
            def outside(e):
                return N.BinOp("||", N.BinOp("<", e, c["dst0"]), N.BinOp(">=", e, hi))
            self.prove(facts, outside(acc), clets, "the accumulator is not the weight copy")
            self.prove(facts, outside(tmp), clets, "the scratch is not the weight copy")
            self.prove(facts, outside(cols_at), clets, "the gathered rows are not the weight copy")


def _zero_terms(e):
    """``(long)0`` -> ``0``, ``0 * x`` -> ``0``, ``x - 0`` / ``x + 0`` -> ``x`` (integer terms)."""
    from xpiler.ir.visit import rewrite

    def zero(x):
        return isinstance(x, N.Const) and not isinstance(x.value, bool) and x.value == 0

    def fn(n):
        if isinstance(n, N.Cast) and zero(n.expr) and isinstance(n.type, N.Scalar) and "int" in n.type.dtype:
            return _c(0)
        if isinstance(n, N.BinOp) and n.op == "*" and (zero(n.lhs) or zero(n.rhs)):
            return _c(0)
        if isinstance(n, N.BinOp) and n.op in ("+", "-") and zero(n.rhs):
            return n.lhs
        if isinstance(n, N.BinOp) and n.op == "+" and zero(n.lhs):
            return n.rhs
        return n
    return rewrite(e, fn)


def _open_blocks(stmts) -> list:
    """Braces dissolved when what they declare (scalars) is named by no other statement of the list."""
    out = _flatten(stmts)
    while True:
        for k, s in enumerate(out):
            if not isinstance(s, N.Block):
                continue
            own = {x.name for x in s.stmts if isinstance(x, N.Decl)}
            if not all(isinstance(x.type, N.Scalar) for x in s.stmts if isinstance(x, N.Decl)):
                continue
            rest = tuple(out[:k] + out[k + 1:])
            if own & (_vars(rest) | {d.name for d in walk(rest) if isinstance(d, N.Decl)}):
                continue
            out = out[:k] + _flatten(s.stmts) + out[k + 1:]
            break
        else:
            return out


def _single(s):
    b = _drop_comments(_stmts(s))
    if len(b) != 1:
        raise Refused("a gather branch is not one lane loop")
    return b[0]


def unband(fn: N.Func, program, assume: tuple = (), conv: bool = False) -> tuple:
    """``(fn with every banded task un-banded, note)``; the note says why a task that holds a
    band loop was left as it is (None when none was). ``assume``: the spec's preconditions as
    ``(parameter, op, integer or parameter)``, facts of every proof. With ``conv``, band loops are
    lifted only as staged 2-D convolutions (:func:`passes.unband_conv.lift`) instead of the
    one-gather form: loop recovery's ``staged_conv``, which only the cuda / hip plans ask for (the
    lifted nest is slower than the staged form on c: docs/decisions.md, 2026-12-05). With ``conv``,
    a task without a band loop that stages its planes one by one in NRAM (depthwise_conv2d.mlu) is
    lifted by :func:`passes.unstage_planes.lift`."""
    note = None
    out = []
    changed = False
    for s in fn.body.stmts:
        if isinstance(s, N.For) and PARTITION_PRAGMA in s.pragmas and any(isinstance(x, N.While) for x in walk(s.body)):
            try:
                if conv:
                    from .unband_conv import lift
                    s2 = lift(fn, program, s, assume)
                else:
                    s2 = _Band(fn, program, assume).run(s)
                changed = True
                s = s2
            except Refused as e:
                note = f"{'staged convolution' if conv else 'band loop'}: {e}"
        elif conv and isinstance(s, N.For) and PARTITION_PRAGMA in s.pragmas:
            # a task that stages its planes one by one (depthwise_conv2d.mlu): passes/unstage_planes.py
            from .unstage_planes import lift as lift_planes
            try:
                s = lift_planes(fn, program, s, assume)
                changed = True
            except Refused as e:
                note = f"staged planes: {e}"
        out.append(s)
    if not changed:
        return fn, note
    return fn.with_(body=fn.body.with_(stmts=tuple(out))), note
