"""One candidate's evaluation as a self-contained job: what a worker process, a thread of the local
pool or a Dask worker needs to build, test and time a program, and nothing from the migration's
memory (texts, not paths; no open log).

``run_candidate(job)`` writes the source, its spec and reference, the candidate and its spec into a
fresh folder, runs the migration's own test (``compare_kernels`` against the source and the
reference, then the target's real compiler for cuda/hip, as every migration step), and when the
candidate verifies, times it (hardware, or the cost model: ``job.latency_source``). With
``job.screen`` it screens first (one instance, one seed, one build), times, and runs the full test
only when the latency is under ``job.beat_ms`` (docs/schedule.md, "Screening"). It returns plain
data: the verdict as JSON and its tier, the latency and its source; or ``{"cut": why}`` when ``job.deadline``
ended its test or timing first (the search's budget: not evaluated, evaluator.py). ``run_confirm`` times two candidates one
after the other in one call (the side-by-side timing before a tuned kernel replaces the untuned
one).
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .timing import MODEL


@dataclass(frozen=True)
class CandidateJob:
    tag: str
    text: str                 # the candidate, printed in its dialect
    dialect: str
    entry: str
    cand_spec_toml: str       # its spec (reference as "<ref_name>:<function>")
    src_name: str
    src_text: str
    src_spec_toml: str
    ref_name: str | None
    ref_text: str | None
    seeds: tuple
    run_limit: float
    jobs: int
    deadline: float | None
    latency_source: str       # "hw:…" or "model:analytic"
    sizes: dict | None = None
    repeats: int = 7
    src_path: str | None = None   # the source where it lies: used when the worker sees the same file
    extra: dict = field(default_factory=dict)
    # the screening tier (evaluator.py, docs/schedule.md "Screening"): when set, the candidate is
    # first tested on one instance with one seed; the full test runs only when its latency is under
    # ``beat_ms`` (the incumbent's; None: always), so that only a candidate that would become the
    # incumbent pays for it. ``screen=False``: the full test at once (as before screening)
    screen: bool = False
    beat_ms: float | None = None


def _ext(dialect: str) -> str:
    from xpiler.spec import DIALECT_EXT
    return DIALECT_EXT[dialect]


def _write(job: CandidateJob, d: Path):
    from xpiler.spec import load_spec
    if job.ref_name and job.ref_text is not None:
        (d / job.ref_name).write_text(job.ref_text)
    src = d / job.src_name
    src.write_text(job.src_text)
    if job.src_path and Path(job.src_path).is_file():
        try:   # the original file, when this worker sees it unchanged (its own includes then resolve)
            if Path(job.src_path).read_bytes().decode("utf-8") == job.src_text:
                src = Path(job.src_path)
        except (OSError, UnicodeDecodeError):
            pass
    (d / (job.src_name + ".toml")).write_text(job.src_spec_toml)
    cand = d / f"{job.tag}{_ext(job.dialect)}"
    cand.write_text(job.text)
    cand.with_name(cand.name + ".toml").write_text(job.cand_spec_toml)
    return src, load_spec(d / (job.src_name + ".toml")), cand, load_spec(cand.with_name(cand.name + ".toml"))


def _latency(job: CandidateJob, cand: Path, cspec) -> dict:
    from .evaluator import modelled_latency
    from .timing import measure_kernel
    from xpiler.frontend import parse_text
    from xpiler.migration.stage import Stage
    out: dict = {"latency_source": job.latency_source}
    try:
        prog = parse_text(job.text, job.dialect, cand.name)
        model_ms, model = modelled_latency(Stage(prog, job.dialect, job.entry), cspec, job.sizes)
    except Exception as e:   # the model reads what the front end reads; a gap is no latency
        model_ms, model = None, {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    if job.latency_source == MODEL:
        out.update(latency_ms=model_ms, detail=model)
        if model_ms is None:
            out["why"] = model.get("error", "not modelled")
        return out
    left = _left(job)
    if left is not None and left <= 0.05:
        return {"cut": "the deadline passed before the timing"}
    ms, note = measure_kernel(cand, cspec, repeats=job.repeats, sizes=job.sizes,
                              **({} if left is None else {"timeout_s": min(60.0, left)}))
    if ms is None and left is not None and _left(job) <= 0.05:
        return {"cut": f"the timing ran into the deadline ({note})"}
    out.update(latency_ms=ms, detail={"instance": note, **({"model_ms": model_ms} if model_ms is not None else {})})
    if ms is None:
        out["why"] = note
    return out


def _left(job) -> float | None:
    import time
    return None if job.deadline is None else job.deadline - time.time()


def _cut(v) -> str | None:
    """Why the budget (XP4020: a run cut or not launched at the deadline) ended a test that did not
    verify, else None."""
    return next((f.message for f in v.failures if f.code == "XP4020"), None) if not v.verified else None


def screen_instance(spec) -> str:
    """The screening tier's instance: the spec's smallest own instance (fewest elements over its
    arrays; the first of equals), the cheapest run on an emulator."""
    insts = spec.instances()
    return min(insts, key=lambda i: sum(i.numel(a.name) for a in spec.arrays)).name


def _test(job: CandidateJob, src, sspec, cand, cspec, *, screen: bool):
    """The migration's test of the candidate (``compare_kernels`` against the source and the
    reference, then the real compiler for cuda/hip); ``screen``: one instance, one seed, one build
    (no derived boundary instances, no AddressSanitizer, no emulator beside a GPU, no
    real-compiler check). Returns (verdict, why it was cut or None)."""
    from xpiler.migration.driver import _real_compile_gate
    from xpiler.verify.tester import compare_kernels
    kw = dict(instances=[screen_instance(cspec)], seeds=list(job.seeds[:1]), derive_boundaries=False,
              sanitize=False, emulator_beside_gpu=False) if screen else dict(seeds=list(job.seeds))
    v = compare_kernels(cand, cspec, against=(src, sspec), use_reference=bool(sspec.reference), jobs=job.jobs,
                        timeout=job.run_limit, deadline=job.deadline, **kw)
    if _cut(v):
        return v, _cut(v)
    if v.verified and not screen and job.dialect in ("cuda", "hip"):
        left = _left(job)
        if left is not None and left <= 0.05:
            return v, "the deadline passed before the real compile check"
        _real_compile_gate(job.dialect, cand, v)
    return v, None


def run_candidate(job: CandidateJob) -> dict:
    """Build, test and (when it verifies) time one candidate; plain data back: ``verdict`` (the
    last test's, as JSON), ``tier`` (``full`` or ``screen``: which test that was), ``screen_verdict``
    (the screening test's, when a full test followed it), the latency and its source; or ``cut``."""
    d = Path(tempfile.mkdtemp(prefix="xpiler-cand-"))
    try:
        src, sspec, cand, cspec = _write(job, d)
        out: dict = {}
        if job.screen:
            sv, cut = _test(job, src, sspec, cand, cspec, screen=True)
            if cut:
                return {"cut": cut}
            if not sv.verified:
                return {"verdict": sv.to_json(), "tier": "screen"}
            lat = _latency(job, cand, cspec)
            if "cut" in lat:
                return lat
            ms = lat.get("latency_ms")
            if ms is None or (job.beat_ms is not None and ms >= job.beat_ms):
                # it cannot become the incumbent: the screening verdict is its evaluation
                return {"verdict": sv.to_json(), "tier": "screen", **lat}
            out["screen_verdict"] = sv.to_json()
        else:
            lat = None
        v, cut = _test(job, src, sspec, cand, cspec, screen=False)
        if cut:
            return {"cut": cut}
        out.update(verdict=v.to_json(), tier="full")
        if v.verified:
            lat = lat or _latency(job, cand, cspec)
            if "cut" in lat:
                return lat
            out.update(lat)
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_confirm(a: CandidateJob, b: CandidateJob, repeats: int = 21, rounds: int = 3) -> tuple[float | None, float | None]:
    """Hardware latencies of ``a`` and ``b`` (no tests), timed alternately ``rounds`` times in this
    call; each one's best median is kept (a single pass on a shared machine varies more than the
    gain it has to confirm)."""
    from .timing import measure_kernel
    dirs, files = [], []
    try:
        for job in (a, b):
            d = Path(tempfile.mkdtemp(prefix="xpiler-confirm-"))
            dirs.append(d)
            _, _, cand, cspec = _write(job, d)
            files.append((cand, cspec, job.sizes))
        best: list = [None, None]
        for _ in range(max(1, rounds)):
            for i, (cand, cspec, sizes) in enumerate(files):
                left = _left(a)
                if left is not None and left <= 0.05:
                    return None, None     # the migration's deadline: no confirmation, the untuned kernel stays
                ms = measure_kernel(cand, cspec, repeats=repeats, sizes=sizes,
                                    **({} if left is None else {"timeout_s": min(60.0, left)}))[0]
                if ms is not None and (best[i] is None or ms < best[i]):
                    best[i] = ms
        return best[0], best[1]
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def run_confirm_pair(pair: tuple) -> tuple[float | None, float | None]:
    return run_confirm(*pair)
