"""BANG row vectors (tensorize): the inner loops of a norm-like row loop, staged by the cache
pass at a padded row stride (:mod:`passes.patterns.bang_rows_stage`), become one vector op
sequence per row.

Matched loop (inside the row loop ``for v < rn``; ``P`` is a local ``int P = (S + U-1)/U*U``,
U = 32 floats, and an enclosing guard ``P <= K``)::

    for (int c = lo; c < S; ++c) { stmt; stmt; ... }

where every access is ``B[v * P + c]`` (a row of an NRAM buffer) or ``B[c]`` (a row-independent
NRAM vector), and every statement is

* a *map* ``D[v*P + c] (op)= E``  -> E compiled to vector ops into the row of D:
  ``a+b a-b a*b a/b`` (vector-vector: ``__bang_add/sub/mul/div``; vector-scalar:
  ``__bang_add/sub/mul/div_scalar``; ``s+v``, ``s*v`` commuted, ``s-v`` = ``(-v)+s``), unary
  math calls and one-load subtrees matched semantically against the activation table of
  :mod:`passes.patterns.bang` (``expf`` -> ``__bang_active_exp`` ...), ``-v`` = ``v * -1``;
  subexpressions free of ``c`` are scalar operands, evaluated once per row;
* a *reduction* ``acc = g(acc, E)`` with g, found by evaluation, one of ``+`` / max / min
  -> E into a scratch row (or the row already holding E), padding lanes ``[S, P)`` set to the
  neutral value (0 for a sum, lane 0 for max/min), ``__bang_sum/max/min(red, row, P)``,
  ``acc = g(acc, red[0])``.  ``lo == 1`` is accepted for max/min when the statement before
  the loop sets ``acc = E[c := 0]`` (max/min are idempotent, so lane 0 may be counted again).

Each op is lane-wise with the same float32 rounding as the scalar code, so the rewrite keeps
the function; only a reduction's summation order changes.  Loop distribution (one statement
after the other over all lanes) is legal because every access is at lane c of a row and no
statement reads a scalar the loop assigns.

Bounds (sound, refused otherwise): the padded lanes stay inside every buffer: ``P <= K <=``
size of each row-independent vector, and the row loop's trip count ``rn = min(rb, ..)`` with
``rb = max(1, min(.., CAP / P, ..))``, ``CAP <=`` the row buffer's size and ``K <= CAP``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from . import common as U
from . import bang as PB
from .scalar_eval import NotEvaluable, evaluate, probes, same

RED_LEN = 32
DTYPE = "float32"
UNIT = U.VECTOR_RULE_BYTES // U.ELEM_BYTES[DTYPE]
SCRATCH = 2


class NotVector(Exception):
    pass


# ------------------------------------------------------------------------------ helpers
def _c(e, v):
    e = U.strip_casts(e)
    return isinstance(e, N.Const) and e.value == v


def _same(a, b) -> bool:
    """IR equality up to casts, ``x + 0`` and constant spelling."""
    a, b = _norm(a), _norm(b)
    return a == b


def _norm(e):
    from xpiler.ir.visit import rewrite

    def f(n):
        if isinstance(n, N.Cast) and isinstance(n.type, N.Scalar) and n.type.dtype in ("int32", "int64"):
            return n.expr
        if isinstance(n, N.BinOp) and n.op == "+" and _c(n.rhs, 0):
            return n.lhs
        if isinstance(n, N.Const) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            return N.Const(n.value, "num", repr(float(n.value)))
        return n
    return rewrite(e, f)


def _parents(root, target):
    """The chain of nodes from root down to target (exclusive), or None."""
    stack = [(root, [])]
    while stack:
        n, path = stack.pop()
        if n is target:
            return path
        for ch in _children(n):
            stack.append((ch, path + [n]))
    return None


def _children(n):
    from dataclasses import fields
    if not isinstance(n, N.Node):
        return []
    out = []
    for f in fields(n):
        v = getattr(n, f.name)
        if isinstance(v, N.Node):
            out.append(v)
        elif isinstance(v, tuple):
            out += [x for x in v if isinstance(x, N.Node)]
    return out


def _conjuncts(e):
    if isinstance(e, N.BinOp) and e.op == "&&":
        return _conjuncts(e.lhs) + _conjuncts(e.rhs)
    return [e]


def _min_terms(e):
    e = U.strip_casts(e)
    if isinstance(e, (N.Intrinsic, N.Call)) and (getattr(e, "name", None) or getattr(e, "func", None)) in \
            ("min", "std::min") and len(e.args) == 2:
        return _min_terms(e.args[0]) + _min_terms(e.args[1])
    return [e]


def _unmax1(e):
    e = U.strip_casts(e)
    if isinstance(e, (N.Intrinsic, N.Call)) and (getattr(e, "name", None) or getattr(e, "func", None)) in \
            ("max", "std::max") and len(e.args) == 2 and _c(e.args[0], 1):
        return e.args[1]
    return e


# ------------------------------------------------------------------------------ access shapes
class Ctx:
    def __init__(self, loop, bufs, sizes):
        self.loop, self.c = loop, loop.var
        self.bufs, self.sizes = bufs, sizes
        self.row_var = self.pad = None
        self.rows, self.vecs = set(), set()

    def access(self, n):
        """'row' / 'vec' for an NRAM access at lane c, raises NotVector otherwise."""
        if not (isinstance(n.base, N.Var) and n.base.name in self.bufs and self.bufs[n.base.name].scope == "nram"):
            raise NotVector("access outside NRAM")
        b = n.base.name
        if U.scalar_dtype(self.bufs[b].type.elem) != DTYPE:
            raise NotVector("not float32")
        ix = U.strip_casts(n.index)
        if U.is_var(ix, self.c):
            self.vecs.add(b)
            return "vec"
        if isinstance(ix, N.BinOp) and ix.op == "+" and U.is_var(ix.rhs, self.c):
            m = U.strip_casts(ix.lhs)
            if isinstance(m, N.BinOp) and m.op == "*" and isinstance(U.strip_casts(m.lhs), N.Var) \
                    and isinstance(U.strip_casts(m.rhs), N.Var):
                rv, pv = U.strip_casts(m.lhs).name, U.strip_casts(m.rhs).name
                if self.row_var in (None, rv) and self.pad in (None, pv) and rv != self.c:
                    self.row_var, self.pad = rv, pv
                    self.rows.add(b)
                    return "row"
        raise NotVector(f"access {b}[...] is not a lane of a row")

    def ptr(self, b):
        if b in self.rows:
            return N.BinOp("+", N.Var(b), N.BinOp("*", N.Var(self.row_var), N.Var(self.pad)))
        return N.Var(b)

    def lane(self, b, idx):
        if b in self.rows:
            return N.Index(N.Var(b), N.BinOp("+", N.BinOp("*", N.Var(self.row_var), N.Var(self.pad)), idx))
        return N.Index(N.Var(b), idx)


def _is_vec(e, c):
    return any((isinstance(n, N.Var) and n.name == c) for n in walk(e))


def _loads(e, c):
    return [n for n in walk(e) if isinstance(n, N.Index) and any(isinstance(m, N.Var) and m.name == c
                                                                   for m in walk(n.index))]


# ------------------------------------------------------------------------------ expression compiler
class Compiler:
    def __init__(self, ctx: Ctx, scratch: list, n):
        self.ctx, self.scratch, self.n = ctx, scratch, n
        self.out: list = []
        self.used_scratch = set()
        self.names = set()

    def emit(self, name, *args):
        self.names.add(name)
        self.out.append(U.call(name, *args))

    def operand(self, e, free: list):
        """A pointer holding e (a vector expression)."""
        e = _strip_float_cast(e)
        if isinstance(e, N.Index):
            kind = self.ctx.access(e)
            return self.ctx.ptr(e.base.name) if kind else None
        if not free:
            raise NotVector("expression too deep for the scratch rows")
        t = free.pop(0)
        self.used_scratch.add(t)
        self.into(e, N.Var(t), free)
        return N.Var(t)

    def into(self, e, out, free):
        """Emit ops computing vector expression e into pointer ``out``."""
        c = self.ctx.c
        e = _strip_float_cast(e)
        if isinstance(e, N.Index):
            self.ctx.access(e)
            self.emit("__memcpy", out, self.ctx.ptr(e.base.name), N.BinOp("*", self.n, U.sizeof(DTYPE)),
                      N.Var("NRAM2NRAM"))
            return
        loads = _loads(e, c)
        names = []
        for ld in loads:
            self.ctx.access(ld)
            if ld.base.name not in names:
                names.append(ld.base.name)
        # one- or two-load subtree equal to one activation / binary instruction
        if not isinstance(e, N.BinOp) or len(names) == 1:
            m = _semantic(e, names, loads)
            if m is not None:
                name, order = m
                self.emit(name, out, *[self.ctx.ptr(b) for b in order], self.n)
                return
        if isinstance(e, N.UnOp) and e.op == "-":
            self.emit("__bang_mul_scalar", out, self._first(e.operand, out, free), U.F(-1.0), self.n)
            return
        if isinstance(e, (N.Call, N.Intrinsic)) and len(e.args) == 1:
            m = _unary_of(e)
            if m is None:
                raise NotVector(f"no vector op computes {getattr(e, 'name', None) or e.func}")
            self.emit(m, out, self._first(e.args[0], out, free), self.n)
            return
        if isinstance(e, N.BinOp) and e.op in "+-*/":
            va, vb = _is_vec(e.lhs, c), _is_vec(e.rhs, c)
            op = {"+": "add", "-": "sub", "*": "mul", "/": "div"}[e.op]
            if va and vb:
                pa = self._first(e.lhs, out, free)
                # (v - m) * (v - m): the same row twice
                pb = pa if _same(e.lhs, e.rhs) else self.operand(e.rhs, list(free))
                self.emit(f"__bang_{op}", out, pa, pb, self.n)
                return
            if va:
                self.emit(f"__bang_{op}_scalar", out, self._first(e.lhs, out, free), e.rhs, self.n)
                return
            if vb and e.op in "+*":
                self.emit(f"__bang_{op}_scalar", out, self._first(e.rhs, out, free), e.lhs, self.n)
                return
            if vb and e.op == "-":          # s - v == (-v) + s exactly
                self.emit("__bang_mul_scalar", out, self._first(e.rhs, out, free), U.F(-1.0), self.n)
                self.emit("__bang_add_scalar", out, out, e.lhs, self.n)
                return
        raise NotVector(f"no vector form for {type(e).__name__}")

    def _first(self, e, out, free):
        """Operand e, computed into ``out`` itself when it is compound (out is written last)."""
        e2 = _strip_float_cast(e)
        if isinstance(e2, N.Index):
            return self.operand(e2, list(free))
        self.into(e2, out, list(free))
        return out


def _strip_float_cast(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype == DTYPE:
        e = e.expr
    return e


def _semantic(e, names, loads):
    """Match a subtree over 1-2 loads (and constants only) to one registry op."""
    if not names or len(names) > 2 or any(isinstance(n, N.Var) and not _under_index(n, loads) for n in walk(e)):
        return None
    if len(names) != len({l.base.name for l in loads}):
        return None
    return PB.match_elementwise(e, names)


def _under_index(v, loads):
    return any(any(m is v for m in walk(l)) for l in loads)


def _unary_of(call) -> Optional[str]:
    ph = N.Index(N.Var("__xp_lane"), U.C(0))
    probe = call.with_(args=(ph,))
    m = PB.match_elementwise(probe, ["__xp_lane"])
    return m[0] if m else None


# ------------------------------------------------------------------------------ reductions
_COMBINE = {"__bang_sum": np.add, "__bang_max": np.maximum, "__bang_min": np.minimum}


def _reduction(s, c):
    """(acc name, E, combiner instruction, rebuild(red_lane) -> stmt) for ``acc = g(acc, E)``."""
    if not (isinstance(s, N.Assign) and isinstance(s.target, N.Var)):
        return None
    acc = s.target.name
    if s.op == "+=":
        e = s.value
        return acc, e, "__bang_sum", lambda red: N.Assign(N.Var(acc), "+=", red)
    if s.op != "=":
        return None
    v = s.value
    args = None
    if isinstance(v, N.BinOp):
        args = [v.lhs, v.rhs]
    elif isinstance(v, (N.Call, N.Intrinsic)) and len(v.args) == 2:
        args = list(v.args)
    if args is None:
        return None
    k = [i for i, a in enumerate(args) if isinstance(U.strip_casts(a), N.Var) and U.strip_casts(a).name == acc]
    if len(k) != 1:
        return None
    e = args[1 - k[0]]
    if any(isinstance(n, N.Var) and n.name == acc for n in walk(e)):
        return None
    ph = N.Index(N.Var("__xp_red"), U.C(0))

    def rebuild(red):
        new = list(args)
        new[1 - k[0]] = red
        val = v.with_(lhs=new[0], rhs=new[1]) if isinstance(v, N.BinOp) else v.with_(args=tuple(new))
        return N.Assign(N.Var(acc), "=", val)
    g = rebuild(ph).value
    a, b = probes(), probes(seed=5)[::-1].copy()
    try:
        got = evaluate(g, {acc: a, ("load", "__xp_red"): b})
    except NotEvaluable:
        return None
    for name, f in _COMBINE.items():
        if same(got, f(a, b)):
            return acc, e, name, rebuild
    return None


# ------------------------------------------------------------------------------ bounds proof
def _fits(func, loop, ctx: Ctx, lets, sizes):
    """K (the guard bound of P) when the padded lanes stay inside every buffer, else None."""
    path = _parents(func.body, loop)
    if path is None:
        return None
    pinit = lets.get(ctx.pad) if ctx.pad else None
    if ctx.pad is not None and (pinit is None or not _same(pinit, U.round_up(loop.hi, UNIT))):
        return None
    if ctx.pad is None:
        return None
    K = None
    for p in path:
        if isinstance(p, N.If):
            for t in _conjuncts(p.cond):
                if isinstance(t, N.BinOp) and t.op == "<=" and U.is_var(t.lhs, ctx.pad) and \
                        isinstance(t.rhs, N.Const) and isinstance(t.rhs.value, int):
                    if any(x is loop for x in walk(p.then)):
                        K = t.rhs.value if K is None else min(K, t.rhs.value)
    if K is None:
        return None
    if any(sizes.get(b) is None or sizes[b] < K for b in ctx.vecs | ctx.rows):
        return None
    if ctx.rows:
        rl = next((p for p in path if isinstance(p, N.For) and p.var == ctx.row_var), None)
        if rl is None or rl.binding is not None or not _c(rl.lo, 0) or not _c(rl.step, 1) or \
                not isinstance(rl.hi, N.Var) or rl.hi.name not in lets:
            return None
        rn = U.strip_casts(lets[rl.hi.name])
        terms = _min_terms(rn)
        rb = next((t for t in terms if isinstance(t, N.Var) and t.name in lets), None)
        if rb is None:
            return None
        caps = []
        for t in _min_terms(_unmax1(lets[rb.name])):
            t = U.strip_casts(t)
            if isinstance(t, N.BinOp) and t.op == "/" and isinstance(t.lhs, N.Const) and U.is_var(t.rhs, ctx.pad):
                caps.append(t.lhs.value)
        if not caps or any(sizes[b] < min(caps) for b in ctx.rows):
            return None
    return K


# ------------------------------------------------------------------------------ sites
def _loop_ok(l):
    if l.binding is not None or not (_c(l.step, 1) and (_c(l.lo, 0) or _c(l.lo, 1))):
        return False
    return not any(isinstance(n, (N.For, N.CFor, N.While, N.If, N.Barrier, N.Return, N.Break, N.Continue))
                   for n in walk(l.body))


def row_vector_sites(program, func, ops=None, skip=()):
    bufs = U.buffer_decls(func, program)
    macros = program.macro_table()
    sizes = {b: U.const_size(d, macros) for b, d in bufs.items()}
    lets = U.decl_lets(func)
    names = {"t": [U.fresh(func, f"xp_vrow{k}") for k in range(SCRATCH)], "red": U.fresh(func, "xp_red")}
    sites, scratch_cap = [], 0
    for loop in [n for n in walk(func.body) if isinstance(n, N.For)]:
        if any(loop is s for s in skip) or not _loop_ok(loop):
            continue
        try:
            repl, K, used = _vectorize(func, loop, bufs, sizes, lets, names)
        except NotVector:
            continue
        if ops and not ({n.name for r in repl for n in walk(r) if isinstance(n, N.Intrinsic)
                         and n.name.startswith("__bang")} <= set(ops)):
            continue
        sites.append((loop, repl, K, used))
    if not sites:
        return []
    K = max(s[2] for s in sites)
    used = set().union(*[s[3] for s in sites])
    decls = [N.Decl(t, N.Array(N.Scalar(DTYPE), (U.C(K),)), scope="nram") for t in names["t"] if t in used]
    if names["red"] in used:
        decls.append(N.Decl(names["red"], N.Array(N.Scalar(DTYPE), (U.C(RED_LEN),)), scope="nram"))
    extra = sum(U.const_size(d) * 4 for d in decls)
    if U.static_bytes(program, func, "nram") + extra > U.NRAM_BYTES:
        return []
    out = [(l, list(r)) for l, r, _, _ in sites]
    out[0] = (out[0][0], decls + out[0][1])      # scratch declarations travel with the first site
    return out


def _vectorize(func, loop, bufs, sizes, lets, names):
    c = loop.var
    stmts = [s for s in U.inline_lets(loop.body.stmts) if not isinstance(s, N.Comment)]
    if not stmts:
        raise NotVector("empty")
    ctx = Ctx(loop, bufs, sizes)
    # classify, and check the distribution rules
    kinds = []
    accs = set()
    for s in stmts:
        if isinstance(s, N.Assign) and isinstance(s.target, N.Index):
            if ctx.access(s.target) != "row":
                raise NotVector("store into a row-independent vector")
            e = s.value if s.op == "=" else N.BinOp(s.op[0], s.target, s.value) if s.op in ("+=", "-=", "*=", "/=") \
                else None
            if e is None:
                raise NotVector("compound store")
            kinds.append(("map", s.target.base.name, e))
            continue
        r = _reduction(s, c)
        if r is None:
            raise NotVector("statement neither map nor reduction")
        kinds.append(("red",) + r)
        accs.add(r[0])
    for k in kinds:
        e = k[2]
        for n in walk(e):
            if isinstance(n, N.Var) and n.name in accs:
                raise NotVector("a statement reads an accumulator of the loop")
            if isinstance(n, N.Index):
                ctx.access(n)
        n_idx = sum(1 for n in walk(e) if isinstance(n, N.Index))
        n_c = sum(1 for n in walk(e) if isinstance(n, N.Var) and n.name == c)
        if n_c != n_idx:
            raise NotVector("the lane index is used outside the accesses")
    if len(accs) != sum(1 for k in kinds if k[0] == "red"):
        raise NotVector("two reductions into one accumulator")
    if _c(loop.lo, 1):
        if len(kinds) != 1 or kinds[0][0] != "red" or kinds[0][3] == "__bang_sum":
            raise NotVector("loop from 1 that is not a max/min reduction")
        if not _init_is_lane0(func, loop, kinds[0][1], kinds[0][2]):
            raise NotVector("loop from 1 without acc = lane 0 before it")
    K = _fits(func, loop, ctx, lets, sizes)
    if K is None:
        raise NotVector("padded lanes not provably inside the buffers")
    P = N.Var(ctx.pad)
    S = loop.hi
    free = list(names["t"])
    comp = Compiler(ctx, free, P)
    out = comp.out
    stored = {}                                    # buffer -> expression its row holds now
    used = set()
    for k in kinds:
        if k[0] == "map":
            _, d, e = k
            loads = {n.base.name for n in walk(e) if isinstance(n, N.Index)}
            pool = list(free)
            mark = len(out)
            comp.into(e, ctx.ptr(d), pool)
            if d in loads and len(out) - mark > 1:
                # D is read by E and E takes several ops: compute into scratch, then copy
                del out[mark:]
                t = pool.pop(0)
                used.add(t)
                comp.into(e, N.Var(t), pool)
                comp.emit("__memcpy", ctx.ptr(d), N.Var(t), N.BinOp("*", P, U.sizeof(DTYPE)), N.Var("NRAM2NRAM"))
            stored = {b: x for b, x in stored.items() if b != d and not any(
                isinstance(n, N.Index) and n.base.name == d for n in walk(x))}
            stored[d] = e
            continue
        _, acc, e, instr, rebuild = k
        e0 = _strip_float_cast(e)
        src_buf = next((b for b, x in stored.items() if _same(x, e)), None)
        if src_buf is not None:
            src, lane = ctx.ptr(src_buf), (lambda i, b=src_buf: ctx.lane(b, i))
        elif isinstance(e0, N.Index):
            ctx.access(e0)
            b = e0.base.name
            src, lane = ctx.ptr(b), (lambda i, b=b: ctx.lane(b, i))
        else:
            t = free[0]
            used.add(t)
            comp.into(e, N.Var(t), list(free[1:]))
            src, lane = N.Var(t), (lambda i, t=t: N.Index(N.Var(t), i))
        neutral = U.F(0.0) if instr == "__bang_sum" else lane(U.C(0))
        pad_loop = N.For(c, S, P, U.C(1), N.Block((N.Assign(lane(N.Var(c)), "=", neutral),)),
                         var_type=N.Scalar("int32", "int"))
        red = names["red"]
        used.add(red)
        body = [pad_loop, U.call(instr, N.Var(red), src, P), rebuild(N.Index(N.Var(red), U.C(0)))]
        comp.names.add(instr)
        if instr == "__bang_sum":
            out.extend(body)
        else:                                      # an empty row leaves acc as it is
            out.append(N.If(N.BinOp(">", S, U.C(0)), N.Block(tuple(body))))
        # the pad loop wrote lanes [S, P) of src: other rows' expressions are unaffected
    used |= comp.used_scratch
    return [s.with_(loc=loop.loc) if hasattr(s, "loc") else s for s in out], K, used


def _init_is_lane0(func, loop, acc, e):
    """The statement right before ``loop`` in its block is ``acc = E[c := 0]``."""
    for blk in walk(func.body):
        if isinstance(blk, N.Block):
            for k, s in enumerate(blk.stmts):
                if s is loop:
                    prev = [x for x in blk.stmts[:k] if not isinstance(x, N.Comment)]
                    if not prev:
                        return False
                    p = prev[-1]
                    want = substitute(e, {loop.var: U.C(0)})
                    if isinstance(p, N.Decl) and p.name == acc and p.init is not None:
                        return _same(p.init, want)
                    if isinstance(p, N.Assign) and p.op == "=" and U.is_var(p.target, acc):
                        return _same(p.value, want)
                    return False
    return False


def hoist_scratch(body: N.Block) -> N.Block:
    """Move NRAM declarations that a replacement left in a nested block to the top of the body
    (one per name)."""
    found = {}

    def strip(n):
        if isinstance(n, N.Block):
            keep = []
            for s in n.stmts:
                if isinstance(s, N.Decl) and s.scope == "nram":
                    found.setdefault(s.name, s)
                else:
                    keep.append(s)
            if len(keep) != len(n.stmts):
                return n.with_(stmts=tuple(keep))
        return n
    from xpiler.ir.visit import rewrite
    new = body.with_(stmts=tuple(rewrite(s, strip) for s in body.stmts))
    if not found:
        return body
    top = {s.name for s in new.stmts if isinstance(s, N.Decl)}
    return new.with_(stmts=tuple(d for k, d in found.items() if k not in top) + new.stmts)
