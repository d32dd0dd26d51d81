"""Row un-staging: a BANG row loop that stages each row in an NRAM buffer padded to a whole
number of vectors becomes a plain row body over global memory (issue 15, issue 13).

A BANG row kernel (softmax.mlu), once detensorize has lowered its ``__bang_*`` ops to loops,
walks its rows like this (one task's view; ``padded`` = ``cols`` rounded up to 32)::

    for (int r = taskId; r < rows; r += taskDim) {
        for (int j = 0; j < cols; ++j) row_buf[j] = (x + (long)r * cols)[j];     // copy in
        for (int c = cols; c < padded; ++c) row_buf[c] = NEG_BIG;              // pad the tail
        float bv = row_buf[0]; for (int i = 1; i < padded; ++i) { ... bv ... }  // reductions
        for (int i = 0; i < padded; ++i) row_buf[i] = row_buf[i] - s;          // element-wise
        ...
        for (int j = 0; j < cols; ++j) (y + (long)r * cols)[j] = row_buf[j];   // copy out
    }

:func:`unstage_row` evaluates the row body symbolically. Each staged buffer ``b`` has, per row,
a *main* value ``M(c)`` for its lanes ``0 <= c < V`` (``V``: the copy-in count, ``cols``) and a
*tail* value ``T(c)`` for ``V <= c < P`` (``P``: the end of the tail fill, ``padded``); both are
expressions over global memory and the row's scalars (a store into the buffer is kept as
``(elem)(value)``, so its rounding stays). Each lane loop ``for (i = lo; i < hi; ++i)`` is split
at ``V`` into a main part ``[lo, V)`` and a tail part ``[V, hi)``; in each part a buffer read
``b[i]`` becomes ``M(i)`` or ``T(i)``, a buffer store updates ``M`` or ``T`` and is not emitted,
and everything else (reductions into scalars, stores to global memory) is emitted as a loop over
that part (one loop over the loop's own lanes, reads ``i < V ? M(i) : T(i)``, when both parts
do work). A tail part whose emitted body is a ``+=`` of positive zero into an accumulator that
starts at positive zero and is only ever added to is dropped (such an accumulator is never -0,
so ``a + 0.0f == a`` exactly); any other tail part is kept as a loop (it reads no memory: the
tail holds values the kernel computed, never copied-in data). The result::

    for (int r = taskId; r < rows; r += taskDim) {
        float bv = 0 < cols ? (float)(x + (long)r * cols)[0] : NEG_BIG;
        for (int i = 1; i < cols; ++i) { ... (float)(x + (long)r * cols)[i] ... }
        for (int i = cols; i < padded; ++i) { ... NEG_BIG ... }
        ...
        for (int j = 0; j < cols; ++j) (y + (long)r * cols)[j] = <M(j)>;
    }

which loop recovery then collapses into one loop over the rows (the strided form), and binding
spreads with ``rows="block"`` (passes/block_rows.py).

Proof obligations, per row loop (each refusal names the one that failed):

* **split** (Z3, with the row's and the kernel's integer declarations): for every lane loop,
  ``lo < hi => lo <= V <= hi`` and ``lo >= hi => hi <= V <= lo`` (so the two emitted parts run
  exactly the lanes of the loop, in order), and ``0 <= lo`` / ``hi <= P`` for a loop that stores
  into the buffer (XP4281);
* **defined before read**: every lane part reads only buffer values this row wrote before
  (the state of every buffer is undefined when a row starts, so a value an earlier row left in
  NRAM — a tail that is not refilled — is refused, XP4282); a store into the buffer covers all of
  the main lanes ``[0, V)`` or all of the tail lanes ``[V, P)`` (XP4281);
* **the tail is never copied out**: a store to global memory in a tail part is refused (XP4283);
* **values stay valid**: a buffer value that names a scalar is dropped when that scalar is
  assigned again (a later read of it is refused, XP4281); a buffer store inside a lane loop may
  not name a scalar the loop assigns (a running value); global memory read by a buffer value is
  never written in the kernel (pointer parameters are distinct buffers, the project's
  assumption), so reading it later gives the value the copy-in read;
* a read at a constant index ``e`` becomes ``e < V ? M(e) : T(e)``; an ``e`` that may lie past
  ``P`` reads NRAM the kernel never wrote (every store is inside ``[0, P)``), whose value the
  source does not define, so ``T(e)`` is one it may have;
* the row body holds only scalar declarations, scalar assignments, ``if``s without buffer stores,
  lane loops with straight-line bodies (``if``s assigning scalars allowed), and stores of a
  buffer element at a constant index (``red_buf[0] = acc``: kept as a value, never emitted);
  the buffers are ``__nram__`` arrays used by this kernel only, and only inside the row loop.

A scalar that is only ever assigned and never read after the rewrite (the index of a
``__bang_max`` nobody reads) is dropped with its assignments (they have no effects).

A *block* of rows staged as ``[nb][padded]`` (layernorm.mlu: flat loops over ``nb * padded`` with
``% padded``, a per-row pointer, a per-block stats vector) is first turned into one staged row per
iteration by ``passes/unstage_row_blocks.py`` (its obligations are listed there), rows filled
before the row loop (gamma, beta) keep their main / tail values in every row, and the block loop
becomes ``for (r0 = L; r0 < H; ++r0)`` marked ``#pragma xpiler rows(unstaged)`` so that the task
slices (``passes/task_slices.py``) collapse the tasks' row ranges. An ``if (C) return;`` before
the row loop goes when Z3 shows ``C`` means the loop runs no row and only pure declarations
follow it.

Not done: rows dealt to the tasks block by block (rmsnorm.mlu, step ``taskDim * block_rows``) are
refused (XP4281, "not contiguous"), and so would be its ``__bang_sumpool`` partial sums.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt
from xpiler.ir.visit import rewrite, substitute, walk

from .base import PassError, applying_steps
from . import dependence as D
from .decache import _flatten, _is_int, _pure, _vars

NAME = "unstage_rows"
LANE = "xp__lane"           # the placeholder of a buffer value's lane
_INT = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "char")


class Refused(Exception):
    """This row loop is not un-staged; ``code`` is the diagnostic (XP4281-XP4283)."""

    def __init__(self, why: str, code: str = "XP4281", node=None):
        super().__init__(why)
        self.code, self.node = code, node


# ----------------------------------------------------------------------------- small helpers
def _elem_index(e, buffers):
    """``b[i]`` / ``(b + off)[i]`` of a staged buffer -> (name, index Expr), else None."""
    if not isinstance(e, N.Index):
        return None
    b, off = D._split_ptr(e.base)
    if b not in buffers:
        return None
    return b, e.index if off is None else N.BinOp("+", off, e.index)


def _assigned_scalars(node) -> set:
    return {n.target.name for n in walk(node) if isinstance(n, N.Assign) and isinstance(n.target, N.Var)}


def _flatten_all(stmts, declared_once) -> list:
    """Braces dissolved (detensorize's ``{ const float s = ...; for ... }``) when every name they
    declare is declared once in the kernel (so nothing is captured)."""
    out = []
    for s in stmts:
        if isinstance(s, N.Block):
            own = [x.name for x in s.stmts if isinstance(x, N.Decl)]
            if all(n in declared_once for n in own):
                out.extend(_flatten_all(s.stmts, declared_once))
                continue
        out.append(s)
    return out


class _Z3:
    """Integer facts of the kernel (its pure integer declarations) for the split proofs."""

    def __init__(self, lets: dict, macros: dict):
        self.lets, self.macros = lets, macros
        self.facts = []         # (lo, hi) of lane loops that run in every row: lo < hi => lo >= 0
        self.hyps = []          # more facts: t -> z3 formula (a block's r0 < H, B >= 1)

    def valid(self, claim) -> bool:
        env = D.Z3Env(loopvars=set(), lets=dict(self.lets), macros=self.macros, int_params=set(), varying=set())
        def t(e):
            return D.to_z3(e, "a", env)
        t.b = lambda e: D.to_z3_bool(e, "a", env)
        f = claim(t)
        s = smt.solver(D.TIMEOUT_MS)
        for lo, hi in self.facts:
            s.add(z3.Implies(t(lo) < t(hi), t(lo) >= 0))
        for h in self.hyps:
            s.add(h(t))
        s.add(*env.cons)
        s.add(z3.Not(f))
        return s.check() == z3.unsat


# ----------------------------------------------------------------------------- one row
class _Row:
    def __init__(self, loop: N.For, buffers: dict, fn: N.Func, program, lets: dict):
        self.loop, self.buffers, self.fn, self.program = loop, buffers, fn, program
        self.z = _Z3(lets, {m.name: m for m in (program.macros if program is not None else ())})
        self.state = {}         # buffer -> {"V", "P", "main", "tail"} (values over LANE)
        self.celem = {}         # (buffer, constant index) -> value
        self.lets = lets
        self.kept_tail = None   # the first lane loop that emits work over tail lanes, if any

    # values ------------------------------------------------------------------------------
    def _value_at(self, b, part, idx, node):
        st = self.state.get(b)
        if part == "both":
            # one loop over the main and the tail lanes: each lane picks its own value
            if st is not None and isinstance(st.get("both"), N.Node):
                return substitute(st["both"], {LANE: idx})
            return N.Cond(N.BinOp("<", idx, st["V"]), self._value_at(b, "main", idx, node),
                          self._value_at(b, "tail", idx, node))
        v = None if st is None else st[part]
        if v is None:
            where = "main lanes [0, V)" if part == "main" else "tail lanes [V, P)"
            raise Refused(f"'{b}' is read in its {where} before this row writes them (a value kept "
                          "from an earlier row, or never written)", "XP4282", node)
        if v == "clobbered":
            raise Refused(f"a value of '{b}' names a scalar assigned after it was stored", "XP4281", node)
        return substitute(v, {LANE: idx})

    def _sub(self, e, part=None, lane=None):
        """``e`` with buffer reads replaced: at the lane (``part`` main/tail) or a constant index."""
        def fn(n):
            hit = _elem_index(n, self.buffers)
            if hit is None:
                return n
            b, idx = hit
            if lane is not None and isinstance(idx, N.Var) and idx.name == lane:
                return self._value_at(b, part, N.Var(lane), n)
            if lane is not None and lane in _vars(idx):
                raise Refused(f"'{b}' is read at another element than lane '{lane}' (not element-wise)",
                              "XP4281", n)
            k = self._const(idx)
            if k is not None and (b, k) in self.celem:
                return self.celem[(b, k)]
            st = self.state.get(b)
            if st is None or not _pure(idx) or _vars(idx) & set(self.buffers):
                raise Refused(f"'{b}' is read at an index this rewrite cannot place", "XP4282", n)
            V = st["V"]
            if self.z.valid(lambda t: t(idx) >= t(V)):
                return self._value_at(b, "tail", idx, n)
            if self.z.valid(lambda t: z3.And(t(idx) >= 0, t(idx) < t(V))):
                return self._value_at(b, "main", idx, n)
            return N.Cond(N.BinOp("<", idx, V), self._value_at(b, "main", idx, n),
                          self._value_at(b, "tail", idx, n))
        return rewrite(e, fn)

    def _const(self, e):
        if _is_int(e):
            return e.value
        return None

    def _clobber(self, name):
        for st in self.state.values():
            for part in ("main", "tail"):
                if isinstance(st[part], N.Node) and name in _vars(st[part]):
                    st[part] = "clobbered"
        for k, v in list(self.celem.items()):
            if name in _vars(v):
                del self.celem[k]

    # statements --------------------------------------------------------------------------
    def run(self, stmts) -> list:
        # every lane loop of the row body runs in every row; one that would touch a buffer below
        # lane 0 is out of the array's bounds, undefined in the source: the proofs may assume it
        # does not happen
        for s in stmts:
            if isinstance(s, N.For) and _pure(s.lo) and _pure(s.hi) and any(
                    _elem_index(n, self.buffers) for n in walk(s.body)):
                self.z.facts.append((s.lo, s.hi))
        out = []
        for s in stmts:
            out.extend(self._stmt(s))
        return out

    def _stmt(self, s) -> list:
        if isinstance(s, (N.Comment, N.Pragma)):
            return [s]
        if isinstance(s, N.Decl):
            if not isinstance(s.type, (N.Scalar,)):
                raise Refused(f"the row declares '{s.name}' that is not a scalar", "XP4281", s)
            return [s.with_(init=self._sub(s.init)) if s.init is not None else s]
        if isinstance(s, N.Assign):
            hit = _elem_index(s.target, self.buffers)
            if hit is not None:
                b, idx = hit
                k = self._const(idx)
                if k is None or s.op != "=":
                    raise Refused(f"'{b}' is stored outside a lane loop at a non-constant index", "XP4281", s)
                self.celem[(b, k)] = N.Cast(self.buffers[b].elem, self._sub(s.value))
                return []
            if not isinstance(s.target, N.Var):
                new = s.with_(target=self._sub(s.target), value=self._sub(s.value))
                return [new]
            self._clobber(s.target.name)
            return [s.with_(value=self._sub(s.value))]
        if isinstance(s, N.ExprStmt):
            if not _pure(s.expr):
                raise Refused("a call or a side effect in the row body", "XP4281", s)
            return [s]
        if isinstance(s, N.If):
            if any(_elem_index(n.target, self.buffers) for n in walk(s) if isinstance(n, N.Assign)):
                raise Refused("a buffer is stored under a condition", "XP4281", s)
            if any(isinstance(n, (N.For, N.While, N.CFor)) for n in walk(s)):
                raise Refused("a loop under a condition in the row body", "XP4281", s)
            new = rewrite(s, lambda n: self._sub(n) if isinstance(n, N.Expr) and not isinstance(
                n, N.Var) else n)
            for v in _assigned_scalars(s):
                self._clobber(v)
            return [new]
        if isinstance(s, N.For):
            return self._lane_loop(s)
        raise Refused(f"a {type(s).__name__} statement in the row body", "XP4281", s)

    def _lane_loop(self, lp: N.For) -> list:
        if not (_is_int(lp.step, 1) and lp.binding is None and lp.var_type is not None and
                _pure(lp.lo) and _pure(lp.hi)):
            raise Refused(f"loop '{lp.var}' is not a lane loop (step 1, its own counter)", "XP4281", lp)
        if (_vars(lp.lo) | _vars(lp.hi)) & set(self.buffers):
            raise Refused(f"the bounds of loop '{lp.var}' read a buffer", "XP4281", lp)
        body = _flatten(lp.body.stmts)
        for n in walk(tuple(body)):
            if isinstance(n, (N.For, N.While, N.CFor, N.Return, N.Break, N.Continue, N.Barrier)):
                raise Refused(f"loop '{lp.var}' is not straight-line", "XP4281", lp)
        writes = {}
        for s in body:
            if isinstance(s, N.Assign):
                hit = _elem_index(s.target, self.buffers)
                if hit is not None:
                    b, idx = hit
                    if not (isinstance(idx, N.Var) and idx.name == lp.var) or s.op != "=":
                        raise Refused(f"loop '{lp.var}' stores '{b}' at another element than its lane",
                                      "XP4281", s)
                    writes.setdefault(b, s)
            elif isinstance(s, N.If):
                if any(_elem_index(n.target, self.buffers) for n in walk(s) if isinstance(n, N.Assign)):
                    raise Refused(f"loop '{lp.var}' stores a buffer under a condition", "XP4281", s)
        own = {s.name for s in body if isinstance(s, N.Decl)}
        running = _assigned_scalars(tuple(body)) - own
        for b, s in writes.items():
            # a store's value that names a scalar the loop assigns would be a running value
            vals = [x.value for x in body if isinstance(x, N.Assign) and _elem_index(x.target, self.buffers)]
            if any(_vars(v) & running for v in vals):
                raise Refused(f"loop '{lp.var}' stores a running value into '{b}'", "XP4281", s)
        lo, hi = lp.lo, lp.hi
        # a buffer stored for the first time in this row: its copy-in defines V (lanes [0, V))
        for b in writes:
            st = self.state.get(b)
            if st is not None and st["tail"] is None and st["P"] is None and isinstance(st["main"], N.Node) and \
                    _is_int(lo, 0) and self.z.valid(lambda t: t(hi) <= t(st["V"])):
                # a fill of [0, P) (zeros) followed by the copy-in of [0, V), V <= P: the fill's value
                # stays the tail's, the copy-in count becomes V
                self.state[b] = {"V": hi, "P": st["V"], "main": st["main"], "tail": st["main"]}
            if b not in self.state:
                if not _is_int(lo, 0):
                    raise Refused(f"the first store into '{b}' does not start at lane 0", "XP4281", lp)
                # a buffer first stored by a loop over other staged buffers (sq = row * row) splits
                # where they do; otherwise this store is its copy-in
                known = [x for x in self.state if x not in writes and self._touches(body, x)]
                V = self.state[known[0]]["V"] if known else hi
                self.state[b] = {"V": V, "P": None, "main": None, "tail": None}
        Vs = {repr(self.state[b]["V"]) for b in self.state if self._touches(body, b)}
        if not Vs:
            # a lane loop that touches no staged buffer: kept as it is
            for v in running:
                self._clobber(v)
            return [lp]
        if len(Vs) > 1:
            raise Refused(f"loop '{lp.var}' touches buffers with different copy-in counts", "XP4281", lp)
        V = next(self.state[b]["V"] for b in self.state if self._touches(body, b))
        parts = self._split(lo, hi, V, lp)
        if not self.z.valid(lambda t: z3.Or(t(lo) >= t(hi), t(lo) >= 0)):
            raise Refused(f"loop '{lp.var}' may start below lane 0", "XP4281", lp)
        for b in writes:
            for part, _, _ in parts:
                self._check_cover(b, part, lo, hi, lp)
        out = []
        new_states = {}
        for part, plo, phi in parts:
            emitted, stores = self._part(body, part, lp.var)
            for b, v in stores.items():
                new_states[(b, part)] = v
            if part == "tail" and any(not isinstance(x, N.Decl) and not _assigns_scalar_only(x)
                                      for x in emitted):
                raise Refused(f"loop '{lp.var}' stores the tail lanes [{_c(V)}, {_c(hi)}) of a buffer to "
                              "global memory (lanes past the row)", "XP4283", lp)
            if not any(not isinstance(x, (N.Decl, N.Comment)) for x in emitted):
                continue
            if part == "tail" and self._identity_tail(emitted):
                continue
            if part == "tail" and self.kept_tail is None:
                self.kept_tail = lp
            out.append(lp.with_(lo=plo, hi=phi, body=lp.body.with_(stmts=tuple(emitted)), pragmas=()))
        if len(out) == 2:
            # both parts do work: one loop over the loop's own lanes, each buffer read choosing
            # ``i < V ? M(i) : T(i)`` (exact per lane, and one reduction where there were two)
            emitted, _ = self._part(body, "both", lp.var)
            out = [lp.with_(body=lp.body.with_(stmts=tuple(emitted)), pragmas=())]
        for (b, part), v in new_states.items():
            self.state[b][part] = v
            if part == "tail" and self.state[b]["P"] is None:
                self.state[b]["P"] = hi
        for v in running:
            self._clobber(v)
        return out

    def _split(self, lo, hi, V, lp) -> list:
        """The main part ``[lo, mh)`` and tail part ``[tl, hi)`` of lane loop ``[lo, hi)``: Z3 proves,
        for every lane ``c``, ``lo <= c < mh  <=>  lo <= c < hi and c < V`` and
        ``tl <= c < hi  <=>  lo <= c < hi and c >= V``; a part that is always empty is left out."""
        c = z3.Int("xp__c")
        def same(a, b, keep_lo, main):
            def claim(t):
                inside = z3.And(t(lo) <= c, c < t(hi))
                want = z3.And(inside, c < t(V)) if main else z3.And(inside, c >= t(V))
                got = z3.And(t(a) <= c, c < t(b))
                return got == want
            return self.z.valid(claim)
        cond = lambda x, y: N.Cond(N.BinOp("<", x, y), x, y)     # min(x, y)
        parts = []
        if not self.z.valid(lambda t: z3.Or(t(lo) >= t(hi), t(lo) >= t(V))):
            mh = next((m for m in (V, hi, cond(V, hi)) if same(lo, m, True, True)), None)
            if mh is None:
                raise Refused(f"loop '{lp.var}' may not split at the copy-in count {_c(V)}", "XP4281", lp)
            parts.append(("main", lo, mh))
        if not self.z.valid(lambda t: z3.Or(t(lo) >= t(hi), t(hi) <= t(V))):
            tl = next((m for m in (V, lo, N.Cond(N.BinOp("<", lo, V), V, lo)) if same(m, hi, False, False)), None)
            if tl is None:
                raise Refused(f"loop '{lp.var}' may not split at the copy-in count {_c(V)}", "XP4281", lp)
            parts.append(("tail", tl, hi))
        return parts

    def _touches(self, body, b) -> bool:
        return any(_elem_index(n, self.buffers) and _elem_index(n, self.buffers)[0] == b
                   for n in walk(tuple(body)))

    def _check_cover(self, b, part, lo, hi, lp):
        """A store into ``b`` by lane loop ``[lo, hi)`` covers all of its main lanes ``[0, V)`` or all
        of its tail lanes ``[V, P)`` (Z3, for every lane ``c``)."""
        st = self.state[b]
        V = st["V"]
        P = st["P"] if st["P"] is not None else hi
        c = z3.Int("xp__c")

        def claim(t):
            inside = z3.And(t(lo) <= c, c < t(hi))
            if part == "main":
                return z3.And(inside, c < t(V)) == z3.And(0 <= c, c < t(V))
            return z3.And(inside, c >= t(V)) == z3.And(0 <= c, c < t(P), c >= t(V))
        if not self.z.valid(claim):
            what = f"main lanes [0, {_c(V)})" if part == "main" else f"tail lanes [{_c(V)}, {_c(P)})"
            raise Refused(f"loop '{lp.var}' stores '{b}' over part of its {what}", "XP4281", lp)

    def _part(self, body, part, lane):
        """The emitted statements of one part of a lane loop, and its buffer stores (values)."""
        emitted, stores, local = [], {}, {}
        saved = {b: dict(st) for b, st in self.state.items()}
        try:
            for s in body:
                if isinstance(s, N.Comment):
                    continue
                if isinstance(s, N.Decl):
                    init = self._sub(s.init, part, lane)
                    local[s.name] = N.Cast(s.type.with_(const=False), init) if isinstance(s.type, N.Scalar) else init
                    emitted.append(s.with_(init=init))
                    continue
                if isinstance(s, N.Assign):
                    hit = _elem_index(s.target, self.buffers)
                    if hit is not None:
                        b = hit[0]
                        v = self._sub(s.value, part, lane)
                        v = substitute(v, local)
                        if _vars(v) & (set(local) | {lane}) - {lane}:
                            raise Refused(f"a value of '{b}' names a name local to loop '{lane}'", "XP4281", s)
                        val = N.Cast(self.buffers[b].elem, substitute(v, {lane: N.Var(LANE)}))
                        stores[b] = val
                        # a later read in the same iteration sees the new value
                        self.state[b] = dict(self.state[b], **{part: val})
                        continue
                    emitted.append(s.with_(target=self._sub(s.target, part, lane),
                                           value=self._sub(s.value, part, lane)))
                    continue
                if isinstance(s, N.If):
                    emitted.append(rewrite(s, lambda n: self._sub(n, part, lane) if isinstance(n, N.Expr) and not
                                           isinstance(n, N.Var) else n))
                    continue
                raise Refused(f"a {type(s).__name__} statement in a lane loop", "XP4281", s)
        finally:
            # the other part of the loop reads the values from before this loop
            for b in list(self.state):
                if b in saved:
                    self.state[b] = saved[b]
                else:
                    self.state[b] = {"V": self.state[b]["V"], "P": None, "main": None, "tail": None}
        return emitted, stores

    def _identity_tail(self, emitted) -> bool:
        """The tail part only adds positive zero to an accumulator that starts at positive zero
        and is only ever added to (never -0, so ``a + 0.0f == a``)."""
        work = [x for x in emitted if not isinstance(x, (N.Decl, N.Comment))]
        if len(work) != 1 or not isinstance(work[0], N.Assign) or work[0].op != "+=" or \
                not isinstance(work[0].target, N.Var):
            return False
        local = {x.name: x.init for x in emitted if isinstance(x, N.Decl)}
        val = substitute(work[0].value, local)
        if not _positive_zero(val):
            return False
        acc = work[0].target.name
        decls = [d for d in walk(self.fn.body) if isinstance(d, N.Decl) and d.name == acc]
        if len(decls) != 1 or decls[0].init is None or not _positive_zero(decls[0].init):
            return False
        return all(a.op == "+=" for a in walk(self.fn.body) if isinstance(a, N.Assign) and
                   isinstance(a.target, N.Var) and a.target.name == acc)


def _positive_zero(e) -> bool:
    """``e`` is a constant expression whose float32 value is +0.0."""
    import numpy as np

    def ev(x):
        if isinstance(x, N.Cast) and isinstance(x.type, N.Scalar):
            return ev(x.expr)
        if isinstance(x, N.Const) and isinstance(x.value, (int, float)) and not isinstance(x.value, bool):
            return np.float32(x.value)
        if isinstance(x, N.UnOp) and x.op == "-":
            v = ev(x.operand)
            return None if v is None else -v
        if isinstance(x, N.BinOp) and x.op in ("+", "-", "*"):
            a, b = ev(x.lhs), ev(x.rhs)
            if a is None or b is None:
                return None
            return {"+": a + b, "-": a - b, "*": a * b}[x.op]
        return None
    v = ev(e)
    return v is not None and v == 0 and not np.signbit(v)


def _assigns_scalar_only(s) -> bool:
    if isinstance(s, N.Comment):
        return True
    if isinstance(s, N.Assign):
        return isinstance(s.target, N.Var)
    if isinstance(s, N.If):
        return all(isinstance(n.target, N.Var) for n in walk(s) if isinstance(n, N.Assign))
    return False


def _c(e) -> str:
    from xpiler.printers.bang import BangPrinter
    try:
        return BangPrinter().expr(e)
    except Exception:
        return "(an expression)"


def _self_update(x, name) -> bool:
    """``if (c) name = e;`` (pure ``c``, ``e``): an if whose only effect is on ``name``."""
    if not (isinstance(x, N.If) and x.else_ is None and _pure(x.cond)):
        return False
    inner = [y for y in (x.then.stmts if isinstance(x.then, N.Block) else (x.then,)) if not isinstance(y, N.Comment)]
    return bool(inner) and all(isinstance(y, N.Assign) and isinstance(y.target, N.Var) and y.target.name == name
                               and _pure(y.value) for y in inner)


def _drop_unread(stmts: list, top: bool = False, context=()) -> list:
    """Scalars declared here that nothing reads: their declarations and assignments go (pure);
    ``top``: also ``if (c) v = e;`` statements of such a scalar ``v`` (its only other reads);
    ``context``: statements whose reads count too (the rest of the function)."""
    body = tuple(stmts)
    before = None
    while before != len(body):
        before = len(body)
        body = _drop_unread_once(body, top, context)
    return list(body)


def _drop_unread_once(body, top, context):
    def reads(node, name):
        n_all = sum(1 for n in walk(node) if isinstance(n, N.Var) and n.name == name)
        n_tgt = sum(1 for n in walk(node) if isinstance(n, N.Assign) and isinstance(n.target, N.Var)
                    and n.target.name == name)
        return n_all - n_tgt
    for d in [s for s in body if isinstance(s, N.Decl) and isinstance(s.type, N.Scalar)]:
        rest = tuple(x for x in body if not (top and _self_update(x, d.name)))
        if reads(rest, d.name) or reads(tuple(context), d.name):
            continue
        vals = [d.init] + [n.value for n in walk(body) if isinstance(n, N.Assign) and
                           isinstance(n.target, N.Var) and n.target.name == d.name]
        if not all(v is None or _pure(v) for v in vals):
            continue
        body = tuple(x for x in body if not (top and _self_update(x, d.name)))

        def drop(n, name=d.name):
            if isinstance(n, N.Block):
                keep = tuple(s for s in n.stmts if not (
                    (isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name == name) or
                    (isinstance(s, N.Decl) and s.name == name)))
                return n.with_(stmts=keep) if len(keep) != len(n.stmts) else n
            return n
        body = rewrite(N.Block(body), drop).stmts
    return body


# ----------------------------------------------------------------------------- the kernel
def _buffers(program, fn) -> dict:
    """The kernel's ``__nram__`` 1-D scalar arrays that no other function names."""
    others = set()
    for f in program.funcs:
        if f.body is not None and f.name != fn.name:
            others |= _vars(f.body)
    return {it.name: it.type for it in program.items
            if isinstance(it, N.Decl) and it.scope == "nram" and isinstance(it.type, N.Array) and
            len(it.type.dims) == 1 and isinstance(it.type.elem, N.Scalar) and it.name not in others}


def _int_lets(stmts, once, fn) -> dict:
    assigned = D.assigned_names(fn.body)
    return {s.name: s.init for s in stmts
            if isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.type.dtype in _INT and
            s.init is not None and _pure(s.init) and s.name in once and s.name not in assigned}


def _stores(node, buffers) -> set:
    return {_elem_index(n.target, buffers)[0] for n in walk(node)
            if isinstance(n, N.Assign) and _elem_index(n.target, buffers)}


def _tidy(stmts) -> list:
    """A cast of a cast to the same scalar type is one cast; trailing comments (on the staging) go."""
    return [x for x in rewrite(tuple(stmts), lambda n: n.expr if isinstance(n, N.Cast) and isinstance(
        n.expr, N.Cast) and n.expr.type == n.type else n) if not (isinstance(x, N.Comment) and x.trailing)]


def unstage(program, entry: str, tails: str = "keep"):
    """The program with its staged row loop un-staged; raises Refused. ``tails="dropped"``: refused
    (XP4002) where a lane loop keeps work over the tail lanes (a loop of ``i < V ? M(i) : T(i)``
    selects or a tail-only loop), so that only rows whose tails all drop are un-staged."""
    from . import unstage_row_blocks as RB
    fn = program.func(entry)
    buffers = _buffers(program, fn)
    used = {b: t for b, t in buffers.items() if b in _vars(fn.body)}
    if not used:
        raise Refused("the kernel stages nothing in NRAM", "XP4002")
    decl_count = {}
    for d in walk(fn.body):
        if isinstance(d, N.Decl):
            decl_count[d.name] = decl_count.get(d.name, 0) + 1
    once = {n for n, k in decl_count.items() if k == 1}
    top = _flatten_all(fn.body.stmts, once)
    # the row loop: the last top-level loop that uses a buffer and holds loops (the ones before it
    # fill rows every row reads, e.g. gamma)
    rows = [k for k, s in enumerate(top) if isinstance(s, N.For) and _vars(s.body) & set(used) and
            any(isinstance(n, N.For) for n in walk(s.body))]
    if not rows:
        raise Refused("not a row loop over staged rows: no top-level loop holds the staged work", "XP4281", fn)
    k = rows[-1]
    loop = top[k]
    prelude, after = top[:k], top[k + 1:]
    if _vars(tuple(after)) & set(used):
        b = sorted(_vars(tuple(after)) & set(used))[0]
        raise Refused(f"'{b}' is used after the row loop '{loop.var}'", "XP4281", loop)
    lets = _int_lets(prelude, once, fn)
    eng = _Row(loop, used, fn, program, lets)
    # buffers filled before the row loop (gamma / beta rows) keep their values in every row
    filled = _stores(tuple(prelude), used)
    changed = filled & _stores(loop.body, used)
    if changed:
        raise Refused(f"'{sorted(changed)[0]}' is filled before the row loop and changed in it", "XP4281", loop)
    new_prelude = eng.run(prelude) if filled else list(prelude)
    stmts = _flatten_all(loop.body.stmts, once)
    eng.lets.update(_int_lets(stmts, once, fn))
    eng.z.lets = eng.lets
    eng.z.hyps.append(lambda t: t(N.Var(loop.var)) < t(loop.hi))
    try:
        block = RB.rows_of_block(loop, stmts, used, eng.z, fn)
    except RB.Refused as e:
        raise Refused(str(e), e.code, e.node) from None
    if block is None:
        body = _drop_unread(eng.run(stmts))
        new_loop = loop.with_(body=loop.body.with_(stmts=tuple(_tidy(body))))
    else:
        nb_decl, B, fused, in_turn = block
        # with B <= 0 the block loop never ends (undefined, docs in unstage_row_blocks): B >= 1
        eng.z.hyps.append(lambda t: t(B) >= 1)
        eng.z.facts.clear()
        body = _drop_unread(eng.run(_flatten_all(fused, once | {d.name for d in walk(tuple(fused))
                                                                  if isinstance(d, N.Decl)})))
        try:
            new_loop = RB.merge(loop, _tidy(body), fn, eng.z,
                                [p.name for p in fn.params if isinstance(p.type, N.Scalar) and p.type.dtype in _INT],
                                in_turn)
        except RB.Refused as e:
            raise Refused(str(e), e.code, e.node) from None
    if _vars(new_loop) & set(used):
        raise Refused("a staged buffer is still used after the rewrite", "XP4281", loop)
    if tails == "dropped" and eng.kept_tail is not None:
        raise Refused(f"loop '{eng.kept_tail.var}' keeps work over the padded tail lanes (tails='dropped' takes "
                      "only rows whose tails all drop)", "XP4002", eng.kept_tail)
    new_prelude = _early_exit(_drop_unread(new_prelude, top=True, context=[new_loop] + after), new_loop, eng.z)
    new_fn = fn.with_(body=fn.body.with_(stmts=tuple(_tidy(new_prelude) + [new_loop] + after)))
    items = tuple(new_fn if it is fn else it for it in program.items
                  if not (isinstance(it, N.Decl) and it.name in used))
    new_program = program.with_(items=items)
    if block is not None and in_turn:
        # the rows are dealt one at a time instead of a block at a time (round_robin_rows): the same
        # result only when no row depends on another and the row does not depend on the task
        if any(isinstance(n, N.Builtin) for n in walk(new_loop.body)):
            raise Refused("the rows of blocks dealt in turn use a task builtin", "XP4287", loop)
        dep = D.check_parallel(new_program, new_fn, new_loop)
        if dep is not None:
            raise Refused(f"the rows of blocks dealt in turn are not independent ({dep}): dealing them one "
                          "at a time could change the result", "XP4287", loop)
    return new_program


def _early_exit(prelude, loop, z) -> list:
    """``if (C) return;`` before the row loop goes when ``C`` means the loop runs no row (Z3:
    ``C => lo >= hi``) and only pure declarations and pure ifs assigning scalars follow it."""
    out = list(prelude)
    for i, s in enumerate(out):
        if isinstance(s, N.If) and s.else_ is None and _pure(s.cond) and \
                [x for x in _flatten([s.then] if not isinstance(s.then, N.Block) else s.then.stmts)
                 if not isinstance(x, N.Comment)] == [N.Return()]:
            rest = out[i + 1:]
            if all(isinstance(x, N.Comment) or (isinstance(x, N.Decl) and (x.init is None or _pure(x.init))) or
                   (isinstance(x, N.If) and _pure(x.cond) and _assigns_scalar_only(x.then) and
                    all(_pure(a.value) for a in walk(x) if isinstance(a, N.Assign)))
                   for x in rest) and _Z3({}, z.macros).valid(lambda t: z3.Implies(t.b(s.cond),
                                                                                   t(loop.lo) >= t(loop.hi))):
                return out[:i] + rest
    return out


def apply(program, *, entry: str, tails: str = "keep", **_):
    """``tails``: "keep" (default: a tail that does not drop stays as work over its lanes) or
    "dropped" (the c plan: such a row is refused, XP4002; docs/passes/unstage_rows.md)."""
    if program.dialect != "bang":
        raise PassError(NAME, f"row un-staging reads BANG kernels, not {program.dialect}", None, "XP4002")
    if tails not in ("keep", "dropped"):
        raise PassError(NAME, f"tails={tails!r}: 'keep' or 'dropped'", None, "XP4001")
    try:
        return unstage(program, entry, tails)
    except Refused as e:
        code = "XP4002" if e.code == "XP4002" else e.code
        raise PassError(NAME, str(e), e.node, code) from None


check, candidates = applying_steps(apply)
