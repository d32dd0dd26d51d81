"""Tuning a verified kernel: MCTS over the target-dialect passes' steps, by latency.

The migration's plan gives a verified kernel in the target dialect (the untuned kernel). The
search starts there: every candidate is a program a legal step sequence makes from it; each is
tested like every migration step (a failing one gets reward 0 and is never built on) and, when it
verifies, timed. The chosen kernel is the fastest verified one; on hardware it is timed again next
to the untuned kernel (more repeats, same run) and kept only when it is still faster by
:data:`MIN_GAIN`, so a tuned output is never slower than its untuned form by what this run can
measure. Every evaluation is a ``tune`` event of the provenance log; the chosen steps are logged
as ordinary ``pass`` events (proposer ``search``), so ``xpiler replay`` re-derives the chosen
kernel by applying them, without searching again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .evaluator import Evaluation, Evaluator
from .mcts import MCTS, SearchResult
from .routes_tasks import recovery_start, retask_steps, task_route
from .space import TUNING_PASSES, legal_steps
from .step import Step, StepContext, apply_step
from .timing import MODEL, source_for

#: a tuned kernel replaces the untuned one only when it is at least this much faster
MIN_GAIN = 1.03
DEFAULT_MAX_EVALS = 60


@dataclass
class TuneOutcome:
    stage: object                    # the chosen stage (the untuned one when nothing was better)
    steps: list = field(default_factory=list)
    result: SearchResult | None = None
    source: str = ""
    untuned_ms: float | None = None
    tuned_ms: float | None = None
    note: str = ""


#: a search step that is several passes applied in turn (``params["steps"]``: their JSON); it
#: exists only inside the search: the log records its passes one by one
SEQUENCE = "sequence"
SIMT = ("cuda", "hip")


def sequence_steps(step: Step) -> list:
    return [Step.from_json(d) for d in step.params["steps"]]


def needs_concurrent_blocks(step: Step) -> bool:
    """A step whose program only a test with concurrent thread blocks checks fully: binding's
    ``rows="core"`` gives each block device-global slices that only their bounds keep apart, and a
    store past a slice (a source that overruns its NRAM buffer at a boundary size) lands in
    another block's. The SIMT emulator runs the blocks one after another and cannot see that, so
    the search offers it only where candidates are tested (and timed) on a GPU."""
    subs = sequence_steps(step) if step.pass_name == SEQUENCE else [step]
    return any(s.pass_name == "binding" and s.params.get("rows") == "core" for s in subs)


def through_loops(st, target: str, ctx) -> list:
    """cuda <-> hip: the retarget keeps the source's thread structure, and binding's alternatives
    from there are only retargets. The general plan's route (loop recovery, un-tiling, then
    binding the loops afresh) reaches the forms the target passes write for loops (the cache
    pass's register-blocked matmul, one block per row). Each binding alternative of that route is
    one search step: the passes up to it in turn, so that every child of the root is a program in
    the target dialect."""
    from xpiler.passes.base import PassError
    if st.dialect not in SIMT or target not in SIMT:
        return []
    prefix, cur = [], st
    for name in ("loop_recovery", "untile"):
        step = Step(name, {}, "search")
        try:
            cur = apply_step(step, cur, ctx)
            prefix.append(step)
        except PassError as e:
            if e.code != "XP4002":     # nothing to do is fine; a refusal ends this route
                return []
        except Exception:
            return []
    if not prefix or cur.dialect != "c":
        return []
    binds = legal_steps(cur.program, cur.entry, target, ("binding",))
    out = [Step(SEQUENCE, {"steps": [s.to_json() for s in prefix + [b]]}, "search") for b in binds]
    # a matmul bound afresh is one thread per row, which the model rates far below the tiled
    # source, so the search never expanded it (bmm.hip -> cuda); the cache pass's register tiles
    # after it are steps of their own, after the first binding that admits them (the cache pass
    # writes the body and the launch anew, so the other bindings give the same kernels)
    for b in binds:
        try:
            bound = apply_step(b, cur, ctx)
            tiles = [c for c in legal_steps(bound.program, bound.entry, target, ("cache",))
                     if c.params.get("thread_tile")]
        except Exception:
            continue
        if tiles:
            out += [Step(SEQUENCE, {"steps": [s.to_json() for s in prefix + [b, c]]}, "search") for c in tiles]
            break
    return out


def tune(stage, *, target: str, make_job, ctx: StepContext, budget_s: float, max_evals: int = DEFAULT_MAX_EVALS,
         seed: int = 0, log=None, say=lambda m: None, start=None, sizes: dict | None = None,
         log_test=None, pool=None, origin=None) -> TuneOutcome:
    """Search for a faster kernel than the verified, untuned ``stage``. ``make_job(stage, tag,
    source, sizes) -> CandidateJob`` packs a program with what its test needs
    (xpiler/schedule/jobs.py); ``log_test(stage, tag, verdict)`` records each test; ``pool`` runs
    the jobs (xpiler/schedule/pool.py: local threads or a Dask cluster), as many per round as it
    has workers. ``start``: the program the plan's binding step started from (not yet in the target
    dialect); the search then starts there, so that binding's parameters (loop, block size, grid
    cap; tasks on bang) are searched with the target passes' steps. The untuned kernel's latency is
    the baseline either way. ``origin``: the migration's source stage; from a BANG source the
    search starts where loop recovery did, so that the task count is searched too
    (routes_tasks.py)."""
    from .pool import LocalPool
    source = source_for(stage.dialect, stage.text)
    pool = pool or LocalPool(1)
    counter = [0]
    ev = Evaluator(lambda st, tag: make_job(st, tag, source, sizes), source, pool=pool, log_test=log_test)
    t0 = time.monotonic()
    root_eval = ev.evaluate(stage, "tune_root")
    emit = (lambda **kw: log.event("tune", **kw)) if log is not None else (lambda **kw: None)
    root = start if start is not None and start.dialect != target else stage
    bang_root = recovery_start(origin, root, ctx) if root is start else None
    if bang_root is not None:
        root, tail = bang_root
    emit(kind="start", program_hash=stage.hash, search_root=root.key, latency_source=source,
         root=root_eval.to_json(), budget_s=budget_s, max_evals=max_evals, seed=seed, pool=pool.label,
         **({"sizes": sizes} if sizes else {}))
    if not root_eval.verified or root_eval.latency_ms is None:
        why = root_eval.why or "the untuned kernel did not verify again"
        emit(kind="result", chosen=stage.hash, steps=[], note=f"not tuned: {why}")
        return TuneOutcome(stage, source=source, note=f"not tuned: {why}")

    def apply(st, step):
        from xpiler.passes.base import PassError
        try:
            if step.pass_name == SEQUENCE:
                for sub in sequence_steps(step):
                    st = apply_step(sub, st, ctx)
                return st
            return apply_step(step, st, ctx)
        except PassError:
            return None
        except Exception:   # a pass bug on a candidate drops that candidate, never the search
            return None

    def evaluate_many(states):
        tags = []
        for _ in states:
            counter[0] += 1
            tags.append(f"tune{counter[0]}")
        say(f"tuning: candidates {counter[0] - len(states) + 1}-{counter[0]}")
        return ev.evaluate_many(list(zip(states, tags)))

    def on_event(kind, node, parent, step, evaluation: Evaluation, evals):
        emit(kind=kind, program_hash=node, parent=parent, step=step.to_json(), evaluations=evals,
             **{k: v for k, v in evaluation.to_json().items() if k != "program_hash"})

    def expand(st):
        # before the target dialect only binding leads on; in it, the target passes
        steps = legal_steps(st.program, st.entry, target, ("binding",) if st.dialect != target else TUNING_PASSES)
        if st is root and bang_root is not None:
            steps = retask_steps(root, tail, start, target, ctx)
        elif st is root:
            from .routes_lanes import lane_routes   # c lane loops -> a flat loop, then binding
            steps += through_loops(st, target, ctx) + lane_routes(st, target, ctx)
        return steps if source != MODEL else [s for s in steps if not needs_concurrent_blocks(s)]

    def prior(st):
        # the cost model rates a candidate before it is tested: untried steps are expanded best
        # first (the model's figure is advice for the order only; rewards are measured)
        from xpiler.spec import parse_spec
        from .evaluator import modelled_latency
        job = make_job(st, "prior", MODEL, sizes)
        return modelled_latency(st, parse_spec(job.cand_spec_toml), sizes)[0]

    mcts = MCTS(expand=expand, apply=apply, evaluate_many=evaluate_many, key=lambda st: st.key, seed=seed,
                on_event=on_event, prior=prior, route=task_route)
    left = max(0.0, budget_s - (time.monotonic() - t0))
    # the search root carries the untuned kernel's latency: every candidate is compared with it
    res = mcts.search(root, Evaluation(root.key, True, root_eval.latency_ms, source), budget_s=left,
                      max_evals=max_evals, batch=getattr(pool, "workers", 1))
    out = TuneOutcome(stage, result=res, source=source, untuned_ms=root_eval.latency_ms, tuned_ms=root_eval.latency_ms)
    chosen = res.best_hash if res.best_hash != root.key else stage.key
    if chosen != stage.key and source != MODEL:
        # measured latencies are noisy: time both again, side by side, before replacing the kernel
        a, b = ev.confirm(stage.key, chosen)
        emit(kind="confirm", untuned=stage.key, untuned_ms=a, tuned=chosen, tuned_ms=b, latency_source=source)
        if a is None or b is None or a / b < MIN_GAIN:
            out.note = (f"the best candidate was not faster by {MIN_GAIN:g}x when timed again "
                        f"({b} ms vs {a} ms untuned): the untuned kernel is kept")
            chosen = stage.key
        else:
            out.untuned_ms, out.tuned_ms = a, b
    elif chosen != stage.key and res.speedup < MIN_GAIN:
        out.note = f"the best candidate is modelled {res.speedup:.2f}x faster, under {MIN_GAIN:g}x: kept untuned"
        chosen = stage.key
    elif chosen != stage.key:
        out.tuned_ms = res.best_ms
    if chosen != stage.key:
        cur = root
        for step in (sub for st in res.best_path for sub in
                     (sequence_steps(st) if st.pass_name == SEQUENCE else [st])):
            nxt = apply_step(step, cur, ctx)
            done = Step(step.pass_name, step.params, "search", cur.hash, nxt.hash)
            nxt.steps = cur.steps + (done,)
            out.steps.append(done)
            cur = nxt
        assert cur.key == chosen, "re-applying the chosen steps must give the chosen program"
        out.stage = cur
    else:
        out.note = out.note or "no candidate was faster than the untuned kernel"
    emit(kind="result", chosen=out.stage.hash, steps=[s.to_json() for s in out.steps], evaluations=res.evaluations,
         iterations=res.iterations, stopped=res.stopped, untuned_ms=out.untuned_ms, tuned_ms=out.tuned_ms,
         latency_source=source, curve=[list(c) for c in res.curve], note=out.note,
         graph={"nodes": res.graph.number_of_nodes(), "edges": res.graph.number_of_edges()})
    return out
