"""Un-staging (the inverse of the cache pass): element-wise work staged through an on-chip
buffer becomes one loop over the elements, reading and writing global memory directly.

A BANG kernel, once its vector ops are lowered (detensorize) and its tasks are loops (loop
recovery), processes a chunk of its slice like this::

    int valid = count - off < CHUNK ? count - off : CHUNK;
    int padded = (valid + ALIGN - 1) / ALIGN * ALIGN;
    if (padded != valid)
        for (int i1 = 0; i1 < padded; ++i1) buf[i1] = 0;        // zero the padded lanes
    for (int j2 = 0; j2 < valid; ++j2) buf[j2] = (x + start + off)[j2];   // copy in
    for (int i3 = 0; i3 < padded; ++i3) {                          // compute, in place
        const float v = buf[i3];
        buf[i3] = v > 0.0f ? v : 0.0f;
    }
    for (int j5 = 0; j5 < valid; ++j5) (y + start + off)[j5] = buf[j5];   // copy out

:func:`unstage` turns such a block into::

    int valid = count - off < CHUNK ? count - off : CHUNK;
    for (int j = 0; j < valid; ++j) {
        float buf_1 = x[start + off + j];
        const float v = buf_1;
        float buf_2 = v > 0.0f ? v : 0.0f;
        y[start + off + j] = buf_2;
    }

(the loops are fused over the lanes that are copied out, each buffer element becomes a scalar
per lane, the buffer disappears; the block's comments, which describe the staging, are dropped).

Legality, per block (a statement list; every block of the function is tried, innermost
first), all of which must hold or the block is left as it is:

* the block holds only comments, pure scalar declarations (hoisted in front of the fused loop:
  they read no memory and nothing in the block writes a scalar), *lane loops*
  ``for (v = 0; v < R; ++v)`` and *conditional fills* ``if (c) { lane loops }`` whose loops
  write buffers only;
* a lane loop body is straight-line (declarations and assignments); every use of a buffer is
  the element ``buf[v]`` of its own lane (element-wise: ``buf[v + 1]`` is refused); it assigns
  no scalar declared outside it; it calls only math functions;
* the *valid* lanes ``V``: every loop that stores to global memory has the same trip count
  ``V``; every other lane loop covers them: ``R == V`` or ``V > 0 => R >= V`` proven by Z3 with
  the block's declarations (``padded`` above). Lanes ``>= V`` are never copied out, so computing
  them was dead;
* a buffer is private to the block: it is not used anywhere else in the function, and each
  lane reads an element only after an unconditional loop earlier in the block wrote it (a
  conditional fill leaves the element undefined, so a read after it alone is refused). So no
  value passes between two executions of the block (two chunks) through the buffer;
* global memory: a pointer stored through is not read in the block and is stored through by one
  loop only (pointer parameters are distinct buffers, the assumption of the whole project; a
  local pointer is followed to the parameter it is computed from, and refused if it cannot be).
  With that, fusing loops only reorders accesses to different buffers or to the same lane of
  a staged buffer.

Refusals are reported as strings (``why``) by :func:`explain`; :func:`unstage` keeps a refused
block unchanged.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import rewrite, walk

from . import dependence as D

NAME = "decache"


class Refused(Exception):
    """This block is not un-staged; the message says why."""


def _vars(node) -> set:
    return {n.name for n in walk(node) if isinstance(n, N.Var)}


def _count(node, name) -> int:
    return sum(1 for n in walk(node) if isinstance(n, N.Var) and n.name == name)


def _is_int(e, v=None) -> bool:
    return isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) and (
        v is None or e.value == v)


def _pure(e) -> bool:
    """No memory read, no side effect, no call but math."""
    for n in walk(e):
        if isinstance(n, (N.Index, N.Member, N.Call, N.AssignExpr, N.Comma)):
            return False
        if isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--", "&"):
            return False
        if isinstance(n, N.Intrinsic) and (REGISTRY.get(n.name) is None or REGISTRY[n.name].category != "math"):
            return False
    return True


def _flatten(stmts) -> list:
    """Braces without declarations of their own are dissolved (``{ for ... }`` from detensorize)."""
    out = []
    for s in stmts:
        if isinstance(s, N.Block) and not any(isinstance(x, N.Decl) for x in s.stmts):
            out.extend(_flatten(s.stmts))
        else:
            out.append(s)
    return out


def _names(node) -> set:
    """Every name a statement uses or declares."""
    return _vars(node) | {d.name for d in walk(node) if isinstance(d, N.Decl)} | {
        l.var for l in walk(node) if isinstance(l, N.For)}


def _flatten_staged(stmts) -> list:
    """:func:`_flatten`, and also braces that declare pure scalars before their loops
    (``{ const float s = (float)alpha; for ... }`` from detensorize) when no other statement of
    the list names what they declare (so opening the braces captures nothing)."""
    out = _flatten(stmts)
    while True:
        for k, s in enumerate(out):
            if not isinstance(s, N.Block):
                continue
            decls = [x for x in s.stmts if isinstance(x, N.Decl)]
            if not all(isinstance(d.type, N.Scalar) and d.init is not None and _pure(d.init) for d in decls):
                continue
            own = {d.name for d in decls}
            if len(own) != len(decls) or own & _names(tuple(out[:k] + out[k + 1:])):
                continue
            out = out[:k] + _flatten(s.stmts) + out[k + 1:]
            break
        else:
            return out


def _fresh(base: str, taken: set) -> str:
    k = 1
    while f"{base}_{k}" in taken:
        k += 1
    name = f"{base}_{k}"
    taken.add(name)
    return name


def _is_lane(e, var) -> bool:
    return isinstance(e, N.Var) and e.name == var


class _Lane:
    """One lane loop: its variable, trip count, body, and what it touches."""

    def __init__(self, loop: N.For, buffers: dict, ctx, fill: bool = False):
        self.loop, self.var, self.trip = loop, loop.var, loop.hi
        if not (_is_int(loop.lo, 0) and _is_int(loop.step, 1) and loop.binding is None and
                loop.var_type is not None):
            raise Refused(f"loop '{loop.var}' is not a lane loop from 0 with step 1 declaring its counter")
        if not _pure(loop.hi) or _vars(loop.hi) & set(buffers):
            raise Refused(f"the trip count of '{loop.var}' reads memory or names a buffer")
        self.body = _flatten(loop.body.stmts)
        own = {s.name for s in self.body if isinstance(s, N.Decl)}
        self.own = own
        self.buf_reads, self.buf_writes = [], []       # in program order, per statement
        self.mem_reads, self.mem_writes = set(), set()  # root pointer names
        for s in self.body:
            if isinstance(s, N.Comment):
                continue
            if isinstance(s, N.Decl):
                if s.init is None or not isinstance(s.type, (N.Scalar, N.Pointer)):
                    raise Refused(f"loop '{loop.var}' declares '{s.name}' without a scalar value")
                self._expr(s.init, buffers, ctx)
                continue
            if not isinstance(s, N.Assign):
                raise Refused(f"loop '{loop.var}' holds a {type(s).__name__} (not straight-line)")
            self._expr(s.value, buffers, ctx)
            t = s.target
            if isinstance(t, N.Var):
                if t.name not in own:
                    raise Refused(f"loop '{loop.var}' assigns '{t.name}', declared outside it")
                continue
            b = self._fill_elem(t, buffers) if fill and not (
                isinstance(t, N.Index) and isinstance(t.base, N.Var) and _is_lane(t.index, self.var)) else None
            if b is not None:
                # a conditional fill at any element of a buffer (``(buf + off)[v]``, ``buf[e]``):
                # the fill is dropped and the buffer counts as undefined after it
                if s.op != "=":
                    raise Refused(f"loop '{loop.var}' updates '{b}' at another element than its lane")
                self.buf_writes.append(b)
                continue
            if isinstance(t, N.Index) and isinstance(t.base, N.Var) and t.base.name in buffers:
                self._lane_elem(t, buffers)
                if s.op != "=":
                    self.buf_reads.append(t.base.name)
                self.buf_writes.append(t.base.name)
                continue
            # a store to memory outside the block
            self._expr_parts(t, buffers, ctx)
            roots = ctx.roots(t)
            self.mem_writes |= roots
        self.stores = bool(self.mem_writes)

    @staticmethod
    def _fill_elem(t, buffers):
        """The buffer a fill stores to at an element other than its lane (the address is pure and
        names no other buffer), else None."""
        if not isinstance(t, N.Index):
            return None
        b, off = D._split_ptr(t.base)
        if b not in buffers:
            return None
        addr = (t.index,) if off is None else (off, t.index)
        if not all(_pure(x) for x in addr) or _vars(addr) & set(buffers):
            return None
        return b

    def _lane_elem(self, ix, buffers):
        if not (isinstance(ix.index, N.Var) and ix.index.name == self.var):
            raise Refused(f"'{ix.base.name}' is used at another element than lane '{self.var}' "
                          "(not element-wise)")

    def _expr_parts(self, t, buffers, ctx):
        """The sub-expressions of a store target (address computations) are reads."""
        for c in t.children():
            if isinstance(c, N.Expr):
                self._expr(c, buffers, ctx)

    def _expr(self, e, buffers, ctx):
        lane_elems = set()
        for n in walk(e):
            if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in buffers:
                self._lane_elem(n, buffers)
                self.buf_reads.append(n.base.name)
                lane_elems.add(id(n.base))
            elif isinstance(n, N.Var) and n.name in buffers and id(n) not in lane_elems:
                raise Refused(f"'{n.name}' is used other than as one element in loop '{self.var}'")
            elif isinstance(n, (N.Call, N.AssignExpr, N.Comma)) or (
                    isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&")):
                raise Refused(f"a call or a side effect in loop '{self.var}'")
            elif isinstance(n, N.Intrinsic) and (REGISTRY.get(n.name) is None or
                                                 REGISTRY[n.name].category != "math"):
                raise Refused(f"intrinsic '{n.name}' in loop '{self.var}'")
            elif isinstance(n, (N.Index, N.Member)) or (isinstance(n, N.UnOp) and n.op == "*"):
                base = n.base if isinstance(n, (N.Index, N.Member)) else n.operand
                if not (isinstance(base, N.Var) and base.name in buffers):
                    self.mem_reads |= ctx.roots(base)


class _Ctx:
    """Function-wide facts: types of names, pointer roots, macros."""

    def __init__(self, fn: N.Func, program):
        self.fn, self.program = fn, program
        self.types = {p.name: p.type for p in fn.params}
        self.decls = {}
        for d in walk(fn.body):
            if isinstance(d, N.Decl):
                self.types.setdefault(d.name, d.type)
                self.decls.setdefault(d.name, []).append(d)
        if program is not None:
            for it in program.items:
                if isinstance(it, N.Decl):
                    self.types.setdefault(it.name, it.type)
        self.written = D.assigned_names(fn.body)
        self.macros = {m.name: m for m in (program.macros if program is not None else ())}

    def roots(self, e, seen=()) -> set:
        """The pointer parameters (or arrays) an address expression points into."""
        out = set()
        for v in _vars(e):
            t = self.types.get(v)
            if not isinstance(t, (N.Pointer, N.Array)):
                continue
            ds = self.decls.get(v, [])
            if any(p.name == v for p in self.fn.params) and not ds:
                if v in self.written:
                    raise Refused(f"pointer parameter '{v}' is reassigned")
                out.add(v)
            elif isinstance(t, N.Array):
                out.add(v)
            elif len(ds) == 1 and ds[0].init is not None and v not in self.written and v not in seen:
                r = self.roots(ds[0].init, seen + (v,))
                if not r:
                    raise Refused(f"pointer '{v}' does not point into a known buffer")
                out |= r
            else:
                raise Refused(f"pointer '{v}' does not point into a known buffer")
        return out


def _covers(trip, valid, lets: dict, macros: dict) -> bool:
    """``valid > 0 => trip >= valid`` for every value of the free names (Z3)."""
    if trip == valid:
        return True
    env = D.Z3Env(loopvars=set(), lets=dict(lets), macros=macros, int_params=set(), varying=set())
    t, v = D.to_z3(trip, "a", env), D.to_z3(valid, "a", env)
    s = smt.solver(D.TIMEOUT_MS)
    s.add(*env.cons)
    s.add(v > 0, t < v)
    return s.check() == z3.unsat


def _flat_index(e, ctx):
    """``(p + k)[j]`` -> ``p[k + j]`` for a pointer ``p`` (addresses the collapse pass can read)."""
    def fn(n):
        if isinstance(n, N.Index) and isinstance(n.base, N.BinOp) and n.base.op in ("+", "-"):
            b, off = D.split_ptr_uncast(n.base)
            if b is not None and off is not None and isinstance(ctx.types.get(b), N.Pointer):
                return N.Index(N.Var(b), N.BinOp("+", off, n.index), loc=n.loc)
        return n
    return rewrite(e, fn)


def _unstage_block(stmts, ctx: _Ctx, taken: set):
    """The new statements of a staged block, or raise Refused."""
    flat = _flatten_staged(stmts)
    buffers = {}
    for name, t in ctx.types.items():
        if isinstance(t, N.Array) and len(t.dims) == 1 and isinstance(t.elem, N.Scalar) and \
                name in ctx.decls and len(ctx.decls[name]) == 1 and ctx.decls[name][0].init is None and \
                "static" not in ctx.decls[name][0].storage:
            buffers[name] = t
    used = _vars(tuple(flat))
    buffers = {b: t for b, t in buffers.items() if b in used}
    if not buffers:
        raise Refused("no on-chip buffer is used")
    decls, comments, units = [], [], []     # units: ("lane", _Lane) | ("fill", [_Lane], stmt)
    for s in flat:
        if isinstance(s, N.Comment):
            comments.append(s)
        elif isinstance(s, N.Decl) and s.name in buffers and s.init is None:
            continue        # the buffer itself, declared in the block (recovered per task): it goes
        elif isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None and _pure(s.init):
            decls.append(s)
        elif isinstance(s, N.For):
            units.append(("lane", _Lane(s, buffers, ctx), s))
        elif isinstance(s, N.If) and s.else_ is None and _pure(s.cond) and not (_vars(s.cond) & set(buffers)):
            inner = [x for x in _flatten(_as_stmts(s.then)) if not isinstance(x, N.Comment)]
            if not inner or not all(isinstance(x, N.For) for x in inner):
                raise Refused("an if holds more than lane loops")
            lanes = [_Lane(x, buffers, ctx, fill=True) for x in inner]
            if any(l.stores for l in lanes):
                raise Refused("a conditional loop stores to global memory")
            units.append(("fill", lanes, s))
        else:
            raise Refused(f"a {type(s).__name__} statement in the staged block")
    lanes = [u[1] for u in units if u[0] == "lane"]
    stores = [l for l in lanes if l.stores]
    if not stores:
        raise Refused("no loop stores to global memory")
    valid = stores[0].trip
    if any(l.trip != valid for l in stores):
        raise Refused("the loops that store to global memory have different trip counts")
    # buffers are private to the block
    for b in buffers:
        if _count(ctx.fn.body, b) != _count(tuple(flat), b):
            raise Refused(f"buffer '{b}' is used outside the staged block")
    # writes to a global are not read in the block, and come from one loop
    written, read = {}, set()
    for l in lanes + [x for u in units if u[0] == "fill" for x in u[1]]:
        read |= l.mem_reads
        for r in l.mem_writes:
            written.setdefault(r, []).append(l.var)
    for r, ls in written.items():
        if len(ls) > 1:
            raise Refused(f"'{r}' is stored by two loops")
        if r in read:
            raise Refused(f"'{r}' is both read and written in the staged block")
        if r in buffers:
            raise Refused(f"'{r}' is written through an address the lane does not index")
    lets = {d.name: d.init for d in decls}
    for d in decls:
        if _vars(d.init) & set(buffers):
            raise Refused(f"'{d.name}' names a buffer")
        if sum(1 for x in decls if x.name == d.name) > 1 or d.name in ctx.written:
            raise Refused(f"'{d.name}' is declared twice or changed")
    # the valid lanes are defined before they are read
    defined = set()
    for kind, lane, s in units:
        if kind == "fill":
            for l in lane:
                bad = set(l.buf_reads) - defined
                if bad:
                    raise Refused(f"'{sorted(bad)[0]}' is read before it is written in the block")
                defined -= set(l.buf_writes)
            continue
        if lane.var in _vars(lane.trip):
            raise Refused(f"trip count of '{lane.var}' reads its variable")
        if not _covers(lane.trip, valid, lets, ctx.macros):
            raise Refused(f"loop '{lane.var}' may not cover every copied-out lane")
        # reads in program order: a lane's own earlier writes count
        seen = set(defined)
        for s2 in lane.body:
            if isinstance(s2, N.Comment):
                continue
            rd = _BufAccess(s2, buffers)
            if rd.reads - seen:
                raise Refused(f"'{sorted(rd.reads - seen)[0]}' is read before it is written in the block "
                              "(a value kept across chunks)")
            seen |= rd.writes
        defined |= set(lane.buf_writes)
    # build the fused loop
    j = _fresh("j", taken) if "j" in taken else "j"
    taken.add(j)
    cur = {}            # buffer -> scalar holding its lane value
    body, in_body = [], set()
    kept = [u[1] for u in units if u[0] == "lane"]
    for kind, lane, s in units:
        if kind == "fill":
            continue
        others = set().union(*[_vars(tuple(x.body)) for x in kept if x is not lane])
        ren = {lane.var: N.Var(j)}
        for d in sorted(lane.own):
            # a name another lane body declares or reads would be captured in the fused body
            if d in in_body or d in others:
                ren[d] = N.Var(_fresh(d, taken))
            in_body.add(ren[d].name if d in ren else d)
        for s2 in lane.body:
            body.extend(_scalarize(s2, ren, cur, buffers, taken, ctx))
    loop = N.For(j, N.Const(0, "int32", "0"), valid, N.Const(1, "int32", "1"), N.Block(tuple(body)), None,
                 N.Scalar("int32", "int"), loc=stores[0].loop.loc)
    # the block's comments describe the staging that is gone: they are dropped
    return decls + [loop], set(buffers), {d.name for d in decls}


class _BufAccess:
    def __init__(self, s, buffers):
        self.reads, self.writes = set(), set()
        if isinstance(s, N.Assign) and isinstance(s.target, N.Index) and isinstance(s.target.base, N.Var) and \
                s.target.base.name in buffers:
            self.writes.add(s.target.base.name)
            if s.op != "=":
                self.reads.add(s.target.base.name)
            e = s.value
        else:
            e = s.init if isinstance(s, N.Decl) else s
        for n in walk(e):
            if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in buffers:
                self.reads.add(n.base.name)


def _as_stmts(s):
    return s.stmts if isinstance(s, N.Block) else (s,)


def _scalarize(s, ren, cur, buffers, taken, ctx):
    """One lane statement with ``buf[v]`` replaced by the buffer's current scalar; a write of a
    buffer element declares the next scalar."""
    def sub(e):
        def fn(n):
            if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in buffers:
                return N.Var(cur[n.base.name])
            if isinstance(n, N.Var) and n.name in ren:
                return ren[n.name]
            return n
        return _flat_index(rewrite(e, fn), ctx)
    if isinstance(s, N.Comment):
        return [s]
    if isinstance(s, N.Decl):
        name = ren[s.name].name if s.name in ren else s.name
        return [s.with_(name=name, init=sub(s.init))]
    t = s.target
    if isinstance(t, N.Index) and isinstance(t.base, N.Var) and t.base.name in buffers:
        b = t.base.name
        value = sub(s.value)
        if s.op != "=":
            value = N.BinOp(s.op[:-1], N.Var(cur[b]), value)
        name = _fresh(b, taken)
        elem = buffers[b].elem
        decl = N.Decl(name, elem.with_(const=False) if isinstance(elem, N.Scalar) else elem, value, "local",
                      loc=s.loc)
        cur[b] = name
        return [decl]
    return [s.with_(target=sub(t), value=sub(s.value))]


def unstage(fn: N.Func, program=None):
    """``fn`` with every legal staged block un-staged: (new function, [(loop var, note)]).
    A note is ``None`` for an un-staged block, else why a candidate block was kept."""
    notes = []
    taken = _vars(fn) | {d.name for d in walk(fn) if isinstance(d, N.Decl)} | {
        l.var for l in walk(fn) if isinstance(l, N.For)} | {p.name for p in fn.params}
    done_buffers, done_decls = set(), set()

    def visit_block(blk: N.Block, fn_now):
        stmts = [visit(s, fn_now) for s in blk.stmts]
        cand = any(isinstance(s, N.For) and not any(isinstance(x, N.For) for x in walk(s.body))
                   for s in _flatten(stmts))
        if not cand:
            return blk.with_(stmts=tuple(stmts)) if any(a is not b for a, b in zip(stmts, blk.stmts)) else blk
        try:
            new, bufs, hoisted = _unstage_block(stmts, _Ctx(fn_now, program), taken)
        except Refused as e:
            if sum(1 for x in _flatten(stmts) if isinstance(x, (N.For, N.If))) > 1:
                notes.append((str(e)))
            return blk.with_(stmts=tuple(stmts)) if any(a is not b for a, b in zip(stmts, blk.stmts)) else blk
        done_buffers.update(bufs)
        done_decls.update(hoisted)
        notes.append(None)
        return blk.with_(stmts=tuple(new))

    def visit(s, fn_now):
        if isinstance(s, N.Block):
            return visit_block(s, fn_now)
        if isinstance(s, N.For):
            b = visit_block(s.body, fn_now)
            return s if b is s.body else s.with_(body=b)
        if isinstance(s, N.If):
            t = visit(s.then, fn_now)
            e = visit(s.else_, fn_now) if s.else_ is not None else None
            return s if (t is s.then and e is s.else_) else s.with_(then=t, else_=e)
        return s

    body = visit_block(fn.body, fn)
    if not done_buffers:
        return fn, notes
    # the buffers are gone: drop their declarations, then pure declarations nothing reads
    def drop(n):
        if isinstance(n, N.Block):
            keep = [s for s in n.stmts if not (isinstance(s, N.Decl) and s.name in done_buffers)]
            if len(keep) != len(n.stmts):
                return n.with_(stmts=tuple(keep))
        return n
    body = rewrite(body, drop)
    for _ in range(4):
        dead = {v for v in done_decls if _count(body, v) == 0}
        if not dead:
            break
        body = rewrite(body, lambda n: n.with_(stmts=tuple(
            s for s in n.stmts if not (isinstance(s, N.Decl) and s.name in dead and s.init is not None and
                                       _pure(s.init)))) if isinstance(n, N.Block) else n)
    return fn.with_(body=body), notes


def explain(fn: N.Func, program=None) -> list:
    """What :func:`unstage` did per candidate block: None (un-staged) or why not."""
    return unstage(fn, program)[1]
