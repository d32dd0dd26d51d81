"""Where a tuned migration's candidate evaluations spend their time (issue 13, helper 79).

Runs ``xpiler migrate SRC --to T --tune --budget B --seed S`` in this process with timers around
the parts of a candidate's evaluation (only inside the search's jobs, ``run_candidate``): the
builds (``_Runner`` set-up: candidate and source kernel), each candidate run and each source-kernel
run, the reference (numpy), the boundary derivation, the real-compiler check (cuda/hip) and the
latency (timing or model), and the model prior the search asks before expanding. Then it reads the
provenance log: evaluations, the tests the search ran (full or screening), and the search's time.

    .venv/bin/python benchmarks/eval_cost.py examples/gemm/gemm.c c --budget 120 --seed 0

Prints one JSON line. To measure another checkout's code, run it with ``PYTHONPATH=<checkout>``
(the timers wrap names that exist before and after the screening tier). Emulator and test times
are costs of the search, never kernel performance.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

_local = threading.local()
_lock = threading.Lock()
T: dict = defaultdict(float)
N: dict = defaultdict(int)


def _add(name: str, dt: float):
    with _lock:
        T[name] += dt
        N[name] += 1


def _timed(mod, attr: str, name, *, always: bool = False):
    fn = getattr(mod, attr)

    def w(*a, **kw):
        if not always and not getattr(_local, "in_job", False):
            return fn(*a, **kw)
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            _add(name(*a, **kw) if callable(name) else name, time.perf_counter() - t)
    setattr(mod, attr, w)


def install():
    from xpiler.schedule import jobs, tune
    from xpiler.verify import tester
    from xpiler.migration import driver
    run_candidate = jobs.run_candidate

    def job(j):
        _local.in_job = True
        t = time.perf_counter()
        try:
            return run_candidate(j)
        finally:
            _local.in_job = False
            _add("job_total", time.perf_counter() - t)
    jobs.run_candidate = job
    init = tester._Runner.__init__

    def runner_init(self, src, spec, sanitize, *a, **kw):
        if not getattr(_local, "in_job", False):
            return init(self, src, spec, sanitize, *a, **kw)
        t = time.perf_counter()
        try:
            return init(self, src, spec, sanitize, *a, **kw)
        finally:
            # the candidate's file is named for its tag (tune_root, tune<k>); the source keeps its name
            cand = Path(src).name.startswith("tune")
            _add(("build_candidate" if cand else "build_source") + ("" if sanitize else " (no ASan)"),
                 time.perf_counter() - t)
    tester._Runner.__init__ = runner_init
    _timed(tester._Runner, "run", lambda self, inst, arrays, tag, *a, **kw:
           "run_source" if str(tag).startswith("src-") else "run_candidate")
    _timed(tester, "reference_outputs", "reference")
    _timed(tester, "_derived", "derive_boundaries")
    _timed(driver, "_real_compile_gate", "real_compile")
    _timed(jobs, "_latency", "latency")
    from xpiler.schedule import evaluator, mcts
    # the search thread: a node's steps listed and rated (each applied once for the prior), and
    # the wall time of the evaluator's batches (the jobs, in parallel on the pool)
    _timed(mcts.MCTS, "_steps", lambda self, h: "expand (search thread)" if h not in self.untried else "expand (known)",
           always=True)
    _timed(evaluator.Evaluator, "evaluate_many", "batches (wall)", always=True)
    prior = tune.model_prior

    def model_prior(*a, **kw):
        p = prior(*a, **kw)

        def timed(st):
            t = time.perf_counter()
            try:
                return p(st)
            finally:
                _add("prior (search thread)", time.perf_counter() - t)
        return timed
    tune.model_prior = model_prior
    driver_prior = getattr(driver, "model_prior", None)
    if driver_prior is not None:
        driver.model_prior = model_prior


def summary(log: Path) -> dict:
    ev = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    tune = [e for e in ev if e["type"] == "tune"]
    start = next((e for e in tune if e.get("kind") == "start"), None)
    res = next((e for e in tune if e.get("kind") == "result"), None)
    tests = [e for e in ev if e["type"] == "test" and str(e.get("stage", "")).startswith("tune")]
    full = [e for e in tests if e.get("tier", "full") == "full"]
    out = {"evaluations": res.get("evaluations") if res else None,
           "tests": len(tests), "full_tests": len(full), "screen_tests": len(tests) - len(full),
           "search_s": round(res["time"] - start["time"], 1) if res and start else None,
           "stopped": res.get("stopped") if res else None, "note": res.get("note") if res else None,
           "untuned_ms": res.get("untuned_ms") if res else None, "tuned_ms": res.get("tuned_ms") if res else None,
           "latency_source": res.get("latency_source") if res else None,
           "chosen": res.get("chosen") if res else None, "steps": len(res.get("steps", [])) if res else None}
    outs = [e for e in ev if e["type"] == "output"]
    if outs:   # the returned kernel's own test: its instances and seeds
        h = outs[-1]["program_hash"]
        t = [e for e in ev if e["type"] == "test" and e.get("program_hash") == h
             and e.get("tier", "full") == "full" and e.get("verified")]
        if t:
            out["returned_test"] = {"stage": t[-1].get("stage"), "tier": t[-1].get("tier", "full"),
                                    "instances": len(t[-1].get("instances", [])), "seeds": t[-1].get("seeds"),
                                    "verified": t[-1].get("verified")}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("to")
    ap.add_argument("--budget", type=float, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", help="write the migration here (default: a temporary folder)")
    a = ap.parse_args()
    install()
    from xpiler.cli import main as cli
    outdir = a.keep or tempfile.mkdtemp(prefix="xpiler-evalcost-")
    t0 = time.time()
    rc = cli(["migrate", a.src, "--to", a.to, "--tune", "--budget", str(a.budget), "--seed", str(a.seed),
              "-o", outdir, "--force"])
    s = summary(Path(outdir) / "provenance.jsonl")
    ev = s["evaluations"] or 0
    s.update(src=a.src, to=a.to, budget=a.budget, seed=a.seed, rc=rc, wall_s=round(time.time() - t0, 1),
             s_per_eval=round(s["search_s"] / ev, 2) if ev and s["search_s"] else None,
             parts_s={k: round(v, 2) for k, v in sorted(T.items())}, parts_n=dict(sorted(N.items())))
    print(json.dumps(s))


if __name__ == "__main__":
    main()
