"""The evaluator: build, test (differential against the source + the spec's reference, as every
migration step is tested) and time a program, memoized by program hash.

The test itself is the migration's (``test`` below: the driver's per-stage test, which writes the
candidate and its spec, runs it on its substrate and logs the test event). A verified program is
then timed: on hardware where :func:`xpiler.schedule.timing.source_for` found some for the search,
else by the analytical cost model. A program that fails its tests gets no latency and reward 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .timing import MODEL, measure_kernel, timing_instance


@dataclass
class Evaluation:
    program_hash: str
    verified: bool
    latency_ms: float | None = None
    latency_source: str = ""          # "hw:…" (measured) or "model:analytic"
    why: str = ""                     # why it failed, or why it has no latency
    detail: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"program_hash": self.program_hash, "verified": self.verified, "latency_ms": self.latency_ms,
                "latency_source": self.latency_source, **({"why": self.why} if self.why else {}),
                **({"detail": self.detail} if self.detail else {})}


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
    """``evaluate(stage, tag)``: the :class:`Evaluation` of a stage, tested once per program hash.

    ``test(stage, tag) -> (Verdict, path)`` is the migration's test of one stage (it writes the
    candidate to ``path`` and its spec beside it); ``source`` is the latency source of this search
    (a ``hw:`` label, or :data:`~xpiler.schedule.timing.MODEL`)."""

    def __init__(self, test: Callable, source: str, *, repeats: int = 7, timeout_s: float = 60.0,
                 sizes: dict | None = None):
        self.test, self.source, self.sizes = test, source, sizes
        self.repeats, self.timeout_s = repeats, timeout_s
        self.memo: dict[str, Evaluation] = {}
        self.tests = 0

    def evaluate(self, stage, tag: str) -> Evaluation:
        if stage.hash in self.memo:
            return self.memo[stage.hash]
        self.tests += 1
        verdict, path = self.test(stage, tag)
        if not verdict.verified:
            why = verdict.failures[0].message if verdict.failures else "not verified"
            ev = Evaluation(stage.hash, False, why=why[:300])
        else:
            ev = Evaluation(stage.hash, True)
            self._time(stage, Path(path), ev)
        self.memo[stage.hash] = ev
        return ev

    def _time(self, stage, path: Path, ev: Evaluation) -> None:
        from xpiler.spec import load_spec
        spec = load_spec(path.with_name(path.name + ".toml"))
        if self.source == MODEL:
            ev.latency_ms, ev.detail = modelled_latency(stage, spec, self.sizes)
            ev.latency_source = MODEL
            return
        ms, note = measure_kernel(path, spec, repeats=self.repeats, timeout_s=self.timeout_s, sizes=self.sizes)
        ev.latency_ms, ev.latency_source = ms, self.source
        if ms is None:
            ev.why = note
        else:
            ev.detail = {"instance": note}
            try:   # the model's figure beside the measured one: its rank correlation is measured from these
                ev.detail["model_ms"] = modelled_latency(stage, spec, self.sizes)[0]
            except Exception:
                pass

    def retime(self, path: Path, repeats: int) -> float | None:
        """A fresh hardware timing of a written candidate (None for the model or a failed run)."""
        from xpiler.spec import load_spec
        if self.source == MODEL:
            return None
        ms, _ = measure_kernel(path, load_spec(path.with_name(path.name + ".toml")), repeats=repeats,
                               timeout_s=self.timeout_s, sizes=self.sizes)
        return ms
