"""``xpiler migrate``: parse, apply the pass pipeline with a test after every step, write the
verified kernel (or the best unverified candidate with a minimized failing test), its spec,
the report and the provenance log.

Every intermediate program is printed in its own dialect and tested on its substrate against
the source kernel (differential) and the spec's reference; a failing step is dropped and the
last verified program is kept, so a migration never ends on an untested program.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..deadline import BudgetSpent, active as deadline_active
from ..diagnostics import XPError
from ..expr import to_c
from ..provenance import ProvenanceLog, sha256_text, toolchain_versions
from ..source_text import read_source
from ..spec import DIALECT_EXT, Spec, spec_to_toml
from ..verify.tester import Verdict, compare_kernels
from .outdir import MARKER as OUT_MARKER, OutDir, migration_inputs, migration_outputs
from .pipeline import REQUIRE, alternatives, pass_params, plans as default_plans
from ..schedule.plans import PlanStrategy
from ..schedule.strategy import Outcome, PlanStart, Proposal, drive
from ..schedule.step import StepContext, apply_step
from .stage import Stage, Step


@dataclass
class MigrationResult:
    verified: bool
    target: str
    code: str
    output_path: Path | None
    spec_path: Path | None
    report_path: Path | None
    log_path: Path | None
    verdict: Verdict | None
    steps: list[Step] = field(default_factory=list)
    latency: float | None = None          # median kernel latency (ms) on a hardware substrate, when measured
    perf: list = field(default_factory=list)   # xpiler.perf.PerfRow rows (kernel vs baseline)
    perf_note: str = ""
    diagnostics: list[XPError] = field(default_factory=list)
    elapsed_s: float = 0.0
    failing_test: Path | None = None
    stage_texts: dict = field(default_factory=dict)   # program hash -> printed program (for per-step diffs)
    asm: list = field(default_factory=list)   # --emit-asm: artifact records (xpiler/asm.py), one per target arch

    @property
    def exit_code(self) -> int:
        return 0 if self.verified else 3


def _resume_mismatch(resume, header: dict, src_sha: str, to: str) -> XPError:
    """XP4006 for ``--resume`` with a log of another migration, naming what differs: the targets,
    or the two source hashes (not two equal hashes when only the target differs)."""
    diffs = []
    if header.get("target") != to:
        diffs.append(f"the log migrates to '{header.get('target')}', this run to '{to}'")
    if header.get("source_sha256") != src_sha:
        diffs.append(f"the log's source has SHA-256 {str(header.get('source_sha256'))[:16]}…, "
                     f"this source has {src_sha[:16]}…")
    return XPError("XP4006", message=f"cannot resume from {resume}: it is the log of another migration ("
                                     + "; ".join(diffs) + ")", file=resume,
                   hint="Resume with the source and --to of the interrupted run, or start again without --resume.",
                   seq="header", what="resumed log is for another source or target",
                   want=f"{header.get('target')} {str(header.get('source_sha256'))[:16]}", got=f"{to} {src_sha[:16]}")


def _printer(dialect: str):
    from ..printers import print_program
    return lambda prog: print_program(prog, dialect)


_INT_CAST = __import__("re").compile(
    r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:size_t|ptrdiff_t|u?int(?:32|64)_t|long\s+long|long|int|unsigned)"
    r"(?:\s+int)?\s*\)")


def _launch_to_spec(launch: dict, spec: Spec, func_params: list[str]) -> dict:
    """Launch expressions are written over kernel parameter names; the spec needs size
    expressions, so each scalar parameter is replaced by its spec value."""
    import re
    subst = {}
    for a, pname in zip(spec.args, func_params):
        if a.role == "scalar":
            subst[pname] = str(a.value)
    out = {}
    for k, v in launch.items():
        if isinstance(v, (list, tuple)):
            vals = []
            for x in v:
                if isinstance(x, str):
                    # integer casts (`(size_t)(N)` from a C++ `static_cast<size_t>(N)`) do not change a
                    # launch size; the spec's expression language has no casts
                    x = _INT_CAST.sub("", x)
                    x = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: f"({subst[m.group(0)]})" if m.group(0) in subst
                               else m.group(0), x)
                vals.append(x)
            out[k] = vals
        else:
            out[k] = v
    return out


def _launch_to_params(launch: dict, spec: Spec, func_params: list[str]) -> dict:
    """The spec's [launch] with size names replaced by the kernel parameters that carry them
    (a scalar argument whose value is exactly that size), for passes that must express
    gridDim/blockDim/taskDim in the kernel's own terms."""
    import re
    subst = {}
    for a, pname in zip(spec.args, func_params):
        if a.role == "scalar" and isinstance(a.value, str) and re.fullmatch(r"[A-Za-z_]\w*", a.value.strip()):
            subst.setdefault(a.value.strip(), pname)
    # a size carried only inside a product (an argument whose value is "N*H*W" or "M*K") is that
    # argument divided by the other factors, when each of those is carried itself (exact: the
    # argument's value is the product)
    products = []
    for a, pname in zip(spec.args, func_params):
        if a.role == "scalar" and isinstance(a.value, str) and re.fullmatch(
                r"\s*[A-Za-z_]\w*(\s*\*\s*[A-Za-z_]\w*)+\s*", a.value):
            products.append(([f.strip() for f in a.value.split("*")], pname))
    changed = True
    while changed:
        changed = False
        for factors, pname in products:
            missing = [f for f in factors if f not in subst]
            if len(missing) == 1 and factors.count(missing[0]) == 1:
                others = " * ".join(subst[f] for f in factors if f != missing[0])
                subst[missing[0]] = f"({pname} / ({others}))"
                changed = True
    out = {}
    for k, v in launch.items():
        if isinstance(v, (list, tuple)):
            out[k] = [to_c(x, subst) for x in v]
        elif k == "shared_bytes" and isinstance(v, str):
            out[k] = to_c(v, subst)     # a size expression too (dynamic shared memory)
        else:
            out[k] = v
    return out


def _instance_params(spec: Spec, func_params: list[str]) -> list[dict]:
    """The integer scalar arguments of each of the spec's instances, keyed by the kernel's
    parameter names (binding sizes run-time sized local arrays from them)."""
    out = []
    try:
        insts = spec.instances()
    except XPError:
        return out
    for inst in insts:
        out.append({pname: inst.scalars[a.name] for a, pname in zip(spec.args, func_params)
                    if a.role == "scalar" and isinstance(inst.scalars.get(a.name), int)})
    return out


def _preconditions_to_params(spec: Spec, func_params: list[str]) -> tuple:
    """The spec's ``[preconditions]`` as ``(kernel parameter, op, integer or kernel parameter)``
    triples (each parameter in its spec argument's place in the signature)."""
    where = {a.name: pname for a, pname in zip(spec.args, func_params)}
    return tuple((where[name], op, k if isinstance(k, int) else where[k])
                 for name, conds in spec.preconditions.items() if name in where
                 for op, k in conds if isinstance(k, int) or k in where)


#: passes that carry a program to another dialect: their refusal is why a migration stopped short
_DIALECT_MOVERS = ("binding", "loop_recovery", "detensorize")


def _unresolved(to: str, entry: str, refusals: list, dialect: str) -> XPError:
    """XP4004 with the refusal that left the program in ``dialect`` (refusals taken on a program
    of that dialect): the last real refusal of a pass that moves programs between dialects, else
    the last real refusal of any pass, else the "nothing to do" (XP4002) of the pass that should
    have moved it on (binding for c: "no canonical loop to bind"); none: the plain text."""
    seen = [(p, e) for p, e, d in refusals if d == dialect]
    mover = "binding" if dialect == "c" else "loop_recovery"
    pick = [r for r in seen if r[0] in _DIALECT_MOVERS and r[1].code != "XP4002"] or \
        [r for r in seen if r[1].code != "XP4002"] or [r for r in seen if r[0] == mover]
    if not pick:
        return XPError("XP4004", target=to, entry=entry)
    pname, e = pick[-1]
    return XPError("XP4004", f"no verified {to} kernel was found for {entry}: {pname} refused ({e.why})",
                   target=to, entry=entry)


def _runtime_array_notes(before: Stage, to: str, spec: Spec, func_params: list[str]) -> list:
    """XP4050 for each run-time sized local array binding gave a fixed size (the rewrite is
    pure, so asking it again about the program binding started from gives its decisions)."""
    from ..passes import runtime_arrays
    from ..printers import printer_for
    _, notes = runtime_arrays.bound_runtime_arrays(before.program, before.entry,
                                                   _instance_params(spec, func_params), to)
    return [XPError("XP4050", name=name, extent=printer_for("c").expr(extent), size=size) for name, extent, size in notes]


def _real_compile_gate(dialect: str, path: Path, v: Verdict) -> None:
    """Fail a verdict whose kernel the target's real compiler rejects (nvcc sm_90 for cuda,
    clang-15 gfx90a for hip), e.g. a stack frame over the AMDGPU limit that an emulator cannot
    see. Skipped, and said so in the verdict's oracle, when that compiler is not installed."""
    from ..platforms import get_platform
    from ..platforms.base import which
    from ..verify.tester import RunFailure
    plat = get_platform(dialect)
    if dialect == "cuda" and not which("nvcc"):
        v.oracle += "; nvcc not installed: no real compile check"
        return
    if dialect == "hip" and not (which("clang++-15") or Path("/usr/lib/llvm-15/bin/clang++").exists()):
        v.oracle += "; clang-15 not installed: no real compile check"
        return
    arch = "sm_90" if dialect == "cuda" else "gfx90a"
    r = plat.compile_check(path, arch=arch)
    if not r.get("ok"):
        err = r.get("error") or {}
        msg = err.get("message") if isinstance(err, dict) and err.get("message") else (r.get("log") or "")[-300:]
        if re.fullmatch(r"\d+ errors? generated.*", msg.strip()):
            # clang's closing count says nothing: name the first error itself (e.g. a stack frame
            # over the target's limit, which has no source location)
            first = next((ln.strip() for ln in (r.get("log") or "").splitlines() if "error:" in ln), None)
            msg = first or msg
        v.verified = False
        v.failures.append(RunFailure("XP2005" if dialect == "hip" else "XP2001",
                                     f"the real {arch} compiler rejects the kernel: {msg}", "-", -1,
                                     log=(r.get("log") or "")[-2000:]))
    else:
        v.oracle += f"; compiles for {arch}"


def _rel(p: Path) -> str | None:
    """``p`` relative to the working directory when it lies below it (lets a log be replayed
    from another checkout, e.g. on the GPU machine)."""
    try:
        return str(Path(p).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return None


def _with_host(prog, stage: Stage, to: str, sspec: Spec, ospec: Spec, params: list[str], out: Path, src: Path,
               seeds, jobs: int, log, diags: list, timeout: float = 120.0, *, kspec: Spec | None = None) -> str:
    """Add the migrated host launcher to the verified kernel when it verifies too (host test
    mode: a main calls the launcher with host arrays); otherwise keep the kernel alone and say
    why. Returns the text written to ``out``. ``kspec``: the spec with the launch sizes added as
    kernel parameters (launch_sizes.py; ``prog``'s launches already pass them). A translated
    launcher keeps the source launcher's parameters, so it is tested with ``ospec`` less those
    added arguments; a generated one (no launcher in the source) takes the kernel's."""
    from ..printers import print_program
    from .host import attach_host, migrate_host, source_launchers, test_host_launcher
    kernel_text = stage.text
    try:
        kspec = kspec or sspec
        launch = stage.launch if stage.launch != dict(sspec.launch) else _launch_to_params(kspec.launch, kspec, params)
        host_diags: list = []
        kparams = [p.name for p in stage.program.func(stage.entry).params]
        funcs = migrate_host(prog, to, stage.entry, launch, kparams, spec=kspec, source_entry=sspec.entry,
                             diagnostics=host_diags)
        if not funcs:
            return kernel_text
        full = attach_host(stage.program, funcs, to)
        text = print_program(full, to)
        out.write_text(text)
        translated = bool(source_launchers(prog))
        hspec = replace(ospec, args=ospec.args[:len(sspec.args)]) if translated and kspec is not sspec else ospec
        v = test_host_launcher(out, hspec, against=(src, sspec), host_fn=funcs[0].name, seeds=seeds, jobs=jobs,
                               timeout=timeout)
        log.event("test", stage="host_launcher", program_hash=hashlib.sha256(text.encode()).hexdigest()[:16],
                  dialect=to, substrate=v.substrate, instances=v.instances, seeds=list(v.seeds), verified=v.verified,
                  max_abs_error=v.max_abs_error, max_rel_error=v.max_rel_error, host=funcs[0].name,
                  failures=[f.to_json() for f in v.failures[:3]])
        diags.extend(host_diags)
        if v.verified:
            return text
        why = v.failures[0].message if v.failures else "?"
    except BudgetSpent as e:   # (the driver's deadline is active here: xpiler/deadline.py)
        out.write_text(kernel_text)
        diags.append(XPError("XP4020", what=f"the host launcher's migration was stopped at the deadline ({e.where} "
                                            "saw it); the kernel is written without it"))
        return kernel_text
    except XPError as e:
        why = e.message
        if e.code == "XP4102":    # c host code that cannot be translated: said with its own ID and line
            diags.append(e)
    except Exception as e:  # the kernel is verified; a host-migration bug must not lose it
        why = f"{type(e).__name__}: {e}"
    out.write_text(kernel_text)
    diags.append(XPError("XP4003", pass_name="host launcher migration", why=why + " (kernel written without it)"))
    return kernel_text


def _write_compile_failing_test(outdir: Path, cand: Path, src: Path, f, arch: str) -> Path:
    """The failure was the target's real compiler rejecting the candidate (the emulator ran it):
    the script runs that compiler again and prints its error."""
    dialect = "cuda" if arch.startswith("sm_") else "hip"
    log_lines = "\n".join("#   " + ln for ln in (f.log or "").strip().splitlines()[-12:])
    script = outdir / f"{cand.name}.failing_test.py"
    script.write_text(f'''#!/usr/bin/env python3
"""Reproduce the failure of the unverified migration {cand.name} (from {src.name}).

The kernel passed its tests on the emulator, but the real {arch} compiler rejects it.
Recorded failure: {f.code} {f.message[:300]}
"""
# compiler output when this file was written (last lines):
{log_lines or "#   (none recorded)"}
import sys
from pathlib import Path

from xpiler.platforms import get_platform

HERE = Path(__file__).resolve().parent
r = get_platform({dialect!r}).compile_check(HERE / {cand.name!r}, arch={arch!r})
print("compiles" if r.get("ok") else "rejected by the {arch} compiler:")
print((r.get("log") or "")[-4000:])
# exit 0 when the failure reproduces (the compiler still rejects it), 1 when it now compiles
sys.exit(1 if r.get("ok") else 0)
''')
    return script


def write_failing_test(outdir: Path, cand: Path, src: Path, sspec: Spec, verdict: Verdict) -> Path:
    """A standalone script reproducing the smallest failure of an unverified candidate."""
    from ..spec import load_spec as _load
    insts = {i.name: i for i in sspec.instances()}
    for d in verdict.derived:   # derived boundary instances (xpiler/verify/boundaries.py): same sizes
        try:
            insts.setdefault(d["name"], sspec.instance_with(d["name"], d["sizes"]))
        except XPError:
            pass

    def size(f):
        inst = insts.get(f.instance)
        return sum(inst.numel(a.name) for a in sspec.arrays) if inst else 1 << 62

    fails = [f for f in verdict.failures if f.seed >= 0] or verdict.failures
    f = min(fails, key=lambda x: (size(x), x.seed))
    m = re.match(r"the real (\S+) compiler rejects", f.message)
    if m:
        return _write_compile_failing_test(outdir, cand, src, f, m.group(1))
    diffs = "\n".join(f"#   at {d['index']}: got {d['got']}, expected {d['expected']}" for d in f.first_diffs[:5])
    script = outdir / f"{cand.name}.failing_test.py"
    script.write_text(f'''#!/usr/bin/env python3
"""Reproduce the failure of the unverified migration {cand.name} (from {src.name}).

Smallest failing case: instance '{f.instance}' ({insts[f.instance].describe() if f.instance in insts else '?'}),
seed {f.seed}. Recorded failure: {f.code} {f.message}
"""
# first differing elements when this file was written:
{diffs or "#   (no element diffs: the run itself failed)"}
import sys
from pathlib import Path

from xpiler.spec import load_spec
from xpiler.verify.tester import compare_kernels

HERE = Path(__file__).resolve().parent
SOURCE = Path({str(src.resolve())!r})
SOURCE_SPEC = Path({str(sspec.path.resolve()) if sspec.path else ""!r})

verdict = compare_kernels(HERE / {cand.name!r}, HERE / {cand.name + ".toml"!r},
                          against=(SOURCE, load_spec(SOURCE_SPEC)) if SOURCE.is_file() else None,
                          seeds=[{f.seed}], instances=[{f.instance!r}])
print(verdict.summary())
for fl in verdict.failures:
    print(fl.code, fl.message)
    for d in fl.first_diffs:
        print("   at", d["index"], "got", d["got"], "expected", d["expected"])
# exit 0 when the failure reproduces, 1 when the candidate now passes
sys.exit(1 if verdict.verified else 0)
''')
    return script


def _check_tune_sizes(spec: Spec, sizes: dict) -> None:
    """``--tune-sizes`` must name sizes of the spec and make a valid instance (XP1223)."""
    from ..schedule.timing import timing_instance
    unknown = [k for k in sizes if k not in spec.sizes]
    bad = [k for k, v in sizes.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1]
    if unknown or bad:
        raise XPError("XP1223", flag="--tune-sizes", value=",".join(f"{k}={v}" for k, v in sizes.items()),
                      want=f"NAME=INT pairs (ints >= 1) over the spec's sizes ({', '.join(spec.sizes) or 'none'})")
    try:
        timing_instance(spec, sizes)
    except XPError as e:
        raise XPError("XP1223", flag="--tune-sizes", value=",".join(f"{k}={v}" for k, v in sizes.items()),
                      want=f"sizes that make a valid instance ({e.code}: {e.message})") from None


def _search_strategy(stage: Stage, bind_input: Stage | None, to: str, make_job, pool, ctx, deadline: float,
                     max_evals: int | None, seed: int, log, say, diags: list, sizes: dict | None = None,
                     origin: Stage | None = None):
    """``--tune``: the search strategy (MCTS, xpiler/schedule/tune.py) from the program binding
    started from (its block/grid/task parameters are searched too), else from the verified kernel;
    None (XP4020) when the budget left is too short to search."""
    from ..schedule.tune import DEFAULT_MAX_EVALS, MCTSStrategy, model_prior
    # a share of what is left stays for the host launcher and the timing against the reference
    left = (deadline - time.time()) * 0.85
    if left <= 1.0:
        diags.append(XPError("XP4020", what="the kernel was not tuned: the time budget was spent"))
        return None
    say("tuning the verified kernel")
    return MCTSStrategy(stage, target=to, ctx=ctx, budget_s=left, max_evals=max_evals or DEFAULT_MAX_EVALS,
                        seed=seed, log=log, say=say, start=bind_input, origin=origin, sizes=sizes,
                        batch=getattr(pool, "workers", 1), pool_label=pool.label, prior=model_prior(make_job, sizes))


def _adopt_search(out, log, say, steps: list, k_base: int) -> Stage:
    """The search's chosen steps are logged as pass events (proposer ``search``) after a
    ``search from`` note naming the program they start from, so replay folds over them."""
    if out.steps:
        log.event("note", what="search from", program_hash=out.steps[0].in_hash)
    for i, st in enumerate(out.steps):
        log.event("pass", step=k_base + i, name=st.pass_name, params=st.params, proposer="search", applied=True,
                  in_hash=st.in_hash, out_hash=st.out_hash, dialect=out.stage.dialect, launch=out.stage.launch)
    steps.extend(out.steps)
    if out.result is not None:
        r = out.result
        gain = (f"{out.untuned_ms / out.tuned_ms:.2f}x faster than untuned"
                if out.steps and out.untuned_ms and out.tuned_ms else "untuned kernel kept")
        say(f"tuned: {len(out.steps)} step(s), {r.evaluations} candidates, {gain} ({out.source}; {r.stopped})")
    return out.stage


REPAIR_BUDGET_S = 30.0     # Z3 sketch repair of one failing candidate (xpiler/repair, docs/repair.md)


# -- the source first, and the time limits derived from it (docs/decisions.md) ----------------
DEFAULT_TIMEOUT_S = 120.0   # the longest one child run may take (--timeout)
SOURCE_CHECK_S = 60.0       # the source check's per-run limit: min(timeout, this), at least timeout / 2
RUN_LIMIT_FACTOR = 10.0     # a candidate run may take this many times the source's slowest run…
RUN_LIMIT_FLOOR_S = 20.0    # …but never less than this (candidates run under AddressSanitizer, maybe
                            # on an emulator where the source ran natively), and never more than timeout


def _budget_stopped(e: BudgetSpent, budget: float, at: dict, n_plans: int, steps: list, verified: bool,
                    pending: list, log, diags: list) -> None:
    """XP4020 (and a ``note`` event) for a migration the budget stopped inside a running step:
    where it was (plan, step, pass; or the search), which check saw the deadline, how far it got
    (the steps taken, whether a target program verified) and what was not run."""
    if at.get("search"):
        where = "the search (--tune)"
        not_run = "the rest of the search; the untuned kernel is kept"
    elif "plan" not in at:
        where, not_run = "the plans", "every plan"
    else:
        plan_no = at["plan"]
        if "step" in at:
            where = f"plan {plan_no + 1} of {n_plans}, its step {at['step']} ({at['pass_name']})"
            later = at.get("later") or []
        else:   # (the plan's probe: its passes applied without tests)
            where = f"the probe of plan {plan_no + 1} of {n_plans}"
            later = at.get("passes") or []
        not_run = ", ".join(later) or "none"
        if plan_no + 1 < n_plans and not verified:
            not_run += f"; plans not tried: {n_plans - plan_no - 1}"
    taken = ", ".join(s.pass_name for s in steps) or "none"
    stopped = "the search was stopped" if at.get("search") else "that step was stopped and nothing of it is kept"
    what = (f"the budget of {budget:g} s ran out inside {where} ({e.where or 'a check'} saw it "
            f"{e.over_s:.1f} s after the deadline); {stopped}; "
            f"steps taken: {taken}; {'a target program had verified' if verified else 'no target program verified'}"
            f"; not run: {not_run}")
    if pending:
        what += f"; untested steps dropped: {', '.join(st.pass_name for st, _ in pending)}"
    diags.append(XPError("XP4020", what=what))
    log.event("note", what="budget spent", cut=f"stopped inside {where}", check=e.where, over_s=round(e.over_s, 3),
              steps_taken=[s.pass_name for s in steps], reached_target=verified)


def check_run_options(*, budget: float | None = None, jobs: int | None = None, timeout: float | None = None,
                      max_evals: int | None = None) -> None:
    """Refuse option values that would make a run meaningless (XP1223, bad input)."""
    import math
    for flag, value, ok, want in (
            ("--budget", budget, lambda v: math.isfinite(v) and v > 0, "seconds, > 0"),
            ("--max-evals", max_evals, lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
            ("--jobs", jobs, lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
            ("--timeout", timeout, lambda v: math.isfinite(v) and v > 0, "seconds, > 0")):
        if value is not None and not ok(value):
            raise XPError("XP1223", flag=flag, value=value, want=want)


def source_check_limit(timeout: float) -> float:
    """The per-run limit of the source check: shorter than ``timeout`` (a hanging source is
    found in one short limit), but never below half of it."""
    return max(min(timeout, SOURCE_CHECK_S), timeout / 2)


def run_limit_from(source_run_s: float, timeout: float) -> float:
    """The per-run limit of every candidate test, from the source's slowest measured run."""
    return min(timeout, max(RUN_LIMIT_FLOOR_S, RUN_LIMIT_FACTOR * source_run_s))


def check_source(src: Path, sspec: Spec, seeds, jobs: int, timeout: float, deadline: float) -> Verdict:
    """Test the source kernel alone on its own substrate, against the spec's reference (or, with
    no reference, against itself: crashes, hangs, nondeterminism), once, before any pass.

    Raises the diagnostic of a source that fails (XP1220), hangs (XP1221) or of a reference that
    raises (XP1222): bad input, nothing is migrated. Returns the verdict when it passed, or when
    the time budget cut it (its failures are then XP4020)."""
    from ..verify.inputs import make_inputs
    from ..verify.oracle import reference_outputs
    lim = source_check_limit(timeout)
    use_ref = bool(sspec.reference)
    v = compare_kernels(src, sspec, against=None if use_ref else (src, sspec), use_reference=use_ref, seeds=seeds,
                        jobs=jobs, sanitize=False, timeout=lim, deadline=deadline, stop_on_failure=True,
                        source_check=True)
    v.oracle = "source check: " + v.oracle
    if v.verified or all(f.code == "XP4020" for f in v.failures):
        return v
    if v.build_error is not None:
        if v.build_error.code.startswith("XP1"):
            raise v.build_error
        raise XPError("XP1220", src=src.name, test="build", detail=f"{v.build_error.code}: {v.build_error.message}",
                      file=src)
    insts = {i.name: i for i in sspec.instances()}
    for d in getattr(v, "derived", None) or []:   # boundary instances the tester added itself
        try:
            insts.setdefault(d["name"], sspec.instance_with(d["name"], d["sizes"]))
        except (XPError, AttributeError, KeyError):
            pass
    f = next(x for x in v.failures if x.code != "XP4020")
    inst = insts.get(f.instance)
    test = f"instance {inst.describe() if inst else f.instance}, seed {f.seed}"
    if f.code.startswith("XP1"):   # bad input found by the oracle: the reference raised, or cannot be loaded
        if sspec.reference and inst is not None:
            reference_outputs(sspec, inst, make_inputs(inst, f.seed))   # raises it again, with its file and line
        raise XPError(f.code, message=f.message, file=src)
    if f.code == "XP2103":
        raise XPError("XP1221", src=src.name, seconds=f"{lim:g}", test=test, file=src)
    detail = f"{f.code}: {f.message}"
    if f.first_diffs:
        d = f.first_diffs[0]
        detail += f"; first mismatch at {d['index']}: got {d['got']}, expected {d['expected']}"
    raise XPError("XP1220", src=src.name, test=test, detail=detail, file=src)


def migrate(src: str | Path, to: str, spec: str | Path | Spec | None = None, outdir: str | Path = "out", *,
            proposer: str = "symbolic", llm: str | None = None, budget: float = 600.0, tune: bool = False,
            seed: int = 0, jobs: int = 2, resume: str | Path | None = None,
            progress: Callable[[str], None] | None = None, pipeline: list | None = None,
            perf: bool = True, timeout: float = DEFAULT_TIMEOUT_S, force: bool = False,
            max_evals: int | None = None, tune_sizes: dict | None = None, cluster=None,
            emit_asm: bool = False, repair: bool = True) -> MigrationResult:
    from ..api import _resolve
    from ..frontend import parse_file
    from xpiler.passes.base import AlternativeRefused, PassError

    t0 = time.time()
    say = progress or (lambda msg: None)
    check_run_options(budget=budget, jobs=jobs, timeout=timeout, max_evals=max_evals)
    dask_pool = None
    if tune and cluster is not None:   # connected first: an unreachable cluster is bad input, said at once
        from ..schedule.pool import DaskPool
        dask_pool = DaskPool(cluster)
    src, sspec = _resolve(src, spec)
    if to not in DIALECT_EXT:
        raise XPError("XP1004", value=to)
    # the output folder, before anything is run or written: only files xpiler provably wrote there
    # may be replaced (or any with force), never an input (xpiler/migration/outdir.py)
    outdir = Path(outdir)
    stem = src.stem if src.stem != src.name else src.name
    out_name = f"{stem}{DIALECT_EXT[to]}"
    od = OutDir(outdir, force=force)
    from ..asm import asm_names
    od.check(migration_outputs(stem, to, sspec) + (asm_names(out_name, to) if emit_asm else []),
             migration_inputs(src, sspec))
    src_text = read_source(src)
    resumed = None
    if resume:
        from ..provenance import read_log as _read_log
        try:
            resumed = _read_log(resume)  # read before the new log (maybe the same file) is started
        except (OSError, ValueError) as e:
            raise XPError("XP4007", path=resume, why=str(e), file=resume) from None
        rh = resumed[0]
        if rh.get("source_sha256") != sha256_text(src_text) or rh.get("target") != to:
            raise _resume_mismatch(resume, rh, sha256_text(src_text), to)
    deadline = t0 + budget          # --budget is a wall-clock cap: tests and LLM calls stop at it
    seeds = (seed, seed + 1, seed + 2)
    # the source first (before anything is written): a source that fails its own test, hangs, or
    # whose reference raises is bad input, never blamed on a pass; its slowest run sets the limit
    # of every candidate run
    say(f"parsing {src.name}")
    variant_notes: list = []   # XP1150: an earlier output's XP_USE_* guards, read as their portable path
    prog = parse_file(src, sspec.dialect, notes=variant_notes)
    # c sources: pointer/index helpers inlined into the entry before binding (passes/inline_helpers.py)
    from xpiler.passes.inline_helpers import prepare_source
    prog = prepare_source(prog, sspec.entry)
    # a c source's own launcher (an earlier c output's <entry>_host) is host code: out of what the
    # passes see, in host_prog for the host migration (xpiler/migration/host_c.py; None: no launcher)
    from .host_c import split_c_launchers
    prog, host_prog = split_c_launchers(prog, sspec.entry)
    say(f"testing the source {src.name}")
    src_verdict = check_source(src, sspec, seeds, jobs, timeout, deadline)
    run_limit = run_limit_from(src_verdict.max_run_s, timeout)
    # launch sizes no kernel parameter carries, for a target that needs them as values: added as
    # last int parameters of the entry; kspec (sspec plus their scalar arguments) is the spec of
    # every candidate, sspec stays the source's own (xpiler/migration/launch_sizes.py)
    from .launch_sizes import augment as _augment_sizes, describe as _describe_sizes
    prog, kspec, added_sizes = _augment_sizes(prog, sspec, to, src_text)
    if tune and tune_sizes:
        _check_tune_sizes(kspec, tune_sizes)
    work = od.scratch()   # scratch outside the output folder, removed with od
    log = ProvenanceLog(od.claim("provenance.jsonl"), {
        "source": str(src.resolve()), "source_sha256": sha256_text(src_text), "spec": sspec.text or spec_to_toml(sspec),
        "spec_path": str(sspec.path.resolve()) if sspec.path else None,
        "source_rel": _rel(src), "spec_rel": _rel(sspec.path) if sspec.path else None,
        "source_dialect": sspec.dialect, "target": to, "seeds": [seed, seed + 1, seed + 2],
        "llm": llm, "proposer": proposer,
        "config": {"budget_s": budget, "tune": bool(tune), "jobs": jobs, "timeout_s": timeout, "run_limit_s": run_limit,
                   **({"max_evals": max_evals} if tune and max_evals else {})},
        "toolchains": toolchain_versions()})
    diags: list[XPError] = []
    steps: list[Step] = []

    entry_fn = prog.func(sspec.entry)
    params = [p.name for p in entry_fn.params]
    stage = Stage(prog.with_launch(sspec.entry, sspec.launch), sspec.dialect, sspec.entry)
    stage.text = _printer(stage.dialect)(prog)
    stage_texts = {stage.hash: stage.text}
    log.event("parse", file=str(src), dialect=sspec.dialect, program_hash=stage.hash)
    for n in variant_notes:
        log.event("note", what="variant guard resolved", code=n.code, line=n.line, detail=n.message)
    if added_sizes:
        log.event("note", what="launch_sizes", added=[{"param": a["param"], "size": a["size"],
                                                       **({"host": a["host"]} if "host" in a else {})}
                                                      for a in added_sizes])
    log.event("test", stage="source", program_hash=stage.hash, dialect=sspec.dialect, substrate=src_verdict.substrate,
              instances=src_verdict.instances, seeds=list(src_verdict.seeds), verified=src_verdict.verified,
              max_abs_error=src_verdict.max_abs_error, max_rel_error=src_verdict.max_rel_error,
              oracle=src_verdict.oracle, max_run_s=round(src_verdict.max_run_s, 3),
              time_limit_s=source_check_limit(timeout), run_limit_s=run_limit,
              failures=[f.to_json() for f in src_verdict.failures[:5]], notes=list(src_verdict.notes))
    for d in src_verdict.derived:   # derived sizes outside the source's domain (the tester's notes)
        why = next((n.split(": the source kernel itself fails there ", 1)[1] for n in src_verdict.notes
                    if isinstance(n, str) and n.startswith(f"derived instance {d['name']} left out:")), None)
        if why:
            diags.append(XPError("XP4062", name=d["name"], sizes=", ".join(f"{k}={v}" for k, v in d["sizes"].items()),
                                 why=why.strip("()")))
    out_of_time = None      # what the time budget cut, once it is spent (said in the diagnostics)
    if not src_verdict.verified:
        out_of_time = f"the source check was cut after {time.time() - t0:.1f} s"

    def test_stage(st: Stage, tag: str) -> tuple[Verdict, Path]:
        path = work / f"{tag}{DIALECT_EXT[st.dialect]}"
        if time.time() >= deadline:   # no build, no run: the budget is spent
            from ..verify.tester import RunFailure
            v = Verdict(False, "-", str(path), list(seeds), [], oracle="not run")
            v.failures.append(RunFailure("XP4020", "time budget spent: the test was not started", "-", -1))
            log.event("test", stage=tag, program_hash=st.hash, dialect=st.dialect, substrate="-", instances=[],
                      seeds=list(seeds), verified=False, max_abs_error=0.0, max_rel_error=0.0, time_limit_s=run_limit,
                      failures=[f.to_json() for f in v.failures])
            return v, path
        path.write_text(st.text)
        cand_spec = kspec.with_dialect(st.dialect, st.entry, _launch_to_spec(st.launch, kspec, params))
        cand_spec.path = path.with_name(path.name + ".toml")
        cand_spec.path.write_text(spec_to_toml(cand_spec))
        if sspec.reference and sspec.path is not None:
            # keep the reference reachable from the copied spec
            ref_file = sspec.reference.split(":")[0]
            cand_spec.reference = f"{(sspec.path.parent / ref_file).resolve()}:{sspec.reference.split(':')[1]}"
            cand_spec.path.write_text(spec_to_toml(cand_spec))
        v = compare_kernels(path, cand_spec, against=(src, sspec), use_reference=bool(sspec.reference),
                            seeds=seeds, jobs=jobs, timeout=run_limit, deadline=deadline)
        if v.verified and st.dialect in ("cuda", "hip"):
            # the emulator ran it; the real compiler of the target must accept it too
            _real_compile_gate(st.dialect, path, v)
        log.event("test", stage=tag, program_hash=st.hash, dialect=st.dialect, substrate=v.substrate,
                  instances=v.instances, seeds=list(v.seeds), verified=v.verified, max_abs_error=v.max_abs_error,
                  max_rel_error=v.max_rel_error, max_run_s=round(v.max_run_s, 3), time_limit_s=run_limit,
                  failures=[f.to_json() for f in v.failures[:5]], derived=v.derived)
        return v, path

    verified_stage = None
    best_failing = None  # (stage, verdict) of the latest target-dialect candidate that failed its tests
    verdict = None
    plan = pipeline or []

    # --proposer llm|both: the LLM policy proposes candidates; the symbolic rewrite is one proposer
    policy = None
    if proposer != "symbolic":
        from ..llm.budget import Budget
        from ..proposers.policy import make_policy
        from ..proposers.protocol import FunctionProposer
        try:
            policy = make_policy(proposer, symbolic=FunctionProposer(lambda *a, **k: [], name="symbolic"),
                                 llm_option=llm, log=lambda ev: log.event(ev.pop("type", "note"), **ev),
                                 budget=Budget(max_calls=None, max_tokens=None, deadline=deadline),
                                 replay_log=str(resume) if resume else None)
        except ValueError as e:
            raise XPError("XP1205", detail=str(e)) from None

    # --resume LOG: re-derive the steps an interrupted run already finished, then go on
    done_steps = 0
    tested: dict[str, Verdict] = {}
    if resumed is not None:
        rh, rev = resumed   # its header was checked before anything was written
        # programs the interrupted run already verified are not tested again
        for e in rev:
            if e["type"] == "test" and e.get("verified") and e.get("tier", "full") == "full":
                tested[e["program_hash"]] = Verdict(True, e["substrate"], str(src), list(e["seeds"]),
                                                    list(e["instances"]), e["max_abs_error"], e["max_rel_error"],
                                                    oracle="resumed from " + str(resume))
        done_steps = len({e.get("step") for e in rev if e["type"] == "pass" and e.get("step") is not None})
        log.event("note", what="resume", log=str(resume), steps_done=done_steps, verified_programs=len(tested))

    # what loop recovery (the source launch over the kernel's parameter names) and binding (the
    # sizes the migration is verified on) take from the migration; replay builds the same context
    step_ctx = StepContext(_launch_to_params(kspec.launch, kspec, params), _instance_params(kspec, params),
                           _preconditions_to_params(kspec, params))

    applied: dict = {}   # (program key, dialect, entry, pass, params) -> (program, text) or its PassError

    def run_symbolic(k, pname, pparams, cur: Stage):
        """The symbolic rewrite of ``cur`` by one step. A pass is a function of its input program
        and parameters (and of this migration's fixed step context), so each is applied once: a
        probed plan's steps, and the prefix the plans share (detensorize, loop recovery), are not
        re-derived when the plan runs (a probed unstage_rows took 18 s twice). A fresh Stage each
        time: callers set its steps."""
        key = (cur.key, cur.dialect, cur.entry, pname, json.dumps(pparams, sort_keys=True, default=repr))
        got = applied.get(key)
        if got is None:
            try:
                new = apply_step(Step(pname, pparams), cur, step_ctx)
                got = applied[key] = (new.program, new.text)
            except PassError as e:
                applied[key] = e
                raise
        if isinstance(got, PassError):
            raise got
        return Stage(got[0], got[0].dialect, cur.entry, cur.steps, got[1])

    def try_candidate(k, pname, pparams, cur: Stage, new: Stage, who: str, text_in_log: bool):
        stage_texts.setdefault(new.hash, new.text)
        log.event("pass", step=k, name=pname, params=pparams, proposer=who, applied=True, in_hash=cur.hash,
                  out_hash=new.hash, dialect=new.dialect, launch=new.launch,
                  **({"program_text": new.text} if text_in_log else {}))
        if new.hash == cur.hash and new.dialect == cur.dialect:
            return None
        if new.hash not in tested:
            tested[new.hash], _ = test_stage(new, f"step{k + 1}_{pname}_{who}")
        else:
            v = tested[new.hash]
            log.event("test", stage=f"step{k + 1}_{pname}_{who}", program_hash=new.hash, dialect=new.dialect,
                      substrate=v.substrate, instances=v.instances, seeds=list(v.seeds), verified=v.verified,
                      max_abs_error=v.max_abs_error, max_rel_error=v.max_rel_error, cached=True)
        return tested[new.hash]

    def repair_candidate(k, pname, who, new: Stage, v: Verdict):
        """A target-dialect candidate that failed its test goes to Z3 sketch repair
        (xpiler/repair, docs/repair.md) before it is dropped; a repair is kept only when the
        driver's own full test of the repaired program passes on at least the same instances and
        seeds. Returns (stage, verdict) of the repaired program, or None."""
        from ..repair import reapply, repair_kernel
        from ..repair import covers as _covers
        from ..frontend import parse_text
        if v.build_error is not None or any(f.code == "XP4020" for f in v.failures) or time.time() >= deadline:
            return None
        cspec = kspec.with_dialect(new.dialect, new.entry, _launch_to_spec(new.launch, kspec, params))
        if sspec.reference and sspec.path is not None:
            ref_file, fn = sspec.reference.split(":")[0], sspec.reference.split(":")[1]
            cspec.reference = f"{(sspec.path.parent / ref_file).resolve()}:{fn}"
        say(f"repairing the {pname} candidate")
        r = repair_kernel(new.text, new.dialect, new.entry, cspec, (src, sspec), seeds=seeds,
                          budget_s=min(REPAIR_BUDGET_S, max(0.0, deadline - time.time())), jobs=jobs,
                          workdir=work / f"repair{k + 1}_{who}", run_limit=run_limit, failing=v, deadline=deadline)
        rec = r.to_json()
        fixed = None
        if r.repaired:
            # the repaired program as replay re-derives it: the splice re-applied to the candidate
            rprog, rtext = reapply(parse_text(new.text, new.dialect, "<candidate>"), new.entry, new.dialect, rec)
            if rtext == r.text:
                # the splice re-parses the text: the launch is the candidate's
                rst = Stage(rprog.with_(launches=new.program.launches), new.dialect, new.entry, new.steps)
                rst.text = rtext
                stage_texts.setdefault(rst.hash, rst.text)
                tag = f"step{k + 1}_{pname}_{who}_repaired"
                rv, rpath = test_stage(rst, tag)
                if rv.verified and not _covers(rv, v):
                    # the unrepaired test's derived instances this test did not run (other
                    # boundaries derived from the repaired loops): run as was-<name> with the
                    # unrepaired sizes, so the repaired kernel is tested on at least the same set
                    from ..repair import rerun_missing
                    from ..spec import load_spec
                    n0 = len(rv.instances)
                    rerun_missing(rv, v, rpath, load_spec(rpath.with_name(rpath.name + ".toml")), (src, sspec),
                                  use_reference=bool(sspec.reference), seeds=seeds, jobs=jobs, timeout=run_limit,
                                  deadline=deadline)
                    # the combined test (the one above plus the was- runs)
                    log.event("test", stage=tag + "_was", program_hash=rst.hash, dialect=rst.dialect,
                              substrate=rv.substrate, instances=rv.instances, was=rv.instances[n0:],
                              seeds=list(rv.seeds), verified=rv.verified, max_abs_error=rv.max_abs_error,
                              max_rel_error=rv.max_rel_error, runs=rv.runs, time_limit_s=run_limit,
                              failures=[f.to_json() for f in rv.failures[:5]], derived=rv.derived)
                tested[rst.hash] = rv
                if rv.verified and _covers(rv, v):
                    fixed = (rst, rv)
        rec.pop("program_hash", None)
        log.event("repair", step=k, pass_name=pname, proposer=who, in_hash=new.hash, dialect=new.dialect,
                  out_hash=fixed[0].hash if fixed else None, accepted=fixed is not None, **rec)
        secs = f"{r.time_s:.1f}"
        if fixed:
            diags.append(XPError("XP4110", pass_name=pname, sketch=r.sketch, at=r.region.get("line"),
                                 old=r.region.get("text"), new=r.region.get("new_text"), checks=r.checks, seconds=secs))
        else:
            diags.append(XPError("XP4111", pass_name=pname, solver=r.solver if not r.repaired else
                                 "the driver's re-test failed", checks=r.checks, seconds=secs))
        return fixed

    def probe(plan) -> str | None:
        """Why a plan with required steps is not worth running (None: it is). The passes are
        applied without tests, up to the last required step; only the required steps'
        applicability is looked at."""
        cur = source_stage
        last = max((k for k, (_, pp) in enumerate(plan) if pp.get(REQUIRE)), default=-1)
        for k, (pname, pparams) in enumerate(plan):
            alts = alternatives(pass_params(pparams))
            try:
                for a, call in enumerate(alts):   # the first alternative that applies, as the plan takes it
                    try:
                        cur = run_symbolic(k, pname, call, cur)
                        break
                    except AlternativeRefused:
                        if a + 1 == len(alts):
                            raise
            except PassError as e:
                if pparams.get(REQUIRE) or e.code != "XP4002":
                    return f"{pname}: {e.code} {e.why}"
            except Exception as e:  # a probe never breaks a migration
                return f"{pname}: {type(e).__name__}"
            if k == last:
                return None  # the required steps apply: the later steps are the plan's business
        return None

    bind_input = None   # the program the adopted binding step started from (the tuner's search root)
    refusals: list = []  # (pass, PassError, dialect of the program it refused): the XP4004 reason
    source_stage = stage
    pending: list = []   # (Step, its input Stage): the plan's deferred steps since its last tested program

    def adopt_pending():
        """The program the deferred steps made verified: they are the plan's steps now."""
        nonlocal bind_input
        for st, before in pending:
            steps.append(st)
            if st.pass_name == "binding" and to in ("cuda", "hip"):
                diags.extend(_runtime_array_notes(before, to, kspec, params))
            if st.pass_name == "binding" and before.dialect != to:
                bind_input = before
        pending.clear()

    def chain_failed(k, pname, v: Verdict, program_hash: str):
        """The program the deferred steps led to failed its test: said (XP4310) and logged."""
        why = v.failures[0].message if v.failures else "it failed its test"
        diags.append(XPError("XP4310", steps=", ".join(st.pass_name for st, _ in pending), pass_name=pname,
                             why=why))
        log.event("note", what="deferred steps failed", step=k, pass_name=pname,
                  steps=[st.pass_name for st, _ in pending], program_hash=program_hash)

    def test_chain(k, pname):
        """The plan's step ``k`` left the deferred steps' program as it was (refused, or nothing to
        change): that program is tested here, as a tested step's would be."""
        nonlocal verdict, verified_stage, best_failing
        tag = f"step{k + 1}_{pname}_deferred"
        if stage.hash not in tested:
            tested[stage.hash], _ = test_stage(stage, tag)
        else:
            v = tested[stage.hash]
            log.event("test", stage=tag, program_hash=stage.hash, dialect=stage.dialect, substrate=v.substrate,
                      instances=v.instances, seeds=list(v.seeds), verified=v.verified,
                      max_abs_error=v.max_abs_error, max_rel_error=v.max_rel_error, cached=True)
        v = tested[stage.hash]
        if v.verified:
            adopt_pending()
            verdict = v
            if stage.dialect == to:
                verified_stage = stage
            return
        verdict = verdict or v
        if stage.dialect == to:
            best_failing = (stage, v)
        chain_failed(k, pname, v, stage.hash)

    def take_step(prop: Proposal) -> Outcome:
        """The evaluator of one proposed step: the symbolic rewrite and the LLM's candidates are
        tested in turn (a failing target-dialect candidate goes to repair first); the first that
        verifies is adopted."""
        nonlocal stage, verdict, verified_stage, best_failing, bind_input
        k, pname, pparams = prop.k, prop.pass_name, prop.params
        say(f"pass {k + 1}/{prop.plan_len}: {pname}")
        candidates: list[tuple[Stage, str, bool]] = []
        sym_error = None
        try:
            sym = run_symbolic(k, pname, pparams, stage)
        except ImportError as e:
            diags.append(XPError("XP4002", pass_name=pname, why=f"not available ({e})"))
            return Outcome(verified_stage is not None)
        except PassError as e:
            sym, sym_error = None, e
            if not isinstance(e, AlternativeRefused):   # (another alternative of the step is proposed next)
                refusals.append((pname, e, stage.dialect))
            log.event("pass", step=k, name=pname, params=pparams, proposer="symbolic", applied=False, code=e.code,
                      why=e.why)
        except Exception as e:   # a crash inside one pass is a refused step, never the end of the migration
            import traceback
            sym = None
            detail = f"{type(e).__name__}: {e}"
            diags.append(XPError("XP9002", pass_name=pname, detail=detail))
            log.event("pass", step=k, name=pname, params=pparams, proposer="symbolic", applied=False, code="XP9002",
                      why=detail)
            log.event("note", what="internal error in a pass", pass_name=pname, error=detail,
                      traceback=traceback.format_exc(limit=8)[-4000:])
        if prop.defer_test and policy is None and sym is not None:
            # a deferred step (pipeline.DEFER_TEST): applied without a test; the plan's next tested
            # step tests the program the chain made (replay re-applies it: the event's ``test``)
            stage_texts.setdefault(sym.hash, sym.text)
            log.event("pass", step=k, name=pname, params=pparams, proposer="symbolic", applied=True,
                      in_hash=stage.hash, out_hash=sym.hash, dialect=sym.dialect, launch=sym.launch,
                      test="deferred")
            if sym.hash != stage.hash or sym.dialect != stage.dialect:
                st = Step(pname, pparams, "symbolic", stage.hash, sym.hash)
                sym.steps = stage.steps + (st,)
                pending.append((st, stage))
                stage = sym
            return Outcome(verified_stage is not None)
        if policy is not None and k >= done_steps and not (isinstance(sym_error, AlternativeRefused)
                                                           and prop.alternatives_left):
            # (an alternative the pass refused, with others after it, is no step of its own for the LLM)
            from ..frontend import parse_text
            from ..proposers.protocol import PassContext
            out_dialect = "c" if pname == "loop_recovery" else (to if pname == "binding" else stage.dialect)
            ctx = PassContext(entry=stage.entry, source_dialect=stage.dialect, out_dialect=out_dialect, spec=kspec,
                              params=dict(pparams), parse=lambda t, d: parse_text(t, d), seed=seed)
            try:
                llm_cands = policy.llm.propose(pname, stage.text, out_dialect, ctx) if policy.llm else []
            except Exception as e:  # a failing backend is a failed candidate, never a dead migration
                log.event("note", what="llm_error", pass_name=pname, error=f"{type(e).__name__}: {e}")
                llm_cands = []
            llm_err = getattr(policy.llm, "last_error", None) if not llm_cands else None
            if llm_err:  # the endpoint, not the tests, dropped the LLM step: say which way
                what = {"timeout": "the endpoint timed out", "budget": "the time budget is spent",
                        "http_error": "the endpoint answered with an HTTP error"}.get(llm_err["kind"],
                                                                                   llm_err["kind"])
                detail = llm_err["detail"].removeprefix("the migration's time budget is spent: ")
                diags.append(XPError("XP4021", pass_name=pname,
                                     why=f"{what} after {llm_err['latency_s']:.1f} s ({detail})"))
            for c in llm_cands:
                try:
                    cprog = parse_text(c.program_text, out_dialect, f"<llm:{pname}>")
                except XPError as e:
                    log.event("note", what="llm_candidate_rejected", pass_name=pname, code=e.code)
                    continue
                # the model answers with text: the launch is the symbolic step's (else the input's)
                cst = Stage(cprog.with_(launches=(sym or stage).program.launches), out_dialect, stage.entry,
                            stage.steps)
                cst.text = _printer(out_dialect)(cprog)
                candidates.append((cst, c.proposer, True))
            if proposer == "llm":
                candidates += [(sym, "symbolic", False)] if sym else []
            else:
                candidates = ([(sym, "symbolic", False)] if sym else []) + candidates
        elif sym is not None:
            candidates = [(sym, "symbolic", False)]
        if not candidates:
            if sym_error is not None and sym_error.code != "XP4002":
                diags.append(sym_error)
            if pending and not prop.defer_test and not (isinstance(sym_error, AlternativeRefused)
                                                        and prop.alternatives_left):
                test_chain(k, pname)
            return Outcome(verified_stage is not None, refused=sym_error)
        adopted = False
        for new, who, in_log in candidates:
            v = try_candidate(k, pname, pparams, stage, new, who, in_log)
            if v is None:
                if pending:
                    test_chain(k, pname)
                adopted = True  # nothing changed
                break
            if not v.verified and repair and new.dialect == to:
                fixed = repair_candidate(k, pname, who, new, v)
                if fixed is not None:
                    new, v = fixed
            if v.verified:
                adopt_pending()   # (the deferred steps' program is part of this one)
                step = Step(pname, pparams, who, stage.hash, new.hash)
                new.steps = stage.steps + (step,)
                steps.append(step)
                if pname == "binding" and to in ("cuda", "hip") and who == "symbolic":
                    diags.extend(_runtime_array_notes(stage, to, kspec, params))
                if pname == "binding" and who == "symbolic" and stage.dialect != to:
                    bind_input = stage   # --tune also searches binding's parameters from here
                stage, verdict = new, v
                if stage.dialect == to:
                    verified_stage = stage
                adopted = True
                break
            verdict = verdict or v
            if new.dialect == to:
                best_failing = (new, v)
        if not adopted:
            last = candidates[-1]
            lv = tested.get(last[0].hash)
            cut = next((f for f in lv.failures if f.code == "XP4020"), None) if lv else None
            if cut is not None:   # the budget, not the program, ended this test: no verdict on the step
                why = cut.message.removeprefix("time budget spent: ")
                left = ", ".join(prop.later) or "none"
                diags.append(XPError("XP4020", what=f"the test of the program after {pname} was cut ({why}), "
                                                    f"so that step is not taken; passes not run: {left}"))
                return Outcome(verified_stage is not None, cut=f"the test of the program after {pname} was cut")
            diags.append(XPError("XP4003", pass_name=pname,
                                 why=lv.failures[0].message if lv and lv.failures else "candidates failed their tests"))
            if pending and lv is not None:
                chain_failed(k, pname, lv, last[0].hash)
        return Outcome(verified_stage is not None)

    searcher = None   # the Evaluator of a search strategy's candidates (xpiler/schedule/evaluator.py)
    at: dict = {}     # where the driver is (plan, step, pass, passes after it): said when the budget stops it

    def step(event):
        """The driver's answer to one event of a strategy (xpiler/schedule/strategy.py)."""
        nonlocal stage
        if isinstance(event, PlanStart):
            at.clear()
            at.update(plan=event.plan_no, passes=list(event.passes))
            if event.plan_no:
                log.event("note", what="next plan", plan=event.plan_no, passes=event.passes)
                say(f"trying plan {event.plan_no + 1}/{len(strategy.plans)}")
            stage = source_stage
            steps.clear()
            pending.clear()
            return None
        if isinstance(event, Proposal):
            at.update(step=event.plan_len - len(event.later), pass_name=event.pass_name, later=list(event.later))
            return take_step(event)
        return searcher.answer(event)   # a search's batch of programs, or a confirm timing

    # the driver: a loop over strategy -> step -> evaluator; the plans (--no-tune), then the search
    strategy = PlanStrategy([plan] if pipeline else default_plans(sspec.dialect, to), probe=probe,
                            deadline=deadline, budget=budget, log=log, diags=diags, out_of_time=out_of_time)
    # the deadline is active while the steps run: a pass, a legality check, a Z3 query or a
    # candidate loop that is still running when it passes stops at its next check
    # (xpiler/deadline.py), and the migration ends with what verified before it
    spent = None
    try:
        with deadline_active(deadline):
            drive(strategy, step)
    except BudgetSpent as e:
        spent = e
        _budget_stopped(e, budget, at, len(strategy.plans), steps, verified_stage is not None, pending, log, diags)
    k_base = strategy.k_base

    if tune and spent is None and verified_stage is not None and verified_stage.dialect == to:
        def make_job(st: Stage, tag: str, source: str, sizes):
            """One candidate with everything its test needs, as texts (xpiler/schedule/jobs.py)."""
            from ..schedule.jobs import CandidateJob
            cand_spec = kspec.with_dialect(st.dialect, st.entry, _launch_to_spec(st.launch, kspec, params))
            src_spec, ref_name, ref_text = sspec, None, None
            if sspec.reference and sspec.path is not None:
                ref_file, fn = sspec.reference.rsplit(":", 1)
                ref_name, ref_text = Path(ref_file).name, (sspec.path.parent / ref_file).read_text()
                cand_spec.reference = f"{ref_name}:{fn}"
                src_spec = replace(sspec, reference=f"{ref_name}:{fn}")
            return CandidateJob(tag, st.text, st.dialect, st.entry, spec_to_toml(cand_spec), src.name, src_text,
                                spec_to_toml(src_spec), ref_name, ref_text, tuple(seeds), run_limit,
                                max(1, jobs // max(1, getattr(pool, "workers", 1))), deadline, source, sizes,
                                src_path=str(src.resolve()))

        def log_test(st: Stage, tag: str, v: Verdict, tier: str = "full"):
            # a screening test (one instance, one seed) verifies nothing for the migration: it is
            # logged with its tier and never stands for a program's test (``tested``, --resume)
            if tier == "full":
                tested.setdefault(st.hash, v)
            stage_texts.setdefault(st.hash, st.text)
            log.event("test", stage=tag, program_hash=st.hash, dialect=st.dialect, substrate=v.substrate,
                      instances=v.instances, seeds=list(v.seeds), verified=v.verified, max_abs_error=v.max_abs_error,
                      max_rel_error=v.max_rel_error, max_run_s=round(v.max_run_s, 3), time_limit_s=run_limit,
                      failures=[f.to_json() for f in v.failures[:5]], derived=v.derived, tier=tier)

        from ..schedule.evaluator import Evaluator
        from ..schedule.pool import LocalPool
        # candidates are evaluated --jobs at a time (each test's runs then one at a time), or on a cluster
        pool = dask_pool or LocalPool(jobs)
        search = _search_strategy(verified_stage, bind_input, to, make_job, pool, step_ctx, deadline, max_evals,
                                  seed, log, say, diags, tune_sizes, origin=source_stage)
        if search is not None:
            # candidates are screened (one instance, one seed); the full test only for one that
            # would become the incumbent (docs/schedule.md "Screening")
            searcher = Evaluator(lambda st, tag: make_job(st, tag, search.source, tune_sizes), search.source,
                                 pool=pool, log_test=log_test, screen=True)
            try:
                with deadline_active(deadline):
                    found = drive(search, step)
            except BudgetSpent as e:   # the untuned kernel stays (its steps are the plans')
                _budget_stopped(e, budget, {"search": True}, 0, steps, True, [], log, diags)
            else:
                verified_stage = _adopt_search(found, log, say, steps, k_base)
    if added_sizes:   # last, so that the first diagnostic of a failed run stays its reason
        diags.append(XPError("XP4061", n=len(added_sizes), params=_describe_sizes(added_sizes)))
    diags.extend(variant_notes)   # notes too: after the reason of a failed run
    result = MigrationResult(False, to, stage.text, None, None, None, outdir / "provenance.jsonl", verdict, steps,
                             diagnostics=diags, stage_texts=stage_texts)
    if verified_stage is not None and verified_stage.dialect == to:
        out = od.write_text(out_name, verified_stage.text)
        ospec = kspec.with_dialect(to, verified_stage.entry, _launch_to_spec(verified_stage.launch, kspec, params))
        if sspec.reference and sspec.path is not None:
            ref_file, fn = sspec.reference.rsplit(":", 1)
            od.copy(sspec.path.parent / ref_file, Path(ref_file).name)
            ospec.reference = f"{Path(ref_file).name}:{fn}"
        ospec.path = outdir / (out_name + ".toml")
        od.write_text(out_name + ".toml", spec_to_toml(ospec))
        final_text = verified_stage.text
        hprog = host_prog or prog
        if time.time() >= deadline and (to != "c" or any(f.kind == "host" for f in hprog.funcs if f.body is not None)):
            diags.append(XPError("XP4020", what="the host launcher was not migrated (the kernel is written without it)"))
        elif to != "c" or any(f.kind == "host" for f in hprog.funcs if f.body is not None):
            say("migrating the host launcher")
            with deadline_active(deadline):
                final_text = _with_host(hprog, verified_stage, to, sspec, ospec, params, out, src, seeds, jobs, log, diags,
                                        kspec=kspec,
                                        timeout=min(run_limit, max(0.1, deadline - time.time())))
        result.verified, result.code, result.output_path = True, final_text, out
        result.spec_path = outdir / (out_name + ".toml")
        log.event("output", path=str(out), program_hash=verified_stage.hash, verified=True)
        if perf and time.time() >= deadline:
            result.perf_note = "not timed: the time budget was spent"
            diags.append(XPError("XP4020", what="the verified kernel was not timed against its reference"))
            log.event("perf", rows=[], note=result.perf_note)
        elif perf:
            from ..perf import measure
            say("timing the kernel against its reference")
            rows, note = measure(out, ospec, timeout_s=min(run_limit, max(0.1, deadline - time.time())))
            result.perf, result.perf_note = rows, note
            result.latency = rows[0].kernel_ms if rows else None
            log.event("perf", rows=[r.to_json() for r in rows], note=note)
        if emit_asm:   # after verification; never changes the verdict (xpiler/asm.py)
            from ..asm import emit as _emit_asm
            say("writing the target's assembly")
            result.asm, asm_files, asm_notes = _emit_asm(out, to, od, log)
            diags.extend(asm_notes)
    else:
        diags.append(_unresolved(to, sspec.entry, refusals, stage.dialect))
        cand, cverdict = best_failing if best_failing else (stage, verdict)
        unv = od.write_text(f"{stem}.unverified{DIALECT_EXT[cand.dialect]}", cand.text)
        uspec = kspec.with_dialect(cand.dialect, cand.entry, _launch_to_spec(cand.launch, kspec, params))
        if sspec.reference and sspec.path is not None:
            ref_file, fn = sspec.reference.rsplit(":", 1)
            od.copy(sspec.path.parent / ref_file, Path(ref_file).name)
            uspec.reference = f"{Path(ref_file).name}:{fn}"
        od.write_text(unv.name + ".toml", spec_to_toml(uspec))
        result.output_path, result.code = unv, cand.text
        result.spec_path = outdir / (unv.name + ".toml")
        if cverdict is not None and cverdict.failures:
            od.claim(unv.name + ".failing_test.py")
            result.failing_test = write_failing_test(outdir, unv, src, sspec, cverdict)
        log.event("output", path=str(unv), program_hash=cand.hash, verified=False,
                  failing_test=str(result.failing_test) if result.failing_test else None)
    result.elapsed_s = time.time() - t0
    try:
        from ..report import write_report
        result.report_path = write_report(outdir, src, sspec, result, log.path, owner=od)
    except ImportError:
        pass
    # the closing event: the hashes of the files as written (replay requires it; docs/provenance.md)
    log.end({"output": result.output_path, "spec": result.spec_path, "failing_test": result.failing_test,
             **(asm_files if emit_asm and result.verified else {})})
    log.close()
    od.finish()     # the hashes of the files written, in the folder's marker
    od.cleanup()
    return result
