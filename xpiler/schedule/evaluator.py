"""The evaluator: build, test (differential against the source + the spec's reference, as every
migration step is tested) and time a program, memoized by program and launch (``Stage.key``).

The test itself is the migration's (``test`` below: the driver's per-stage test, which writes the
candidate and its spec, runs it on its substrate and logs the test event). A verified program is
then timed: on hardware where :func:`xpiler.schedule.timing.source_for` found some for the search,
else by the analytical cost model. A program that fails its tests gets no latency and reward 0.

A batch may carry the search's deadline (a ``time.time()`` value): each job's limits are cut to
it (:func:`cap_job`: no run launched after it, each run's limit at most what is left) and the pool
waits for a job until :data:`CUT_GRACE_S` after it. A job the deadline cut (its test reports the
budget, XP4020, or it was not back in time) is *not evaluated* (``Evaluation.cut``): neither a
failing nor a verified candidate, logged as such, and not memoized.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable

from .timing import MODEL, timing_instance

#: how long after the search's deadline the pool still waits for a job whose own limits were cut
#: to the deadline (its runs stop there; the test then reports back): the search's overshoot
#: bound is this plus one round's bookkeeping (docs/schedule.md)
CUT_GRACE_S = 2.0
#: the reason of an evaluation the budget cut
NOT_EVALUATED = "not evaluated (budget)"


@dataclass
class Evaluation:
    program_hash: str
    verified: bool
    latency_ms: float | None = None
    latency_source: str = ""          # "hw:…" (measured) or "model:analytic"
    why: str = ""                     # why it failed, or why it has no latency
    detail: dict = field(default_factory=dict)
    cut: bool = False                 # the budget ended its test or timing: not evaluated (never a failure)
    # which test the verdict is from: "full" (every instance and seed, as every migration step) or
    # "screen" (one instance, one seed: a candidate that could not become the incumbent); only a
    # full verdict may make a program the search's best (mcts.py)
    tier: str = "full"

    def to_json(self) -> dict:
        return {"program_hash": self.program_hash, "verified": self.verified, "latency_ms": self.latency_ms,
                "latency_source": self.latency_source, **({"tier": self.tier} if self.tier != "full" else {}),
                **({"why": self.why} if self.why else {}),
                **({"detail": self.detail} if self.detail else {}), **({"not_evaluated": "budget"} if self.cut else {})}


def cap_job(job, deadline: float | None):
    """``job`` (a :class:`~xpiler.schedule.jobs.CandidateJob`) with its limits cut to ``deadline``
    (a ``time.time()`` value): its test's deadline the earlier of its own and this one, and its
    per-run limit no more than what is left of it."""
    if deadline is None:
        return job
    d = deadline if job.deadline is None else min(job.deadline, deadline)
    return replace(job, deadline=d, run_limit=max(0.05, min(job.run_limit, d - time.time())))


def not_evaluated(stage, why: str = "") -> Evaluation:
    return Evaluation(stage.hash, False, why=(f"{NOT_EVALUATED}: {why}" if why else NOT_EVALUATED)[:300], cut=True)


def instance_sizes(spec, program, entry: str, inst) -> dict:
    """The integer scalars of ``inst`` keyed by the entry's parameter names."""
    fn = program.func(entry)
    return {p.name: inst.scalars[a.name] for a, p in zip(spec.args, fn.params)
            if a.role == "scalar" and isinstance(inst.scalars.get(a.name), int)}


def launch_threads(inst) -> int:
    """Threads (grid x block) or tasks of one launch of ``inst`` (1 for a c kernel)."""
    n = 1
    for dims in (inst.grid, inst.block) if inst.grid or inst.block else (inst.dim,):
        for d in dims or ():
            n *= int(d)
    return max(1, n)


def modelled_latency(stage, spec, sizes: dict | None = None) -> tuple[float, dict]:
    """The cost model's latency (ms) of ``stage`` on the timing instance."""
    from .cost import estimate, launch_env
    inst = timing_instance(spec, sizes)
    est = estimate(stage.program, stage.entry, stage.dialect, instance_sizes(spec, stage.program, stage.entry, inst),
                   threads=launch_threads(inst), env=launch_env(inst.grid, inst.block, inst.dim))
    return est.ms, {"model": est.to_json(), "instance": inst.name}


class Evaluator:
    """``evaluate_many([(stage, tag), ...])``: the :class:`Evaluation` of each stage, each program
    tested once (memoized by program hash), the new ones as jobs on ``pool`` in one batch.

    ``make_job(stage, tag) -> CandidateJob`` packs a stage with what its test needs (the driver
    knows the source, specs and limits); ``log_test(stage, tag, verdict)`` records the test as the
    migration records every test; ``source`` is the search's latency source (a ``hw:`` label or
    :data:`~xpiler.schedule.timing.MODEL`).

    ``screen``: candidates are screened (jobs.py ``run_candidate``): one instance and one seed
    first, the full test only for one whose latency beats the incumbent (``best_ms``: the untuned
    kernel's, tag ``tune_root``, then the fastest fully verified candidate's). The untuned kernel
    is screened only (the migration verified it in full before the search). ``log_test`` then gets
    ``tier="screen"`` for a screening test."""

    def __init__(self, make_job: Callable, source: str, *, pool=None, log_test: Callable | None = None,
                 run: Callable | None = None, screen: bool = False):
        from .jobs import run_candidate
        from .pool import LocalPool
        self.make_job, self.source = make_job, source
        self.run = run or run_candidate      # the job function (jobs.py; a scripted one in tests)
        self.pool = pool or LocalPool(1)
        self.log_test = log_test or (lambda st, tag, v: None)
        self.memo: dict[str, Evaluation] = {}
        self.jobs: dict[str, object] = {}     # program hash -> its CandidateJob (for the confirm timing)
        self.tests = 0
        self.screen = screen
        self.best_ms: float | None = None    # the incumbent's latency (screening's bar for a full test)

    def answer(self, event):
        """The evaluator's side of the driver loop for a search strategy
        (xpiler/schedule/strategy.py): a list of proposals, each with the program its step made,
        gets one :class:`~xpiler.schedule.strategy.Outcome` each (its :class:`Evaluation`), in
        order; a :class:`~xpiler.schedule.strategy.Confirm` gets the two latencies."""
        from .strategy import Confirm, Outcome
        if isinstance(event, Confirm):
            return self.confirm(event.untuned, event.tuned)
        deadline = min((p.deadline for p in event if p.deadline is not None), default=None)
        return [Outcome(evaluation=e) for e in self.evaluate_many([(p.stage, p.tag) for p in event], deadline)]

    def evaluate(self, stage, tag: str, deadline: float | None = None) -> Evaluation:
        return self.evaluate_many([(stage, tag)], deadline)[0]

    def evaluate_many(self, items: list, deadline: float | None = None) -> list:
        """The evaluations of ``items`` (``(stage, tag)`` pairs), in order; ``deadline`` (a
        ``time.time()`` value, the search's end) caps every job of the batch (module doc)."""
        from xpiler.verify.tester import Verdict
        todo, seen = [], set()
        for st, tag in items:
            if st.key not in self.memo and st.key not in seen:
                seen.add(st.key)
                todo.append((st, tag))
        if deadline is not None and todo and time.time() >= deadline:
            return [self.memo.get(st.key) or not_evaluated(st, "the search's deadline had passed") for st, _ in items]
        plain = [self._screened(self.make_job(st, tag), tag) for st, tag in todo]
        jobs = [cap_job(j, deadline) for j in plain]
        if not jobs:
            results = []
        elif deadline is None:
            results = self.pool.map(self.run, jobs)
        else:
            results = self.pool.map(self.run, jobs, deadline=deadline + CUT_GRACE_S)
        cut: dict[str, Evaluation] = {}
        for (st, tag), job, r in zip(todo, plain, results):
            if r is None or r.get("cut"):
                # the budget, not the program, ended it: no verdict, not memoized (module doc)
                why = "the job was not back by the deadline" if r is None else str(r["cut"])
                cut[st.key] = not_evaluated(st, why)     # (the strategy logs it: tune kind not_evaluated)
                continue
            self.tests += 1
            self.jobs[st.key] = job
            tier = r.get("tier", "full")
            if r.get("screen_verdict"):
                self._log(st, tag, Verdict.from_json(r["screen_verdict"]), "screen")
            v = Verdict.from_json(r["verdict"])
            self._log(st, tag, v, tier)
            if not v.verified:
                why = v.failures[0].message if v.failures else "not verified"
                if r.get("screen_verdict"):
                    why = "passed screening, failed the full test: " + why
                self.memo[st.key] = Evaluation(st.hash, False, why=why[:300], tier=tier)
            else:
                ev = Evaluation(st.hash, True, r.get("latency_ms"), r.get("latency_source", ""),
                                why=r.get("why", ""), detail=r.get("detail") or {}, tier=tier)
                self.memo[st.key] = ev
                if ev.latency_ms is not None and (tag == "tune_root" or tier == "full") \
                        and (self.best_ms is None or ev.latency_ms < self.best_ms):
                    self.best_ms = ev.latency_ms
        return [self.memo.get(st.key) or cut[st.key] for st, _ in items]

    def _screened(self, job, tag: str):
        """``job`` with the screening tier's fields (class doc), when this evaluator screens."""
        if not self.screen or not hasattr(job, "screen"):
            return job
        # the untuned kernel: screened only (verified in full by the migration); its latency is the bar
        return replace(job, screen=True, beat_ms=0.0 if tag == "tune_root" else self.best_ms)

    def _log(self, st, tag: str, v, tier: str):
        if tier == "full":
            self.log_test(st, tag, v)
        else:
            self.log_test(st, tag, v, tier=tier)

    def confirm(self, a_hash: str, b_hash: str) -> tuple:
        """Hardware latencies of two evaluated programs, timed one after the other in one job; it
        runs after the search's budget, in the migration's reserve, and ``(None, None)`` when it
        is not back by the migration's deadline (the untuned kernel is then kept)."""
        from .jobs import run_confirm_pair
        if self.source == MODEL:
            return None, None
        a, b = self.jobs[a_hash], self.jobs[b_hash]
        d = a.deadline
        if d is None:
            return self.pool.map(run_confirm_pair, [(a, b)])[0]
        if time.time() >= d:
            return None, None
        return self.pool.map(run_confirm_pair, [(a, b)], deadline=d + CUT_GRACE_S)[0] or (None, None)
