"""Un-threading, form 5: one warp per row, a per-lane partial combined by a warp-shuffle exchange.

Loop recovery leaves a kernel that gives each warp of a block one row (a 2-D block ``W x R``,
``lane = threadIdx.x``, ``row = base + threadIdx.y``) as thread nests over ``(ty, lane)``::

    for (t = 0; t < R*W; ++t) done[t] = 0;                       (only with the early exit)
    for (ty = 0; ty < R; ++ty) for (lane = 0; lane < W; ++lane) {
        D1; if (g) { done[ty*W + lane] = 1; continue; }          (the optional early exit)
        D2; A[ty*W + lane] = init; for (c = lane; c < n; c += W) A[ty*W + lane] = op(A[ty*W + lane], f(c));
    }
    <exchange region: nests over (ty, lane) guarded by !done[...], loops over offsets, a scratch array>
    for (ty = 0; ty < R; ++ty) for (lane = 0; lane < W; ++lane) { ... A[ty*W + lane] ... }   (the tail)
 →  for (ty = 0; ty < R; ++ty) {
        [for (lane = 0; lane < W; ++lane) { D1; if (g) { done[ty*W + lane] = 1; continue; } }]
        [D1; if (g) continue;]  D2;
        acc = init; for (c = 0; c < n; ++c) acc = op(acc, f(c));  A_row[ty] = acc;
    }
    for (ty ...) for (lane ...) { ... A_row[ty] ... }           (each read proven to be the row's fold)

**How it is proven.** ``D1``, ``g``, ``D2``, ``init``, ``f`` and ``n`` do not read ``lane`` (so every
lane of a warp computes them alike and the early exit is taken by whole warps), the declarations
are pure, the strided loop is the one update, and both index expressions equal ``ty*W + lane`` for
every ``(ty, lane)`` (evaluated). ``done`` is a local array of ``R*W`` elements set to 0 by one
thread loop before and written nowhere else than the early exit. The exchange region is then *run*
(passes/unthread_shuffle.py's abstract machine) once for each of the ``2^R`` sets of warps that
leave early (``done`` concrete per warp): each partial ``A[t]`` of a staying warp is "partial
``t``". Every read of ``A`` in the tail is evaluated for each ``(ty, lane)`` and each such set, its
enclosing conditions evaluated where they are integer constants (a condition that is not is taken
as possibly true): a read that can run must hit an element that holds the fold of exactly the
partials ``ty*W .. ty*W + W-1`` (each exactly once; at least once for max/min/&/|) of a warp that
stays. The scratch arrays the region writes must not be used anywhere else in the block. The new
row loop goes through passes/unthread.py's dependence test (Z3), the accumulator excluded. For
``+`` and ``*`` the combination order changes (reassociation, as forms 2 and 4).

A 1-D thread loop ``tx < R*W`` with ``lane = tx % W``, ``row = base + tx / W`` (rmsnorm.cu) is first
split exactly into ``(ty, l)`` nests (``_split_block``; kept only when the form then matches). A
pointer declared in the new row loop that the kernel declares again elsewhere is renamed (a local
renaming; tensorize's buffer facts skip names declared twice).

Several such reductions in one block (softmax_shfl.cu, layernorm.hip: a later partial reads an
earlier fold, later nests are wrapped in ``if (!done[..])``) are taken one at a time, in order;
the reads of each fold after its exchange, the flags' test, one value per warp kept in a
per-thread array, the write phase, the fusion of the row loops and the collapse into one row
loop are in passes/unthread_warp_chain.py.
"""
from __future__ import annotations

from collections import Counter
from itertools import product

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, vars_used, walk

from .base import PassError
from . import unthread_shuffle as S
from . import unthread_warp_chain as C
from .patterns import common as U

NAME = "unthread"
_MAX_WARPS = 10          # 2^R exchange runs


class _Machine(S.Machine):
    """The exchange machine, with integer flag arrays (``done``) read as concrete values."""

    def __init__(self, *args, flags=None, **kw):
        super().__init__(*args, **kw)
        self.flags = flags or {}

    def _ival(self, e, scopes):
        if isinstance(e, N.Index) and isinstance(e.base, N.Var) and e.base.name in self.flags \
                and self._lookup(scopes, e.base.name) is None:
            i = self.ival(e.index, scopes)
            vals = self.flags[e.base.name]
            if i not in vals:
                raise S.Refuse(f"'{e.base.name}[{i}]' is outside the array")
            return vals[i]
        return super()._ival(e, scopes)


def _nest(s, macros):
    """``(ty loop, lane loop, R, W)`` when ``s`` is ``for (ty < R) { for (lane < W) {...} }``."""
    from .unthread import _const_int, _single, _thread_loop
    o = _thread_loop(s)
    if o is None:
        return None
    i = _thread_loop(_single(o.body))
    if i is None:
        return None
    R, W = _const_int(o.hi, macros), _const_int(i.hi, macros)
    if R is None or W is None or R < 1 or W < 1 or o.var == i.var:
        return None
    return o, i, R, W


def _match(u, s):
    """The partial nest's parts when ``s`` has its shape (see the module docstring), else None;
    the last item is the ``if (!done[..])`` wrapping the body of a later nest of a chain, or None."""
    from .unthread import _body, _is_var
    m = _nest(s, u.macros)
    if m is None:
        return None
    o, i, R, W = m
    items = _body(i.body)
    wrap = C.flag_wrap(items)
    if wrap is not None:
        items = _body(wrap.then)
    if len(items) < 2:
        return None
    c, first = items[-1], items[-2]
    from .unthread import _const_int
    if not (isinstance(c, N.For) and _is_var(c.lo, i.var) and _const_int(c.step, u.macros) == W):
        return None
    if not (isinstance(first, N.Assign) and first.op == "=" and isinstance(first.target, N.Index)
            and isinstance(first.target.base, N.Var)):
        return None
    return o, i, R, W, items[:-2], first, c, wrap


def _idx_ok(mach, e, ty, lane, R, W) -> bool:
    """``e`` equals ``ty*W + lane`` for every ``ty < R``, ``lane < W`` (evaluated)."""
    try:
        return all(mach.ival(e, [{ty: ("int", a), lane: ("int", b)}]) == a * W + b
                   for a in range(R) for b in range(W))
    except S.Refuse:
        return False


def _row_full(v, w, W, op, init_consts) -> bool:
    from .unthread import _IDEMPOTENT, _IDENTITY
    if v is None or v.top:
        return False
    want = range(w * W, w * W + W)
    if op in _IDEMPOTENT:
        return set(v.lanes) == set(want) and v.consts <= init_consts
    return v.lanes == Counter(want) and v.consts <= {float(_IDENTITY[op])}


def _describe_row(v, w, W, op, init_consts) -> str:
    """What an element that is not warp ``w``'s fold holds instead, in words."""
    from .unthread import _IDEMPOTENT, _IDENTITY
    if v is None:
        return "nothing the exchange wrote"
    if v.top:
        return f"an unknown value ({v.why})"
    want = range(w * W, w * W + W)
    out = []
    missing = [k for k in want if k not in v.lanes]
    if missing:
        out.append(f"{len(missing)} of its {W} partials missing (partial {missing[0]} among them)")
    other = sorted(k for k in v.lanes if k not in want)
    if other:
        out.append(f"partial {other[0]} of another warp")
    if op not in _IDEMPOTENT:
        dup = sorted(k for k, c in v.lanes.items() if c > 1)
        if dup:
            out.append(f"partial {dup[0]} combined {v.lanes[dup[0]]} times")
    allowed = init_consts if op in _IDEMPOTENT else {float(_IDENTITY[op])}
    extra = sorted(v.consts - allowed)
    if extra:
        out.append(f"the constant {extra[0]:g}")
    return ", ".join(out) or "not the fold"


def rewrite_block(u, stmts: list) -> list:
    """The statements with each one-warp-per-row partial + exchange (form 5) turned into row loops;
    a chain of them (a later partial reading an earlier fold, passes/unthread_warp_chain.py) in
    order, then the per-lane elementwise nests that read the folds as row loops."""
    if not any(_match(u, s) is not None for s in stmts):
        split = _split_block(u, stmts)
        if split is None or not any(_match(u, s) is not None for s in split):
            return stmts
        stmts = split
    ctx = C.Chain()
    i = 0
    while i < len(stmts):
        m = _match(u, stmts[i])
        if m is None:
            i += 1
            continue
        stmts, i = _one(u, m, stmts, i, ctx)
    return C.finish(u, stmts, ctx)


def _split_block(u, stmts: list):
    """The statements with each 1-D thread loop ``for (tx = 0; tx < R*W; ++tx)`` whose body reads
    ``tx % W`` and holds a strided loop ``for (c = lane; c < n; c += W)`` (``int lane = tx % W``)
    split into ``for (ty < R) for (l < W)`` with ``tx`` replaced by ``ty*W + l`` and then
    ``(ty*W + l) % W`` by ``l``, ``(ty*W + l) / W`` by ``ty``, and an alias ``int lane = l;`` by
    ``l`` (None when there is no such loop).

    Exact: ``(ty, l) -> ty*W + l`` maps ``[0, R) x [0, W)`` onto ``[0, R*W)`` in the same order,
    the body neither assigns nor redeclares ``tx``, and for ``ty >= 0``, ``0 <= l < W`` C's
    truncating ``/`` and ``%`` give ``ty`` and ``l``."""
    from .unthread import _body, _const_int, _is_var, _thread_loop
    W = None
    for s in stmts:
        lp = _thread_loop(s)
        T = _const_int(lp.hi, u.macros) if lp is not None else None
        if T is None:
            continue
        lanes = {x.name: x for x in _body(lp.body) if isinstance(x, N.Decl) and isinstance(x.init, N.BinOp)
                 and x.init.op == "%" and _is_var(x.init.lhs, lp.var)}
        for x in _body(lp.body):
            if isinstance(x, N.For) and isinstance(x.lo, N.Var) and x.lo.name in lanes:
                w = _const_int(lanes[x.lo.name].init.rhs, u.macros)
                if w is not None and 1 < w < T and T % w == 0 and _const_int(x.step, u.macros) == w:
                    W = w
    if W is None:
        return None
    out, changed = [], False
    for s in stmts:
        lp = _thread_loop(s)
        T = _const_int(lp.hi, u.macros) if lp is not None else None
        tx = lp.var if lp is not None else None
        if T is None or T % W or T == W or tx in S.written_names(lp.body) \
                or any(isinstance(n, N.Decl) and n.name == tx for n in walk(lp.body)) \
                or not any(isinstance(n, N.BinOp) and n.op == "%" and _is_var(n.lhs, tx) for n in walk(lp.body)):
            out.append(s)
            continue
        ty, ln = _fresh(u, tx + "_w"), _fresh(u, tx + "_l")
        flat = N.BinOp("+", N.BinOp("*", N.Var(ty), U.C(W)), N.Var(ln))

        def fn(n, tx=tx, ty=ty, ln=ln):
            if isinstance(n, N.BinOp) and n.op in ("%", "/") and (_is_var(n.lhs, tx) or n.lhs == flat) \
                    and _const_int(n.rhs, u.macros) == W:
                return N.Var(ln if n.op == "%" else ty)
            if _is_var(n, tx):
                return flat
            return n
        body = _unalias(rewrite(lp.body, fn), ln)
        wrap = C.flag_wrap(_body(body))        # (also inside a later nest's 'if (!done[..])')
        if wrap is not None and isinstance(wrap.then, N.Block):
            body = body.with_(stmts=tuple(wrap.with_(then=_unalias(wrap.then, ln)) if x is wrap else x
                                          for x in body.stmts))
        inner = lp.with_(var=ln, hi=U.C(W), body=body)
        out.append(lp.with_(var=ty, hi=U.C(T // W), body=N.Block((inner,))))
        changed = True
    return out if changed else None


def _unalias(body: N.Block, ln: str) -> N.Block:
    """``body`` with an alias ``int lane = ln;`` (declared once, never assigned) replaced by ``ln``."""
    from .unthread import _is_var
    items = list(body.stmts)
    for k, x in enumerate(items):
        if isinstance(x, N.Decl) and _is_var(x.init, ln) and isinstance(x.type, N.Scalar) \
                and x.name not in S.written_names(body) \
                and sum(1 for n in walk(body) if isinstance(n, N.Decl) and n.name == x.name) == 1:
            rest = rewrite(N.Block(tuple(items[k + 1:])), lambda n, a=x.name: N.Var(ln) if _is_var(n, a) else n)
            return body.with_(stmts=tuple(items[:k] + list(rest.stmts)))
    return body


def _fresh(u, base: str) -> str:
    k, name = 2, base
    while name in u.names or name in u.taken:
        name, k = f"{base}{k}", k + 1
    u.taken.add(name)
    return name


def _one(u, m, stmts, i, ctx):
    """``(stmts, next index)`` with the partial nest ``stmts[i]``, its exchange and the reads of its
    fold rewritten (see the module docstring); XP4001 when not proven."""
    from .unthread import (_IDEMPOTENT, _IDENTITY, _body, _const_num, _is_var, _pure, _update, _line)
    o, il, R, W, prefix, first, c, wrap = m
    ty, lane = o.var, il.var
    A = first.target.base.name
    where = f"one-warp-per-row reduction into '{A}'{_line(o) or S._line(o)}"

    def refuse(why, node=None):
        raise PassError(NAME, f"{where}: {why}", node if node is not None else o)
    decls, ints = S._outer_decls(u.program, u.func, dict(u.macros))
    d = decls.get(A)
    if d is None or not isinstance(d.type, N.Array) or S._scalar_kind(d.type.elem) != "float" \
            or not any(x is d for x in stmts[:i]):
        refuse(f"'{A}' is not a local float array declared in this block")
    if R > _MAX_WARPS:
        refuse(f"{R} warps per block: the exchange is run for each of the 2^{R} sets of warps that leave early, "
               f"at most {_MAX_WARPS} warps are tried")
    if any(A in vars_used(x) for x in stmts[:i] if x is not d) or any(A in vars_used(x) for x in prefix):
        refuse(f"'{A}' is used before its partial")
    mach0 = _Machine("+", ints, decls, u.macros)
    if not _idx_ok(mach0, first.target.index, ty, lane, R, W):
        refuse(f"the partial's index '{S._text(first.target.index)}' is not '{ty} * {W} + {lane}'", first)
    # the prefix: lane-free pure declarations, at most one early exit, and (after it, or inside the
    # flags' test of a chain's later nest) stores of one lane-free value per warp (C.uniform_store)
    guard, pre, post, stores = None, [], [], {}
    for x in prefix:
        if isinstance(x, N.Decl) and x.init is not None and _pure(x.init) and lane not in vars_used(x.init) \
                and x.name not in (ty, lane, A) and isinstance(x.type, (N.Scalar, N.Pointer)):
            (post if guard is not None or wrap is not None else pre).append(x)
            continue
        if guard is None and wrap is None and isinstance(x, N.If) and x.else_ is None:
            t = _body(x.then)
            if len(t) == 2 and isinstance(t[1], N.Continue) and isinstance(t[0], N.Assign) and t[0].op == "=" \
                    and isinstance(t[0].target, N.Index) and isinstance(t[0].target.base, N.Var) \
                    and _const_num(t[0].value) == 1 and _pure(x.cond) and lane not in vars_used(x.cond) \
                    and _idx_ok(mach0, t[0].target.index, ty, lane, R, W):
                guard = x
                continue
        st = C.uniform_store(u, x, decls, ty, lane, R, W, A, mach0, stmts[:i]) if (guard is not None or wrap is not None) \
            else None
        if st is not None:
            if st in stores or st == A:
                refuse(f"'{st}' is stored twice before the strided loop", x)
            stores[st] = x
            post.append(x)
            continue
        refuse(f"the statement{S._line(x)} before the strided loop is neither a declaration of a value every "
               "lane computes alike nor an early exit 'if (g) { done[ty*W + lane] = 1; continue; }' with 'g' "
               "free of the lane", x)
    # a store's element is read in this nest only at the lane's own index, after the store
    for st, x in stores.items():
        after = prefix[prefix.index(x) + 1:] + [c]
        for n in walk(N.Block(tuple(after))):
            if isinstance(n, N.Index) and _is_var(n.base, st) and not _idx_ok(mach0, n.index, ty, lane, R, W):
                refuse(f"'{S._text(n)}'{S._line(c)} is not the lane's own element of '{st}'", c)
        if any(st in vars_used(y) for y in prefix[:prefix.index(x)]):
            refuse(f"'{st}' is read before its store{S._line(x)}", x)
    srows = {st: u._hoist_name(st + "_row", o) for st in stores}

    def st_rows(n):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in srows:
            return N.Index(N.Var(srows[n.base.name]), N.Var(ty))
        return n
    c = rewrite(c, st_rows)
    # the strided loop: scalar declarations, then exactly the update A[idx] = op(A[idx], f)
    probe = "\u0000acc"

    def to_acc(n):
        if isinstance(n, N.Index) and _is_var(n.base, A) and S._text(n.index) == S._text(first.target.index):
            return N.Var(probe)
        return n
    cb = _body(c.body)
    up = _update(rewrite(cb[-1], to_acc), probe) if cb else None
    cdecls = cb[:-1]
    if up is None or c.binding is not None or c.cmp != "<" or not all(
            isinstance(x, N.Decl) and isinstance(x.type, N.Scalar) and x.init is not None for x in cdecls):
        refuse(f"the strided loop '{c.var}'{S._line(c)} must be exactly the update "
               f"'{S._text(first.target)} = op({S._text(first.target)}, f)' (after scalar declarations)", c)
    op, f = up
    init = first.value
    used = vars_used(f) | vars_used(c.hi) | vars_used(init) | set().union(*(vars_used(x.init) for x in cdecls))
    if lane in used or A in vars_used(f) or A in vars_used(init) or not _pure(init) or ty in vars_used(init) \
            or any(A in vars_used(x.init) or x.name in (A, ty, lane) for x in cdecls):
        refuse(f"the partial's initial value, 'f' or the bound read the lane or '{A}'", c)
    try:
        S._effect_free(f)
        for x in cdecls:
            S._effect_free(x.init)
    except S.Refuse as r:
        refuse(r.why, c)
    if c.var in S.written_names(c.body) or vars_used(c.hi) & S.written_names(c.body):
        refuse(f"the strided loop '{c.var}': its bound or index is assigned in it", c)
    if op not in _IDEMPOTENT:
        v = _const_num(init)
        if v is None or v != _IDENTITY[op]:
            refuse(f"with '{op}' the initial value must be the identity {_IDENTITY[op]}", first)
    init_consts = frozenset({float(_const_num(init))}) if isinstance(_const_num(init), (int, float)) else frozenset()
    # the early-exit flags: set to 0 by one thread loop before, written nowhere else (a later nest of
    # a chain tests flags an earlier nest's early exit proved to be set per whole warp)
    flag_names, configs = {}, [frozenset()]
    if wrap is not None:
        done = C.wrap_flag(wrap)
        if ctx.flags.get(done) != (R, W) or not _idx_ok(mach0, wrap.cond.operand.index, ty, lane, R, W):
            refuse(f"'{S._text(wrap.cond)}'{S._line(wrap)} does not test flags that an earlier early exit of "
                   f"this block set per whole warp of {W} lanes", wrap)
        flag_names[done] = None
        configs = [frozenset(w for w, out in enumerate(bits) if out) for bits in product((0, 1), repeat=R)]
    if guard is not None:
        done = _body(guard.then)[0].target.base.name
        dd = decls.get(done)
        if dd is None or not isinstance(dd.type, N.Array) or not any(x is dd for x in stmts[:i]):
            refuse(f"'{done}' is not a local array declared in this block", guard)
        writes = [n for n in walk(u.func.body) if isinstance(n, (N.Assign, N.AssignExpr))
                  and isinstance(n.target, N.Index) and _is_var(n.target.base, done)]
        zero = None
        for x in stmts[:i]:
            from .unthread import _single, _thread_loop, _const_int
            lp = _thread_loop(x)
            b = _single(lp.body) if lp is not None else None
            if lp is not None and _const_int(lp.hi, u.macros) == R * W and isinstance(b, N.Assign) \
                    and b.op == "=" and isinstance(b.target, N.Index) and _is_var(b.target.base, done) \
                    and _is_var(b.target.index, lp.var) and _const_num(b.value) == 0:
                zero = b
        if zero is None or len(writes) != 2 or not any(w is zero for w in writes) \
                or any(isinstance(n, N.UnOp) and n.op in ("&", "++", "--", "p++", "p--")
                       and isinstance(n.operand, (N.Var, N.Index)) and done in vars_used(n.operand)
                       for n in walk(u.func.body)):
            refuse(f"'{done}' must be set to 0 by one thread loop over {R * W} before and written nowhere "
                   "but the early exit", guard)
        if done in vars_used(c) or any(done in vars_used(x) for x in prefix if x is not guard):
            refuse(f"'{done}' is read by the partial's loop or declarations", c)
        flag_names[done] = None
        configs = [frozenset(w for w, out in enumerate(bits) if out) for bits in product((0, 1), repeat=R)]
    configs.sort(key=len)             # the set where no warp leaves first: it fixes the region's end

    def machine(gone):
        fl = {}
        for name in flag_names:
            fl[name] = {t: int(t // W in gone) for t in range(R * W)}
        mach = _Machine(op, ints, decls, u.macros, d.type.elem.dtype, flags=fl)
        mach.arrays[A] = {t: S.Val(Counter({t: 1})) for t in range(R * W) if t // W not in gone}
        return mach
    # run the region (its end: where the run with every warp staying stops)
    mach = machine(configs[0])
    j = i + 1
    while j < len(stmts):
        x = stmts[j]
        if not isinstance(x, N.Comment):
            saved = (S._copy_state(mach), mach.stored_top)
            try:
                mach.run(x, [{}])
            except S.Refuse:
                S._restore(mach, saved)
                break
            if mach.stored_top is not None or mach.scalars:
                S._restore(mach, saved)
                break
        j += 1
    end = j
    if end == i + 1 or end >= len(stmts):
        refuse("the partials are not combined by an exchange followed by a thread nest that reads them")
    region = stmts[i + 1:end]
    results = {configs[0]: mach}
    for g in configs[1:]:
        mg = machine(g)
        try:
            for x in region:
                mg.run(x, [{}])
        except S.Refuse as r:
            refuse(f"with warps {sorted(g)} leaving early the exchange does not run here: {r.why}")
        if mg.stored_top is not None or mg.scalars:
            refuse(f"with warps {sorted(g)} leaving early the exchange stores {mg.stored_top or 'a scalar'}")
        results[g] = mg
    scratch = set().union(*(m.written for m in results.values())) - {A}
    for name in scratch:
        if any(name in vars_used(x) for x in stmts[:i] if not (isinstance(x, N.Decl) and x.name == name)):
            refuse(f"'{name}' is written by the exchange and used before it", stmts[end])
        if not any(isinstance(x, N.Decl) and x.name == name for x in stmts[:i]):
            refuse(f"'{name}' (written by the exchange) is not declared in this block", stmts[end])
    # every read after the region of what it wrote (until written again) must be the row's fold
    # (replaced by A_row[ty]); of a store, the lane's own element (replaced by st_row[ty])
    acc = u._hoist_name(A + "_acc", o)
    row = u._hoist_name(A + "_row", o)
    rows = {name: row for name in scratch | {A}}
    folds = {name: (lambda mg, k, a, b, name=name: None if _row_full(mg.arrays.get(name, {}).get(k), a, W, op,
                                                                        init_consts)
                    else "not the fold of warp {}'s {} partials ({})".format(
                        a, W, _describe_row(mg.arrays.get(name, {}).get(k), a, W, op, init_consts)))
             for name in scratch | {A}}
    owns = {st: (lambda mg, k, a, b: None if k == a * W + b else f"not the lane's own element {a * W + b}")
            for st in stores}
    rest = C.prove_reads(u, stmts[end:], {**folds, **owns}, {**rows, **srows}, R, W, results, refuse)
    # the rewrite
    elem = d.type.elem

    def to_rows(n):
        if isinstance(n, N.Index) and _is_var(n.base, A) and S._text(n.index) == S._text(first.target.index):
            return N.Var(acc)
        return st_rows(n)
    cnew = c.with_(lo=U.C(0), step=U.C(1), body=rewrite(c.body, to_rows))
    body = []
    if guard is not None:
        body.append(il.with_(body=N.Block(tuple(pre) + (guard,))))
        body += list(pre) + [N.If(guard.cond, N.Block((N.Continue(),)))]
    rest_row = [rewrite(x, to_rows) for x in post] + [N.Decl(acc, elem, init), cnew,
                                                       N.Assign(N.Index(N.Var(row), N.Var(ty)), "=", N.Var(acc))]
    # a pointer declared again elsewhere in the kernel (the tail's 'xr') gets its own name in the row
    # loop: a renaming of a local, for tensorize's buffer facts, which skip names declared twice
    declared = Counter(n.name for n in walk(u.func.body) if isinstance(n, N.Decl))
    for k, x in enumerate(rest_row):
        if isinstance(x, N.Decl) and isinstance(x.type, N.Pointer) and declared[x.name] > 1:
            nm = _fresh(u, x.name + "_r")
            after = substitute(N.Block(tuple(rest_row[k + 1:])), {x.name: N.Var(nm)})
            rest_row = rest_row[:k] + [x.with_(name=nm)] + list(after.stmts)
    if wrap is not None:
        w0 = N.Index(N.Var(C.wrap_flag(wrap)), N.BinOp("*", N.Var(ty), U.C(W)))
        body.append(N.If(N.UnOp("!", w0), N.Block(tuple(rest_row))))
    else:
        body += rest_row
    new_nest = o.with_(body=N.Block(tuple(body)))
    if ctx.start is None:
        ctx.start = new_nest
    if guard is not None:
        ctx.first = (new_nest, _body(guard.then)[0].target.base.name, W)
    else:
        ctx.later.append(new_nest)
    head = []
    for x in stmts[:i]:
        if x is d:
            head.append(N.Decl(row, N.Array(elem, (U.C(R),))))
            continue
        if isinstance(x, N.Decl) and x.name in stores:
            head.append(N.Decl(srows[x.name], N.Array(x.type.elem, (U.C(R),))))
            ctx.gone.add(x.name)
            continue
        head.append(x)
    ctx.gone |= scratch | {A}
    if guard is not None:
        ctx.flags[_body(guard.then)[0].target.base.name] = (R, W)
    ctx.rows += 1
    u.new_loops.append((c.var, {acc}, c))
    u.changed = True
    return head + [new_nest] + rest, len(head) + 1
