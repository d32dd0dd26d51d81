"""WMMA lifted to its contraction, the accumulator spread over the warp: lane l of a warp holds
the elements ``e = l + 32 j`` (row ``e / n``, column ``e % n``) of each accumulator fragment, and
``mma_sync(acc, a, b, acc)`` becomes, per lane, ``acc[j] += A(r, k) * B(k, c)`` for k ascending,
with A and B read from the memory the fragments were loaded from (``load_matrix_sync`` is
forwarded to the product).  ``wmma.lower`` instead keeps the whole tile in every lane (32 copies
of the same work); this form computes each element once, in the same float operations and
order (``s = C[r][c]; s += a * b`` for each k).

Conditions, for the whole function (else :func:`plan` gives the reason and ``wmma.lower`` is used):

* the kernel never reads threadIdx.y / threadIdx.z (a warp is 32 consecutive threadIdx.x);
* every fragment is used only through ``fill_fragment`` / ``load_matrix_sync`` /
  ``store_matrix_sync`` / ``mma_sync`` (no ``.x[]``, no ``num_elements``); an accumulator's ``m*n``
  is a multiple of 32;
* every ``mma_sync(d, a, b, c)`` has ``d == c`` (an accumulator), and ``a`` and ``b`` were loaded
  in the same statement list before it, with only loads of other fragments or pure scalar
  declarations between, and nothing else reads them;
* the pointers and leading dimensions of every load and store are warp-uniform (uniform values,
  or threadIdx.x only under ``/ 32``) and read only ``__shared__`` arrays or pointer parameters,
  and nothing between the nearest block barriers around the ``mma_sync`` writes the arrays the
  forwarded loads read.
"""
from __future__ import annotations

from dataclasses import dataclass

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .common import FLOAT, add, assign, b, cast, decl, ix, loop, mul, scalar, tofloat
from .common import call_name as _cname
from .mfma_lift import _Planner, _lists
from .wmma import NAMES, _is_col, frag_shape, short

WARP = 32


@dataclass
class WLift:
    dims: dict          # fragment -> (rows, cols) as ints
    kinds: dict         # fragment -> kind
    loads: dict         # id(mma statement) -> {fragment: (pointer, ldm, col_major)}
    drop: set           # ids of the load statements forwarded into an mma


def _call(s):
    if isinstance(s, N.ExprStmt) and _cname(s.expr) in NAMES:
        return short(_cname(s.expr)), list(s.expr.args)
    return None, None


def _int(program, e):
    if isinstance(e, N.Const) and isinstance(e.value, int):
        return e.value
    if isinstance(e, N.Var):
        m = program.macro_table().get(e.name)
        x = getattr(m, "expr", None)
        if isinstance(x, N.Const) and isinstance(x.value, int):
            return x.value
    return None


def plan(program, func: N.Func, varying: set):
    """A :class:`WLift` for ``func``, or the reason it is not lifted (a string)."""
    frags = {d.name: d.type for d in walk(func.body) if isinstance(d, N.Decl) and isinstance(d.type, N.Fragment)}
    if not frags:
        return "no fragments"
    p = _Planner(func, varying)
    if p.ty:
        return "the kernel reads threadIdx.y / threadIdx.z (a warp is not 32 consecutive threadIdx.x)"
    dims, kinds = {}, {}
    for f, t in frags.items():
        if f in p.dup:
            return f"fragment '{f}' is declared twice"
        r, c_ = (_int(program, x) for x in frag_shape(t))
        if r is None or c_ is None:
            return f"fragment '{f}' has no constant shape"
        if t.kind == "accumulator" and (r * c_) % WARP:
            return f"accumulator '{f}' does not spread evenly over a warp"
        if t.kind == "accumulator" and getattr(t.elem, "dtype", None) != "float32":
            return f"accumulator '{f}' is not float (its sums would round at every step in place)"
        dims[f], kinds[f] = (r, c_), t.kind
    # every fragment use is a call argument of a wmma call
    calls = 0
    for n in walk(func.body):
        if _cname(n) in NAMES:
            calls += sum(isinstance(a, N.Var) and a.name in frags for a in n.args)
    if calls != sum(1 for n in walk(func.body) if isinstance(n, N.Var) and n.name in frags):
        return "a fragment is used outside the wmma calls"
    loads, drop = {}, set()
    for stmts, chain in _lists(func.body):
        for j, s in enumerate(stmts):
            op, args = _call(s)
            if op is None:
                continue
            if op in ("load_matrix_sync", "store_matrix_sync"):
                ptr, ldm = (args[1], args[2]) if op == "load_matrix_sync" else (args[0], args[2])
                why = _uniform_ptr(p, ptr, ldm)
                if why:
                    return why
                fr = args[0] if op == "load_matrix_sync" else args[1]
                if op == "load_matrix_sync" and kinds.get(getattr(fr, "name", None)) == "accumulator":
                    return "an accumulator is loaded from memory"
            if op == "mma_sync":
                d, a, bb, c_ = (x.name if isinstance(x, N.Var) else None for x in args)
                if d != c_ or kinds.get(d) != "accumulator":
                    return "an mma_sync does not accumulate into its own accumulator (d == c)"
                fw = {}
                for f in (a, bb):
                    k = next((n for n in range(j - 1, -1, -1) if _call(stmts[n])[0] == "load_matrix_sync"
                              and _call(stmts[n])[1][0] == N.Var(f) or (_call(stmts[n])[0] == "load_matrix_sync"
                              and getattr(_call(stmts[n])[1][0], "name", None) == f)), None)
                    if k is None:
                        return f"fragment '{f}' is not loaded before its mma_sync in the same block"
                    for x in stmts[k + 1:j]:
                        xo, xa = _call(x)
                        if xo == "load_matrix_sync" and getattr(xa[0], "name", None) != f:
                            continue
                        if isinstance(x, N.Decl) and isinstance(x.type, N.Scalar) and not any(
                                isinstance(n, (N.Call, N.Intrinsic, N.AssignExpr)) for n in walk(x)):
                            continue
                        return f"a statement between the load of '{f}' and its mma_sync"
                    la = _call(stmts[k])[1]
                    col = _is_col(la[3]) if len(la) > 3 else (frags[f].layout or "row_major").endswith("col_major")
                    fw[f] = (la[1], la[2], col)
                    drop.add(id(stmts[k]))
                arrays = {n.name for x in fw.values() for n in walk(x[0]) if isinstance(n, N.Var)
                          and (n.name in p.params or (n.name in p.decls and isinstance(p.decls[n.name].type, N.Array)))}
                why = p._between_barriers(chain + ((stmts, j),), arrays)
                if why:
                    return why
                loads[id(s)] = fw
    # a/b fragments: every load feeds exactly one mma (the uses were counted above)
    n_loads = sum(1 for n in walk(func.body) if _call(n)[0] == "load_matrix_sync")
    if n_loads != len(drop):
        return "a fragment load is not forwarded into an mma_sync"
    return WLift(dims, kinds, loads, drop)


def _uniform_ptr(p: _Planner, ptr, ldm):
    for e in (ptr, ldm):
        for n in walk(e):
            if isinstance(n, N.Builtin) and n.name.startswith(("threadIdx", "__lane")):
                return "a fragment pointer reads threadIdx directly"
            if isinstance(n, (N.Call, N.Intrinsic, N.AssignExpr, N.Index)):
                return "a fragment pointer is not plain pointer arithmetic"
            if isinstance(n, N.Var) and not p.wave_uniform(n.name, WARP):
                return f"fragment pointer variable '{n.name}' differs between the lanes of a warp"
    base = [n.name for n in walk(ptr) if isinstance(n, N.Var) and n.name in p.decls
            and isinstance(p.decls[n.name].type, N.Array)]
    for a in base:
        if p.decls[a].scope != "shared":
            return f"a fragment is loaded from or stored to '{a}', not a __shared__ array"
    return None


def _at(p, idx):
    """``p[idx]``, written ``base[off + idx]`` when ``p`` is ``base + off`` (what loop analyses read)."""
    offs = []
    q = p
    while isinstance(q, N.BinOp) and q.op == "+":
        offs.append(q.rhs)
        q = q.lhs
    if isinstance(q, N.Var) and offs:
        return ix(q, add(*(list(reversed(offs)) + [idx])))
    return ix(p, idx)


def per_lane(lift: WLift, f) -> int:
    r, c_ = lift.dims[f]
    return r * c_ // WARP


def decl_of(lift: WLift, s: N.Decl):
    """The lifted declaration of fragment ``s`` ([] for a forwarded a/b fragment)."""
    if lift.kinds[s.name] != "accumulator":
        return []
    return [s.with_(type=N.Array(s.type.elem, (N.Const(per_lane(lift, s.name), "int32", str(per_lane(lift, s.name))),)))]


def lower(ctx, lift: WLift, s, op, args):
    """The lifted statements of one wmma call statement ``s``."""
    if id(s) in lift.drop:
        return []
    tid = N.Var(ctx.hooks.tid(ctx))
    INT = scalar("int32", "int")
    lane = ctx.fresh("lane")
    out = [decl(lane, INT, b("%", tid, WARP), const=True)]
    j, e, r, c_ = ctx.fresh("j"), ctx.fresh("e"), ctx.fresh("r"), ctx.fresh("c")
    Vj = N.Var(j)
    if op == "fill_fragment":
        f = args[0].name
        body = [assign(ix(f, Vj), cast(ctx.frags[f].elem, args[1]))]
        return [loop(j, 0, per_lane(lift, f), body)]
    if op == "store_matrix_sync":
        p, f, ldm = args[0], args[1].name, args[2]
        rows, cols = lift.dims[f]
        col = _is_col(args[3])
        mem = _at(p, add(mul(N.Var(c_), ldm), N.Var(r))) if col else _at(p, add(mul(N.Var(r), ldm), N.Var(c_)))
        body = [decl(e, INT, add(N.Var(lane), mul(WARP, Vj)), const=True),
                decl(r, INT, b("/", N.Var(e), cols), const=True), decl(c_, INT, b("%", N.Var(e), cols), const=True),
                assign(mem, ix(f, Vj))]
        return out + [loop(j, 0, per_lane(lift, f), body)]
    if op == "mma_sync":
        d, a, bb = args[0].name, args[1].name, args[2].name
        rows, cols = lift.dims[d]
        K = lift.dims[a][1]
        (pa, lda, cola), (pb, ldb, colb) = lift.loads[id(s)][a], lift.loads[id(s)][bb]
        k = ctx.fresh("k")
        Vr, Vc, Vk = N.Var(r), N.Var(c_), N.Var(k)
        av = _at(pa, add(mul(Vk, lda), Vr)) if cola else _at(pa, add(mul(Vr, lda), Vk))
        bv = _at(pb, add(mul(Vc, ldb), Vk)) if colb else _at(pb, add(mul(Vk, ldb), Vc))
        body = [decl(e, INT, add(N.Var(lane), mul(WARP, Vj)), const=True),
                decl(r, INT, b("/", N.Var(e), cols), const=True), decl(c_, INT, b("%", N.Var(e), cols), const=True),
                loop(k, 0, K, assign(ix(d, Vj), b("*", tofloat(av), tofloat(bv)), "+="))]
        return out + [loop(j, 0, per_lane(lift, d), body)]
    ctx.refuse(f"no lifted form for wmma::{op}")
