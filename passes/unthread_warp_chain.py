"""Un-threading, form 5 chained: several one-warp-per-row reductions in one block, each read by later
phases (passes/unthread_warp_rows.py holds the reduction itself).

softmax_shfl.cu (max, then the sum of ``exp(x - max)``, then the write) and layernorm.hip (mean,
then the variance, then the write) reach unthread as a run of ``(ty, lane)`` nests: the first
with the early exit ``if (g) { done[ty*W + lane] = 1; continue; }``, the later ones wrapped in
``if (!done[ty*W + lane]) { ... }``, each partial followed by its exchange. This module holds
what form 5 needs to take such a run one reduction at a time:

- **reads of a fold after its exchange** (``prove_reads``): every top-level statement after the
  exchange, in order, until the name is written again. A read must lie in a thread nest over the
  same ``R x W`` (inside loops too: the index is evaluated with the thread's ``(ty, lane)`` alone,
  so it cannot depend on a loop variable), and for every set of warps that leave early and every
  thread whose enclosing conditions can hold, it must hit an element holding the reading warp's
  fold (warps that left read nothing). It is replaced by ``A_row[ty]``. A name the exchange wrote
  that is used after being written again (softmax_shfl.cu's scratch ``xpd_xch3``, reused by the
  second exchange) must be gone once every exchange of the block is rewritten, else XP4001
  (``finish``): a later exchange is proven from its own writes only (the machine reads an element
  it did not write as unknown), so what the first one left there is never needed.
- **flags tested by a later nest** (``flag_wrap``): ``if (!done[idx])`` around a later nest's body is
  accepted when ``done`` was proven, by an earlier form-5 rewrite of this block, to be set by an
  early exit whose condition does not read the lane (whole warps) and written nowhere else; the
  exchange is then run for each of the ``2^R`` sets of warps again.
- **one value per warp in a per-thread array** (``uniform_store``): layernorm.hip's
  ``mean[ty*W + lane] = s_row[ty] / (float)cols`` before the second partial. The value does not read
  the lane, has no effect, and reads nothing the nest writes, so each lane of warp ``ty`` stores the
  same value; the array is written nowhere else; each read (in this nest after the store, or later)
  is the lane's own element of a warp that stays. It becomes ``mean_row[ty]``.
- **a fold broadcast back through shared memory** (``_fold_copy``): ``A[own] = L[i]`` at the top of a
  nest (after declarations, inside the flags' test), ``L[i]`` proven to be the reader's fold for
  every thread and set of leaving warps (lane 0 stored ``wmax[warp]`` after a down tree, a barrier,
  then ``m = wmax[warp]``; or a helper's ``__shfl(v, 0)`` result): the copy goes, and ``A`` is read
  as the row's fold (in this nest only at the lane's own element, which it just wrote).
- **the elementwise phase** (``finish`` → ``_flatten_lanes``): a nest ``for ty { for lane { [if
  (!done[ty*W + lane])] { D; for (c = lane; c < n; c += W) B(c); } } }`` whose ``D`` (scalar or
  pointer declarations, effect-free, lane-free) and ``B``, ``n`` do not read the lane becomes
  ``for ty { [if (!done[ty*W])] { D; for (c = 0; c < n; ++c) B(c); } }``: per warp, form 1 of
  passes/unthread.py (the flat loop must carry no dependence, Z3, checked in ``unthread.apply``; ``D``
  computed ``W`` times before, once after: the same value). Done only after a form-5 rewrite in the
  block; a nest that does not match stays as it is (it is still correct).
- **lane 0's phase** (``_flatten_lanes`` with ``_lane_zero``): a nest whose lane loop holds
  ``D; if (lane == 0) S`` (``D`` as above) becomes ``for ty { [if (!done[ty*W])] { D; S[lane := 0] } }``:
  the other lanes only evaluate ``D``, which has no effect (gemv.cu / gemv.hip's store of the fold);
- **fusion** (``_fuse``) of the chain's row loops into one when the fused loop carries no dependence
  (Z3), and **the block loop with the warp loop as one row loop** (``collapse_rows``), so that the
  bang cache pass stages whole rows in NRAM; docs/passes/unthread.md says why each is exact.
"""
from __future__ import annotations

from itertools import product

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, vars_used, walk

from . import unthread_shuffle as S
from .patterns import common as U


class Chain:
    """What one block's form-5 rewrites proved so far."""

    def __init__(self):
        self.flags: dict = {}        # early-exit flag array -> (R, W): set per whole warp
        self.gone: set = set()       # names that must have no use left once the block is rewritten
        self.rows = 0                # reductions rewritten
        self.start = None            # the first row loop written (elementwise nests after it become rows)
        self.first = None            # (row loop, flag array, W) of the reduction with the early exit
        self.later: list = []        # the row loops wrapped in 'if (!done[ty*W])' after it


def flag_wrap(items: list):
    """The ``if (!done[idx]) { ... }`` that is the whole of a lane loop's body, else None."""
    if len(items) == 1 and isinstance(items[0], N.If) and items[0].else_ is None:
        cnd = items[0].cond
        if isinstance(cnd, N.UnOp) and cnd.op == "!" and isinstance(cnd.operand, N.Index) \
                and isinstance(cnd.operand.base, N.Var):
            return items[0]
    return None


def wrap_flag(wrap) -> str:
    return wrap.cond.operand.base.name


def uniform_store(u, x, decls, ty, lane, R, W, A, mach0, head):
    """The array ``X`` when ``x`` is ``X[ty*W + lane] = e`` storing one value per warp (see the module
    docstring), else None."""
    from .unthread_warp_rows import _idx_ok
    if not (isinstance(x, N.Assign) and x.op == "=" and isinstance(x.target, N.Index)
            and isinstance(x.target.base, N.Var)):
        return None
    X = x.target.base.name
    d = decls.get(X)
    if d is None or not isinstance(d.type, N.Array) or S._scalar_kind(d.type.elem) != "float" \
            or not any(y is d for y in head) or X == A:
        return None
    e = x.value
    if lane in vars_used(e) or X in vars_used(e) or A in vars_used(e):
        return None
    try:
        S._effect_free(e)
    except S.Refuse:
        return None
    if not _idx_ok(mach0, x.target.index, ty, lane, R, W):
        return None
    writes = [n for n in walk(u.func.body) if isinstance(n, (N.Assign, N.AssignExpr))
              and X in S.written_names(n)]
    if len(writes) != 1 or any(isinstance(n, N.UnOp) and n.op == "&" and X in vars_used(n.operand)
                               for n in walk(u.func.body)):
        return None
    return X


def prove_reads(u, stmts: list, holds: dict, rows: dict, R: int, W: int, results: dict, refuse) -> list:
    """``stmts`` (after an exchange) with each read of a name of ``holds`` replaced by
    ``rows[name][ty]``, until a statement writes the name; each read proven by ``holds[name](machine,
    element, ty, lane)`` (None: it holds what it should; else why not) for every set of leaving warps
    (``results``: set -> the machine after the exchange) and thread. XP4001 through ``refuse``."""
    from .unthread_warp_rows import _nest
    live, holds, rows = set(holds), dict(holds), dict(rows)
    out = []
    for x in stmts:
        x, copied = _fold_copy(u, x, live, holds, rows, R, W, results, refuse)
        used = live & vars_used(x)
        wr = S.written_names(x)
        rd = used - wr
        if rd:
            out.append(_replace(u, x, rd, holds, rows, R, W, results, refuse))
        else:
            out.append(x)
        live -= wr
        if copied is not None:
            A, L = copied
            live.add(A)
            rows[A] = rows[L]
            holds[A] = lambda mg, k, a, b: None if k // W == a else f"a copy of warp {k // W}'s fold"
    return out


def _fold_copy(u, x, live, holds, rows, R, W, results, refuse):
    """``(x, None)``, or ``(x', (A, L))`` when the thread nest ``x`` starts (after declarations, inside
    its flags' test) with ``A[own] = L[i]`` where ``L[i]`` is proven to be the reading warp's fold: a
    broadcast of the fold back into a per-thread array (``m = wmax[warp]`` after a barrier). The copy
    goes; reads of ``A`` later in ``x`` (the lane's own element: written by that lane just before) and
    after it (an element of the reader's warp) read the row's fold."""
    from .unthread import _body, _is_var
    from .unthread_warp_rows import _nest
    tm = _nest(x, u.macros)
    if tm is None or tm[2] != R or tm[3] != W:
        return x, None
    to, ti = tm[0], tm[1]
    items = _body(ti.body)
    wrap = flag_wrap(items)
    inner = _body(wrap.then) if wrap is not None else items
    j = next((k for k, y in enumerate(inner) if not isinstance(y, N.Decl)), None)
    if j is None:
        return x, None
    cp = inner[j]
    if not (isinstance(cp, N.Assign) and cp.op == "=" and isinstance(cp.target, N.Index)
            and isinstance(cp.target.base, N.Var) and isinstance(cp.value, N.Index)
            and isinstance(cp.value.base, N.Var)):
        return x, None
    A, L = cp.target.base.name, cp.value.base.name
    if A not in holds or L not in live or A == L or any(A in vars_used(y) for y in inner[:j]) \
            or A in S.written_names(N.Block(tuple(inner[j + 1:]))) \
            or any(isinstance(n, N.Decl) and n.name in (A, L, to.var, ti.var) for n in walk(ti.body)):
        return x, None
    later = [n for y in inner[j + 1:] for n in walk(y) if isinstance(n, N.Index) and _is_var(n.base, A)]
    if sum(1 for y in inner[j + 1:] for n in walk(y) if isinstance(n, N.Var) and n.name == A) != len(later):
        return x, None
    for g, mg in results.items():
        for a, b in product(range(R), range(W)):
            sc = [{to.var: ("int", a), ti.var: ("int", b)}]
            try:
                if wrap is not None and not mg.ival(wrap.cond, sc):
                    continue
                k_t = mg.ival(cp.target.index, sc)
                k_v = mg.ival(cp.value.index, sc)
                own = all(mg.ival(n.index, sc) == a * W + b for n in later)
            except S.Refuse:
                return x, None
            if k_t != a * W + b or not own:
                return x, None
            if a in g:
                refuse(f"'{S._text(cp.value)}'{S._line(cp)} can be read by warp {a}, which left early", cp)
            why = holds[L](mg, k_v, a, b)
            if why is not None:
                refuse(f"'{S._text(cp.value)}'{S._line(cp)} read by thread ({a}, {b}) is element {k_v}, which is "
                       f"{why}", cp)
    row = N.Index(N.Var(rows[L]), N.Var(to.var))
    tail = [rewrite(y, lambda n: row if isinstance(n, N.Index) and _is_var(n.base, A) else n) for y in inner[j + 1:]]
    new_inner = N.Block(tuple(inner[:j]) + tuple(tail))
    if wrap is not None:
        body = N.Block(tuple(wrap.with_(then=new_inner) if y is wrap else y for y in ti.body.stmts))
    else:
        kept = [y for y in ti.body.stmts if isinstance(y, N.Comment)]
        body = N.Block(tuple(kept) + new_inner.stmts)
    return to.with_(body=N.Block((ti.with_(body=body),))), (A, L)


def _replace(u, x, names, holds, rows, R, W, results, refuse):
    from .unthread_warp_rows import _nest
    tm = _nest(x, u.macros)
    name0 = sorted(names)[0]
    if tm is None or tm[2] != R or tm[3] != W:
        refuse(f"'{name0}' is read{S._line(x)} outside a thread nest over {R} x {W}", x)
    to, ti = tm[0], tm[1]
    if any(isinstance(n, N.Decl) and n.name in {to.var, ti.var} | names for n in walk(ti.body)):
        refuse(f"the thread nest{S._line(x)} that reads '{name0}' declares its indices or '{name0}' again", x)
    reads = []                      # (Index node, [conditions that must hold])

    def collect(s, conds):
        if isinstance(s, N.If):
            collect_e(s.cond, conds)
            collect(s.then, conds + [s.cond])
            if s.else_ is not None:
                collect(s.else_, conds + [N.UnOp("!", s.cond)])
        elif isinstance(s, N.Block):
            for y in s.stmts:
                collect(y, conds)
        elif isinstance(s, (N.For, N.CFor, N.While)):
            # a read inside a loop runs after the loop's own tests: the enclosing conditions still
            # hold; its index must not depend on the loop (evaluated with (ty, lane) alone)
            collect_e(s, conds)
        else:
            collect_e(s, conds)

    def collect_e(s, conds):
        for n in walk(s):
            if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in names:
                reads.append((n, conds))
    collect(ti.body, [])
    n_uses = sum(1 for n in walk(ti.body) if isinstance(n, N.Var) and n.name in names)
    if n_uses != len(reads):
        refuse(f"'{name0}' is used{S._line(x)} other than as elements", x)
    for g, mg in results.items():
        for a, b in product(range(R), range(W)):
            sc = [{to.var: ("int", a), ti.var: ("int", b)}]
            for r, conds in reads:
                live = True
                for cnd in conds:
                    try:
                        if not mg.ival(cnd, sc):
                            live = False
                            break
                    except S.Refuse:
                        pass          # not a constant here: possibly true
                if not live:
                    continue
                if a in g:
                    refuse(f"'{S._text(r)}'{S._line(r)} can be read by warp {a}, which left early", r)
                try:
                    k = mg.ival(r.index, sc)
                except S.Refuse as e:
                    refuse(f"the index of '{S._text(r)}' is not a constant for one thread ({e.why})", r)
                why = holds[r.base.name](mg, k, a, b)
                if why is not None:
                    refuse(f"'{S._text(r)}'{S._line(r)} read by thread ({a}, {b}) is element {k}, which is {why}", r)
    return rewrite(x, lambda n: N.Index(N.Var(rows[n.base.name]), N.Var(to.var))
                   if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in names else n)


def finish(u, stmts: list, ctx: Chain) -> list:
    """The block after its form-5 rewrites: the names in ``ctx.gone`` must have no use left (their
    declarations go), then each per-lane elementwise nest becomes a row loop."""
    from .unthread import PassError, NAME
    if not ctx.rows:
        return stmts
    out = []
    for x in stmts:
        if isinstance(x, N.Decl) and x.name in ctx.gone:
            continue
        out.append(x)
    for name in sorted(ctx.gone):
        left = [n for n in walk(N.Block(tuple(out))) if isinstance(n, N.Var) and n.name == name]
        if left:
            raise PassError(NAME, f"'{name}' is written by a warp-shuffle exchange and used{S._line(left[0])} "
                                  "after the block's exchanges are rewritten, where it does not hold a fold",
                            left[0])
    k0 = next(k for k, x in enumerate(out) if x is ctx.start)
    out = out[:k0 + 1] + [_flatten_lanes(u, x, ctx) for x in out[k0 + 1:]]
    return _fuse(u, out, ctx)


def _flatten_lanes(u, x, ctx: Chain):
    """``x`` as a row loop when it is a per-lane elementwise nest (see the module docstring)."""
    from .unthread import _body, _const_int, _is_var
    from .unthread_warp_rows import _Machine, _idx_ok, _nest
    tm = _nest(x, u.macros)
    if tm is None:
        return x
    o, il, R, W = tm
    ty, lane = o.var, il.var
    items = _body(il.body)
    wrap = flag_wrap(items)
    if wrap is not None:
        if ctx.flags.get(wrap_flag(wrap)) != (R, W):
            return x
        mach = _Machine("+", {}, {}, u.macros)
        if not _idx_ok(mach, wrap.cond.operand.index, ty, lane, R, W):
            return x
        items = _body(wrap.then)
    if not items:
        return x
    c = items[-1]
    one = _lane_zero(c, lane, u.macros)
    if one is None and not (isinstance(c, N.For) and _is_var(c.lo, lane) and _const_int(c.step, u.macros) == W
                            and c.binding is None and c.cmp == "<"):
        return x
    written = S.written_names(N.Block(tuple(items)))      # as a variable or through an element
    whole = {n.target.name for n in walk(N.Block(tuple(items))) if isinstance(n, (N.Assign, N.AssignExpr))
             and isinstance(n.target, N.Var)} | {n.operand.name for n in walk(N.Block(tuple(items)))
                                                  if isinstance(n, N.UnOp) and isinstance(n.operand, N.Var)}
    for dcl in items[:-1]:
        # (a pointer the loop stores through, 'yr', is itself never assigned: 'whole')
        if not (isinstance(dcl, N.Decl) and isinstance(dcl.type, (N.Scalar, N.Pointer)) and dcl.init is not None
                and lane not in vars_used(dcl.init) and not (vars_used(dcl.init) & written)
                and dcl.name not in whole | {ty, lane}):
            return x
        try:
            S._effect_free(dcl.init)
        except S.Refuse:
            return x
    if one is not None:
        # the one-lane phase: lane 0 runs D and S, the other lanes only D (pure, lane-free: no effect)
        if lane in whole or any(isinstance(n, N.Decl) and n.name == lane for n in walk(one)):
            return x
        s0 = substitute(one, {lane: U.C(0)})
        mine = {d.name for d in items[:-1]}
        inner = _body(s0)
        if any(isinstance(y, N.Decl) and (y.name in mine or y.name in {ty, lane}) for y in inner):
            inner = [s0]                       # its own declarations stay in their own block
        body = list(items[:-1]) + inner
    else:
        if lane in vars_used(c.body) | vars_used(c.hi) or c.var in whole or vars_used(c.hi) & written:
            return x
        flat = c.with_(lo=U.C(0), step=U.C(1))
        body = list(items[:-1]) + [flat]
        u.new_loops.append((c.var, set(), c))
    if wrap is not None:
        w0 = N.Index(N.Var(wrap_flag(wrap)), N.BinOp("*", N.Var(ty), U.C(W)))
        body = [N.If(N.UnOp("!", w0), N.Block(tuple(body)))]
    u.changed = True
    new = o.with_(body=N.Block(tuple(body)))
    if wrap is not None:
        ctx.later.append(new)
    return new


def _lane_zero(c, lane: str, macros):
    """The block ``S`` when ``c`` is ``if (lane == 0) S`` (or ``0 == lane``, no else), else None."""
    from .unthread import _const_int, _is_var
    if not (isinstance(c, N.If) and c.else_ is None and isinstance(c.cond, N.BinOp) and c.cond.op == "=="):
        return None
    a, b = c.cond.lhs, c.cond.rhs
    if _is_var(b, lane):
        a, b = b, a
    if not (_is_var(a, lane) and _const_int(b, macros) == 0):
        return None
    return c.then if isinstance(c.then, N.Block) else N.Block((c.then,))


def _fuse(u, stmts: list, ctx: Chain) -> list:
    """The row loops of a chain fused into one (the block's statements unchanged where not proven).

    ``[zero the flags]; for ty { [lane loop setting done]; D1; if (g) continue; P1 }`` followed by
    ``for ty_k { if (!done[ty_k*W]) { P_k } }`` (k = 2..) becomes ``for ty { D1; if (g) continue; P1;
    P2; ...}`` (``ty_k`` renamed ``ty``, a declaration equal to an earlier one in type and initializer
    dropped, its name replaced by the earlier one). Legal: ``done[ty*W]`` is 1 exactly when ``g`` held
    for warp ``ty`` (set per whole warp by the early exit, written nowhere else), so after ``if (g)
    continue;`` the test is true; the fused loop must carry no dependence (passes/dependence.py,
    Z3), so running each row's phases together keeps every conflicting pair of accesses in order.
    The flags are then unused and go; a row array ``X_row[ty]`` stored at the top of the fused body and
    read only there becomes a scalar."""
    from . import dependence as D
    from .unthread import _body, _is_var, _text
    if ctx.first is None or not ctx.later:
        return stmts
    first, done, W = ctx.first
    idx = [k for k, x in enumerate(stmts) if x is first]
    if not idx:
        return stmts
    k0 = idx[0]
    k, laters = k0 + 1, []
    while k < len(stmts) and (isinstance(stmts[k], N.Comment) or any(stmts[k] is x for x in ctx.later)):
        if not isinstance(stmts[k], N.Comment):
            laters.append(stmts[k])
        k += 1
    if not laters:
        return stmts
    ty = first.var
    items = _body(first.body)
    lanes = items[0]
    if not (isinstance(lanes, N.For) and S.written_names(lanes) == {done}):
        return stmts
    body = list(items[1:])
    decls = {x.name: x for x in body if isinstance(x, N.Decl)}
    for lp in laters:
        w = _body(lp.body)
        if len(w) != 1 or not isinstance(w[0], N.If) or w[0].else_ is not None or lp.hi != first.hi:
            return stmts
        if any(isinstance(n, N.Decl) and n.name == ty for n in walk(w[0].then)):
            return stmts
        part = rewrite(w[0].then, lambda n, v=lp.var: N.Var(ty) if _is_var(n, v) else n)
        # a name the phase uses but does not declare is an outer one: no earlier phase may declare it
        own = {n.name for n in walk(part) if isinstance(n, N.Decl)}
        if ({n.name for n in walk(part) if isinstance(n, N.Var)} - own) & set(decls):
            return stmts
        ren: dict = {}
        for x in _body(part):
            x = rewrite(x, lambda n: N.Var(ren[n.name]) if isinstance(n, N.Var) and n.name in ren else n)
            # a declaration equal to an earlier one (same type, same initializer, which reads nothing
            # the fused body writes, and neither is assigned): the earlier name in its place
            wr = S.written_names(N.Block(tuple(body))) | S.written_names(part)
            same = next((dd for dd in decls.values() if isinstance(x, N.Decl) and x.init is not None
                         and dd.init is not None and _text(dd.init) == _text(x.init) and dd.type == x.type
                         and not ({x.name, dd.name} | vars_used(x.init)) & wr), None)
            if same is not None:
                ren[x.name] = same.name
                continue
            if isinstance(x, N.Decl):
                if x.name in decls or x.name in vars_used(N.Block(tuple(body))):
                    return stmts                   # a name declared twice: not fused
                decls[x.name] = x
            body.append(x)
    # the flags: used nowhere else than their zero loop and the early exit's lane loop
    rest = [x for j, x in enumerate(stmts) if j < k0 or j >= k]
    zero = [x for x in rest if not isinstance(x, N.Decl) and done in vars_used(x)]
    if len(zero) != 1 or not isinstance(zero[0], N.For) or S.written_names(zero[0]) != {done} \
            or done in vars_used(N.Block(tuple(body))):
        return stmts
    # a row array stored at the top of the body, read only there: a scalar
    from .unthread_warp_rows import _fresh
    j = -1
    while j + 1 < len(body):
        j += 1
        x = body[j]
        if not (isinstance(x, N.Assign) and x.op == "=" and isinstance(x.target, N.Index)
                and isinstance(x.target.base, N.Var) and _is_var(x.target.index, ty)):
            continue
        X = x.target.base.name
        dx = next((y for y in rest if isinstance(y, N.Decl) and y.name == X), None)
        if dx is None or not isinstance(dx.type, N.Array) or any(X in vars_used(y) for y in rest if y is not dx) \
                or sum(1 for n in walk(N.Block(tuple(body))) if isinstance(n, (N.Assign, N.AssignExpr))
                       and X in S.written_names(n)) != 1 \
                or any(isinstance(n, N.Var) and n.name == X for y in body[:j] for n in walk(y)):
            continue
        v = _fresh(u, X + "v")
        tail = rewrite(N.Block(tuple(body[j + 1:])), lambda n, X=X, v=v: N.Var(v) if isinstance(n, N.Index)
                       and _is_var(n.base, X) and _is_var(n.index, ty) else n)
        if any(isinstance(n, N.Var) and n.name == X for n in walk(tail)):
            continue
        body = body[:j] + [N.Decl(v, dx.type.elem, x.value)] + list(tail.stmts)
        rest = [y for y in rest if y is not dx]
    fused = first.with_(body=N.Block(tuple(body)))
    out = [x for x in rest if x is not zero[0] and not (isinstance(x, N.Decl) and x.name == done)]
    before = [x for x in stmts[:k0] if any(x is y for y in out)]
    after = [x for x in stmts[k:] if any(x is y for y in out)]
    # legal only when the fused loop carries no dependence (Z3); otherwise the chain stays unfused
    probe = u.func.with_(body=N.Block(tuple(before) + (fused,)))
    try:
        dep = D.check_parallel(u.program, probe, fused, private=())
    except Exception:                              # noqa: BLE001 - any failure to prove: not fused
        dep = "not analysed"
    if dep is not None:
        return stmts
    u.fused = True
    return before + [fused] + after


def collapse_rows(u, body: N.Block) -> N.Block:
    """A fused chain's block loop and row loop as one loop over the rows::

        for (bx = 0; bx < cdiv(N, R); ++bx) for (ty = 0; ty < R; ++ty) { int row = bx * R + ty;
                                                                          if (row >= N) continue; B }
     →  for (row = 0; row < N; ++row) { B }

    Exact: ``(bx, ty) -> bx*R + ty`` enumerates ``[0, cdiv(N, R)*R)`` in order (for ``N <= 0`` neither
    loop runs), the guard skips exactly ``row >= N``, ``B`` reads neither ``bx`` nor ``ty`` and does
    not assign ``row``. The cache pass stages such a row loop (NRAM rows, ``__bang_*``)."""
    from .unthread import _body, _const_int, _is_var, _text
    if not getattr(u, "fused", False):
        return body
    out = []
    for s in body.stmts:
        out.append(_collapse(u, s) or s)
    return body.with_(stmts=tuple(out))


def _collapse(u, s):
    from .unthread import _body, _const_int, _is_var, _single, _text, _thread_loop
    bx = _thread_loop(s)
    if bx is None:
        return None
    hi = bx.hi
    n_e, r = _cdiv_of(hi, u.macros)
    if n_e is None:
        return None
    ty = _thread_loop(_single(bx.body))
    if ty is None or r is None or _const_int(ty.hi, u.macros) != r:
        return None
    items = _body(ty.body)
    if len(items) < 3:
        return None
    d, g = items[0], items[1]
    if not (isinstance(d, N.Decl) and isinstance(d.type, N.Scalar) and d.type.dtype in ("int32", "int64")
            and isinstance(d.init, N.BinOp) and d.init.op == "+"):
        return None
    a, b = d.init.lhs, d.init.rhs
    if _is_var(a, ty.var):
        a, b = b, a
    if not (_is_var(b, ty.var) and isinstance(a, N.BinOp) and a.op == "*" and _is_var(a.lhs, bx.var)
            and _const_int(a.rhs, u.macros) == r):
        return None
    if not (isinstance(g, N.If) and g.else_ is None and isinstance(_single(g.then), N.Continue)
            and isinstance(g.cond, N.BinOp) and g.cond.op == ">=" and _is_var(g.cond.lhs, d.name)
            and _text(g.cond.rhs) == _text(n_e)):
        return None
    rest = N.Block(tuple(ty.body.stmts[ty.body.stmts.index(g) + 1:]))
    if {bx.var, ty.var} & vars_used(rest) or d.name in S.written_names(rest) \
            or vars_used(n_e) & S.written_names(rest) \
            or any(isinstance(n, N.Decl) and n.name == d.name for n in walk(rest)):
        return None
    # (the loop variable is counted: a 'const int row' declaration becomes a plain 'int')
    return N.For(var=d.name, lo=U.C(0), hi=n_e, step=U.C(1), body=rest,
                 var_type=d.type.with_(const=False, volatile=False),
                 pragmas=bx.pragmas, loc=bx.loc)


def _cdiv_of(e, macros):
    """``(N, R)`` when ``e`` is ``cdiv(N, R)`` or ``(N + R - 1) / R`` (``R`` a positive constant)."""
    from .unthread import _const_int
    if isinstance(e, N.Call) and e.func == "cdiv" and len(e.args) == 2:
        r = _const_int(e.args[1], macros)
        return (e.args[0], r) if r and r > 0 else (None, None)
    if isinstance(e, N.BinOp) and e.op == "/":
        r = _const_int(e.rhs, macros)
        num = e.lhs
        if not r or r <= 0:
            return None, None
        if isinstance(num, N.BinOp) and num.op == "-" and _const_int(num.rhs, macros) == 1 \
                and isinstance(num.lhs, N.BinOp) and num.lhs.op == "+" and _const_int(num.lhs.rhs, macros) == r:
            return num.lhs.lhs, r
        if isinstance(num, N.BinOp) and num.op == "+" and _const_int(num.rhs, macros) == r - 1:
            return num.lhs, r
    return None, None
