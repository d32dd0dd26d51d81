"""Un-tiling: a shared-memory tiled matmul, after loop recovery, back to the plain contraction.

Loop recovery turns a 16x16 tiled SIMT gemm (examples/gemm/gemm.cu) into::

    for by < cdiv(M, 16): for bx < cdiv(N, 16): {
        float As[16][16]; float Bs[16][16]; float acc[256];
        for ty < 16: for tx < 16: acc[ty * 16 + tx] = 0;                       // ZERO
        for (k0 = 0; k0 < K; k0 += 16) {
            for ty < 16: for tx < 16: {                                        // STAGE
                As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0;
                Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0; }
            for ty < 16: for tx < 16: for kk < 16:                             // COMPUTE
                acc[ty * 16 + tx] += As[ty][kk] * Bs[kk][tx];
        }
        for ty < 16: for tx < 16: if (row < M && col < N) C[row * N + col] = acc[ty * 16 + tx];
    }

:func:`apply` rewrites it to ``for i < M: for j < N: { float acc = 0; for k < K: acc +=
A[i * K + k] * B[k * N + j]; C[i * N + j] = acc; }`` (outer loops that are not tile loops, e.g.
a batch loop, are kept around it), which the cache / tensorize passes recognise as a
contraction (MFMA on hip, WMMA for half on cuda, ``__bang_matmul``).  It is a plain
``Program -> Program`` rewrite.

What is proven (Z3, under the loop ranges; anything unproven is a refusal, XP4001, naming the
loop or buffer):

* every staging array is written by one store per tile, ``S[s1][s2] = c ? G[g] : 0`` (or
  ``G[g]``) over a nest whose loop variables are its subscripts, one loop per dimension with
  the dimension's extent: the tile overwrites every element before the compute nest reads it,
  so no value passes from one tile to the next; ``G`` is a pointer parameter the function never
  writes.  ``S`` is used nowhere else;
* the compute nest is ``acc[f(t)] += x * y`` where ``x``, ``y`` are (casts of) one staged
  element each, read inside the array's bounds; ``f`` is the same in the ZERO, COMPUTE and
  STORE nests and injective over the thread loops (one accumulator per output);
* the reduction loop ``kk`` has the tile step as its extent, and with ``k = k0 + kk`` every
  staged read is a function of ``k`` alone (``k0`` cancels): ascending tiles, ascending ``kk``
  is ascending ``k``, each ``k`` once, so the order of the additions is unchanged;
* padding: for ``k < K`` (the tile loop's bound) both copy conditions hold in every stored
  output (so the element is the global one), for ``k >= K`` both fail (the element is the zero
  constant).  The dropped terms are ``0 * 0``; adding a zero to a float sum is exact except that
  ``-0.0 + 0.0`` is ``+0.0``, so the result differs at most in the sign of a zero result, which
  every tolerance compares equal;
* each pair (block loop ``b < H``, thread loop ``t < T``) used only as ``u = T*b + t`` becomes
  one loop ``u < X`` where ``u < X`` is a conjunct of the store guard and ``H * T >= X`` (for
  ``X >= 0``); ``if (c) continue;`` at the top of the block body must be provably never taken;
* the store index is injective over the output loops and the outputs are written only by the
  store, the operands only read, so the order of the output loops does not matter.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from .base import PassError
from .patterns import common as U
from .patterns.polyz import (NotPoly, Refused, Z, _PolyExpr, _access, _const, _mixed_radix, _valid,  # noqa: F401
                             pexpr, poly, poly_eq, psub, pvars)

NAME = "untile"


# ------------------------------------------------------------------------------ structure
def _strip(stmts):
    return [s for s in stmts if not isinstance(s, (N.Comment, N.Pragma))]


def _unit(loop):
    return isinstance(loop, N.For) and _const(loop.lo) == 0 and _const(loop.step) == 1 and loop.binding is None


def _nest(s):
    """(loops, innermost body): the chain of unit loops with constant trip counts starting at s."""
    loops = []
    while _unit(s) and _const(s.hi) is not None and _const(s.hi) > 0:
        loops.append(s)
        body = _strip(s.body.stmts)
        if len(body) == 1 and _unit(body[0]) and _const(body[0].hi) is not None:
            s = body[0]
            continue
        return loops, U.inline_lets(body)
    raise Refused("not a nest of constant-extent loops", s)


def _zero(e):
    c = U.strip_casts(e)
    return isinstance(c, N.Const) and isinstance(c.value, (int, float)) and not isinstance(c.value, bool) \
        and c.value == 0


def _conjuncts(e):
    e = U.strip_casts(e)
    if isinstance(e, N.BinOp) and e.op == "&&":
        return _conjuncts(e.lhs) + _conjuncts(e.rhs)
    return [e]


def _find_tile_loop(func):
    """The tile loop: step > 1 from 0, containing an accumulation into a local array."""
    locals_ = {d.name for d in walk(func.body) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}
    out = []
    for n in walk(func.body):
        if isinstance(n, N.For) and _const(n.lo) == 0 and (_const(n.step) or 0) > 1 and any(
                isinstance(a, N.Assign) and a.op == "+=" and (_access(a.target) or ("",))[0] in locals_
                for a in walk(n.body)):
            out.append(n)
    return out


def _path(stmts, target, chain):
    """Enclosing unit loops from the function body to the block holding ``target`` directly."""
    body = _strip(stmts)
    if any(s is target for s in body):
        return chain, body
    for s in body:
        if isinstance(s, N.For) and any(x is target for x in walk(s.body)):
            if not _unit(s):
                raise Refused(f"loop '{s.var}' around the tile loop is not a unit-stride loop from 0", s)
            return _path(s.body.stmts, target, chain + [s])
    raise Refused("the tile loop is not reached through loops only", target)


# ------------------------------------------------------------------------------ the rewrite
def apply(program: N.Program, *, entry: str, **_params):
    """The program with the entry's tiled contraction replaced by the plain one (PassError
    XP4002 when it has no tile loop, XP4001 when un-tiling is not proven legal)."""
    func = U.kernel_func(program, entry)
    if func is None or func.body is None:
        raise PassError(NAME, f"no function '{entry}'", code="XP4002")
    macros = {k: m.expr for k, m in program.macro_table().items()
              if getattr(m, "expr", None) is not None and isinstance(m.expr, N.Const)}
    view = func.with_(body=substitute(func.body, macros)) if macros else func
    tiles = _find_tile_loop(view)
    if not tiles:
        raise PassError(NAME, f"'{entry}' has no tile loop (step > 1) accumulating into a local array",
                        code="XP4002")
    # a lane-distributed tile (a lifted matrix-core kernel) has its k steps inside the tile loop:
    # passes/untile_lanes.py reads it by running the block body
    outer = [t for t in tiles if not any(o is not t and any(x is t for x in walk(o.body)) for o in tiles)]
    try:
        if len(tiles) > 1:
            raise Refused(f"'{entry}' has {len(tiles)} tile loops; un-tiling handles one", tiles[1])
        new_body = _Untile(program, view, tiles[0]).run()
    except Refused as r:
        why = r.why if len(tiles) > 1 else f"tile loop '{tiles[0].var}': {r.why}"
        node = r.node if getattr(r.node, "loc", None) else tiles[0]
        if len(outer) != 1:
            raise PassError(NAME, why, node) from None
        from .untile_lanes import untile_lanes
        try:
            new_body = untile_lanes(program, view, outer[0])
        except Refused as r2:
            raise PassError(NAME, f"{why}; read as a lane-distributed tile: {r2.why}", node) from None
    return U.replace_func(program, func, func.with_(body=new_body))


def check(program: N.Program, *, entry: str, **params) -> None:
    apply(program, entry=entry, **params)


def candidates(program, target: str) -> list[dict]:
    return [{}]


class _Untile:
    def __init__(self, program, func, tile):
        self.program, self.func, self.L = program, func, tile
        self.ptrs = U.pointer_params(func)
        self.z = Z()

    # ---- helpers
    def _ranges(self, loops):
        out = []
        for lp in loops:
            v = self.z.v(lp.var)
            out += [v >= self.z.int(lp.lo), v < self.z.int(lp.hi)]
        return out

    def run(self):
        func, L = self.func, self.L
        top = _strip(func.body.stmts)
        enclosing, B = _path(func.body.stmts, L, [])
        if not enclosing:
            raise Refused("the tile loop is not inside block loops", L)
        # the function body: uniform scalars, the outer loop, nothing after it but 'return;'
        outer = enclosing[0]
        k = next(n for n, s in enumerate(top) if s is outer)
        for s in top[:k]:
            if not (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar)):
                raise Refused("a statement before the block loops is not a scalar declaration", s)
        if any(not (isinstance(s, N.Return) and s.value is None) for s in top[k + 1:]):
            raise Refused("statements after the block loops", top[k + 1])
        written = U.assigned_names(func.body)
        for s in walk(func.body):
            if isinstance(s, N.Assign) and (_access(s.target) or ("",))[0] in self.ptrs and \
                    isinstance(s.target, N.Index):
                written.add(_access(s.target)[0])
        T = _const(L.step)
        K = L.hi
        if any(v in written for v in _names(K)) or L.var in written - {L.var}:
            raise Refused("the tile loop's bound changes inside the function", L)
        enc_vars = [lp.var for lp in enclosing]
        R = self._ranges(enclosing)
        # ---- the block body
        arrays, lets, dead, nests = {}, {}, [], []
        for s in B:
            if isinstance(s, N.Decl) and isinstance(s.type, N.Array) and s.init is None and s.scope == "local":
                arrays[s.name] = s
            elif isinstance(s, N.Decl) and isinstance(s.type, (N.Scalar, N.Pointer)) and s.init is not None \
                    and s.name not in written:
                lets[s.name] = substitute(s.init, lets)
            elif isinstance(s, N.If) and s.else_ is None and _is_continue(s.then):
                dead.append(s)
            elif isinstance(s, N.For):
                nests.append(s)
            else:
                raise Refused("the block body holds a statement that is not a declaration, a guard or a loop", s)
        for g in dead:
            if not _valid(R, z3.Not(self.z.bool(substitute(g.cond, lets)))):
                raise Refused("a 'continue' guard of the block may be taken", g)
        if len(nests) != 3 or nests[1] is not L:
            raise Refused("the block is not 'zero the accumulators; tile loop; store'", L)
        zero, store = nests[0], nests[2]
        nests = [substitute(n, lets) for n in nests]
        zero, store, L2 = nests[0], nests[2], nests[1]
        for name in arrays:
            dims = [_const(d) for d in arrays[name].type.dims]
            if any(d is None for d in dims):
                raise Refused(f"local array '{name}' has no constant size", arrays[name])
        # ---- ZERO
        zl, zb = _nest(zero)
        if not (len(zb) == 1 and isinstance(zb[0], N.Assign) and zb[0].op == "=" and _zero(zb[0].value)):
            raise Refused("the first nest does not set the accumulators to zero", zero)
        acc, fz = self._acc_index(zb[0].target, zl, arrays)
        tvars = [f"xpu_t{n}" for n in range(len(zl))]
        exts = [_const(lp.hi) for lp in zl]
        ren = lambda loops: {lp.var: N.Var(t) for lp, t in zip(loops, tvars)}
        fz = substitute(fz, ren(zl))
        # ---- STORE
        sl, sb = _nest(store)
        if [_const(lp.hi) for lp in sl] != exts:
            raise Refused("the store nest does not run over the accumulator nest's threads", store)
        st, guard = sb[0] if len(sb) == 1 else None, None
        if isinstance(st, N.If) and st.else_ is None:
            guard = st.cond
            inner = _strip(st.then.stmts) if isinstance(st.then, N.Block) else [st.then]
            st = inner[0] if len(inner) == 1 else None
        if not (isinstance(st, N.Assign) and st.op == "=" and isinstance(st.target, N.Index)):
            raise Refused("the store nest is not '[if (c)] C[...] = acc[...]'", store)
        cacc, fs = self._acc_index(U.strip_casts(st.value), sl, arrays)
        cname = (_access(st.target) or ("",))[0]
        if cacc != acc or cname not in self.ptrs:
            raise Refused("the store nest does not write the accumulator to a global buffer", store)
        fs = substitute(fs, ren(sl))
        ctgt = substitute(st.target, ren(sl))
        guard = substitute(guard, ren(sl)) if guard is not None else None
        # ---- the tile loop: staging nests, then one compute nest
        tb = _strip(L2.body.stmts)
        if not tb:
            raise Refused("empty tile loop", L)
        stages, compute = tb[:-1], tb[-1]
        staged = {}
        for sn in stages:
            self._stage(sn, arrays, acc, staged)
        cl, cb = _nest(compute)
        if len(cl) != len(zl) + 1 or [_const(lp.hi) for lp in cl[:-1]] != exts:
            raise Refused("the compute nest is not the accumulator threads around one reduction loop", compute)
        kk = cl[-1]
        if _const(kk.hi) != T:
            raise Refused(f"the reduction loop '{kk.var}' runs {_const(kk.hi)} steps per tile of {T}: "
                          f"not every k once", kk)
        if not (len(cb) == 1 and isinstance(cb[0], N.Assign)):
            raise Refused("the compute nest is not 'acc[...] += x * y'", compute)
        upd = cb[0]
        prod = upd.value if upd.op == "+=" else None
        if upd.op == "=" and isinstance(upd.value, N.BinOp) and upd.value.op == "+" and upd.value.lhs == upd.target:
            prod = upd.value.rhs
        cacc2, fc = self._acc_index(upd.target, cl[:-1], arrays)
        if prod is None or cacc2 != acc:
            raise Refused("the compute nest is not 'acc[...] += x * y'", compute)
        fc = substitute(fc, ren(cl[:-1]))
        if not (poly_eq(fz, fc) and poly_eq(fz, fs)):
            raise Refused(f"accumulator '{acc}' is indexed differently in the zero, compute and store nests", compute)
        # every use of the local arrays is accounted for
        uses = {}
        for n in walk(N.Block(tuple(nests))):
            if isinstance(n, N.Var) and n.name in arrays:
                uses[n.name] = uses.get(n.name, 0) + 1
        if any(n.name in arrays for n in walk(func.body) if isinstance(n, N.Var)) and \
                sum(1 for n in walk(func.body) if isinstance(n, N.Var) and n.name in arrays) != sum(uses.values()):
            raise Refused("a tile array is used outside the block", L)
        # thread ranges, tile and reduction variables
        tz = [self.z.v(t) for t in tvars]
        RT = [c for t, e in zip(tz, exts) for c in (t >= 0, t < e)]
        if not self._injective(fz, tvars, exts):
            raise Refused(f"accumulator '{acc}' is shared between threads", zero)
        k0, kkv, q = self.z.v(L.var), self.z.v("xpu_kk"), self.z.v("xpu_q")
        RK = [q >= 0, k0 == T * q, k0 < self.z.int(K), kkv >= 0, kkv < T]
        G = [self.z.bool(guard)] if guard is not None else []
        hyps = R + RT + RK + G
        kname = U.fresh(func, "k")
        x, y = _factors(prod)
        cren = {**ren(cl[:-1]), kk.var: N.Var("xpu_kk")}
        ops, conds = [], []
        for f in (x, y):
            f = substitute(f, cren)
            reads = [n for n in walk(f) if isinstance(n, N.Index) and (_access(n) or ("",))[0] in staged]
            reads = [r for r in reads if not any(o.base is r for o in reads)]
            core = U.strip_casts(f)
            if len(reads) != 1 or core is not reads[0] and not (isinstance(core, N.Index) and core == reads[0]):
                raise Refused("a product operand is not one staged element", compute)
            sname, sidx = _access(reads[0])
            svars, value, cond, load = staged[sname]
            if len(sidx) != len(svars):
                raise Refused(f"tile array '{sname}' is read with {len(sidx)} subscripts", compute)
            dims = [_const(d) for d in arrays[sname].type.dims]
            for e, d in zip(sidx, dims):
                if not _valid(hyps, z3.And(self.z.int(e) >= 0, self.z.int(e) < d)):
                    raise Refused(f"tile array '{sname}' is read outside its bounds", compute)
            m = dict(zip(svars, sidx))
            conds.append((sname, substitute(cond, m) if cond is not None else None))
            ops.append(rewrite(f, lambda n, r=reads[0], ld=substitute(load, m): ld if n is r else n))
        # k = k0 + kk: every staged read must be a function of k alone (order of the sum kept)
        ksub = {"xpu_kk": {(kname,): 1, (L.var,): -1}}
        ops = [self._reindex(o, ksub, {L.var}, "the staged element read at step '%s' of tile '%s' is not a "
                                                "function of k = %s + %s (the order of the sum would change)"
                             % (kk.var, L.var, L.var, kk.var)) for o in ops]
        # padding: k < K -> both copies taken; k >= K -> both are the zero constant
        kin = k0 + kkv < self.z.int(K)
        for sname, c in conds:
            if c is None:
                if not _valid(hyps, kin):
                    raise Refused(f"tile array '{sname}' is not zero-padded past K but the tiles run past K", L)
                continue
            if not _valid(hyps + [kin], self.z.bool(c)):
                raise Refused(f"the copy into '{sname}' is not taken for every k < K of a stored output", L)
            if not _valid(hyps + [z3.Not(kin)], z3.Not(self.z.bool(c))):
                raise Refused(f"tile array '{sname}' holds a nonzero value past K (the padding would count)", L)
        ctgt = self._reindex(ctgt, {}, set(), "the store index is not polynomial")
        # ---- pair block loops with thread loops: u = T_t * b + t
        gconj = [self._cmp(c) for c in _conjuncts(guard)] if guard is not None else []
        pairs, used_enc = [], set()
        unames = [U.fresh(func, n) for n in (["i", "j"] if len(tvars) == 2 else [f"i{n}" for n in range(len(tvars))])]
        for t, e, u in zip(tvars, exts, unames):
            found = None
            for lp in enclosing:
                if lp.var in used_enc:
                    continue
                sub = {t: {(u,): 1, (lp.var,): -e}}
                try:
                    new_ops = [self._reindex(o, sub, {lp.var, t}, "") for o in ops]
                    new_c = self._reindex(ctgt, sub, {lp.var, t}, "")
                except Refused:
                    continue
                new_g = [(op, psub(p, t, sub[t])) for op, p in gconj]
                if any(lp.var in pvars(p) for _, p in new_g):
                    continue
                for p in [p for op, p in new_g if op == "<" and p.get((u,)) == 1]:
                    X = {m: -c for m, c in p.items() if m != (u,)}
                    if pvars(X) & ({u, lp.var} | set(tvars)):
                        continue
                    Xz = self.z.int(pexpr(X, {}))
                    if _valid([], z3.Implies(Xz >= 0, Xz <= self.z.int(lp.hi) * e)):
                        found = (t, lp, u, X)
                        ops, ctgt = new_ops, new_c
                        gconj = [(op, q) for op, q in new_g if q is not p]
                        break
                if found:
                    break
            if found is None:
                raise Refused(f"thread loop {tvars.index(t)} of the store is not paired with a block loop "
                              f"as row = {e} * block + thread under a guard 'row < extent'", store)
            pairs.append(found)
            used_enc.add(found[1].var)
        kept = [lp for lp in enclosing if lp.var not in used_enc]
        rank = {lp.var: n for n, lp in enumerate(kept)}
        rank.update({u: len(kept) + n for n, (_, _, u, _) in enumerate(pairs)})
        rank[kname] = len(rank)
        # no other use of the paired loops' variables may remain
        left = {lp.var for _, lp, _, _ in pairs} | set(tvars) | {L.var, "xpu_kk"}
        for e in ops + [ctgt]:
            if _names(e) & left:
                raise Refused("an index still depends on a block, thread or tile variable", compute)
        for _, p in gconj:
            if pvars(p) & left:
                raise Refused("the store guard depends on a block or thread variable", store)
        # the store index is injective over the output loops
        outs = [(lp.var, lp.lo, lp.hi) for lp in kept] + [(u, U.C(0), pexpr(X, {})) for _, _, u, X in pairs]
        if not self._injective_store(ctgt, outs, gconj):
            raise Refused(f"two outputs may be stored to the same element of '{cname}'", store)
        ops = [_pretty(o, rank) for o in ops]
        ctgt = _pretty(ctgt, rank)
        # ---- emit
        acc_t = arrays[acc].type.elem
        accn = U.fresh(func, "acc")
        body = [N.Decl(accn, acc_t, _zero_const(zb[0].value)),
                N.For(kname, U.C(0), K, U.C(1), N.Block((N.Assign(N.Var(accn), "+=",
                      N.BinOp("*", ops[0], ops[1])),)), var_type=N.Scalar("int32", "int")),
                N.Assign(ctgt, "=", _recast(st.value, N.Var(accn)))]
        if gconj:
            cond = None
            for op, p in gconj:
                c = N.BinOp(op, pexpr(p, rank), U.C(0))
                cond = c if cond is None else N.BinOp("&&", cond, c)
            body = [N.If(cond, N.Block(tuple(body)))]
        stmt = N.Block(tuple(body))
        INT = N.Scalar("int32", "int")
        for _, _, u, X in reversed(pairs[1:]):
            stmt = N.For(u, U.C(0), pexpr(X, rank), U.C(1), stmt, var_type=INT)
            stmt = N.Block((stmt,))
        u0, X0 = pairs[0][2], pexpr(pairs[0][3], rank)
        if len(kept) == 1:
            # one batch loop: batch and rows flattened into one loop (t / rows, t % rows), the form
            # the matmul recogniser reads as a batch (same iteration order)
            b = kept[0]
            t = U.fresh(func, "t")
            lets = (N.Decl(b.var, INT, N.BinOp("/", N.Var(t), X0)), N.Decl(u0, INT, N.BinOp("%", N.Var(t), X0)))
            hi = N.BinOp("*", b.hi if _const(b.lo) == 0 else N.BinOp("-", b.hi, b.lo), X0)
            if _const(b.lo) != 0:
                lets = (lets[0].with_(init=N.BinOp("+", b.lo, lets[0].init)),) + lets[1:]
            stmt = N.For(t, U.C(0), hi, U.C(1), N.Block(lets + stmt.stmts), var_type=INT)
        else:
            stmt = N.For(u0, U.C(0), X0, U.C(1), stmt, var_type=INT)
            for lp in reversed(kept):
                stmt = lp.with_(body=N.Block((stmt,)))
        new_top = list(func.body.stmts)
        k = next(n for n, s in enumerate(new_top) if s is outer)
        new_top[k] = stmt
        return func.body.with_(stmts=tuple(new_top))

    # ---- pieces
    def _acc_index(self, e, loops, arrays):
        a = _access(e)
        if a is None or a[0] not in arrays:
            raise Refused("the accumulator is not a local array element", e)
        name, idx = a
        dims = [_const(d) for d in arrays[name].type.dims]
        if len(idx) != len(dims):
            raise Refused(f"accumulator '{name}' is read with {len(idx)} subscripts", e)
        lin = None
        for i, d in zip(idx, dims):
            lin = i if lin is None else N.BinOp("+", N.BinOp("*", lin, U.C(d)), i)
        return name, lin

    def _injective(self, f, tvars, exts):
        a = {t: self.z.v(t) for t in tvars}
        b = {t: z3.Int(t + "_b") for t in tvars}
        fb = substitute(f, {t: N.Var(t + "_b") for t in tvars})
        hyp = [c for t, e in zip(tvars, exts) for c in (a[t] >= 0, a[t] < e, b[t] >= 0, b[t] < e)]
        hyp.append(self.z.int(f) == self.z.int(fb))
        self.z.vars.update({t + "_b": b[t] for t in tvars})
        return _valid(hyp, z3.And(*[a[t] == b[t] for t in tvars]))

    def _injective_store(self, tgt, outs, gconj):
        idx = tgt.index
        if _mixed_radix(idx, outs):
            return True
        other = {v: N.Var(v + "_o") for v, _, _ in outs}
        hyp = []
        for v, lo, hi in outs:
            for name in (v, v + "_o"):
                x = self.z.v(name)
                hyp += [x >= self.z.int(lo), x < self.z.int(hi)]
        for op, p in gconj:
            for m in ({}, other):
                hyp.append(self.z.bool(N.BinOp(op, substitute(pexpr(p, {}), m), U.C(0))))
        hyp.append(self.z.int(idx) == self.z.int(substitute(idx, other)))
        return _valid(hyp, z3.And(*[self.z.v(v) == self.z.v(v + "_o") for v, _, _ in outs]))

    def _cmp(self, c):
        c = U.strip_casts(c)
        if not (isinstance(c, N.BinOp) and c.op in ("<", "<=", ">", ">=", "==", "!=")):
            raise Refused("the store guard is not a conjunction of comparisons", c)
        try:
            p = poly(N.BinOp("-", c.lhs, c.rhs))
        except NotPoly:
            raise Refused("the store guard is not polynomial", c)
        return c.op, p

    def _reindex(self, e, sub, gone, why):
        """Every subscript of e through the polynomial substitution ``sub``; Refused when a
        variable of ``gone`` is left."""
        def fn(n):
            if isinstance(n, N.Index):
                try:
                    p = poly(n.index)
                except NotPoly:
                    raise Refused(why or "a subscript is not polynomial", n)
                for v, q in sub.items():
                    p = psub(p, v, q)
                if pvars(p) & gone:
                    raise Refused(why, n)
                return n.with_(index=_PolyExpr(p))
            return n
        return rewrite(e, fn)

    def _stage(self, sn, arrays, acc, staged):
        sl, sb = _nest(sn)
        for s in sb:
            if not (isinstance(s, N.Assign) and s.op == "=" and isinstance(s.target, N.Index)):
                raise Refused("a staging nest does something other than storing tile elements", sn)
            a = _access(s.target)
            if a is None or a[0] not in arrays or a[0] == acc:
                raise Refused("a staging nest stores to something other than a tile array", s)
            name, idx = a
            if name in staged:
                raise Refused(f"tile array '{name}' is stored twice per tile", s)
            dims = [_const(d) for d in arrays[name].type.dims]
            vs = [U.strip_casts(i).name if isinstance(U.strip_casts(i), N.Var) else None for i in idx]
            ext = {lp.var: _const(lp.hi) for lp in sl}
            if len(idx) != len(dims) or sorted(v or "" for v in vs) != sorted(ext) or \
                    any(ext.get(v) != d for v, d in zip(vs, dims)):
                raise Refused(f"the staging nest does not write every element of '{name}' once (subscripts must "
                              f"be its loop variables, one per dimension with the dimension's extent)", s)
            value, cond, load = s.value, None, None
            core = U.strip_casts(value)
            if isinstance(core, N.Cond) and _zero(core.else_):
                cond, ld = core.cond, core.then
                load = rewrite(value, lambda n, c=core: ld if n is c else n)
            else:
                ld, load = core, value
            ldc = self._widened(U.strip_casts(ld), arrays[name])
            acc_ = _access(ldc) if isinstance(ldc, N.Index) else None
            if acc_ is None or acc_[0] not in self.ptrs or len(acc_[1]) != 1 or \
                    any(isinstance(n, N.Index) for n in walk(ldc.index)) or \
                    (cond is not None and any(isinstance(n, (N.Index, N.Call)) for n in walk(cond))):
                raise Refused(f"the element staged into '{name}' is not a plain (zero-padded) copy of a global "
                              f"element", s)
            if acc_[0] in self._written_ptrs():
                raise Refused(f"'{acc_[0]}' is written by the kernel; its staged copy may be stale", s)
            staged[name] = (vs, value, cond, load)

    def _widened(self, e, tile):
        """The load under an exact widening of a half / bfloat16 global element to a float tile
        (``(float)A[..]``: every half and bfloat16 value is a float), else ``e`` itself; the staged
        value keeps the conversion, so the product reads the same float."""
        if not (isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype == "float32"
                and isinstance(e.expr, N.Index) and U.scalar_dtype(tile.type.elem) == "float32"):
            return e
        a = _access(e.expr)
        return e.expr if a and self.ptrs.get(a[0]) in ("float16", "bfloat16") else e

    def _written_ptrs(self):
        out = set()
        for s in walk(self.func.body):
            if isinstance(s, N.Assign) and isinstance(s.target, N.Index):
                a = _access(s.target)
                if a:
                    out.add(a[0])
        return out


def _pretty(e, rank):
    return rewrite(e, lambda n: n.with_(index=pexpr(n.index.p, rank))
                   if isinstance(n, N.Index) and isinstance(n.index, _PolyExpr) else n)


def _names(e) -> set:
    out = set()
    for n in walk(e):
        if isinstance(n, _PolyExpr):
            out |= pvars(n.p)
        elif isinstance(n, N.Var):
            out.add(n.name)
    return out


def _is_continue(s):
    if isinstance(s, N.Continue):
        return True
    return isinstance(s, N.Block) and len(_strip(s.stmts)) == 1 and isinstance(_strip(s.stmts)[0], N.Continue)


def _factors(e):
    while isinstance(e, N.Cast):
        e = e.expr
    if isinstance(e, N.BinOp) and e.op == "*":
        return e.lhs, e.rhs
    raise Refused("the accumulated value is not a product", e)


def _zero_const(v):
    return v


def _recast(v, new):
    """The stored value with the accumulator element replaced by ``new`` (casts kept)."""
    if isinstance(v, N.Cast):
        return v.with_(expr=_recast(v.expr, new))
    return new
