"""One kernel of a directory run, in its own child process.

``run_job(job)`` (called by the local pool's threads, or on a Dask worker) starts
``python -m xpiler.project.worker JOB.json`` and reads the result file the child writes; a
child that crashes, is killed or overruns its limit is that kernel's failure (XP4120, XP4121),
never the run's. The child calls the same ``xpiler.migrate`` as the single-file command; with
``resume`` set it continues from the kernel's own provenance log (``--resume``), and starts
again from the beginning when that log cannot be resumed from (said in the record).
"""
from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr
from pathlib import Path

from ..diagnostics import XPError


def _exit_code_for(e: XPError) -> tuple[int, str]:
    """The single-file command's exit code for ``e`` and its printed form (xpiler/cli.py)."""
    from ..cli import _err
    buf = io.StringIO()
    with redirect_stderr(buf):
        code = _err(e)
    return code, buf.getvalue().strip()


def _verdict_name(exit_code: int) -> str:
    return {0: "verified", 3: "unresolved", 2: "bad input"}.get(exit_code, "error")


def _speedup(perf) -> tuple[float | None, str | None]:
    """Geometric mean of baseline/kernel over the measured instances (None: not measured)."""
    vals = [r.speedup for r in perf if r.kernel_ms > 0 and math.isfinite(r.speedup)]
    if not vals:
        return None, None
    return round(math.exp(sum(math.log(v) for v in vals) / len(vals)), 4), perf[0].baseline


def migrate_one(job: dict) -> dict:
    """Migrate one kernel (in this process); the record of the summary, never an exception."""
    from ..api import migrate
    t0 = time.time()
    rec: dict = {"rel": job["rel"], "notes": []}
    kw = dict(to=job["to"], spec=job["spec"], outdir=job["outdir"], llm=job.get("llm"),
              proposer=job.get("proposer", "symbolic"), budget=job["budget"], tune=job.get("tune", False),
              seed=job.get("seed", 0), jobs=job.get("kernel_jobs", 1), perf=job.get("perf", True),
              timeout=job["timeout"], force=job.get("force", False), max_evals=job.get("max_evals"),
              tune_sizes=job.get("tune_sizes"), **(job.get("extra") or {}))
    try:
        try:
            r = migrate(job["src"], resume=job.get("resume"), **kw)
            if job.get("resume"):
                rec["mode"] = "resumed"
                rec["notes"].append(XPError("XP4122", name=job["rel"], log=job["resume"]).to_json())
        except XPError as e:
            if not job.get("resume") or e.code not in ("XP4006", "XP4007"):
                raise
            # the log of the interrupted run cannot be resumed from: start again, and say why
            rec["mode"] = "restarted"
            rec["notes"].append(XPError("XP4123", name=job["rel"], why=f"{e.code}: {e.message}").to_json())
            r = migrate(job["src"], resume=None, **kw)
    except XPError as e:
        code, text = _exit_code_for(e)
        errs = list(getattr(e, "errors", None) or [e])
        rec.update(verdict=_verdict_name(code), exit_code=code, substrate=None, time_s=round(time.time() - t0, 2),
                   speedup=None, report=None, output=None, log=None,
                   diagnostics=[x.code for x in errs], messages=[text[:2000]])
        return rec
    except Exception as e:   # a real bug: that kernel's internal error, the run goes on
        rec.update(verdict="error", exit_code=1, substrate=None, time_s=round(time.time() - t0, 2), speedup=None,
                   report=None, output=None, log=None, diagnostics=["XP9001"],
                   messages=[XPError("XP9001", detail=f"{type(e).__name__}: {e}").format()[:2000]])
        return rec
    sp, base = _speedup(r.perf)
    rec.update(verdict="verified" if r.verified else "unresolved", exit_code=r.exit_code,
               substrate=r.verdict.substrate if r.verdict else None, time_s=round(r.elapsed_s, 2),
               speedup=sp, speedup_vs=base, report=str(r.report_path) if r.report_path else None,
               output=str(r.output_path) if r.output_path else None,
               log=str(r.log_path) if r.log_path else None,
               diagnostics=[d.code for d in r.diagnostics],
               messages=[d.format()[:500] for d in r.diagnostics[:3]])
    return rec


def run_job(job: dict) -> dict:
    """Run ``migrate_one`` for ``job`` in a child process; a crash or overrun is a record too."""
    limit = float(job.get("child_limit") or (job["budget"] * 1.5 + 60))
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="xpiler-project-") as tmp:
        jf, rf = Path(tmp) / "job.json", Path(tmp) / "result.json"
        jf.write_text(json.dumps({**job, "result": str(rf)}))
        # same process group as the run: killing the run's group stops its children too
        proc = subprocess.Popen([sys.executable, "-m", "xpiler.project.worker", str(jf)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            out, _ = proc.communicate(timeout=limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            timed_out = True
        if rf.is_file() and not timed_out:
            try:
                return json.loads(rf.read_text())
            except ValueError:
                pass
        tail = (out or b"").decode("utf-8", "replace").strip().splitlines()[-6:]
        if timed_out:
            e = XPError("XP4121", name=job["rel"], limit=round(limit))
        else:
            how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
            e = XPError("XP4120", name=job["rel"], why=f"its child process ended with {how}")
        return {"rel": job["rel"], "notes": [], "verdict": "error", "exit_code": 1, "substrate": None,
                "time_s": round(time.time() - t0, 2), "speedup": None, "report": None, "output": None,
                "log": None, "diagnostics": [e.code], "messages": [e.format()] + tail}


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    if os.environ.get("XPILER_PROJECT_TEST_CRASH") and job["rel"].endswith(os.environ["XPILER_PROJECT_TEST_CRASH"]):
        os.abort()     # test hook: a child that dies (the run must go on)
    rec = migrate_one(job)
    res = Path(job["result"])
    tmp = res.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, default=str))
    os.replace(tmp, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
