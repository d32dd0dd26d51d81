"""Un-blocking: a BANG-style blocked matmul, after detensorize + loop recovery, back to the plain
contraction (the BANG counterpart of :mod:`passes.untile`).

examples/gemm/gemm.mlu and bmm.mlu recover to (per task; ``min`` written ``a < b ? a : b``)::

    for (m0 = r0; m0 < r1; m0 += BM) { mb = min(BM, r1 - m0);
      for (n0 = 0; n0 < N; n0 += BN) { nb = min(BN, N - n0); nbp = ...;
        for (k0 = 0; k0 < K; k0 += BK) { kb = min(BK, K - k0);
          for s < mb: for j < kb: a_tile[s * kb + j] = A[m0 * K + k0 + s * K + j];   // COPY
          for s < kb: for j < nb: b_tile[s * nbp + j] = B[k0 * N + n0 + s * N + j];  // COPY
          if (nbp > nb) for s < kb: for j < nbp - nb: b_tile[nb + s * nbp + j] = zero_pad[..];
          if (k0 == 0) X = MM(a_tile, b_tile)                                          // FIRST
          else { Y = MM(a_tile, b_tile); for t < mb * nbp: X[t] = X[t] + Y[t]; }        // ADD
        }
        for s < mb: for j < nb: C[m0 * N + n0 + s * N + j] = X[s * nbp + j];           // STORE
    } }

with ``MM(P, Q)``: ``for m < em: for n < en: { acc = 0; for k < ek: acc += P[..] * Q[..];
Z[z(m, n)] = acc; }``.  :func:`apply` replaces the ``m0`` loop by ``for i in [r0, r1): for j <
N: { acc = 0; for k < K: acc += A[i * K + k] * B[k * N + j]; C[i * N + j] = acc; }``; the
statements around it (task loop, batch loop, pointer lets) are kept.  See
docs/passes/unblock.md for the proof obligations; every one is discharged with Z3 under the
loop ranges and the ``let`` definitions, anything unproven is a refusal (XP4001).

examples/gemv/gemv.mlu (``__bang_mlp``, N = 1: no column block loop, one-deep slice products,
copies and store) is first written as this form with one column (:func:`_columns_of_one`: unit
loops that run once and that no index reads), proven alike, and the unit column loop is dropped
from the result: ``for i < M: { acc = 0; for k < K: acc += x[k] * A[i * K + k]; y[i] = acc; }``.

Numerics: the source sums each k slice from zero and adds the slice sums (``X + Y``); the
plain loop sums in one running accumulator.  The k order is the same, the grouping is not:
results differ by float rounding only (the same latitude MFMA / the c reductions take, see
docs/decisions.md 2026-12-02).
"""
from __future__ import annotations

import itertools

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt
from xpiler.ir.visit import rewrite, substitute, walk

from xpiler.printers import printer_for

from .base import PassError
from .patterns import common as U
from .unblock_tasks import merge
from .patterns.polyz import NotPoly, Refused, Z, _access, _const, _valid, pexpr, poly, psub, pvars

NAME = "unblock"


class _Z(Z):
    """Z plus C's ``c ? a : b`` (how recovery spells ``min``)."""

    reads = Z.reads | {"cond"}


def _flat(stmts):
    out = []
    for s in stmts:
        if isinstance(s, (N.Comment, N.Pragma)):
            continue
        if isinstance(s, N.Block):
            out += _flat(s.stmts)
        else:
            out.append(s)
    return out


def _body(s):
    return _flat(s.stmts if isinstance(s, N.Block) else [s])


def _step(loop):
    return _const(loop.step) if isinstance(loop, N.For) and loop.binding is None else None


def _unit0(loop):
    return isinstance(loop, N.For) and loop.binding is None and _const(loop.lo) == 0 and _const(loop.step) == 1


def _nest2(s, what):
    """(outer loop, inner loop, [body stmts]) of a two-deep unit nest from 0."""
    if _unit0(s):
        b = _body(s.body)
        if len(b) == 1 and _unit0(b[0]):
            return s, b[0], _body(b[0].body)
    raise Refused(f"the {what} is not a two-deep loop nest from 0", s)


def apply(program: N.Program, *, entry: str, **_params):
    """The program with the entry's blocked matmul replaced by the plain contraction (PassError
    XP4002 when there is none, XP4001 when the rewrite is not proven)."""
    func = U.kernel_func(program, entry)
    if func is None or func.body is None:
        raise PassError(NAME, f"no function '{entry}'", code="XP4002")
    macros = {k: m.expr for k, m in program.macro_table().items()
              if getattr(m, "expr", None) is not None and isinstance(m.expr, N.Const)}
    view = func.with_(body=substitute(func.body, macros)) if macros else func
    ks = [n for n in walk(view.body) if isinstance(n, N.For) and (_step(n) or 0) > 1 and any(
        isinstance(i, N.If) and isinstance(i.else_, (N.Block, N.Stmt)) for i in _flat(n.body.stmts))
        and any(isinstance(a, N.Assign) and a.op == "+=" and isinstance(a.target, N.Var) for a in walk(n.body))]
    if not ks:
        raise PassError(NAME, f"'{entry}' has no k-slice loop accumulating matmul slices", code="XP4002")
    if len(ks) > 1:
        raise PassError(NAME, f"'{entry}' has {len(ks)} k-slice loops; un-blocking handles one", ks[1])
    try:
        view, k0, unit = _columns_of_one(view, ks[0])
        ub = _Unblock(view, k0, unit)
        new_body, iloop = ub.run()
        new_body = merge(new_body, iloop, ub)
        if unit is not None:
            new_body = _drop_unit_column(new_body)
    except Refused as r:
        raise PassError(NAME, f"k-slice loop '{ks[0].var}': {r.why}",
                        r.node if getattr(r.node, "loc", None) else ks[0]) from None
    return U.replace_func(program, func, func.with_(body=new_body))


def check(program: N.Program, *, entry: str, **params) -> None:
    apply(program, entry=entry, **params)


def candidates(program, target: str) -> list[dict]:
    return [{}]


def _columns_of_one(func, k0):
    """(func, k-slice loop, unit column loop's variable or None): a blocked matrix-vector product
    (examples/gemv/gemv.mlu: ``__bang_mlp`` over a WRAM block of rows, N = 1) is written as the
    blocked matmul with one column, so that :class:`_Unblock` proves it unchanged. Its row block
    loop holds ``lets; k-slice loop; store`` with no column block loop, and its slice products,
    copies and store are one loop deep (``for n < mb: { acc = 0; for k: acc += x * w; Z[n] = acc;
    }``). Each such one-deep loop gets a unit inner loop ``for u < 1`` around its body, and the
    k-slice loop and the store a column block loop ``for n0 = 0; n0 < 1; n0 += 1`` around them:
    every added loop runs its body exactly once with its variable 0, which no index reads, so the
    program means the same. Other kernels are returned unchanged (unit None)."""
    acc_if = _body(k0.body)[-1] if _body(k0.body) else None
    if not (isinstance(acc_if, N.If) and acc_if.else_ is not None):
        return func, k0, None
    first = _body(acc_if.then)
    if not (len(first) == 1 and _unit0(first[0]) and _body(first[0].body)
            and isinstance(_body(first[0].body)[0], N.Decl)):
        return func, k0, None          # (a two-deep slice product: the matmul form)
    parent = next((n for n in walk(func.body) if isinstance(n, N.For) and any(x is k0 for x in _body(n.body))), None)
    if parent is None or (_step(parent) or 0) <= 1:
        return func, k0, None
    pb = _body(parent.body)
    kpos = next(i for i, x in enumerate(pb) if x is k0)
    if len(pb) != kpos + 2 or not all(isinstance(x, N.Decl) for x in pb[:kpos]):
        raise Refused("the row block of a one-column product is not 'lets; k-slice loop; store'", parent)
    names = iter(U.fresh(func, "xpb_u") + f"_{i}" for i in itertools.count())
    one = lambda: U.C(1)

    def shallow(x):       # a unit loop from 0 whose body holds no loop
        return _unit0(x) and not any(isinstance(n, (N.For, N.CFor, N.While)) for n in walk(x.body))

    def wrap(x):
        inner = N.For(next(names), U.C(0), one(), U.C(1), x.body, var_type=U.scalar_type("int32"))
        return x.with_(body=N.Block((inner,)))
    targets = set()
    for x in _body(k0.body)[:-1]:
        if isinstance(x, N.If) and x.else_ is None and len(_body(x.then)) == 1:
            x = _body(x.then)[0]
        if shallow(x):
            targets.add(id(x))
    for br in (acc_if.then, acc_if.else_):
        mm = _body(br)[0] if _body(br) else None
        if _unit0(mm) and _body(mm.body) and isinstance(_body(mm.body)[0], N.Decl):
            targets.add(id(mm))
    new_k0 = rewrite(k0, lambda n: wrap(n) if id(n) in targets else n)
    store = pb[-1]
    if not shallow(store):
        raise Refused("the store of a one-column product is not one loop 'C[...] = X[...]'", store)
    unit = U.fresh(func, "xpb_n0")
    n0 = N.For(unit, U.C(0), one(), U.C(1), N.Block((new_k0, wrap(store))), var_type=U.scalar_type("int32"),
               loc=k0.loc)
    new_parent = parent.with_(body=N.Block(tuple(pb[:kpos]) + (n0,)))
    body = rewrite(func.body, lambda n: new_parent if n is parent else n)
    return func.with_(body=body), new_k0, unit


def _drop_unit_column(body: N.Block) -> N.Block:
    """The merged rows' unit column loop ``for j < 1`` (one-column products) replaced by its body
    (its variable is read nowhere: the added loops' variables appear in no index)."""
    def unit(n):
        return isinstance(n, N.For) and _const(n.lo) == 0 and _const(n.hi) == 1 and _const(n.step) == 1 \
            and n.binding is None and not any(isinstance(v, N.Var) and v.name == n.var for v in walk(n.body))

    def fn(n):
        if isinstance(n, N.Block) and any(unit(x) for x in n.stmts):
            return n.with_(stmts=tuple(y for x in n.stmts for y in (x.body.stmts if unit(x) else (x,))))
        return n
    return rewrite(body, fn)


class _Unblock:
    def __init__(self, func, k0, unit=None):
        self.func, self.K0 = func, k0
        self.unit = unit        # the column block loop added for a one-column product (step 1)
        self.z = _Z()
        self.ptrs = U.pointer_params(func)
        self.arrays = {d.name: d for d in walk(func.body) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}
        self.lets = {}          # name -> init of every scalar/pointer let in the function
        self.written_names = U.assigned_names(func.body)
        self.written_bufs = set()
        for s in walk(func.body):
            if isinstance(s, (N.Assign, N.AssignExpr)) and isinstance(s.target, N.Index):
                a = _access(U.normalize_ptr_index(s.target))
                if a:
                    self.written_bufs.add(self._root(a[0]))
        # a let is a fact (name == init) when its name is declared once, never assigned, and its
        # init reads only such names or the variables of loops around the declaration
        seen = {}
        _decls(func.body, (), seen)
        for name, found in seen.items():
            if len(found) == 1 and found[0][0] is not None and name not in self.written_names:
                init, loops = found[0]
                if all(v.name not in self.written_names or v.name in loops
                       for v in walk(init) if isinstance(v, N.Var)):
                    self.lets[name] = init

    # ---- helpers
    def _root(self, name):
        seen = set()
        while name not in seen:
            seen.add(name)
            d = self.lets.get(name) if hasattr(self, "lets") else None
            if d is None:
                return name
            e = U.strip_casts(d)
            while isinstance(e, N.BinOp) and e.op == "+":
                e = e.lhs
            if not isinstance(e, N.Var):
                return name
            name = e.name
        return name

    def _let_hyps(self, names):
        """name == init for every let (transitively) used by the expressions' names."""
        hyps, todo, done = [], list(names), set()
        while todo:
            v = todo.pop()
            if v in done or v not in self.lets or v in self.written_names:
                continue
            done.add(v)
            d = self.lets[v]
            try:
                hyps.append(self.z.v(v) == self.z.int(d))
            except Refused:
                continue
            todo += [n.name for n in walk(d) if isinstance(n, N.Var)]
        return hyps

    def _prove(self, hyps, goal, why, node):
        names = {n for n in map(str, _z3_vars(z3.And(*hyps, goal)))}
        if not _valid(list(hyps) + self._let_hyps(names), goal):
            raise Refused(why, node)

    def _sat(self, hyps):
        names = {n for n in map(str, _z3_vars(z3.And(*hyps)))}
        s = smt.solver(5000)
        s.add(*hyps, *self._let_hyps(names))
        return s.check() != z3.unsat

    def _rng(self, loop, var=None):
        v = self.z.v(var or loop.var)
        return [v >= self.z.int(loop.lo), v < self.z.int(loop.hi)]

    def _block_rng(self, loop):
        """m0 in [lo, hi) on the step grid."""
        v, lo = self.z.v(loop.var), self.z.int(loop.lo)
        q = z3.Int(loop.var + "_q")
        return [v >= lo, v < self.z.int(loop.hi), q >= 0, v == lo + _step(loop) * q]

    def _min_of(self, ext, loop, hyps, what):
        """ext == min(step, hi - var) for the block loop: var + [0, ext) tiles [lo, hi) once."""
        S, v, hi = _step(loop), self.z.v(loop.var), self.z.int(loop.hi)
        self._prove(hyps, self.z.int(ext) == z3.If(S < hi - v, S, hi - v),
                    f"the {what} extent is not min({S}, {loop.var} bound - {loop.var})", loop)

    # ---- the rewrite
    def run(self):
        K0 = self.K0
        n0 = self._parent_loop(K0)
        m0 = self._parent_loop(n0)
        for lp, nm in ((K0, "k"), (n0, "n")):
            if _const(lp.lo) != 0:
                raise Refused(f"the {nm} block loop '{lp.var}' does not start at 0", lp)
        if self.written_names & ({n.name for n in walk(m0.lo) if isinstance(n, N.Var)}
                                 | {n.name for n in walk(m0.hi) if isinstance(n, N.Var)}
                                 | {n.name for n in walk(n0.hi) if isinstance(n, N.Var)}
                                 | {n.name for n in walk(K0.hi) if isinstance(n, N.Var)}) - {m0.var, n0.var, K0.var}:
            raise Refused("a block loop bound is assigned in the function", m0)
        H = self._block_rng(m0) + self._block_rng(n0) + self._block_rng(K0)
        # m0 body: lets, the n0 loop; n0 body: lets, k0 loop, store; k0 body: lets, copies, accumulate
        self._only_lets(_body(m0.body), [n0])
        nb_ = _body(n0.body)
        kpos = next(i for i, s in enumerate(nb_) if s is K0)
        self._only_lets(nb_[:kpos], [])
        if len(nb_) != kpos + 2:
            raise Refused("the column block is not 'lets; k-slice loop; store nest'", n0)
        store = nb_[-1]
        kb_ = _body(K0.body)
        acc_if = kb_[-1]
        if not (isinstance(acc_if, N.If) and acc_if.else_ is not None):
            raise Refused("the k-slice loop does not end in 'if (k0 == 0) first slice else add slice'", K0)
        self._prove(H, self.z.bool(acc_if.cond) == (self.z.v(K0.var) == 0),
                    "the first-slice branch is not taken exactly for the first slice", acc_if)
        copies = []
        for s in kb_[:-1]:
            if isinstance(s, N.Decl) and s.init is not None and isinstance(s.type, N.Scalar):
                continue
            guard = None
            if isinstance(s, N.If) and s.else_ is None and len(_body(s.then)) == 1:
                guard, s = s.cond, _body(s.then)[0]
            copies.append(self._copy(s, guard))
        # FIRST / OTHER branches
        first, other = _body(acc_if.then), _body(acc_if.else_)
        if len(first) != 1 or len(other) != 2:
            raise Refused("the slice branches are not 'X = MM' / 'Y = MM; X += Y'", acc_if)
        X, mmx = self._mm(first[0])
        Y, mmy = self._mm(other[0])
        if X == Y or mmx["key"] != mmy["key"]:
            raise Refused("the two slice products differ", acc_if)
        self._add(other[1], X, Y)
        # STORE: C[c(s, j)] = X[x(s, j)]
        so, si, sbody = _nest2(store, "store nest")
        if not (len(sbody) == 1 and isinstance(sbody[0], N.Assign) and sbody[0].op == "="):
            raise Refused("the store nest is not 'C[...] = X[...]'", store)
        st = U.normalize_ptr_index(sbody[0])
        ca, xa = _access(st.target), _access(U.strip_casts(st.value))
        if not (ca and xa and xa[0] == X and len(ca[1]) == 1 and len(xa[1]) == 1):
            raise Refused(f"the store nest does not copy '{X}' to a global buffer", store)
        if self._root(ca[0]) not in self.ptrs:
            raise Refused(f"the store target '{ca[0]}' is not a global buffer", store)
        # the tiles, X and Y are written by their own statements only within the row block loop; a
        # write before it (gemv.mlu zero-fills X and Y once per task) is overwritten: every stored
        # element of X is one the first slice's product writes (proven below), and every element a
        # product reads is one a copy of the same slice wrote (_operand)
        allowed = {X: [first[0], other[1]], Y: [other[0]]}
        for c in copies:
            allowed.setdefault(c["T"], []).append(c["stmt"])
        for nm, owners in allowed.items():
            writers = [s for s in walk(m0) if isinstance(s, (N.Assign, N.AssignExpr))
                       and (_access(U.normalize_ptr_index(s.target)) or ("",))[0] == nm]
            if any(not any(w is x for o in owners for x in walk(o)) for w in writers):
                raise Refused(f"'{nm}' is also written outside its copy / slice statements", K0)
        if U.scalar_dtype(self.arrays[X].type.elem) != U.scalar_dtype(mmx["acc"].type):
            raise Refused(f"'{X}' rounds the slice sums to another type", store)
        s_, j_ = so.var, si.var
        SD = self._rng(so) + self._rng(si)
        # the stored (s, j) is the MM's (m, n): its value is the sum of the slice products
        mvar, nvar, kvar = mmx["m"].var, mmx["n"].var, mmx["k"].var
        wit = {mvar: self.z.v(s_), nvar: self.z.v(j_)}
        MD = [z3.substitute(c, *[(self.z.v(a), b) for a, b in wit.items()]) for c in
              self._rng(mmx["m"]) + self._rng(mmx["n"])]
        self._prove(H + SD, z3.And(*MD), "a stored element is outside the slice product's range", store)
        xi = lambda m, n: z3.substitute(self.z.int(mmx["idx"]), (self.z.v(mvar), m), (self.z.v(nvar), n))
        self._prove(H + SD, self.z.int(xa[1][0]) == xi(self.z.v(s_), self.z.v(j_)),
                    f"the store reads '{X}' elsewhere than the slice product wrote", store)
        m2, n2 = z3.Ints("xpb_m2 xpb_n2")
        MD2 = self._rng(mmx["m"]) + self._rng(mmx["n"])
        MD2b = [z3.substitute(c, (self.z.v(mvar), m2), (self.z.v(nvar), n2)) for c in MD2]
        self._prove(H + MD2 + MD2b + [xi(self.z.v(mvar), self.z.v(nvar)) == xi(m2, n2)],
                    z3.And(self.z.v(mvar) == m2, self.z.v(nvar) == n2),
                    f"two outputs share an element of '{X}'", mmx["stmt"])
        self._prove(H + MD2, z3.And(xi(self.z.v(mvar), self.z.v(nvar)) >= 0,
                                    xi(self.z.v(mvar), self.z.v(nvar)) < self.z.int(self.add_ext)),
                    f"the slice sum does not add every output of '{Y}' into '{X}'", other[1])
        # block extents: i = m0 + s, j = n0 + j, k = k0 + k each cover their range once, in order
        self._min_of(so.hi, m0, H, "row")
        self._min_of(si.hi, n0, H, "column")
        self._min_of(mmx["k"].hi, K0, H + SD, "k")
        # the operands: each staged element is the global element the copy put there
        ops = []
        for e in (mmx["x"], mmx["y"]):
            ops.append(self._operand(e, copies, kb_, H + SD + self._rng(mmx["k"]), wit, mmx))
        # everything in (i, j, k)
        I, J, Kv = (U.fresh(self.func, n) for n in ("i", "j", "k"))
        back = {s_: {(I,): 1, (m0.var,): -1}, j_: {(J,): 1, (n0.var,): -1}, kvar: {(Kv,): 1, (K0.var,): -1}}
        inner_lets = {d.name for st_ in (m0, n0, K0) for d in _body(st_.body) if isinstance(d, N.Decl)}

        def final(expr, what):
            try:
                p = poly(expr)
            except NotPoly:
                raise Refused(f"the {what} index is not a polynomial", expr) from None
            for v, q in back.items():
                p = psub(p, v, q)
            bad = pvars(p) & ({m0.var, n0.var, K0.var, mvar, nvar} | inner_lets)
            if bad:
                raise Refused(f"the {what} index depends on {sorted(bad)} beyond i, j, k", expr)
            return pexpr(p, {I: 0, J: 1, Kv: 2})

        rd = []
        for e, (base, gidx) in zip((mmx["x"], mmx["y"]), ops):
            g = N.Index(N.Var(base), final(gidx, f"'{base}' read"))
            rd.append(_replace_load(e, g))
        cidx = final(substitute(ca[1][0], {}), "store")
        acc = mmx["acc"]
        prod = N.BinOp("*", rd[0], rd[1])
        kloop = N.For(Kv, U.C(0), K0.hi, U.C(1), N.Block((N.Assign(N.Var(acc.name), "+=", prod),)),
                      var_type=U.scalar_type("int32"))
        jbody = N.Block((acc, kloop, N.Assign(N.Index(N.Var(ca[0]), cidx), "=", N.Var(acc.name))))
        jloop = N.For(J, U.C(0), n0.hi, U.C(1), jbody, var_type=U.scalar_type("int32"))
        iloop = N.For(I, m0.lo, m0.hi, U.C(1), N.Block((jloop,)), var_type=U.scalar_type("int32"), loc=m0.loc)
        return U.replace_stmt(self.func.body, m0, [iloop]), iloop

    def _parent_loop(self, loop):
        for n in walk(self.func.body):
            if isinstance(n, N.For) and any(s is loop for s in _body(n.body)):
                if (_step(n) or 0) > 1 or n.var == self.unit:
                    return n
                break
        raise Refused(f"loop '{loop.var}' is not directly inside a block loop (constant step > 1)", loop)

    def _only_lets(self, stmts, keep):
        for s in stmts:
            if any(s is k for k in keep):
                continue
            if not (isinstance(s, N.Decl) and s.init is not None and isinstance(s.type, N.Scalar)):
                raise Refused("a block holds a statement other than an integer let and the next loop", s)

    def _copy(self, s, guard):
        o, i, b = _nest2(s, "tile copy")
        if not (len(b) == 1 and isinstance(b[0], N.Assign) and b[0].op == "="):
            raise Refused("a tile copy is not 'T[...] = G[...]'", s)
        st = U.normalize_ptr_index(b[0])
        t, g = _access(st.target), _access(st.value)
        if not (t and g and t[0] in self.arrays and len(t[1]) == 1 and len(g[1]) == 1):
            raise Refused("a tile copy is not 'T[...] = G[...]' into a local array", s)
        return {"stmt": s, "o": o, "i": i, "guard": guard, "T": t[0], "tidx": t[1][0], "G": g[0], "gidx": g[1][0]}

    def _mm(self, s):
        o, i, b = _nest2(s, "slice product")
        if not (len(b) == 3 and isinstance(b[0], N.Decl) and b[0].init is not None and _is_zero(b[0].init)
                and _unit0(b[1]) and isinstance(b[2], N.Assign) and b[2].op == "="):
            raise Refused("a slice product is not 'acc = 0; for k: acc += x * y; Z[...] = acc'", s)
        acc, kl, st = b[0], b[1], U.normalize_ptr_index(b[2])
        kb = _body(kl.body)
        if not (len(kb) == 1 and isinstance(kb[0], N.Assign) and kb[0].op == "+=" and U.is_var(kb[0].target, acc.name)
                and isinstance(kb[0].value, N.BinOp) and kb[0].value.op == "*" and U.is_var(st.value, acc.name)):
            raise Refused("a slice product is not 'acc += x * y' stored once", s)
        za = _access(st.target)
        if not (za and za[0] in self.arrays and len(za[1]) == 1):
            raise Refused("a slice product is not stored to a local array", s)
        upd = U.normalize_ptr_index(kb[0])
        ren = {o.var: N.Var("m"), i.var: N.Var("n"), kl.var: N.Var("k")}
        pr = printer_for("c").expr
        key = tuple(pr(substitute(x, ren)) for x in (upd.value, za[1][0], o.hi, i.hi, kl.hi)) + \
            (U.scalar_dtype(acc.type),)
        return za[0], {"stmt": s, "m": o, "n": i, "k": kl, "acc": acc, "x": upd.value.lhs, "y": upd.value.rhs,
                       "idx": za[1][0], "key": key}

    def _add(self, s, X, Y):
        if not (_unit0(s) and len(_body(s.body)) == 1):
            raise Refused("the slice sum is not one loop 'X[t] = X[t] + Y[t]'", s)
        a, t = U.normalize_ptr_index(_body(s.body)[0]), N.Var(s.var)
        ok = isinstance(a, N.Assign) and _access(a.target) == (X, [t])
        if ok and a.op == "=":
            v = U.strip_casts(a.value)
            ok = isinstance(v, N.BinOp) and v.op == "+" and {repr(_access(_fcast(v.lhs))), repr(_access(_fcast(v.rhs)))} \
                == {repr((X, [t])), repr((Y, [t]))}
        elif ok:
            ok = a.op == "+=" and _access(_fcast(a.value)) == (Y, [t])
        if not ok:
            raise Refused(f"the slice sum is not '{X}[t] = {X}[t] + {Y}[t]'", s)
        if U.scalar_dtype(self.arrays[X].type.elem) != U.scalar_dtype(self.arrays[Y].type.elem):
            raise Refused(f"'{X}' and '{Y}' have different element types", s)
        self.add_ext = s.hi

    def _operand(self, e, copies, kbody, hyps, wit, mm):
        """(global base, index in the MM's loop vars) of the one staged element read in ``e``."""
        loads = [n for n in walk(e) if isinstance(n, N.Index)]
        if len(loads) != 1 or not _access(loads[0]) or _access(loads[0])[0] not in self.arrays:
            raise Refused("a product operand is not one element of a staged tile", e)
        T, ridx = _access(loads[0])[0], _access(loads[0])[1][0]
        sub = lambda c: z3.substitute(c, *[(self.z.v(a), b) for a, b in wit.items()])
        r = sub(self.z.int(ridx))
        ws = [c for c in copies if c["T"] == T]
        if not ws:
            raise Refused(f"tile '{T}' is read but not copied in the k-slice loop", e)
        rv = [v.var for v in (mm["m"], mm["n"], mm["k"])]
        for n, c in enumerate(ws):
            for a, b in itertools.permutations(rv, 2):
                w = {c["o"].var: sub(self.z.v(a)), c["i"].var: sub(self.z.v(b))}
                ws_ = lambda x: z3.substitute(x, *[(self.z.v(p), q) for p, q in w.items()])
                goal = [ws_(x) for x in self._rng(c["o"]) + self._rng(c["i"])]
                goal.append(ws_(self.z.int(c["tidx"])) == r)
                if c["guard"] is not None:
                    goal.append(self.z.bool(c["guard"]))
                if not _valid(hyps + self._let_hyps({str(x) for x in _z3_vars(z3.And(*hyps, *goal))}), z3.And(*goal)):
                    continue
                # no later copy overwrites the element before the product reads it
                for c2 in ws[n + 1:]:
                    o2, i2 = z3.Ints("xpb_o2 xpb_i2")
                    w2 = lambda x: z3.substitute(x, (self.z.v(c2["o"].var), o2), (self.z.v(c2["i"].var), i2))
                    hit = hyps + [w2(x) for x in self._rng(c2["o"]) + self._rng(c2["i"])] + \
                        [w2(self.z.int(c2["tidx"])) == r]
                    if c2["guard"] is not None:
                        hit.append(self.z.bool(c2["guard"]))
                    if self._sat(hit):
                        raise Refused(f"a later copy may overwrite the element of '{T}' the product reads", c2["stmt"])
                G = c["G"]
                if self._root(G) not in self.ptrs or self._root(G) in self.written_bufs:
                    raise Refused(f"tile '{T}' is not copied from a global buffer the kernel only reads", c["stmt"])
                if U.scalar_dtype(self.arrays[T].type.elem) != self._elem(G):
                    raise Refused(f"tile '{T}' converts the elements of '{G}'", c["stmt"])
                gi = substitute(c["gidx"], {c["o"].var: N.Var(a), c["i"].var: N.Var(b)})
                return G, substitute(gi, {v: N.Var(str(x)) for v, x in wit.items()})
        raise Refused(f"the element of '{T}' the product reads is not proven to be a plain copy", e)

    def _elem(self, name):
        p = self.ptrs.get(self._root(name))
        return getattr(p, "elem", p)


def _decls(node, loops, out):
    if isinstance(node, N.Decl):
        ok = node.init is not None and isinstance(node.type, (N.Scalar, N.Pointer))
        out.setdefault(node.name, []).append((node.init if ok else None, loops))
        return
    if isinstance(node, N.For):
        loops = loops + (node.var,)
    for f in getattr(node, "__dataclass_fields__", {}):
        v = getattr(node, f)
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, N.Stmt):
                _decls(x, loops, out)


def _fcast(e):
    while isinstance(e, N.Cast):
        e = e.expr
    return e


def _is_zero(e):
    c = _fcast(e)
    return isinstance(c, N.Const) and isinstance(c.value, (int, float)) and not isinstance(c.value, bool) and c.value == 0


def _replace_load(e, g):
    from xpiler.ir.visit import rewrite
    return rewrite(e, lambda n: g if isinstance(n, N.Index) else n)


def _z3_vars(e):
    out, seen, todo = set(), set(), [e]
    while todo:
        x = todo.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(x)
        todo += list(x.children())
    return out
