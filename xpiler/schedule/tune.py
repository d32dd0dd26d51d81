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

The tuner is :class:`MCTSStrategy`, a strategy of the driver's one loop
(:func:`xpiler.schedule.strategy.drive`), as the plans are: it proposes programs, and the driver's
:class:`~xpiler.schedule.evaluator.Evaluator` answers with their evaluations.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Generator

from ..ir import smt
from .evaluator import Evaluation
from .mcts import MCTS, SearchResult
from .routes_tasks import recovery_start, retask_steps, task_route
from .space import TUNING_PASSES, legal_steps
from .step import Step, StepContext, apply_step
from .strategy import Confirm, Proposal
from .timing import MODEL, source_for

#: a tuned kernel replaces the untuned one only when it is at least this much faster
MIN_GAIN = 1.03
DEFAULT_MAX_EVALS = 60
#: no search round starts with less of the budget left than this (nor than the quickest evaluation)
MIN_ROUND_S = 0.1


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
    the target dialect. Loop recovery's normalizations are alternatives of the route
    (:func:`~xpiler.schedule.routes_tasks.recovery_alternatives`): each one that applies leads its
    own steps, which name it, so the search chooses between them and a replay re-applies the one
    chosen."""
    from xpiler.passes.base import AlternativeRefused, PassError
    from .routes_tasks import recovery_alternatives
    if st.dialect not in SIMT or target not in SIMT:
        return []
    out, seen = [], set()
    for rec in recovery_alternatives({}):
        prefix, cur = [], st
        for step in (Step("loop_recovery", rec, "search"), Step("untile", {}, "search")):
            try:
                cur = apply_step(step, cur, ctx)
                prefix.append(step)
            except AlternativeRefused:   # this normalization does not apply: the next one may
                prefix = None
                break
            except PassError as e:
                if e.code != "XP4002":   # nothing to do is fine; a refusal ends this route
                    prefix = None
                    break
            except Exception:
                prefix = None
                break
        if not prefix or cur.dialect != "c" or cur.key in seen:
            continue                     # (two normalizations that give one program: one route)
        seen.add(cur.key)
        out += _bind_route(prefix, cur, target, ctx)
    return out


def _bind_route(prefix: list, cur, target: str, ctx) -> list:
    """The route's steps from the loop form ``cur`` (reached by ``prefix``): each binding
    alternative, and the cache pass's register tiles after the first binding that admits them."""
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


def model_prior(make_job, sizes: dict | None = None):
    """The cost model's latency of a program before it is tested: untried steps are expanded best
    first (the model's figure is advice for the order only; rewards are measured).
    ``make_job(stage, tag, source, sizes)`` gives the program's spec (xpiler/schedule/jobs.py)."""
    def prior(st):
        from xpiler.spec import parse_spec
        from .evaluator import modelled_latency
        job = make_job(st, "prior", MODEL, sizes)
        return modelled_latency(st, parse_spec(job.cand_spec_toml), sizes)[0]
    return prior


class MCTSStrategy:
    """The tuner as a strategy of the driver loop (:func:`xpiler.schedule.strategy.drive`):
    it proposes programs, the driver's evaluator tests and times them, and it learns from the
    answers; it builds, tests and times nothing itself.

    ``run()`` first proposes the verified, untuned ``stage`` itself (tag ``tune_root``: the
    baseline of every reward), then the search's candidates a round at a time (a list of
    :class:`~xpiler.schedule.strategy.Proposal`, ``batch`` per round: as many as the pool has
    workers), each with the program its step made (applied here through
    :func:`~xpiler.schedule.step.apply_step`, the one code path of migrate and replay), then, with
    measured latencies, a :class:`~xpiler.schedule.strategy.Confirm` of the best candidate against
    the untuned kernel. It returns a :class:`TuneOutcome`. Every answer is a ``tune`` event of
    the log (``start``, ``evaluate``, ``confirm``, ``result``: names and fields as the tuner has
    always written them, docs/provenance.md).

    ``start``: the program the plan's binding step started from (not yet in the target dialect);
    the search then starts there, so that binding's parameters (loop, block size, grid cap; tasks
    on bang) are searched with the target passes' steps. The untuned kernel's latency is the
    baseline either way. ``origin``: the migration's source stage; from a BANG source the search
    starts where loop recovery did, so that the task count is searched too (routes_tasks.py).
    ``prior``: a latency estimate of a program before it is tested (:func:`model_prior`), or
    None. ``expand``: the steps of a program, in place of the routes and the target passes'
    candidates (a scripted search space in tests). ``budget_s`` is a wall-clock cap from the
    start of ``run()``: every proposal carries its end (``Proposal.deadline``), to which the
    evaluator cuts each test and timing; no round starts with less left than the quickest
    evaluation so far took (the untuned kernel's included; at least :data:`MIN_ROUND_S`); a
    candidate the cap cut is not evaluated (a ``not_evaluated`` event), and the search returns
    the best verified program measured before it (docs/schedule.md, "The budget")."""
    name = "mcts"

    def __init__(self, stage, *, target: str, ctx: StepContext, budget_s: float, max_evals: int = DEFAULT_MAX_EVALS,
                 seed: int = 0, log=None, say=lambda m: None, start=None, origin=None, sizes: dict | None = None,
                 batch: int = 1, pool_label: str = "", prior=None, source: str | None = None, expand=None):
        self.stage, self.target, self.ctx = stage, target, ctx
        self.budget_s, self.max_evals, self.seed = budget_s, max_evals, seed
        self.say, self.start, self.origin, self.sizes = say, start, origin, sizes
        self.batch, self.pool_label, self.prior, self.expand_fn = max(1, batch), pool_label, prior, expand
        self.emit = (lambda **kw: log.event("tune", **kw)) if log is not None else (lambda **kw: None)
        # where every latency of this search comes from: hardware (hw:...) or the cost model
        self.source = source or source_for(stage.dialect, stage.text)
        self.candidates = 0          # programs proposed so far (their tests' tags: tune<k>)

    # -- the search space -------------------------------------------------------------------
    def _apply(self, st, step):
        from xpiler.passes.base import PassError
        try:
            if step.pass_name == SEQUENCE:
                for sub in sequence_steps(step):
                    st = apply_step(sub, st, self.ctx)
                return st
            return apply_step(step, st, self.ctx)
        except PassError:
            return None
        except Exception:   # a pass bug on a candidate drops that candidate, never the search
            return None

    def _expander(self, root, bang_root):
        target, ctx, source = self.target, self.ctx, self.source
        if self.expand_fn is not None:
            return self.expand_fn

        def expand(st):
            # before the target dialect only binding leads on; in it, the target passes
            steps = legal_steps(st.program, st.entry, target, ("binding",) if st.dialect != target else TUNING_PASSES)
            if st is root and bang_root is not None:
                steps = retask_steps(root, bang_root[1], self.start, target, ctx)
            elif st is root:
                from .routes_lanes import lane_routes   # c lane loops -> a flat loop, then binding
                steps += through_loops(st, target, ctx) + lane_routes(st, target, ctx)
            return steps if source != MODEL else [s for s in steps if not needs_concurrent_blocks(s)]
        return expand

    def _proposals(self, todo: list, deadline: float) -> list:
        out = []
        for parent, step, state in todo:
            self.candidates += 1
            out.append(Proposal(self.candidates, step.pass_name, step.params, stage=state,
                                tag=f"tune{self.candidates}", parent=parent, deadline=deadline))
        self.say(f"tuning: candidates {self.candidates - len(todo) + 1}-{self.candidates}")
        return out

    # -- the strategy -----------------------------------------------------------------------
    def run(self) -> Generator:
        stage, source, emit = self.stage, self.source, self.emit
        t0 = time.monotonic()
        deadline = time.time() + self.budget_s     # the cap, as the jobs read it (time.time())
        (answer,) = yield [Proposal(0, "", {}, stage=stage, tag="tune_root", deadline=deadline)]
        root_eval: Evaluation = answer.evaluation
        root_took = time.monotonic() - t0
        root = self.start if self.start is not None and self.start.dialect != self.target else stage
        bang_root = recovery_start(self.origin, root, self.ctx) if root is self.start else None
        if bang_root is not None:
            root = bang_root[0]
        emit(kind="start", program_hash=stage.hash, search_root=root.key, latency_source=source,
             root=root_eval.to_json(), budget_s=self.budget_s, max_evals=self.max_evals, seed=self.seed,
             pool=self.pool_label, **({"sizes": self.sizes} if self.sizes else {}))
        if root_eval.cut:
            emit(kind="not_evaluated", program_hash=stage.hash, tag="tune_root",
                 **{k: v for k, v in root_eval.to_json().items() if k != "program_hash"})
        if not root_eval.verified or root_eval.latency_ms is None:
            why = root_eval.why or "the untuned kernel did not verify again"
            emit(kind="result", chosen=stage.hash, steps=[], note=f"not tuned: {why}")
            return TuneOutcome(stage, source=source, note=f"not tuned: {why}")

        def on_event(kind, node, parent, step, evaluation: Evaluation, evals):
            emit(kind=kind, program_hash=node, parent=parent, step=step.to_json(), evaluations=evals,
                 **{k: v for k, v in evaluation.to_json().items() if k != "program_hash"})

        mcts = MCTS(expand=self._expander(root, bang_root), apply=self._apply, key=lambda st: st.key,
                    seed=self.seed, on_event=on_event, prior=self.prior, route=task_route)
        left = max(0.0, self.budget_s - (time.monotonic() - t0))
        # the search root carries the untuned kernel's latency: every candidate is compared with it
        rounds = mcts.rounds(root, Evaluation(root.key, True, root_eval.latency_ms, source), budget_s=left,
                             max_evals=self.max_evals, batch=self.batch, min_round_s=max(MIN_ROUND_S, root_took))
        answer = None
        # past the cap, the analyses of a step being expanded or applied refuse at once (smt.until):
        # a slow proof must not hold the search past its budget. Held only while the search
        # expands and applies (rounds.send), never across this generator's yield: held there, it
        # stayed set for whatever the process ran next when the generator was left unfinished.
        while True:
            try:
                with smt.until(t0 + self.budget_s):
                    todo = rounds.send(answer)
            except StopIteration as stop:
                res: SearchResult = stop.value
                break
            outcomes = yield self._proposals(todo, deadline)
            answer = [o.evaluation for o in outcomes]
        return (yield from self._choose(res, root, root_eval))

    def _choose(self, res: SearchResult, root, root_eval: Evaluation):
        """The kernel the search leads to: the best candidate when it is faster than the untuned
        kernel by :data:`MIN_GAIN` (timed again side by side with it, when measured), else the
        untuned kernel; its steps re-applied one pass at a time for the log."""
        stage, source = self.stage, self.source
        out = TuneOutcome(stage, result=res, source=source, untuned_ms=root_eval.latency_ms,
                          tuned_ms=root_eval.latency_ms)
        chosen = res.best_hash if res.best_hash != root.key else stage.key
        if chosen != stage.key and source != MODEL:
            # measured latencies are noisy: time both again, side by side, before replacing the kernel
            a, b = yield Confirm(stage.key, chosen)
            self.emit(kind="confirm", untuned=stage.key, untuned_ms=a, tuned=chosen, tuned_ms=b, latency_source=source)
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
                nxt = apply_step(step, cur, self.ctx)
                done = Step(step.pass_name, step.params, "search", cur.hash, nxt.hash)
                nxt.steps = cur.steps + (done,)
                out.steps.append(done)
                cur = nxt
            assert cur.key == chosen, "re-applying the chosen steps must give the chosen program"
            out.stage = cur
        else:
            out.note = out.note or "no candidate was faster than the untuned kernel"
        self.emit(kind="result", chosen=out.stage.hash, steps=[s.to_json() for s in out.steps],
                  evaluations=res.evaluations, iterations=res.iterations, stopped=res.stopped,
                  untuned_ms=out.untuned_ms, tuned_ms=out.tuned_ms, latency_source=source,
                  curve=[list(c) for c in res.curve], note=out.note,
                  graph={"nodes": res.graph.number_of_nodes(), "edges": res.graph.number_of_edges()})
        return out
