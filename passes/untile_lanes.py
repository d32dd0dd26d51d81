"""Un-tiling of a lane-distributed tiled matmul: what loop recovery makes of a matrix-core kernel
whose MFMA detensorize lifted to its contraction (``passes/lowering/mfma_lift.py``), e.g.
examples/gemm/gemm_mfma.hip::

    for by: for bx: {
        float As[512]; float Bs[512]; float acc[256][4];  lets;
        for tid < 256: { acc[tid][0] = 0; ... acc[tid][3] = 0; }                     // ZERO
        for (k0 = 0; k0 < K; k0 += 16) {
            for tid < 256: { for (t = tid; t < 512; t += 256) As[t] = c ? A[..] : 0;  // STAGE
                             for (t = tid; ...) Bs[t] = c ? B[..] : 0; }
            for tid < 256: { lets; for (kk = 0; kk < 16; kk += 4)                     // COMPUTE
                               for e < 4: for k < 4: acc[tid][e] += As[..] * Bs[..]; }
        }
        for tid < 256: { lets; for e < 4: { lets; if (r < M && c < N) C[..] = acc[tid][e]; } }  // STORE
    }

The lane layout (row ``4g + e``, column ``i`` of a wave's sub-tile, the wave's place in the block
tile) is a mixed-radix function of the thread id that :mod:`passes.untile`'s pairing ``row =
T*block + thread`` does not read. Here every loop of the block body has a constant trip count
except the tile loop, so the block body is *executed*: thread, lane, staging, ``kk`` and ``k``
loops are run with their concrete values, the block / tile variables and the parameters stay
symbolic (integer polynomials), and what each accumulator element adds up is read off the run.

Proven (else :class:`~passes.patterns.polyz.Refused`, XP4001 from ``untile``):

* each tile array is written exactly once per element per tile, ``S[t] = c ? G[g] : 0`` (or
  ``G[g]``) with ``G`` a pointer parameter the kernel never writes, before the compute nest reads
  it, and is used nowhere else; the accumulator array is written only by ZERO (``= 0``, every
  element) and COMPUTE (``+= x * y``, ``x``, ``y`` one staged element each);
* the store guard is ``u1 < X1 && u2 < X2`` with ``u = S * b + R`` for distinct block loops ``b``
  (R a constant of the stored element); the stored elements' ``(R1, R2)`` are every pair of
  ``[0, S1) x [0, S2)`` exactly once, and ``H * S >= X`` for each block loop's trip count H: the
  outputs ``u < X`` are each computed once;
* with ``b := (u - R) / S`` and ``k0 := k - p`` (p = the term's place in its accumulator's sum,
  which must run through ``0 .. T-1``, T the tile step), the store index, each staged global
  index and each copy condition become one and the same polynomial for every stored element and
  term (so the sum is ``sum_k A[.(u, k).] * B[.(k, u').]`` in ascending k, the order of the
  source);
* padding: for ``k < K`` every copy condition holds, for ``k >= K`` every one fails (the staged
  zeros add ``0 * 0``; see untile: only the sign of a zero result can differ);
* ``continue`` guards of the block are never taken; the store index is injective over the outputs.
"""
from __future__ import annotations

from fractions import Fraction

import z3

from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir.visit import substitute, walk

from .patterns import common as U
from .patterns.polyz import Refused, Z, _const, _valid, pexpr, psub, pvars

#: at most this many statement executions while running one block body (the lane layout of a
#: matrix-core tile is a few thousand)
MAX_STEPS = 400_000


def _sc(e):
    """``e`` without any casts (for constants and the staged-element test)."""
    while isinstance(e, N.Cast):
        e = e.expr
    return e


def _casts(e):
    """(the cast types around e, outermost first; the expression inside)."""
    out = []
    while isinstance(e, N.Cast):
        out.append(e.type)
        e = e.expr
    return tuple(out), e


class _Ptr:
    def __init__(self, base, off):
        self.base, self.off = base, off


class _Run:
    """Executes the block body; records ZERO / STAGE / COMPUTE / STORE events."""

    def __init__(self, arrays, ptrs, acc, symbolic):
        self.arrays, self.ptrs, self.acc, self.sym = arrays, ptrs, acc, symbolic
        self.steps = 0
        self.zero = {}            # acc element -> count
        self.staged = {}          # (array, t) -> (cond conjuncts, global, index poly)
        self.terms = {}           # acc element -> [(x (array, t), y (array, t))]
        self.stores = []          # (acc element, guard conjuncts, C name, index poly)
        self.relay = None         # a local array the accumulators pass through on the way out
        self.relayed = {}         # relay element -> acc element

    # ---- values
    def ev(self, e, env):
        e = U.strip_casts(e)
        if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return P.const(e.value)
        if isinstance(e, N.Var):
            if e.name in env:
                return env[e.name]
            if e.name in self.sym:
                return {(e.name,): 1}
            raise Refused(f"'{e.name}' has no value in the block", e)
        if isinstance(e, N.UnOp) and e.op == "-":
            return P.add({}, self.ev(e.operand, env), -1)
        if isinstance(e, N.BinOp) and e.op in ("+", "-", "*", "/", "%"):
            a, b = self.ev(e.lhs, env), self.ev(e.rhs, env)
            if isinstance(a, _Ptr) or isinstance(b, _Ptr):
                if e.op == "+" and isinstance(a, _Ptr) and not isinstance(b, _Ptr):
                    return _Ptr(a.base, P.add(a.off, b))
                raise Refused("pointer arithmetic the run does not read", e)
            if e.op == "+":
                return P.add(a, b)
            if e.op == "-":
                return P.add(a, b, -1)
            if e.op == "*":
                return P.mul(a, b)
            x, y = P.value(a), P.value(b)
            if x is None or y is None or y == 0 or not isinstance(x, int) or not isinstance(y, int):
                raise Refused("a division of a symbolic value", e)
            q = abs(x) // abs(y) * (1 if (x >= 0) == (y > 0) else -1)
            return P.const(q if e.op == "/" else x - y * q)
        raise Refused(f"an expression the run does not read ({type(e).__name__})", e)

    def cmp(self, e, env):
        """A condition as conjuncts (op, polynomial of lhs - rhs)."""
        e = U.strip_casts(e)
        if isinstance(e, N.BinOp) and e.op == "&&":
            return self.cmp(e.lhs, env) + self.cmp(e.rhs, env)
        if isinstance(e, N.BinOp) and e.op in ("<", "<=", ">", ">=", "==", "!="):
            return [(e.op, P.add(self.ev(e.lhs, env), self.ev(e.rhs, env), -1))]
        raise Refused("a condition that is not a conjunction of comparisons", e)

    def elem(self, e, env):
        """(array, concrete subscripts) of a local array element."""
        idx = []
        while isinstance(e, N.Index):
            idx.append(e.index)
            e = e.base
        if not isinstance(e, N.Var) or e.name not in self.arrays:
            return None
        subs = []
        for i in reversed(idx):
            c = P.value(self.ev(i, env))
            if c is None:
                raise Refused(f"'{e.name}' is indexed by a symbolic value", i)
            subs.append(c)
        dims = self.arrays[e.name]
        if len(subs) != len(dims) or any(not 0 <= s < d for s, d in zip(subs, dims)):
            raise Refused(f"'{e.name}' is accessed outside its bounds", e)
        return e.name, tuple(subs)

    def glob(self, e, env):
        """(pointer parameter, index polynomial) of a global element ``G[i]``."""
        e = U.strip_casts(e)
        if not isinstance(e, N.Index):
            return None
        base = U.strip_casts(e.base)
        if isinstance(base, N.Var) and base.name in self.ptrs:
            return base.name, self.ev(e.index, env)
        if isinstance(base, N.Var) and isinstance(env.get(base.name), _Ptr):
            p = env[base.name]
            return p.base, P.add(p.off, self.ev(e.index, env))
        return None

    # ---- statements
    def run(self, stmts, env, phase, guard=()):
        for s in stmts:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise Refused("the block body runs too many statements to be read off")
            if isinstance(s, (N.Comment, N.Pragma)):
                continue
            if isinstance(s, N.Block):
                self.run(s.stmts, dict(env), phase, guard)
            elif isinstance(s, N.Decl) and isinstance(s.type, (N.Scalar, N.Pointer)) and s.init is not None:
                v = U.strip_casts(s.init)
                if isinstance(s.type, N.Pointer):
                    b = U.strip_casts(v.lhs) if isinstance(v, N.BinOp) and v.op == "+" else v
                    if not (isinstance(b, N.Var) and b.name in self.ptrs):
                        raise Refused(f"pointer '{s.name}' is not a parameter plus an offset", s)
                    off = self.ev(v.rhs, env) if b is not v else {}
                    env[s.name] = _Ptr(b.name, off)
                elif s.type.dtype.startswith(("float", "bfloat")):
                    c = _sc(s.init)
                    if not isinstance(c, N.Const):
                        raise Refused(f"float let '{s.name}' is not a constant", s)
                    env[s.name] = c
                else:
                    env[s.name] = self.ev(s.init, env)
            elif isinstance(s, N.For):
                lo, hi, st = (P.value(self.ev(x, env)) for x in (s.lo, s.hi, s.step))
                if lo is None or hi is None or not st or st <= 0 or s.binding is not None or s.cmp != "<":
                    raise Refused(f"loop '{s.var}' in the block has no constant trip count", s)
                for v in range(lo, hi, st):
                    self.run(s.body.stmts, {**env, s.var: P.const(v)}, phase, guard)
            elif isinstance(s, N.If) and s.else_ is None and phase == "store":
                then = s.then.stmts if isinstance(s.then, N.Block) else (s.then,)
                self.run(then, dict(env), phase, guard + tuple(self.cmp(s.cond, env)))
            elif isinstance(s, N.Assign):
                self.assign(s, env, phase, guard)
            else:
                raise Refused(f"a statement the run does not read in the {phase} nest", s)

    def assign(self, s, env, phase, guard):
        tgt = self.elem(s.target, env)
        if phase == "zero":
            z = _sc(s.value)
            if tgt is None or tgt[0] != self.acc or s.op != "=" or not (isinstance(z, N.Const) and z.value == 0):
                raise Refused("the first nest does not set the accumulators to zero", s)
            self.zero[tgt[1]] = self.zero.get(tgt[1], 0) + 1
        elif phase == "stage":
            if tgt is None or tgt[0] == self.acc or s.op != "=" or len(tgt[1]) != 1:
                raise Refused("a staging nest stores to something other than a 1-d tile array", s)
            v = U.strip_casts(s.value)
            cond = ()
            if isinstance(v, N.Cond):
                z = _sc(v.else_)
                if isinstance(z, N.Var) and isinstance(env.get(z.name), N.Expr):
                    z = env[z.name]                      # a constant let (const half zero = 0.0f)
                if not (isinstance(z, N.Const) and z.value == 0):
                    raise Refused("a staged element is not zero-padded", s)
                cond = tuple(self.cmp(v.cond, env))
                v = v.then
            g = self.glob(v, env)
            if g is None:
                raise Refused(f"the element staged into '{tgt[0]}' is not a plain copy of a global element", s)
            key = (tgt[0], tgt[1][0])
            if key in self.staged:
                raise Refused(f"tile array '{tgt[0]}' is stored twice per tile", s)
            self.staged[key] = (cond, g[0], g[1])
        elif phase == "compute":
            if tgt is None or tgt[0] != self.acc or s.op != "+=":
                raise Refused("the compute nest is not 'acc[...] += x * y'", s)
            v = U.strip_casts(s.value)
            if not (isinstance(v, N.BinOp) and v.op == "*"):
                raise Refused("the accumulated value is not a product", s)
            cs = [_casts(f) for f in (v.lhs, v.rhs)]
            xs = [self.elem(f, env) for _, f in cs]
            if any(x is None or x[0] == self.acc or len(x[1]) != 1 for x in xs):
                raise Refused("a product operand is not one staged element", s)
            self.terms.setdefault(tgt[1], []).append(tuple((x[0], x[1][0], c) for x, (c, _) in zip(xs, cs)))
        elif phase == "relay":
            src = self.elem(_sc(s.value), env)
            if tgt is None or tgt[0] != self.relay or src is None or src[0] != self.acc or s.op != "=" \
                    or not _same_width_float(s.value) or tgt[1] in self.relayed:
                raise Refused("the accumulators are not copied once each into one local array", s)
            self.relayed[tgt[1]] = src[1]
        else:
            val = U.strip_casts(s.value)
            src = self.elem(val, env)
            if src is not None and src[0] == self.relay and self.relay is not None:
                if src[1] not in self.relayed:
                    raise Refused(f"an element of '{self.relay}' is stored that no accumulator was copied to", s)
                src = (self.acc, self.relayed[src[1]])
            if src is None or src[0] != self.acc or s.op != "=":
                raise Refused("the store nest is not '[if (c)] C[...] = acc[...]'", s)
            g = self.glob(s.target, env)
            if g is None:
                raise Refused("the store nest does not write to a global buffer", s)
            self.stores.append((src[1], guard, g[0], g[1]))


def untile_lanes(program, func, L):
    """The new function body with the tiled contraction around tile loop ``L`` replaced by the
    plain one, or Refused."""
    from .untile import _path, _strip
    z = Z()
    top = _strip(func.body.stmts)
    enclosing, B = _path(func.body.stmts, L, [])
    if not enclosing:
        raise Refused("the tile loop is not inside block loops", L)
    outer = enclosing[0]
    k = next(n for n, s in enumerate(top) if s is outer)
    for s in top[:k]:
        if not (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar)):
            raise Refused("a statement before the block loops is not a scalar declaration", s)
    if any(not (isinstance(s, N.Return) and s.value is None) for s in top[k + 1:]):
        raise Refused("statements after the block loops", top[k + 1])
    written = U.assigned_names(func.body) | _written_ptrs(func)
    if any(v in written for v in _vars(L.hi)):
        raise Refused("the tile loop's bound changes inside the function", L)
    T = _const(L.step)
    if _const(L.lo) != 0 or L.cmp != "<" or T is None:
        raise Refused("the tile loop is not 'for (k0 = 0; k0 < K; k0 += T)'", L)
    K = L.hi
    ptrs = U.pointer_params(func)
    # variables given a new value anywhere (a pointer let stored through is not rebound)
    rebound = {n.target.name for n in walk(func.body)
               if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var)}
    arrays, lets, dead, nests = {}, [], [], []
    for s in B:
        if isinstance(s, N.Decl) and isinstance(s.type, N.Array) and s.init is None and s.scope == "local":
            dims = [_fold(d) for d in s.type.dims]
            if any(d is None for d in dims):
                raise Refused(f"local array '{s.name}' has no constant size", s)
            arrays[s.name] = dims
        elif isinstance(s, N.Decl) and isinstance(s.type, (N.Scalar, N.Pointer)) and s.init is not None \
                and s.name not in rebound:
            lets.append(s)
        elif isinstance(s, N.If) and s.else_ is None:
            dead.append(s)
        elif isinstance(s, N.For):
            nests.append(s)
        else:
            raise Refused(f"the block body holds a statement that is not a declaration, a guard or a loop "
                          f"({type(s).__name__} {getattr(s, 'name', '')})", s)
    if len(nests) not in (3, 4) or nests[1] is not L:
        raise Refused("the block is not 'zero the accumulators; tile loop; [copy out;] store'", L)
    acc = next((a for a in arrays if len(arrays[a]) >= 1 and any(
        isinstance(n, N.Assign) and n.op == "+=" and (U.strip_casts(n.target) is not None)
        and _base(n.target) == a for n in walk(L))), None)
    if acc is None:
        raise Refused("no accumulator array in the tile loop", L)
    if any(isinstance(n, N.Var) and n.name in arrays for s in top if s is not outer for n in walk(s)):
        raise Refused("a tile array is used outside the block", L)
    blk = [lp.var for lp in enclosing]
    sym = set(blk) | {p.name for p in func.params} | {L.var}
    run = _Run(arrays, ptrs, acc, sym)
    env = {}
    for d in lets:
        run.run([d], env, "lets")
    tb = [s for s in L.body.stmts if not isinstance(s, (N.Comment, N.Pragma))]
    if len(tb) < 2:
        raise Refused("the tile loop is not staging nests then one compute nest", L)
    run.run([nests[0]], dict(env), "zero")
    for s in tb[:-1]:
        run.run([s], dict(env), "stage")
    run.run([tb[-1]], dict(env), "compute")
    if len(nests) == 4:
        # accumulators -> a local array -> the output (WMMA's store_matrix_sync into shared memory)
        relays = {_base(n.target) for n in walk(nests[2]) if isinstance(n, N.Assign)}
        if len(relays) != 1 or next(iter(relays)) not in arrays or next(iter(relays)) == acc:
            raise Refused("the nest after the tile loop does not copy the accumulators to a local array", nests[2])
        run.relay = next(iter(relays))
        run.run([nests[2]], dict(env), "relay")
        if any(_base(n.target) == run.relay for n in walk(nests[3]) if isinstance(n, N.Assign)) or any(
                _base(n.target) == run.relay for n in walk(L) if isinstance(n, N.Assign)):
            raise Refused(f"'{run.relay}' is written elsewhere", nests[3])
    run.run([nests[-1]], dict(env), "store")
    # ---- tile arrays: written once per element, used only as staged
    staged_arrays = {a for a, _ in run.staged}
    for a in staged_arrays:
        if a == acc or sorted(t for b, t in run.staged if b == a) != list(range(arrays[a][0])):
            raise Refused(f"the staging nest does not write every element of '{a}' once", L)
    if run.relay in staged_arrays:
        raise Refused(f"'{run.relay}' is both a tile and the copy of the accumulators", L)
    for a in arrays:
        if a not in staged_arrays and a != acc and a != run.relay:
            raise Refused(f"local array '{a}' is neither a tile nor the accumulator", L)
    for _, gname, _ in run.staged.values():
        if gname in written or gname in _written_ptrs(func):
            raise Refused(f"'{gname}' is written by the kernel; its staged copy may be stale", L)
    n_acc = 1
    for d in arrays[acc]:
        n_acc *= d
    if len(run.zero) != n_acc or any(c != 1 for c in run.zero.values()):
        raise Refused(f"the zero nest does not set every element of '{acc}' once", nests[0])
    if not run.stores:
        raise Refused("nothing is stored", nests[-1])
    # ---- the outputs: guard u < X with u = S * block + R
    rows = None
    keyed = []
    for el, guard, cname, cidx in run.stores:
        dims, other = [], []
        for op, p in guard:
            d = _out_dim(op, p, blk)
            (dims if d is not None else other).append(d if d is not None else (op, p))
        if other or not dims:
            raise Refused("the store guard is not 'row < M && col < N' over the block loops", nests[-1])
        shape = [(b, S, P.frozen(X)) for b, S, R, X in dims]
        if rows is None:
            rows = (shape, [X for _, _, _, X in dims], cname)
        elif shape != rows[0] or cname != rows[2]:
            raise Refused("the stored elements do not share one output layout", nests[-1])
        keyed.append((el, tuple(R for _, _, R, _ in dims), cidx))
    shape, Xs, cname = rows
    if len({b for b, _, _ in shape}) != len(shape):
        raise Refused("two output coordinates use the same block loop", nests[-1])
    want = 1
    for _, S, _ in shape:
        want *= S
    seen = {R for _, R, _ in keyed}
    if len(seen) != len(keyed) or len(keyed) != want or any(
            not all(0 <= r < S for r, (_, S, _) in zip(R, shape)) for R in seen):
        raise Refused("the stored elements are not each place of the block tile exactly once", nests[-1])
    # block loop extents: H * S >= X
    for (b, S, _), X in zip(shape, Xs):
        lp = next(lp for lp in enclosing if lp.var == b)
        if _const(lp.lo) != 0:
            raise Refused(f"block loop '{b}' does not start at 0", lp)
        Xz = z.int(pexpr(X, {}))
        if not _valid([], z3.Implies(Xz >= 0, z.int(lp.hi) * S >= Xz)):
            raise Refused(f"block loop '{b}' does not cover its output extent", lp)
    # ---- templates
    uvars = [U.fresh(func, n) for n in (["i", "j"] if len(shape) == 2 else [f"i{n}" for n in range(len(shape))])]
    kname = U.fresh(func, "k")
    tmpl = {"C": None, "x": None, "y": None}
    for el, R, cidx in keyed:
        sub = [(b, P.add({(u,): Fraction(1)}, P.const(-r)), S) for (b, S, _), u, r in zip(shape, uvars, R)]

        def at(p, pos=None):
            for b, q, S in sub:
                p = psub(p, b, {m: Fraction(c, S) for m, c in q.items()})
            if pos is not None:
                p = psub(p, L.var, {(kname,): 1, (): -pos})
            if any(L.var == v for v in pvars(p)) or any(Fraction(c).denominator != 1 for c in p.values()):
                raise Refused("an index is not a polynomial of the output and k alone", L)
            return {m: int(c) for m, c in p.items() if c}
        ct = P.frozen(at(cidx))
        if tmpl["C"] not in (None, ct):
            raise Refused("the store index is not one polynomial of the outputs", nests[-1])
        tmpl["C"] = ct
        terms = run.terms.get(el, [])
        if len(terms) != T:
            raise Refused(f"an accumulator sums {len(terms)} terms per tile of {T}: not every k once", tb[-1])
        for pos, xy in enumerate(terms):
            for slot, (a, t, casts) in zip(("x", "y"), xy):
                cond, gname, gidx = run.staged[(a, t)]
                key = (a, gname, P.frozen(at(gidx, pos)), tuple((op, P.frozen(at(p, pos))) for op, p in cond), casts)
                if tmpl[slot] not in (None, key):
                    raise Refused(f"the element read from '{a}' is not one function of the output and "
                                  f"k = {L.var} + its place in the sum", tb[-1])
                tmpl[slot] = key
    # ---- padding: k < K -> every copy taken, k >= K -> every copy is the zero
    hyps = []
    for u, X in zip(uvars, Xs):
        hyps += [z.v(u) >= 0, z.v(u) < z.int(pexpr(X, {}))]
    hyps.append(z.v(kname) >= 0)
    kin = z.v(kname) < z.int(K)
    for slot in ("x", "y"):
        a, gname, _, cond, _ = tmpl[slot]
        c = z3.And(*[_zcmp(z, op, dict(p)) for op, p in cond]) if cond else z3.BoolVal(True)
        if not _valid(hyps + [kin], c):
            raise Refused(f"the copy into '{a}' is not taken for every k < K of a stored output", L)
        if not _valid(hyps + [z3.Not(kin)], z3.Not(c)):
            raise Refused(f"tile array '{a}' holds a nonzero value past K (the padding would count)", L)
    # ---- continue guards never taken
    for g in dead:
        if not _is_continue(g.then):
            raise Refused("an 'if' in the block body that is not a 'continue' guard", g)
        R = []
        for lp in enclosing:
            R += [z.v(lp.var) >= z.int(lp.lo), z.v(lp.var) < z.int(lp.hi)]
        if not _valid(R, z3.Not(z.bool(g.cond))):
            raise Refused("a 'continue' guard of the block may be taken", g)
    # ---- the store is injective over the outputs (and the kept loops)
    kept = [lp for lp in enclosing if lp.var not in {b for b, _, _ in shape}]
    cpoly = dict(tmpl["C"])
    outs = [(lp.var, lp.lo, lp.hi) for lp in kept] + [(u, U.C(0), pexpr(X, {})) for u, X in zip(uvars, Xs)]
    other = {v: N.Var(v + "_o") for v, _, _ in outs}
    H = []
    for v, lo, hi in outs:
        for name in (v, v + "_o"):
            H += [z.v(name) >= z.int(lo), z.v(name) < z.int(hi)]
    ce = pexpr(cpoly, {})
    H.append(z.int(ce) == z.int(substitute(ce, other)))
    if not _valid(H, z3.And(*[z.v(v) == z.v(v + "_o") for v, _, _ in outs])):
        raise Refused(f"two outputs may be stored to the same element of '{cname}'", nests[-1])
    if any(v not in {u for u in uvars} | {lp.var for lp in kept} | {p.name for p in func.params}
           for v in pvars(cpoly)):
        raise Refused("the store index depends on a block variable", nests[-1])
    # ---- emit
    rank = {lp.var: n for n, lp in enumerate(kept)}
    rank.update({u: len(kept) + n for n, u in enumerate(uvars)})
    rank[kname] = len(rank)
    acc_t = _acc_type(B, acc)
    accn = U.fresh(func, "acc")
    INT = N.Scalar("int32", "int")
    ops = []
    for slot in ("x", "y"):
        _, gname, gp, _, casts = tmpl[slot]
        x = N.Index(N.Var(gname), pexpr(dict(gp), rank))
        for t in reversed(casts):           # the source's conversions (half -> float) kept
            if not (isinstance(t, N.Scalar) and t.dtype == ptrs.get(gname)):   # an identity cast is not
                x = N.Cast(t, x)
        ops.append(x)
    body = [N.Decl(accn, acc_t, N.Const(0.0, "float32", "0.0f")),
            N.For(kname, U.C(0), K, U.C(1), N.Block((N.Assign(N.Var(accn), "+=", N.BinOp("*", ops[0], ops[1])),)),
                  var_type=INT),
            N.Assign(N.Index(N.Var(cname), pexpr(cpoly, rank)), "=", N.Var(accn))]
    stmt = N.Block(tuple(body))
    Xe = [pexpr(X, rank) for X in Xs]
    for u, X in reversed(list(zip(uvars[1:], Xe[1:]))):
        stmt = N.Block((N.For(u, U.C(0), X, U.C(1), stmt, var_type=INT),))
    u0, X0 = uvars[0], Xe[0]
    if len(kept) == 1:
        b = kept[0]
        if _const(b.lo) != 0:
            raise Refused(f"batch loop '{b.var}' does not start at 0", b)
        t = U.fresh(func, "t")
        lets2 = (N.Decl(b.var, INT, N.BinOp("/", N.Var(t), X0)), N.Decl(u0, INT, N.BinOp("%", N.Var(t), X0)))
        stmt = N.For(t, U.C(0), N.BinOp("*", b.hi, X0), U.C(1), N.Block(lets2 + stmt.stmts), var_type=INT)
    else:
        stmt = N.For(u0, U.C(0), X0, U.C(1), stmt, var_type=INT)
        for lp in reversed(kept):
            stmt = lp.with_(body=N.Block((stmt,)))
    new_top = list(func.body.stmts)
    k = next(n for n, s in enumerate(new_top) if s is outer)
    new_top[k] = stmt
    return func.body.with_(stmts=tuple(new_top))


def _fold(e):
    """The value of a constant integer expression, else None."""
    try:
        v = P.value(_Run({}, {}, None, set()).ev(e, {}))
    except Refused:
        return None
    return v if isinstance(v, int) else None


def _same_width_float(v):
    """A copy whose casts (if any) are to float32: the accumulator's value unchanged."""
    casts, _ = _casts(v)
    return all(isinstance(t, N.Scalar) and t.dtype == "float32" for t in casts)


def _vars(e):
    return {n.name for n in walk(e) if isinstance(n, N.Var)}


def _base(e):
    while isinstance(e, N.Index):
        e = e.base
    return e.name if isinstance(e, N.Var) else None


def _written_ptrs(func):
    out = set()
    for s in walk(func.body):
        if isinstance(s, N.Assign) and isinstance(s.target, N.Index):
            b = _base(s.target)
            if b:
                out.add(b)
    return out


def _acc_type(B, acc):
    d = next(s for s in B if isinstance(s, N.Decl) and s.name == acc)
    return d.type.elem


def _is_continue(s):
    if isinstance(s, N.Continue):
        return True
    return isinstance(s, N.Block) and len([x for x in s.stmts if not isinstance(x, (N.Comment, N.Pragma))]) == 1 \
        and isinstance([x for x in s.stmts if not isinstance(x, (N.Comment, N.Pragma))][0], N.Continue)


def _out_dim(op, p, blk):
    """(block var, S, R, X) when ``p < 0`` (op '<') reads ``S * b + R - X < 0``."""
    if op != "<":
        return None
    bs = [(m[0], c) for m, c in p.items() if len(m) == 1 and m[0] in blk]
    if len(bs) != 1 or bs[0][1] <= 0:
        return None
    b, S = bs[0]
    R = p.get((), 0)
    X = {m: -c for m, c in p.items() if m not in ((b,), ())}
    if any(v in blk for v in pvars(X)) or not X:
        return None
    return b, S, R, X


def _zcmp(z, op, p):
    e = z.int(pexpr(p, {}))
    return {"<": e < 0, "<=": e <= 0, ">": e > 0, ">=": e >= 0, "==": e == 0, "!=": e != 0}[op]
