"""Lane loops to flat element loops: the normalization a detensorized vector kernel needs before
the BANG passes (a plan step like ``untile``; ``xpiler/migration/pipeline.py``, c -> bang).

A detensorized AVX-512 kernel walks its data in vectors: a loop ``v`` whose body fills lane
arrays ``va[16]`` through lane loops ``l < 16`` and stores through another lane loop. The BANG
cache and tensorize passes stage and vectorize a loop over elements (``c[i] = a[i] + b[i]``), not
``v`` with its lane arrays. This step applies, in turn and each as often as it applies (at most
:data:`MAX_STEPS` times):

1. ``fuse(loop=l)`` on lane loops (``for (l = 0; l < L; ++l)``, constant ``L <= 64``): adjacent
   lane loops with equal bounds become one (the fuse pass's Z3 dependence check);
2. ``contraction(array=va)`` on lane arrays (a 1-d local of constant length <= 64): the array
   becomes a scalar of each lane (the contraction pass's checks);
3. ``fuse(mode="collapse", loop=v)``: ``v`` and the lane loop inside it become one loop over
   ``v*L + l`` (``passes/collapse.py``: bijection by exact rules, no carried dependence by Z3).

From cuda / hip (after loop recovery) the same step first turns short vectors into lanes
(:func:`vectors_to_lanes`: ``float4`` locals loaded and stored whole through pointers cast from
their element type, used otherwise by component only); ``vectors=True`` refuses (XP4002) a
kernel without such vectors, so the plan that carries it is skipped for every other kernel.

Every rewrite is the named pass's own ``apply``, which runs that pass's legality check; a
candidate the pass refuses is skipped. The sub-steps are the ones the tuner's lane route offers
for c -> cuda / hip (``xpiler/schedule/routes_lanes.py``, which logs them one by one); here the
plan logs the whole normalization as one step, and ``xpiler replay`` re-derives it by running
this step again (it is deterministic: candidates are taken in the passes' own order).

With ``rows=True`` (c -> cuda / hip: the c row plan tried after the plain one,
``pipeline.row_plans``) the step serves a row kernel whose reductions run in lane arrays and whose
vector loops end in masked tails (softmax_avx512.c), see :func:`flatten_rows`: each helper the
kernel calls has its own lane loops fused first (small function, cheap checks), the helpers that
detensorize made pointer helpers are inlined and their blocks spliced, the lane loops fused,
lane arrays contracted, lane accumulators made scalars (passes/lane_accumulators.py), and each
vector loop joined with its masked tail into one element loop (``lowering/chunk_tail.join_masked``,
whose module text gives the argument for each rewrite). The result is one plain loop per phase,
which ``binding(rows="block")`` binds one block per row. Its cost is bounded: fusions walk the
lane loops in order and check each adjacent pair once with the fuse pass's own check
(:func:`fuse_lane_runs`, at most :data:`MAX_ROW_STEPS` checks; the fuse candidates list would
check every loop again after each fusion, which cost minutes under load, docs/decisions.md
2026-12-05), contractions run in at most four rounds, and a shape test (:func:`has_masked_tail`)
refuses every kernel without a stepped vector loop and a masked tail before any fusion.

Parameters: ``entry``, ``vectors``, ``rows``. Refusals: XP4002 when no loop collapses (the program has no lane loop
under a vector loop, so there is nothing to flatten: the plan without this step follows); with
``rows=True``, XP4002 when the shape test fails or no vector loop joins with its tail.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .base import PassError, get
from . import dependence as D

NAME = "flatten_lanes"
#: a lane loop runs 0 .. L by 1 with a constant L up to this (AVX-512: 16 floats, 64 int8)
MAX_LANES = 64
#: at most this many rewrites of one kind (a bound on the walk)
MAX_STEPS = 32
#: the bound on fuse checks per function for a row kernel (rows=True): softmax_avx512.c takes 19
#: in its exp helper and 11 in its body; a kernel that needs more is refused (its tails do not join)
MAX_ROW_STEPS = 64
#: the bound on fuse checks per function in the element-loop flattening (MAX_STEPS fusions, each
#: with up to three refused pairs before it)
MAX_FUSE_CHECKS = 4 * MAX_STEPS


def _const(e):
    return e.value if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


def is_lane_loop(lp) -> bool:
    """A loop over the lanes of one vector: ``for (l = 0; l < L; ++l)``, ``L`` constant, unbound."""
    hi = _const(lp.hi)
    return (isinstance(lp, N.For) and lp.binding is None and lp.cmp == "<" and _const(lp.lo) == 0
            and _const(lp.step) == 1 and hi is not None and 0 < hi <= MAX_LANES)


def is_lane_array(fn, name: str) -> bool:
    """``name`` is declared in ``fn`` as a 1-d local array of constant length <= MAX_LANES."""
    return any(isinstance(d, N.Decl) and d.name == name and isinstance(d.type, N.Array) and len(d.type.dims) == 1
               and 0 < (_const(d.type.dims[0]) or 0) <= MAX_LANES for d in walk(fn.body))


def _candidates(program, entry: str, kind: str) -> list:
    from . import collapse as C
    if kind == "collapse":
        return [c for c in C.candidates(program) if c["entry"] == entry]
    return [c for c in get(kind).candidates(program, "c") if c.get("entry", entry) == entry]


def _picks(fn, kind: str, params: dict) -> bool:
    if kind == "fuse":
        first = D.find_loop(fn, params["loop"])
        return first is not None and is_lane_loop(first)
    if kind == "contraction":
        return is_lane_array(fn, params["array"])
    return True


# ------------------------------------------------------------------ short vectors -> lane arrays
COMPONENTS = ("x", "y", "z", "w")


def _vector_pointers(fn) -> dict | None:
    """{p4: (q, n)} for each local ``const float4* p4 = (const float4*)q;`` (``q`` a pointer to the
    vector's element type, ``p4`` never assigned); None when a vector pointer is made otherwise."""
    decls = {d.name: d for d in walk(fn) if isinstance(d, N.Decl)}
    decls.update({p.name: p for p in fn.params})
    assigned = D.assigned_names(fn.body)
    out = {}
    for d in walk(fn.body):
        if not (isinstance(d, N.Decl) and isinstance(d.type, N.Pointer) and isinstance(d.type.elem, N.Vector)):
            continue
        v = d.type.elem
        init = d.init
        q = init.expr if isinstance(init, N.Cast) else None
        qd = decls.get(q.name) if isinstance(q, N.Var) else None
        qt = getattr(qd, "type", None)
        if (q is None or d.name in assigned or not isinstance(qt, N.Pointer) or not isinstance(qt.elem, N.Scalar)
                or qt.elem.dtype != v.elem.dtype or q.name in assigned):
            return None
        out[d.name] = (q.name, v.n)
    return out


def _vref(base, vptrs: dict, fn) -> tuple | None:
    """``(q, n)`` when ``base`` (the base of ``base[e]``) names ``n`` floats of ``q`` per index:
    a vector pointer of ``vptrs`` or an inline cast ``((const float4*)q)`` /
    ``reinterpret_cast<const float4*>(q)`` of a pointer ``q`` to the element type, never assigned."""
    if isinstance(base, N.Var):
        return vptrs.get(base.name)
    if not (isinstance(base, N.Cast) and isinstance(base.type, N.Pointer) and isinstance(base.type.elem, N.Vector)
            and isinstance(base.expr, N.Var)):
        return None
    q, v = base.expr.name, base.type.elem
    decls = {d.name: d for d in walk(fn) if isinstance(d, N.Decl)}
    decls.update({p.name: p for p in fn.params})
    qt = getattr(decls.get(q), "type", None)
    if (not isinstance(qt, N.Pointer) or not isinstance(qt.elem, N.Scalar) or qt.elem.dtype != v.elem.dtype
            or q in D.assigned_names(fn.body)):
        return None
    return q, v.n


def _plain_index(e) -> bool:
    """``e`` reads no memory, calls nothing and assigns nothing: the lane loop may evaluate it once
    per lane instead of once."""
    return not any(isinstance(n, (N.Index, N.Member, N.Call, N.Intrinsic, N.AssignExpr))
                   or isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "*", "&") for n in walk(e))


def _vector_locals(fn) -> dict:
    """{name: Decl} of local short-vector variables (``float4 va``)."""
    return {d.name: d for d in walk(fn.body) if isinstance(d, N.Decl) and isinstance(d.type, N.Vector)
            and d.scope == "local" and 1 < d.type.n <= len(COMPONENTS)}


def _uses_ok(fn, vptrs: dict, vecs: dict) -> bool:
    """Vector pointers are used only as ``p4[e]`` loaded whole into a vector local or stored whole
    from one; vector locals only by component (``va.x``), so loaded, and so stored."""
    allowed = set()        # ids of the Var nodes whose use is one of the forms above
    for n in walk(fn.body):
        if isinstance(n, N.Decl) and n.name in vecs and n.init is not None:
            ref = _vref(n.init.base, vptrs, fn) if isinstance(n.init, N.Index) else None
            if ref is None or ref[1] != n.type.n or not _plain_index(n.init.index):
                return False
            allowed.add(id(n.init.base))
        ref = _vref(n.target.base, vptrs, fn) if isinstance(n, N.Assign) and isinstance(n.target, N.Index) else None
        if ref is not None:
            if not (n.op == "=" and isinstance(n.value, N.Var) and n.value.name in vecs
                    and vecs[n.value.name].type.n == ref[1] and _plain_index(n.target.index)):
                return False
            allowed |= {id(n.target.base), id(n.value)}
        elif isinstance(n, N.Assign) and isinstance(n.target, N.Var) and n.target.name in vecs:
            return False
        if isinstance(n, N.Member) and isinstance(n.base, N.Var) and n.base.name in vecs:
            if n.arrow or n.field not in COMPONENTS[:vecs[n.base.name].type.n]:
                return False
            allowed.add(id(n.base))
    return all(id(n) in allowed for n in walk(fn.body) if isinstance(n, N.Var) and n.name in set(vptrs) | set(vecs))


def _c(v: int) -> N.Const:
    return N.Const(v, "int32", str(v))


def _lane_loop(var: str, n: int, stmt) -> N.For:
    return N.For(var, _c(0), _c(n), _c(1), N.Block((stmt,)), var_type=N.Scalar("int32", "int"),
                 loc=getattr(stmt, "loc", None))


def _component_of(s, vecs) -> int | None:
    """The one component index every vector access of ``s`` names, or None."""
    ks = {COMPONENTS.index(n.field) for n in walk(s)
          if isinstance(n, N.Member) and isinstance(n.base, N.Var) and n.base.name in vecs}
    return ks.pop() if len(ks) == 1 else None


def _template(s, vecs, lane) -> object:
    from xpiler.ir.visit import rewrite
    return rewrite(s, lambda n: N.Index(N.Var(n.base.name), lane) if isinstance(n, N.Member)
                   and isinstance(n.base, N.Var) and n.base.name in vecs else n)


def vectors_to_lanes(program: N.Program, entry: str) -> N.Program | None:
    """Short vectors (``float4``) read and written through a cast pointer become lane arrays and
    lane loops (None when the function has none, or uses one another way)::

        float4 va = a4[i];            ->  float va[4]; for (l = 0; l < 4; ++l) va[l] = a[4 * i + l];
        vc.x = va.x + vb.x; ... .w    ->  for (l = 0; l < 4; ++l) vc[l] = va[l] + vb[l];
        c4[i] = vc;                   ->  for (l = 0; l < 4; ++l) c[4 * i + l] = vc[l];

    ``a4 = (const float4*)a`` reads the same ``n`` consecutive elements of ``a``, in the same
    order, as the lane loop (the index ``i`` must read no memory, call nothing and assign nothing,
    since the lane loop evaluates it once per lane); a run of ``n`` statements is made one lane loop only when statement
    ``k`` names component ``k`` alone and all ``n`` are the same statement of the component index."""
    from xpiler.ir.visit import rewrite
    from .patterns.common import fresh, replace_func
    fn = program.func(entry)
    if fn.body is None:
        return None
    vptrs, vecs = _vector_pointers(fn), _vector_locals(fn)
    if vptrs is None or not vecs or not _uses_ok(fn, vptrs, vecs):
        return None
    names = []

    def lane_var():
        base = fresh(fn, "xfl_l")
        k = len(names) + 1
        while f"{base}{k}" in names or fresh(fn, f"{base}{k}") != f"{base}{k}":
            k += 1
        names.append(f"{base}{k}")
        return names[-1]

    def elem(base, e, lane):
        q, n = _vref(base, vptrs, fn)
        return N.Index(N.Var(q), N.BinOp("+", N.BinOp("*", _c(n), e), lane))

    def block(b):
        if not isinstance(b, N.Block):
            return b
        out, stmts, k = [], list(b.stmts), 0
        while k < len(stmts):
            s = stmts[k]
            if isinstance(s, N.Decl) and s.name in vecs:
                n = s.type.n
                out.append(N.Decl(s.name, N.Array(s.type.elem, (_c(n),)), loc=s.loc))
                if s.init is not None:
                    lv = lane_var()
                    out.append(_lane_loop(lv, n, N.Assign(N.Index(N.Var(s.name), N.Var(lv)), "=",
                                                          elem(s.init.base, s.init.index, N.Var(lv)), loc=s.loc)))
                k += 1
                continue
            if isinstance(s, N.Assign) and isinstance(s.target, N.Index) and _vref(s.target.base, vptrs, fn):
                lv = lane_var()
                n = _vref(s.target.base, vptrs, fn)[1]
                out.append(_lane_loop(lv, n, N.Assign(elem(s.target.base, s.target.index, N.Var(lv)), "=",
                                                      N.Index(N.Var(s.value.name), N.Var(lv)), loc=s.loc)))
                k += 1
                continue
            c0 = _component_of(s, vecs) if isinstance(s, N.Assign) else None
            if c0 == 0:
                # a run of n statements, statement j naming component j only, all one template
                n = min(vecs[x.base.name].type.n for x in walk(s) if isinstance(x, N.Member)
                        and isinstance(x.base, N.Var) and x.base.name in vecs)
                run = stmts[k:k + n]
                probe = N.Var("__xfl_lane")
                if (len(run) == n and all(isinstance(r, N.Assign) and _component_of(r, vecs) == j
                                          for j, r in enumerate(run))
                        and all(_template(r, vecs, probe) == _template(s, vecs, probe) for r in run)):
                    lv = lane_var()
                    out.append(_lane_loop(lv, n, _template(s, vecs, N.Var(lv))))
                    k += n
                    continue
            out.append(s)
            k += 1
        return b.with_(stmts=tuple(out))

    body = rewrite(fn.body, block)
    # a component read or written outside a run: the lane array's element
    body = rewrite(body, lambda n: N.Index(N.Var(n.base.name), _c(COMPONENTS.index(n.field)))
                   if isinstance(n, N.Member) and isinstance(n.base, N.Var) and n.base.name in vecs else n)
    # the vector pointers are no longer read
    body = rewrite(body, lambda b: b.with_(stmts=tuple(x for x in b.stmts if not (
        isinstance(x, N.Decl) and x.name in vptrs))) if isinstance(b, N.Block) else b)
    return replace_func(program, fn, fn.with_(body=body))


# ------------------------------------------------------------------ row kernels (rows=True)
def splice_nested(fn: N.Func) -> N.Func:
    """``fn`` with each plain ``{ ... }`` statement block, at any depth, replaced by its statements
    when no name it declares directly is a parameter or appears anywhere in ``fn`` outside it
    (the rule of ``binding.splice_blocks``, which splices the top level only): an inlined helper
    leaves its lane loops in such blocks, where the fuse pass does not see them as neighbours."""
    params = {p.name for p in fn.params}
    while True:
        done = []

        def blk(b):
            if done or not isinstance(b, N.Block):
                return b
            out = []
            for s in b.stmts:
                if type(s) is N.Block and not done:
                    own = {d.name for d in s.stmts if isinstance(d, N.Decl)}
                    inside = {id(x) for x in walk(s)}
                    rest = {x.var if isinstance(x, N.For) else x.name for x in walk(fn.body)
                            if id(x) not in inside and isinstance(x, (N.Var, N.Decl, N.For))}
                    if not own & (params | rest):
                        out.extend(s.stmts)
                        done.append(s)
                        continue
                out.append(s)
            return b.with_(stmts=tuple(out))
        from xpiler.ir.visit import rewrite
        body = rewrite(fn.body, blk)
        if not done:
            return fn
        fn = fn.with_(body=body)


def has_masked_tail(fn: N.Func) -> bool:
    """A cheap test of the form :func:`flatten_rows` joins, before its costlier steps: a loop with
    a step other than 1 that holds a lane loop (a vector loop), and an ``if`` without ``else`` that
    holds one (its masked tail), both somewhere in ``fn``."""
    if fn.body is None:
        return False
    def holds_lanes(s):
        return any(isinstance(n, N.For) and is_lane_loop(n) for n in walk(s))
    vector = any(isinstance(n, N.For) and _const(n.step) != 1 and holds_lanes(n.body) for n in walk(fn.body))
    tail = any(isinstance(n, N.If) and n.else_ is None and holds_lanes(n.then) for n in walk(fn.body))
    return vector and tail


def flatten_rows(program: N.Program, entry: str) -> tuple[N.Program, list]:
    """A detensorized row kernel whose reductions run in lane arrays and whose vector loops end
    in masked tails (softmax_avx512.c), made element loops: the helpers the kernel calls on lane
    arrays inlined (``inline_helpers.prepare_source``: detensorize made them pointer helpers) and
    their blocks spliced; the lane fusions and contractions; each lane accumulator made one
    scalar (``contraction(mode="lanes")``, passes/lane_accumulators.py); each chunk loop and its
    masked tail joined into one loop (``lowering/chunk_tail.join_masked``)."""
    from .inline_helpers import prepare_source
    from .lowering.chunk_tail import join_masked
    from .lowering.common import Names
    from .patterns.common import replace_func
    from . import lane_accumulators as LA
    done = []
    # the helpers' own lane loops are fused in the helper first, where each check sees a small
    # function, so that each call inlines one lane loop instead of one per statement
    called = {n.func for n in walk(program.func(entry).body) if isinstance(n, N.Call) and isinstance(n.func, str)}
    for h in [f for f in program.funcs if f.name in called and f.name != entry and f.body is not None]:
        program = replace_func(program, h, splice_nested(h))
        program, more = fuse_lane_runs(program, h.name)
        done += more
    inl = prepare_source(program, entry)
    if inl is not program:
        program = inl
        done.append(("inline", {"entry": entry}))
    fn = program.func(entry)
    program = replace_func(program, fn, splice_nested(fn))
    # an inlined helper brings a lane loop per statement (twice, for a loop and its tail)
    program, more = fuse_lane_runs(program, entry)
    done += more
    program, more = _contract_rounds(program, entry, lambda p: [
        c for c in get("contraction").candidates(p, "c") if c.get("entry", entry) == entry
        and is_lane_array(p.func(entry), c["array"])], "contraction")
    done += more
    program, more = _contract_rounds(program, entry, lambda p: [
        c for c in LA.candidates(p) if c["entry"] == entry], "contraction")
    done += more
    fn = program.func(entry)
    body, joined = join_masked(fn, fn.body, Names(program), getattr(program, "macros", ()))
    if joined:
        program = replace_func(program, fn, fn.with_(body=body))
        done.append(("join_masked", {"entry": entry, "pairs": joined}))
    return program, done


def fuse_lane_runs(program: N.Program, entry: str, budget: int = MAX_ROW_STEPS) -> tuple[N.Program, list]:
    """Adjacent lane loops of ``entry`` fused, each by the fuse pass's own check
    (``fuse.check_fuse``: same bounds, Z3 dependence test) and rewrite, walking the lane loops in
    order and trying each one with the loop after it. A pair that was refused is not tried again
    (neither loop changes until a fusion renames the first), so a walk makes at most one check per
    fusion made plus one per pair refused, never more than ``budget`` checks in all: the cost is
    linear in the number of lane loops (the candidates list of the pass would check every loop of
    the function again after each fusion)."""
    from . import fuse as F
    done, refused, checks = [], set(), 0
    while checks < budget:
        fn = program.func(entry)
        fused = False
        for lp in [n for n in walk(fn.body) if isinstance(n, N.For) and is_lane_loop(n)]:
            try:
                nxt = F.next_loop(fn, lp)
            except PassError:
                continue
            if (lp.var, nxt.var) in refused or not is_lane_loop(nxt):
                continue
            if checks >= budget:
                break
            checks += 1
            try:
                F.check_fuse(program, fn, lp, nxt)
            except PassError:
                refused.add((lp.var, nxt.var))
                continue
            ref = D.loop_ref(fn, lp)
            program = F.fuse(program, fn, lp, nxt)
            done.append(("fuse", {"entry": entry, "loop": ref}))
            fused = True
            break
        if not fused:
            break
    return program, done


def _contract_rounds(program, entry, cands, name: str, rounds: int = 4) -> tuple[N.Program, list]:
    """Each candidate of ``cands(program)`` applied in turn by the pass ``name`` (its own check;
    a refused one is skipped), the list taken again after a round that applied one, at most
    ``rounds`` rounds (a contraction can make another array contractible)."""
    done = []
    for _ in range(rounds):
        applied = False
        for params in cands(program):
            try:
                program = get(name).apply(program, **params)
            except PassError:
                continue
            done.append((name, dict(params)))
            applied = True
        if not applied:
            break
    return program, done


def _lane_steps(program, entry, kinds, bound: int = MAX_STEPS) -> tuple:
    done = []
    for kind in kinds:
        for _ in range(bound):
            fn = program.func(entry)
            for params in _candidates(program, entry, kind):
                if not _picks(fn, kind, params):
                    continue
                try:
                    program = get("fuse" if kind == "collapse" else kind).apply(program, **params)
                except PassError:
                    continue
                done.append(("fuse" if kind == "collapse" else kind, dict(params)))
                break
            else:
                break
    return program, done


def flatten(program: N.Program, entry: str) -> tuple[N.Program, list]:
    """The program after the lane fusions, contractions and collapses, and the ``(pass, params)``
    applied, in order."""
    done = []
    vec = vectors_to_lanes(program, entry)
    if vec is not None:
        program = vec
        done.append(("vectors_to_lanes", {"entry": entry}))
    # the lane fusions by the linear walk (fuse_lane_runs), not by the fuse pass's candidates list,
    # which checks every loop pair of every function after each fusion: on a large detensorized
    # function (an int8 c output's VNNI path, ~1000 lines) that list ran for minutes
    program, fused = fuse_lane_runs(program, entry, budget=MAX_FUSE_CHECKS)
    program, more = _lane_steps(program, entry, ("contraction", "collapse"))
    return program, done + fused + more


#: the last few row flattenings, by (program, entry): the driver first probes a plan (its passes
#: applied without tests) and then runs it, so the same program comes twice; the step is a
#: function of the program (programs are immutable values, compared by value)
_ROWS_MEMO: dict = {}


def check(program: N.Program, *, entry: str, vectors: bool = False, rows: bool = False, **_) -> None:
    apply(program, entry=entry, vectors=vectors, rows=rows)


def apply(program: N.Program, *, entry: str, vectors: bool = False, rows: bool = False, **_) -> N.Program:
    try:
        program.func(entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}'", None, "XP4002")
    if rows:
        if not has_masked_tail(program.func(entry)):
            raise PassError(NAME, f"'{entry}' has no vector loop over lane loops followed by a masked tail "
                                  f"(if (...) around a lane loop)", None, "XP4002")
        key = (program, entry)
        if key not in _ROWS_MEMO:
            while len(_ROWS_MEMO) >= 4:
                _ROWS_MEMO.pop(next(iter(_ROWS_MEMO)))
            _ROWS_MEMO[key] = flatten_rows(program, entry)
        out, done = _ROWS_MEMO[key]
        if not any(name == "join_masked" for name, _ in done):
            raise PassError(NAME, f"no vector loop of '{entry}' and its masked tail join into one element loop",
                            None, "XP4002")
        return out
    out, done = flatten(program, entry)
    if vectors and not any(name == "vectors_to_lanes" for name, _ in done):
        raise PassError(NAME, f"'{entry}' reads and writes no short vectors (float4) through cast pointers",
                        None, "XP4002")
    if not any(p.get("mode") == "collapse" for _, p in done):
        raise PassError(NAME, f"no vector loop of '{entry}' with a lane loop inside collapses to a flat loop",
                        None, "XP4002")
    return out


def candidates(program: N.Program, target: str) -> list[dict]:
    return []
