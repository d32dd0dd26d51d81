"""The tuner's route for lane loops (c -> cuda / hip): fuse, contract, collapse, then bind.

A detensorized AVX-512 kernel (and C written the same way) walks its data in vectors: each
iteration of a loop ``v`` handles ``L`` contiguous elements through lane loops ``l < L`` and a
lane array ``xv[L]``. Bound as it stands, each GPU thread owns ``L`` contiguous elements: adjacent
threads are ``L`` elements apart (uncoalesced), each keeps a per-thread array, and the launch has
``L`` times fewer threads than elements. The flat form (one element per thread of a grid-stride
loop) is reached by real passes, each checked by its own legality check and logged as its own
``pass`` event:

1. ``fuse(loop=l1)``: adjacent lane loops with the same bounds become one (Z3 dependence check);
2. ``contraction(array=xv[, loop=...])``: the lane array becomes a scalar of each lane;
3. ``fuse(mode="collapse", loop=v)``: ``v`` and its lane loop become one loop over ``v*L + l``
   (``passes/collapse.py``: bijection by exact rules, no carried dependence by Z3);
4. ``binding``: each of its alternatives for the flattened program (block size x grid cap; the
   grid is sized from the flat trip count, i.e. from the problem).

A second route serves row kernels whose reductions run in lane arrays (softmax_avx512.c: a
``vmax[16]`` / ``vsum[16]`` accumulator reduced horizontally after its column loop), which
``binding(rows="block")`` refuses as local arrays of the row body:

1. the lane fusions and contractions of steps 1-2 above (the update through a temporary lane
   array becomes ``acc[l] = acc[l] OP f``);
2. ``contraction(mode="lanes", array=acc)`` for each such accumulator (passes/lane_accumulators.py:
   one scalar reduction, the horizontal reduction gone);
3. ``guard_loops`` when an ``if`` around loops (a masked tail) is a statement of the row body
   (passes/guard_loops.py: the guard becomes a loop bound);
4. any ``fuse(mode="collapse")`` that applies (none when the column loops step by ``L``);
5. each binding alternative of the result (``rows="block"`` among them).

The search root of a c source going to cuda or hip is the loop program binding started from
(``start`` of ``MCTSStrategy``), so the route is offered there, before binding; steps 1-3 stay in c.
Each binding alternative is one ``sequence`` step of the search (as ``through_loops`` is for
cuda <-> hip), so every child of the root is a program in the target dialect; the log records
the passes one by one and ``xpiler replay`` re-derives the kernel from them.
"""
from __future__ import annotations

from xpiler.ir import nodes as N

# lane loops and lane arrays are recognised as the c -> bang plan's step does (passes/flatten_lanes.py)
from xpiler.passes.flatten_lanes import MAX_LANES, MAX_STEPS, is_lane_array as _lane_array, is_lane_loop  # noqa: F401

from .step import Step, apply_step

SIMT = ("cuda", "hip")


def _next(cur, ctx, pass_name: str, pick):
    """Apply the first candidate of ``pass_name`` that ``pick`` accepts and the pass applies;
    ``(step, stage)`` or None."""
    from xpiler.passes import collapse as C
    from xpiler.passes.base import PassError, get
    fn = cur.program.func(cur.entry)
    if pass_name == "collapse":
        cands = [c for c in C.candidates(cur.program) if c["entry"] == cur.entry]
        name = "fuse"
    else:
        try:
            cands = [c for c in get(pass_name).candidates(cur.program, "c") if c.get("entry", cur.entry) == cur.entry]
        except Exception:
            return None
        name = pass_name
    for params in cands:
        if not pick(fn, params):
            continue
        step = Step(name, dict(params), "search")
        try:
            return step, apply_step(step, cur, ctx)
        except PassError:
            continue
        except Exception:      # a pass bug on a candidate drops that candidate, never the route
            continue
    return None


def flatten_lanes(st, ctx) -> tuple[list, object] | None:
    """The c-form steps of the route (fusions, contractions, collapses) from the loop program
    ``st`` and the program they make; None when no loop collapses (the route would gain
    nothing)."""
    from xpiler.passes import dependence as D
    steps, cur = [], st

    def lane_fuse(fn, p):
        first = D.find_loop(fn, p["loop"])
        return first is not None and is_lane_loop(first)

    def lane_contract(fn, p):
        return _lane_array(fn, p["array"])

    collapsed = False
    for pass_name, pick in (("fuse", lane_fuse), ("contraction", lane_contract), ("collapse", lambda fn, p: True)):
        for _ in range(MAX_STEPS):
            got = _next(cur, ctx, pass_name, pick)
            if got is None:
                break
            steps.append(got[0])
            cur = got[1]
            collapsed |= pass_name == "collapse"
    return (steps, cur) if collapsed else None


def _accumulators(cur, ctx):
    """``contraction(mode="lanes")`` on each lane accumulator of ``cur``: (steps, stage)."""
    from xpiler.passes import lane_accumulators as LA
    from xpiler.passes.base import PassError
    steps = []
    for _ in range(MAX_STEPS):
        cands = [c for c in LA.candidates(cur.program) if c["entry"] == cur.entry]
        for params in cands:
            step = Step("contraction", dict(params), "search")
            try:
                cur = apply_step(step, cur, ctx)
            except (PassError, Exception):
                continue
            steps.append(step)
            break
        else:
            break
    return steps, cur


def accumulate_lanes(st, ctx) -> tuple[list, object] | None:
    """The c-form steps of the accumulator route (lane fusions / contractions, lane accumulators
    to scalars, guards to loops, collapses) from ``st`` and the program they make; None when no
    lane accumulator becomes a scalar."""
    from xpiler.passes import dependence as D
    from xpiler.passes.base import PassError
    steps, cur = [], st

    def lane_fuse(fn, p):
        first = D.find_loop(fn, p["loop"])
        return first is not None and is_lane_loop(first)

    for pass_name, pick in (("fuse", lane_fuse), ("contraction", lambda fn, p: _lane_array(fn, p["array"]))):
        for _ in range(MAX_STEPS):
            got = _next(cur, ctx, pass_name, pick)
            if got is None:
                break
            steps.append(got[0])
            cur = got[1]
    acc_steps, cur = _accumulators(cur, ctx)
    if not acc_steps:
        return None
    steps += acc_steps
    fn = cur.program.func(cur.entry)
    for s in fn.body.stmts:
        if isinstance(s, N.For):
            step = Step("guard_loops", {"entry": cur.entry, "loop": s.var}, "search")
            try:
                cur = apply_step(step, cur, ctx)
                steps.append(step)
            except PassError:
                pass
            except Exception:
                pass
    for _ in range(MAX_STEPS):
        got = _next(cur, ctx, "collapse", lambda fn, p: True)
        if got is None:
            break
        steps.append(got[0])
        cur = got[1]
    return steps, cur


def accumulator_routes(st, target: str, ctx) -> list:
    """Search steps for the root ``st`` (c going to cuda / hip): one ``sequence`` step per binding
    alternative of the program :func:`accumulate_lanes` makes; empty when it makes none."""
    from .space import legal_steps
    from .tune import SEQUENCE
    if st.dialect != "c" or target not in SIMT:
        return []
    try:
        got = accumulate_lanes(st, ctx)
    except Exception:
        return []
    if got is None:
        return []
    prefix, cur = got
    return [Step(SEQUENCE, {"steps": [s.to_json() for s in prefix + [b]]}, "search")
            for b in legal_steps(cur.program, cur.entry, target, ("binding",))]


def lane_routes(st, target: str, ctx) -> list:
    """Both routes of this module for the root ``st`` (see the module text)."""
    out, seen = [], set()
    for s in _flat_routes(st, target, ctx) + accumulator_routes(st, target, ctx):
        if s.key not in seen:
            seen.add(s.key)
            out.append(s)
    return out


def _flat_routes(st, target: str, ctx) -> list:
    """Search steps for the root ``st`` of a c program going to cuda or hip: for each binding
    alternative of the flattened program, one ``sequence`` step (the route's passes, then that
    binding). Empty when the root is not such a program or nothing collapses."""
    from xpiler.passes import binding as B
    from xpiler.passes.base import PassError
    from .space import legal_steps
    from .tune import SEQUENCE
    if st.dialect != "c" or target not in SIMT:
        return []
    try:
        got = flatten_lanes(st, ctx)
    except Exception:
        return []
    if got is None:
        return []
    prefix, cur = got
    binds = legal_steps(cur.program, cur.entry, target, ("binding",))
    # the plan's own binding (loop chosen by binding, other top-level statements run once) for
    # each block size x grid cap, when it applies: a kernel with a masked tail has no other
    for b in B.BLOCK_SIZES:
        for cap in B.GRID_CAPS:
            params = {"target": target, "block": b, "grid_cap": cap}
            try:
                B.check(cur.program, entry=cur.entry, **params)
            except PassError:
                break
            except Exception:
                break
            binds.append(Step("binding", params, "search"))
    seen, out = set(), []
    for b in binds:
        if b.key in seen:
            continue
        seen.add(b.key)
        out.append(Step(SEQUENCE, {"steps": [s.to_json() for s in prefix + [b]]}, "search"))
    return out
