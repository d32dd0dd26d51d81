"""``xpiler migrate DIR --to T -o OUT``: every kernel of a tree, in parallel, resumable.

Order of work: find the kernels (discovery.py); refuse bad input before anything is written
(no kernels: XP1240; OUT a file or holding files xpiler did not write: OutDir's rules); read
``OUT/project-state.jsonl`` (state.py) and sort the kernels into

- unchanged: finished (verified or unresolved) by an earlier run with the same input and option
  hashes, and their report still there: not run again;
- recovered: started by a run that was killed, and their own log is closed (the child finished
  just before the kill): the result is read from the log, nothing is run (XP4124);
- resumed: started by a run that was killed, their log is open: ``--resume`` from it (XP4122),
  or a clean restart when it cannot be used (XP4123);
- new: everything else (also kernels whose earlier result was an error or bad input: those
  can depend on things outside the hashes, e.g. a file in the way in OUT);

then run the rest ``jobs`` at a time (each in its own child process, worker.py) or on a Dask
cluster, append a record per finished kernel to the state file, print a line per finished
kernel, and write ``summary.json`` and ``summary.html`` (summary.py).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import __version__
from ..diagnostics import XPError
from ..examples_index import KERNEL_EXTS
from ..migration.outdir import OutDir
from .discovery import KernelFile, discover
from .state import STATE_FILE, ProjectState, input_sha256, options_sha256
from .summary import SUMMARY_HTML, SUMMARY_JSON, build_summary, write_summary

#: test hook: after this many kernels finished in this run, the run kills its own process
#: group with SIGKILL (a simulated kill -9 of the run and its children)
STOP_AFTER_ENV = "XPILER_PROJECT_STOP_AFTER"


@dataclass
class ProjectResult:
    outdir: Path
    records: list[dict]
    counts: dict
    exit_code: int
    summary_json: Path
    summary_html: Path
    warnings: list[XPError] = field(default_factory=list)


def _options(to, proposer, llm, budget, tune, seed, timeout, perf, max_evals, tune_sizes) -> dict:
    return {"to": to, "proposer": proposer, "llm": llm, "budget_s": budget, "tune": bool(tune), "seed": seed,
            "timeout_s": timeout, "perf": bool(perf), "max_evals": max_evals if tune else None,
            "tune_sizes": tune_sizes if tune else None}


def _log_state(log: Path, src: Path, to: str) -> tuple[str, str]:
    """('closed'|'open'|'unusable'|'none', why) for a kernel's provenance log."""
    if not log.is_file():
        return "none", "no log was written before the kill"
    from ..provenance import read_log, sha256_text
    from ..source_text import read_source
    try:
        header, events = read_log(log)
    except (OSError, ValueError) as e:
        return "unusable", f"its log is not readable: {e}"
    try:
        sha = sha256_text(read_source(src))
    except XPError as e:
        return "unusable", e.message
    if header.get("source_sha256") != sha or header.get("target") != to:
        return "unusable", "its log is of another source or target"
    if any(e.get("type") == "end" for e in events):
        return "closed", ""
    return "open", ""


def _record_from_log(k: KernelFile, outdir: Path, log: Path) -> dict:
    """The summary record of a migration that finished (its log closed) before the run that
    started it was killed."""
    from ..provenance import read_log
    header, events = read_log(log)
    end = next(e for e in events if e.get("type") == "end")
    verified = bool(end.get("verified"))
    sub = None
    for e in events:
        if e.get("type") == "test" and e.get("program_hash") == end.get("program_hash") and e.get("verified"):
            sub = e.get("substrate")
    perf = next((e for e in reversed(events) if e.get("type") == "perf"), None)
    sp = base = None
    if perf and perf.get("rows"):
        import math
        vals = [r.get("speedup_vs_baseline") for r in perf["rows"]]
        vals = [v for v in vals if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
        if vals:
            sp = round(math.exp(sum(math.log(v) for v in vals) / len(vals)), 4)
            base = perf["rows"][0].get("baseline")
    out = next((f["path"] for f in end.get("files", []) if f.get("role") == "output"), None)
    report = log.parent / "report.html"
    return {"rel": k.rel, "verdict": "verified" if verified else "unresolved", "exit_code": 0 if verified else 3,
            "substrate": sub, "time_s": round(float(end.get("time", 0)) - float(header.get("time", end.get("time", 0))), 2)
            if header.get("time") else None,
            "speedup": sp, "speedup_vs": base, "report": str(report) if report.is_file() else None,
            "output": out, "log": str(log), "diagnostics": [], "messages": [],
            "notes": [XPError("XP4124", name=k.rel, log=str(log)).to_json()]}


def migrate_project(root: str | Path, to: str, outdir: str | Path = "out", *, jobs: int = 2, cluster=None,
                    proposer: str = "symbolic", llm: str | None = None, budget: float = 600.0,
                    tune: bool = False, seed: int = 0, timeout: float = 120.0, perf: bool = True,
                    force: bool = False, max_evals: int | None = None, tune_sizes: dict | None = None,
                    kernel_jobs: int = 1, extra: dict | None = None,
                    say: Callable[[str], None] | None = None) -> ProjectResult:
    """Migrate every kernel below ``root`` to ``to`` into ``outdir`` (docs/projects.md).

    ``extra``: further keyword arguments of ``xpiler.migrate`` passed to every kernel's migration
    (e.g. ``{"emit_asm": True}``); they are part of the options hash."""
    from ..migration.driver import check_run_options
    from ..spec import DIALECT_EXT
    say = say or (lambda msg: None)
    check_run_options(budget=budget, jobs=jobs, timeout=timeout, max_evals=max_evals)
    check_run_options(jobs=kernel_jobs)
    if to not in DIALECT_EXT:
        raise XPError("XP1004", value=to)
    root, outdir = Path(root), Path(outdir)
    if not root.is_dir():
        raise XPError("XP1201", path=root, file=root)
    r_abs, o_abs = root.resolve(), outdir.resolve()
    if r_abs == o_abs or r_abs.is_relative_to(o_abs):
        raise XPError("XP1244", src=root, path=outdir, file=outdir)
    kernels = discover(root, skip=[outdir])
    if not kernels:
        raise XPError("XP1240", path=root, exts=" ".join(KERNEL_EXTS), file=root)
    # OUT itself: its three files are xpiler's or nothing, before anything is written
    od = OutDir(outdir, force=force)
    od.check([SUMMARY_JSON, SUMMARY_HTML, STATE_FILE], {})
    pool = None
    if cluster is not None:   # connected before anything is written: an unreachable one is bad input
        from ..schedule.pool import DaskPool
        pool = DaskPool(cluster)

    options = _options(to, proposer, llm, budget, tune, seed, timeout, perf, max_evals, tune_sizes)
    if extra:
        options["extra"] = dict(sorted(extra.items()))
    opt_sha = options_sha256(options)
    state = ProjectState(outdir / STATE_FILE)
    od.claim(STATE_FILE)
    run = state.open({"tool": "xpiler", "version": __version__, "root": str(r_abs), "to": to, "options": options,
                      "options_sha256": opt_sha, "jobs": jobs, "cluster": str(cluster) if cluster else None})
    for w in state.warnings:
        say(w.format())

    # sort the kernels
    records: dict[str, dict] = {}
    todo: list[tuple[KernelFile, dict]] = []
    counts = {"total": len(kernels), "unchanged": 0, "recovered": 0, "resumed": 0, "restarted": 0, "new": 0,
              "needs_spec": 0, "already_target": 0}
    for k in kernels:
        kout = outdir / k.out_rel
        if k.dialect == to:   # nothing to migrate: listed, not run (docs/projects.md)
            counts["already_target"] += 1
            records[k.rel] = {"rel": k.rel, "verdict": "already target", "exit_code": None, "substrate": None,
                              "time_s": None, "speedup": None, "report": None, "output": None, "log": None,
                              "diagnostics": [], "messages": [f"{k.rel} is already {to}: not migrated"], "notes": [],
                              "spec_origin": k.spec_origin, "mode": "not run"}
            continue
        if k.problem is not None:
            counts["needs_spec"] += 1
            records[k.rel] = {"rel": k.rel, "verdict": "needs spec", "exit_code": 2, "substrate": None,
                              "time_s": None, "speedup": None, "report": None, "output": None, "log": None,
                              "diagnostics": [k.problem.code], "messages": [k.problem.format()], "notes": [],
                              "spec_origin": "missing", "mode": "not run"}
            continue
        spec_path = k.spec
        if k.inferred_text is not None:
            spec_path = (kout / (Path(k.rel).name + ".inferred.toml")).resolve()   # absolute: Dask workers too
        try:
            in_sha = input_sha256(k.source, k.spec, k.inferred_text)
        except OSError as e:
            records[k.rel] = {"rel": k.rel, "verdict": "bad input", "exit_code": 2, "diagnostics": ["XP1201"],
                              "messages": [f"{k.rel}: cannot be read: {e}"], "notes": [], "mode": "not run"}
            continue
        prev = state.done.get(k.rel)
        if (prev and prev.get("input_sha256") == in_sha and prev.get("options_sha256") == opt_sha
                and prev.get("exit_code") in (0, 3) and prev.get("report")
                and (outdir / prev["report"]).is_file()):
            counts["unchanged"] += 1
            records[k.rel] = {**prev, "mode": "unchanged", "run": prev.get("run")}
            continue
        job = {"rel": k.rel, "src": str(k.source), "spec": str(spec_path), "outdir": str(kout.resolve()), "to": to,
               "proposer": proposer, "llm": llm, "budget": budget, "tune": tune, "seed": seed, "timeout": timeout,
               "perf": perf, "force": force, "max_evals": max_evals, "tune_sizes": tune_sizes,
               "kernel_jobs": kernel_jobs, "extra": extra or {}, "input_sha256": in_sha, "spec_origin": k.spec_origin,
               "inferred_text": k.inferred_text, "mode": "new"}
        started = state.started.get(k.rel)
        if started and started.get("input_sha256") == in_sha and started.get("options_sha256") == opt_sha:
            log = kout / "provenance.jsonl"
            how, why = _log_state(log, k.source, to)
            if how == "closed":
                rec = _record_from_log(k, outdir, log)
                counts["recovered"] += 1
                rec.update(mode="recovered", input_sha256=in_sha, options_sha256=opt_sha, spec_origin=k.spec_origin)
                rec = _relative(rec, outdir)
                state.append({"type": "done", **rec})
                records[k.rel] = rec
                say(_line(rec, to, None))
                continue
            if how == "open":
                job.update(resume=str(log.resolve()), mode="resumed")
            elif how == "unusable":
                job.update(mode="restarted", restart_why=why)
            # 'none': it never wrote a log (killed before it got going): a plain new run
        todo.append((k, job))

    say(f"{len(kernels)} kernel file(s) under {root}: {counts['unchanged']} unchanged (not run again), "
        f"{counts['recovered']} recovered from their logs, {len(todo)} to migrate to {to}"
        + (f", {counts['needs_spec']} need a spec (listed in the summary)" if counts["needs_spec"] else "")
        + (f", {counts['already_target']} already {to} (not migrated)" if counts["already_target"] else "")
        + (f" on {pool.label}" if pool else f", {jobs} at a time"))

    stop_after = int(os.environ.get(STOP_AFTER_ENV, "0") or 0)
    lock = threading.Lock()
    finished = [0]
    total_run = len(todo)

    def prepare(k: KernelFile, job: dict) -> dict:
        """Write the inferred spec (if any) and the 'start' record; the job the worker gets."""
        if job.get("inferred_text") is not None:
            p = Path(job["spec"])
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.is_file() or p.read_text() != job["inferred_text"]:
                p.write_text(job["inferred_text"])
        with lock:
            state.append({"type": "start", "rel": k.rel, "input_sha256": job["input_sha256"],
                          "options_sha256": opt_sha, "mode": job["mode"]})
        return {key: v for key, v in job.items() if key != "inferred_text"}

    def finish(k: KernelFile, job: dict, rec: dict) -> None:
        rec = _relative(rec, outdir)
        if job["mode"] == "restarted":
            rec.setdefault("notes", []).append(XPError("XP4123", name=k.rel, why=job.get("restart_why", "")).to_json())
        mode = rec.get("mode") if rec.get("mode") in ("resumed", "restarted") else job["mode"]
        rec.update(mode=mode, input_sha256=job["input_sha256"], options_sha256=opt_sha, spec_origin=job["spec_origin"],
                   spec=_rel_to(job["spec"], outdir) if job["spec_origin"] == "inferred" else job["spec"])
        with lock:
            state.append({"type": "done", **rec})
            records[k.rel] = rec
            counts[mode if mode in counts else "new"] += 1
            finished[0] += 1
            say(_line(rec, to, (finished[0], total_run)))
            if stop_after and finished[0] >= stop_after:
                _kill_self()

    if pool is not None:
        from distributed import as_completed as dask_completed
        from .worker import run_job
        futs = {}
        for k, job in todo:
            futs[pool.client.submit(run_job, prepare(k, job), pure=False, key=f"xpiler-{k.rel}-{time.time()}")] = (k, job)
        for fut in dask_completed(list(futs)):
            k, job = futs[fut]
            try:
                rec = fut.result()
            except Exception as e:   # the worker itself died: that kernel's failure
                rec = {"rel": k.rel, "verdict": "error", "exit_code": 1, "diagnostics": ["XP4120"], "notes": [],
                       "messages": [XPError("XP4120", name=k.rel, why=f"the Dask task failed: {e}").format()]}
            finish(k, job, rec)
    elif todo:
        from .worker import run_job

        def one(item):
            k, job = item
            return run_job(prepare(k, job))
        with ThreadPoolExecutor(max_workers=min(jobs, len(todo))) as ex:
            futs = {ex.submit(one, item): item for item in todo}
            for fut in as_completed(futs):
                k, job = futs[fut]
                finish(k, job, fut.result())
    state.close()

    ordered = [records[k.rel] for k in kernels if k.rel in records]
    summary = build_summary(ordered, root=r_abs, outdir=outdir, to=to, options=options, run=run, counts=counts)
    sj, sh = write_summary(od, summary)
    od.finish()
    return ProjectResult(outdir, ordered, summary["counts"], summary["exit_code"], sj, sh, state.warnings)


def _kill_self() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    if os.getpgrp() == os.getpid():   # the run leads its own group: kill it with its children
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _rel_to(p, outdir: Path) -> str | None:
    if not p:
        return None
    try:
        return Path(p).resolve().relative_to(outdir.resolve()).as_posix()
    except ValueError:
        return str(p)


def _relative(rec: dict, outdir: Path) -> dict:
    """Paths of a record made relative to OUT (so the summary's links work when OUT moves)."""
    rec = dict(rec)
    for key in ("report", "output", "log"):
        rec[key] = _rel_to(rec.get(key), outdir)
    return rec


def _line(rec: dict, to: str, pos) -> str:
    head = f"[{pos[0]}/{pos[1]}] " if pos else ""
    verdict = rec.get("verdict", "?").upper()
    bits = [f"{head}{verdict:10s} {rec['rel']} -> {to}"]
    if rec.get("substrate"):
        bits.append(f"({rec['substrate']})")
    if rec.get("time_s") is not None:
        bits.append(f"{rec['time_s']:.1f}s")
    if rec.get("speedup"):
        bits.append(f"{rec['speedup']:.2f}x vs {rec.get('speedup_vs') or 'baseline'}")
    if rec.get("mode") in ("resumed", "restarted", "recovered"):
        bits.append(f"[{rec['mode']}]")
    if rec.get("verdict") != "verified" and rec.get("diagnostics"):
        bits.append(" ".join(dict.fromkeys(rec["diagnostics"][:3])))
    return " ".join(bits)
