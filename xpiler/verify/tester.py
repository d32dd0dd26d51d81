"""The differential tester (DESIGN §4).

``test_kernel`` builds a kernel once for its platform, then runs every instance of its spec
for several seeds in child processes with limits, each run on freshly drawn inputs with
poisoned outputs, and compares every out/inout array with an oracle: the spec's Python
reference and/or another kernel (``against``: the migration source) run on the same inputs.
Every verdict names the substrate it ran on.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..diagnostics import XPError
from ..dtypes import is_float, to_compute
from ..platforms import get_platform
from ..platforms.harness import read_outputs, write_job
from ..sandbox import classify_asan, run_limited
from ..spec import Instance, Spec, load_spec, default_spec_path
from .inputs import flavour, make_inputs
from .oracle import reference_outputs, kernel_outputs_as_expected
from .variants import label as variant_label, variants

DEFAULT_SEEDS = (0, 1, 2)
#: build failures where a compiler rejected the code (XP2004, a missing toolchain, is not one)
COMPILE_ERRORS = ("XP2001", "XP2002", "XP2003", "XP2005")
SIMT_SCHEDULES = 4  # cuda/hip on the SIMT emulator: seed s runs under XPS_SCHEDULE = s % SIMT_SCHEDULES


def _schedule(dialect: str, seed: int) -> int | None:
    return seed % SIMT_SCHEDULES if dialect in ("cuda", "hip") else None


@dataclass
class RunFailure:
    code: str
    message: str
    instance: str
    seed: int
    arg: str | None = None
    first_diffs: list = field(default_factory=list)
    log: str = ""

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, "instance": self.instance, "seed": self.seed,
                "arg": self.arg, "first_diffs": self.first_diffs, "log": self.log[-2000:]}


@dataclass
class Verdict:
    verified: bool
    substrate: str
    source: str
    seeds: list[int]
    instances: list[str]
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    failures: list[RunFailure] = field(default_factory=list)
    runs: int = 0
    sanitized: bool = False
    oracle: str = ""
    elapsed_s: float = 0.0
    build_error: XPError | None = None
    schedules: list = field(default_factory=list)  # cuda/hip: the SIMT emulator schedule of each seed
    max_run_s: float = 0.0   # the longest run of the candidate (wall seconds, child process; no build)
    skipped: int = 0         # runs not launched: the deadline passed or an earlier run failed (stop_on_failure)
    notes: list = field(default_factory=list)  # build notes (XPError, severity note): headers added, built as C++
    derived: list = field(default_factory=list)  # boundary instances added from the loops (boundaries.Derived.to_json)

    def to_json(self) -> dict:
        return {"verified": self.verified, "substrate": self.substrate, "max_abs_error": self.max_abs_error,
                "max_rel_error": self.max_rel_error, "seeds": self.seeds, "instances": self.instances,
                "source": self.source, "runs": self.runs, "sanitized": self.sanitized, "oracle": self.oracle,
                "elapsed_s": round(self.elapsed_s, 3), "schedules": self.schedules,
                "max_run_s": round(self.max_run_s, 3), "skipped": self.skipped,
                "failures": [f.to_json() for f in self.failures],
                "notes": [n.to_json() for n in self.notes], "derived": self.derived,
                "build_error": self.build_error.to_json() if self.build_error else None}

    @classmethod
    def from_json(cls, d: dict) -> "Verdict":
        """The verdict ``to_json`` wrote (e.g. one a remote evaluator sent back); build errors come
        back as their diagnostics, notes are dropped."""
        fails = [RunFailure(f["code"], f["message"], f["instance"], f["seed"], f.get("arg"),
                            list(f.get("first_diffs") or []), f.get("log", "")) for f in d.get("failures", [])]
        be = d.get("build_error")
        return cls(d["verified"], d["substrate"], d.get("source", ""), list(d.get("seeds", [])),
                   list(d.get("instances", [])), d.get("max_abs_error", 0.0), d.get("max_rel_error", 0.0), fails,
                   d.get("runs", 0), d.get("sanitized", False), d.get("oracle", ""), d.get("elapsed_s", 0.0),
                   XPError(be["code"], message=be.get("message", "")) if be else None, list(d.get("schedules", [])),
                   d.get("max_run_s", 0.0), d.get("skipped", 0), [], list(d.get("derived", [])))

    @property
    def does_not_compile(self) -> bool:
        """The kernel was refused before any run: by its compiler (XP2001-XP2003, XP2005) or as bad
        input (XP1xxx). Whose fault that is depends on who wrote the kernel (docs/decisions.md): the
        user's own source is bad input (exit 2); a candidate xpiler generated is not verified."""
        e = self.build_error
        return e is not None and (e.code.startswith("XP1") or e.code in COMPILE_ERRORS)

    def summary(self) -> str:
        state = "VERIFIED" if self.verified else "FAILED"
        s = (f"{state} on {self.substrate}: {self.runs} runs ({len(self.instances)} instances x "
             f"{len(self.seeds)} seeds{', AddressSanitizer' if self.sanitized else ''}), oracle: {self.oracle}; "
             f"max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g}")
        for d in self.derived:   # derived boundary instances and why (xpiler/verify/boundaries.py)
            ch = ", ".join(f"{k}={v}" for k, v in d["changed"].items())
            s += f"\n  derived instance {d['name']} ({ch}, from '{d['base']}'): " + "; ".join(d["reasons"])
        return s


# ---------------------------------------------------------------------------------------------
def _source_misses_reference(src_spec: Spec, src_inst: Instance, seed: int, sgot: dict, ref_exp: dict,
                             inputs: dict) -> bool:
    """Whether the source kernel's outputs (``sgot``) fail the reference's expected values."""
    try:
        f, _, _ = _compare(src_spec, src_inst, seed, sgot, ref_exp, inputs)
    except (KeyError, ValueError):       # outputs named or shaped otherwise: no judgement
        return False
    return any(x.code != "XP2107" for x in f)


def _compare(spec: Spec, inst: Instance, seed: int, got: dict[str, np.ndarray], expected: dict[str, np.ndarray],
             inputs: dict[str, np.ndarray]) -> tuple[list[RunFailure], float, float]:
    failures: list[RunFailure] = []
    max_abs = max_rel = 0.0
    for a in spec.args:
        if a.role == "in" and a.name in got:
            if not np.array_equal(got[a.name].view(np.uint8), np.ascontiguousarray(inputs[a.name]).view(np.uint8)):
                failures.append(RunFailure("XP2107", f"input argument '{a.name}' was modified by the kernel",
                                           inst.name, seed, a.name))
    for a in spec.outputs:
        g = to_compute(a.dtype, got[a.name])
        e = expected[a.name]
        if is_float(a.dtype):
            rtol, atol = spec.tolerance_for(a.dtype)
            g_nan = np.isnan(g)
            e_fin = np.isfinite(e)
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(g - e)
                ok = (diff <= atol + rtol * np.abs(e)) | ((g == e) & ~np.isnan(g))
            ok &= ~g_nan
            finite = e_fin & ~g_nan & np.isfinite(g)
            if finite.any():
                d = diff[finite]
                max_abs = max(max_abs, float(d.max()))
                denom = np.abs(e[finite])
                m = denom > atol
                if m.any():
                    max_rel = max(max_rel, float((d[m] / denom[m]).max()))
            if not ok.all():
                bad = np.argwhere(~ok)
                first = [{"index": [int(x) for x in idx], "got": float(g[tuple(idx)]), "expected": float(e[tuple(idx)])}
                         for idx in bad[:5]]
                if g_nan[~ok].any():
                    code, what = "XP2102", "NaN (unwritten or NaN produced)"
                else:
                    code, what = "XP2101", f"rtol={rtol:g} atol={atol:g}"
                failures.append(RunFailure(code, f"output '{a.name}': {int((~ok).sum())} of {ok.size} elements wrong "
                                                 f"({what}); instance {inst.describe()}, seed {seed} ({flavour(seed)})",
                                           inst.name, seed, a.name, first))
        else:
            ok = g == e
            if not ok.all():
                bad = np.argwhere(~ok)
                first = [{"index": [int(x) for x in idx], "got": int(g[tuple(idx)]), "expected": int(e[tuple(idx)])}
                         for idx in bad[:5]]
                failures.append(RunFailure("XP2101", f"output '{a.name}': {int((~ok).sum())} of {ok.size} elements "
                                                     f"wrong (exact compare); instance {inst.describe()}, seed {seed}",
                                           inst.name, seed, a.name, first))
            if ok.size:
                max_abs = max(max_abs, float(np.abs(g - e).max()))
    return failures, max_abs, max_rel


#: AddressSanitizer report kinds (xpiler.sandbox.classify_asan) -> diagnostic and what to call it
ASAN_KINDS = {
    "out-of-bounds": ("XP2105", "out-of-bounds access"),
    "null": ("XP2113", "null pointer dereference"),
    "wild": ("XP2114", "access through an invalid pointer"),
    "lifetime": ("XP2115", "use of memory outside its lifetime"),
    "other": ("XP2116", "memory error"),
}


def _failure_from_outcome(oc, inst: Instance, seed: int, timeout: float, mem_mb: int) -> RunFailure:
    log = (oc.stderr or "") + (oc.stdout or "")
    if oc.reason == "timeout":
        return RunFailure("XP2103", f"kernel run timed out after {timeout} s", inst.name, seed, log=log)
    if oc.reason == "memory":
        return RunFailure("XP2106", f"kernel run exceeded the memory limit of {mem_mb} MiB", inst.name, seed, log=log)
    if oc.reason == "asan":
        rep = classify_asan(oc.stderr or "")
        if rep is None:
            line = next((ln for ln in log.splitlines() if "AddressSanitizer" in ln), "AddressSanitizer report")
            return RunFailure("XP2116", f"AddressSanitizer stopped the run: {line.strip()}", inst.name, seed, log=log)
        code, what = ASAN_KINDS[rep.kind]
        return RunFailure(code, f"{what} found by AddressSanitizer: {rep.describe()}", inst.name, seed, log=log)
    if oc.reason == "runtime-error":
        lines = [ln for ln in log.splitlines() if ln.startswith("xpiler-runtime-error:")]
        msg = lines[0].split(":", 1)[1].strip() if lines else "emulator runtime error"
        code = msg.split()[0] if msg.startswith("XP") else "XP2109"
        if code == "XP4280":     # the harness's guard zones (xp_job.h), on every substrate
            return RunFailure(code, f"out-of-bounds write found by the harness's guard zones: {msg.split(None, 1)[-1]}",
                              inst.name, seed,
                              log=log)
        return RunFailure(code, f"emulator runtime error: {msg}", inst.name, seed, log=log)
    if oc.reason == "crash":
        return RunFailure("XP2104", f"kernel run crashed (signal {oc.signal})", inst.name, seed, log=log)
    return RunFailure("XP2111" if oc.rc in (90, 91) else "XP2104", f"kernel run exited with status {oc.rc}",
                      inst.name, seed, log=log)


def _runtime_notes(oc, notes: list) -> None:
    """Add the emulator's ``xpiler-runtime-note: XPnnnn message [file:line]`` lines of a successful
    run to ``notes`` (once each): the run stepped outside a documented rule with a well-defined
    result (e.g. XP3040, a pool over channels that break the 64-byte alignment)."""
    import re
    for ln in ((oc.stderr or "") + "\n" + (oc.stdout or "")).splitlines():
        m = re.match(r"xpiler-runtime-note:\s*(XP\d{4})\s+(.*?)(?:\s+\[([^\]:]+):(\d+)\])?\s*$", ln)
        if not m:
            continue
        code, msg, file, line = m.group(1), m.group(2), m.group(3), m.group(4)
        if any(getattr(n, "code", None) == code and n.message == msg for n in notes):
            continue
        notes.append(XPError(code, msg, file=file, line=int(line) if line else None))


def gpu_substrate(dialect: str) -> str | None:
    """``hw:nvidia-…`` when a CUDA GPU is present and ``dialect`` is cuda (hip stays on the wave64
    emulator: a 32-lane NVIDIA warp is not a faithful substrate for wave64 code).
    ``XPILER_SUBSTRATE=emu`` forces the emulator alone, ``hw`` the GPU alone; the default runs a
    cuda kernel on both (see ``compare_kernels``)."""
    import os
    if dialect != "cuda" or os.environ.get("XPILER_SUBSTRATE", "auto") == "emu":
        return None
    from ..platforms.simt_common import nvidia_gpu
    from ..platforms.base import which
    name = nvidia_gpu()
    if not name or not which("nvcc"):
        return None
    import re
    return "hw:nvidia-" + re.sub(r"[^a-z0-9]+", "-", name.lower().replace("nvidia", "")).strip("-")


class _Runner:
    """Builds one kernel and runs it on jobs."""

    def __init__(self, src: Path, spec: Spec, sanitize: bool, workroot: Path, timeout: float, mem_mb: int,
                 emulator: bool = False, defines: dict[str, str] | None = None):
        self.src, self.spec = Path(src), spec
        self.platform = get_platform(spec.dialect)
        self.sanitize = sanitize
        self.timeout, self.mem_mb = timeout, mem_mb
        self.workroot = workroot
        # one value of each XP_USE_* guard (variants.py); the plain build where there is none
        extra = {"defines": defines} if defines else {}
        self.substrate = (self.platform.substrate_for(defines) if defines and hasattr(self.platform, "substrate_for")
                          else self.platform.substrate())
        gpu = None if emulator else gpu_substrate(spec.dialect)
        if gpu:
            # a real GPU is the best substrate for cuda: nvcc for the device, every CUDA call checked
            self.sanitize = False
            self.exe = self.platform.build(self.src, spec, workroot, sanitize=False, gpu=True, **extra)
            self.substrate = gpu
        else:
            self.exe = self.platform.build(self.src, spec, workroot, sanitize=sanitize, **extra)
        self.substrate += variant_label(defines)
        self.notes = list(getattr(self.platform, "notes", None) or [])

    def run(self, inst: Instance, arrays: dict[str, np.ndarray], tag: str, seed: int = 0,
            timeout: float | None = None):
        jobdir = Path(tempfile.mkdtemp(prefix=f"job-{tag}-", dir=self.workroot))
        try:
            write_job(jobdir, inst, arrays)
            sch = _schedule(self.spec.dialect, seed)
            # a CUDA runtime reserves far more address space than it uses: no RLIMIT_AS on a GPU
            oc = run_limited([str(self.exe), str(jobdir)], cwd=jobdir, timeout_s=timeout or self.timeout,
                             mem_mb=None if self.substrate.startswith("hw:nvidia") else self.mem_mb,
                             sanitized=self.sanitize, env=None if sch is None else {"XPS_SCHEDULE": str(sch)})
            if not oc.ok:
                return None, oc
            try:
                return read_outputs(jobdir, inst), oc
            except (OSError, ValueError) as e:
                oc.reason, oc.stderr = "exit", f"{oc.stderr}\nharness output unreadable: {e}"
                return None, oc
        finally:
            shutil.rmtree(jobdir, ignore_errors=True)


def _derived(candidate: Path, spec: Spec, against, names: list[str] | None) -> list:
    """Boundary instances for this test (``boundaries.derive_for_files``), filtered by ``names``."""
    from .boundaries import derive_for_files
    src = None
    if against:
        src = (Path(against[0]), against[1] if isinstance(against[1], Spec) else load_spec(against[1]))
    try:
        ds = derive_for_files(candidate, spec, src)
    except OSError:
        return []
    return [d for d in ds if not names or d.name in names]


def _twin(src_spec: Spec, inst: Instance, derived: list) -> list[Instance]:
    """The source spec's instance for a derived instance of the candidate: the same sizes."""
    if not any(d.name == inst.name for d in derived):
        return []
    try:
        return [src_spec.instance_with(inst.name, inst.sizes)]
    except XPError:
        return []


def compare_kernels(candidate: str | Path, cand_spec: Spec | str | Path | None = None, *,
                    against: tuple[str | Path, Spec] | None = None, use_reference: bool = True,
                    seeds=DEFAULT_SEEDS, instances: list[str] | None = None, sanitize: bool = True,
                    timeout: float = 120.0, mem_mb: int = 4096, jobs: int = 2,
                    progress: Callable[[int, int], None] | None = None, deadline: float | None = None,
                    stop_on_failure: bool = False, derive_boundaries: bool = True,
                    source_check: bool = False, emulator_beside_gpu: bool = True) -> Verdict:
    """Run ``candidate`` on every instance × seed and compare with the oracle(s).

    ``deadline`` (a ``time.time()`` value, e.g. the end of a migration's budget): no run is
    launched after it and each run's limit is ``min(timeout, time left)``; a run cut that way
    or not launched is a failure (XP4020), so a verdict is never verified on fewer runs.
    ``stop_on_failure``: once a run fails, the runs not yet started are skipped (one time
    limit, not one per run, for a kernel that hangs).
    ``derive_boundaries``: add the boundary instances derived from the loops of the candidate
    (and of the source kernel) unless the spec says ``[test] derive_boundaries = false``.
    A derived instance on which the source kernel itself fails at run time (an emulator error,
    a crash, a sanitizer report) is outside the source's domain: it is left out with a note, for
    the candidate too (``source_check``: the candidate *is* the source kernel, the driver's
    check of its input). The spec's own instances are never left out.
    ``emulator_beside_gpu=False``: a cuda kernel on a GPU runs there only, not also on the
    emulator (one build: the search's screening tier, whose verdict verifies nothing by itself).
    """
    t0 = time.time()
    candidate = Path(candidate)
    if cand_spec is None:
        cand_spec = default_spec_path(candidate)
    spec = cand_spec if isinstance(cand_spec, Spec) else load_spec(cand_spec)
    insts = spec.instances(instances)
    derived = _derived(candidate, spec, against, instances) if derive_boundaries else []
    insts += [spec.instance_with(d.name, d.sizes) for d in derived]
    derived_names = {d.name for d in derived}
    oracle_parts = []
    if use_reference and spec.reference:
        oracle_parts.append("reference " + spec.reference)
    if against:
        oracle_parts.append(f"source kernel {Path(against[0]).name}")
    workroot = Path(tempfile.mkdtemp(prefix="xpiler-test-"))
    seeds = list(seeds)
    verdict = Verdict(False, get_platform(spec.dialect).substrate(), str(candidate), seeds,
                      [i.name for i in insts], sanitized=sanitize, oracle=" and ".join(oracle_parts) or "none",
                      schedules=[k for k in (_schedule(spec.dialect, s) for s in seeds) if k is not None],
                      derived=[d.to_json() for d in derived])
    try:
        if not oracle_parts:
            verdict.failures.append(RunFailure("XP2108", "no oracle: the spec has no [reference] and no source "
                                               "kernel was given to compare with", "-", -1))
            return verdict
        try:
            # every value of every XP_USE_* guard is built and tested: the compiler of the user's
            # target may take a path the one here would not (variants.py)
            builds = variants(Path(candidate).read_text(errors="replace")) or [None]
            runners = [_Runner(candidate, spec, sanitize, workroot, timeout, mem_mb, defines=d) for d in builds]
            runner = runners[0]
            if runner.substrate.startswith("hw:nvidia") and os.environ.get("XPILER_SUBSTRATE", "auto") != "hw" \
                    and emulator_beside_gpu:
                # a GPU run has no AddressSanitizer and one (the hardware's) thread schedule: a race,
                # a dropped barrier or an out-of-bounds read inside an allocation goes unseen there.
                # The emulator (ASan, seeded schedules) runs the same tests beside it; both must pass.
                runners += [_Runner(candidate, spec, sanitize, workroot, timeout, mem_mb, emulator=True, defines=d)
                            for d in builds]
            verdict.substrate = " + ".join(r.substrate for r in runners)
            verdict.notes = [n for r in runners for n in r.notes]
            verdict.sanitized = any(r.sanitize for r in runners)     # no AddressSanitizer on a GPU build
            src_runner = None
            if against:
                src_spec = against[1] if isinstance(against[1], Spec) else load_spec(against[1])
                src_runner = _Runner(Path(against[0]), src_spec, False, workroot, timeout, mem_mb)
        except XPError as e:
            verdict.build_error = e
            where = f"{e.location()}: " if e.location() else ""
            verdict.failures.append(RunFailure(e.code, where + e.message, "-", -1, log=getattr(e, "log", "")))
            return verdict

        tasks = [(inst, seed, r) for r in runners for inst in insts for seed in seeds]
        done = [0]
        stop = [False]

        def limit() -> float | None:
            """This run's time limit: the per-run timeout, cut to the time left before the deadline
            (None: the deadline has passed, launch nothing)."""
            if deadline is None:
                return timeout
            left = deadline - time.time()
            return None if left <= 0.05 else min(timeout, left)

        def cut_failure(inst, seed, what):
            return RunFailure("XP4020", f"time budget spent: {what}", inst.name, seed)

        def outside_domain(inst, fl):
            """A derived instance the source kernel fails at run time: not the source's domain, so
            not a test of the candidate either; said in the verdict's notes."""
            note = (f"derived instance {inst.name} left out: the source kernel itself fails there "
                    f"({fl.code}: {fl.message[:300]})")
            if note not in verdict.notes:
                verdict.notes.append(note)
            return [], 0.0, 0.0

        def source_failure(inst, seed, arrays):
            """Run the source kernel on a derived instance the candidate failed at run time: its
            failure (not a timeout), or None when it runs."""
            src_inst = src_runner.spec.instances([inst.name]) or _twin(src_runner.spec, inst, derived)
            slim = limit()
            if not src_inst or slim is None:
                return None
            sgot, soc = src_runner.run(src_inst[0], {k: v.copy() for k, v in arrays.items()}, f"src-{seed}", seed,
                                       timeout=slim)
            if sgot is not None or soc.reason == "timeout":
                return None
            return _failure_from_outcome(soc, inst, seed, slim, mem_mb)

        def one(task):
            inst, seed, runner = task
            if stop[0]:
                return None
            lim = limit()
            if lim is None:
                return None
            arrays = make_inputs(inst, seed)
            fails: list[RunFailure] = []
            t_run = time.time()
            got, oc = runner.run(inst, arrays, f"{inst.name}-{seed}-{runners.index(runner)}", seed, timeout=lim)
            verdict.max_run_s = max(verdict.max_run_s, time.time() - t_run)
            if got is None:
                if oc.reason == "timeout" and lim < timeout:
                    return [cut_failure(inst, seed, f"run stopped after {lim:.3g} s (its own limit is "
                                                         f"{timeout:g} s)")], 0.0, 0.0
                fl = _failure_from_outcome(oc, inst, seed, lim, mem_mb)
                if inst.name in derived_names and oc.reason != "timeout":
                    if source_check:
                        return outside_domain(inst, fl)
                    sfl = source_failure(inst, seed, arrays) if src_runner is not None else None
                    if sfl is not None:
                        return outside_domain(inst, sfl)
                return [fl], 0.0, 0.0
            _runtime_notes(oc, verdict.notes)
            mabs = mrel = 0.0
            ref_exp, ref_fails = None, []
            if use_reference and spec.reference:
                try:
                    exp = reference_outputs(spec, inst, arrays)
                except XPError as e:   # the reference itself is at fault (XP1222: it raised)
                    where = f" (at {e.location()})" if e.location() else ""
                    return [RunFailure(e.code, e.message + where, inst.name, seed)], 0.0, 0.0
                f, a, r = _compare(spec, inst, seed, got, exp, arrays)
                ref_exp, ref_fails = exp, f
                fails += f
                mabs, mrel = max(mabs, a), max(mrel, r)
            if src_runner is not None:
                src_inst = src_runner.spec.instances([inst.name]) or _twin(src_runner.spec, inst, derived)
                if not src_inst:
                    fails.append(RunFailure("XP2108", f"source spec has no instance '{inst.name}'", inst.name, seed))
                else:
                    slim = limit()
                    if slim is None:
                        return fails + [cut_failure(inst, seed, "the source kernel was not run")], mabs, mrel
                    sgot, soc = src_runner.run(src_inst[0], {k: v.copy() for k, v in arrays.items()}, f"src-{seed}",
                                               seed, timeout=slim)
                    if sgot is None:
                        if soc.reason == "timeout" and slim < timeout:
                            return fails + [cut_failure(inst, seed, f"source run stopped after {slim:.3g} s")], \
                                mabs, mrel
                        fl = _failure_from_outcome(soc, inst, seed, slim, mem_mb)
                        if inst.name in derived_names and soc.reason != "timeout":
                            return outside_domain(inst, fl)
                        fl.message = "the SOURCE kernel failed: " + fl.message
                        fails.append(fl)
                    else:
                        exp = kernel_outputs_as_expected(src_runner.spec, sgot)
                        f, a, r = _compare(spec, inst, seed, got, exp, arrays)
                        for x in f:
                            x.message = "vs source kernel: " + x.message
                        if ref_fails and not f and inst.name in derived_names \
                                and _source_misses_reference(src_runner.spec, src_inst[0], seed, sgot, ref_exp, arrays):
                            # a derived instance (ours, not the spec's) where the source kernel
                            # itself is outside the reference's tolerance (e.g. a float sum of
                            # 49153 terms): the candidate agrees with the source there, which is
                            # what a migration promises; the reference cannot judge it
                            fails = [x for x in fails if x not in ref_fails]
                            note = (f"instance {inst.name}: the source kernel is outside the reference's tolerance "
                                    "here too; judged against the source kernel only")
                            if note not in verdict.notes:
                                verdict.notes.append(note)
                        fails += f
                        mabs, mrel = max(mabs, a), max(mrel, r)
            return fails, mabs, mrel

        def wrapped(task):
            res = one(task)
            if res is not None and len(runners) > 1:
                for x in res[0]:      # which substrate failed, when two ran the same tests
                    x.message = f"[{task[2].substrate}] {x.message}"
            if res is not None and res[0] and stop_on_failure:
                stop[0] = True
            done[0] += 1
            if progress:
                progress(done[0], len(tasks))
            return res

        if jobs > 1 and len(tasks) > 1:
            with ThreadPoolExecutor(max_workers=jobs) as ex:
                results = list(ex.map(wrapped, tasks))
        else:
            results = [wrapped(t) for t in tasks]
        skipped = [t for t, res in zip(tasks, results) if res is None]
        verdict.skipped = len(skipped)
        if skipped and not stop[0]:
            inst, seed, _ = skipped[0]
            verdict.failures.append(cut_failure(inst, seed, f"{len(skipped)} of {len(tasks)} runs were not "
                                                               "launched (the deadline passed)"))
        for res in results:
            if res is None:
                continue
            fails, a, r = res
            verdict.failures += fails
            verdict.max_abs_error = max(verdict.max_abs_error, a)
            verdict.max_rel_error = max(verdict.max_rel_error, r)
            verdict.runs += 1
        verdict.verified = not verdict.failures and verdict.runs > 0
        return verdict
    finally:
        verdict.elapsed_s = time.time() - t0
        shutil.rmtree(workroot, ignore_errors=True)


def test_kernel(src: str | Path, spec: Spec | str | Path | None = None, **kw) -> Verdict:
    """Verify one kernel against its spec's Python reference (``xpiler test``)."""
    return compare_kernels(src, spec, **kw)


test_kernel.__test__ = False  # not a pytest test
