#!/usr/bin/env python3
"""Tuned vs untuned c outputs vs numpy and PyTorch (CPU), on this CPU, side by side in one run; the
tuning time per kernel; and the speed-up reached as a function of tuning time.

    python benchmarks/tune_cpu.py [--ops softmax,gemm,...] [--dialects cu,hip,mlu]
                                  [--budget S] [--max-evals N] [--threads 1] [--keep DIR] [--out OUT]

1. Each source ``examples/<op>/<op>.<dialect>`` is migrated to c twice: untuned (the default), and
   with ``--tune --tune-sizes <perf shape>`` (candidates timed natively on this CPU; the log's
   ``latency_source`` names the substrate). The wall time of the tuned migration is its tuning time.
2. Then, in this process: the untuned and the tuned kernel are built natively and timed inside their
   harness at the operator's perf shape (``cpu_perf.PERF``, the shapes of the seventh session's
   table), alternately for ``--rounds`` rounds (median of 10 calls each), and numpy and PyTorch
   (``cpu_perf.baselines``) are timed next to them, all with ``--threads`` threads. A tuned output
   byte-identical to the untuned one is timed once and reported as such.
3. Speed-up vs budget: the search's prefix does not depend on its budget (same seed), so the best
   latency found by t seconds into one run is what a budget of t seconds keeps; it is read from the
   log's ``tune`` events, as the tuner measured it (not re-timed).

Prints markdown tables; writes OUT/tune_cpu.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cpu_perf import PERF, baselines, best_time, time_output  # noqa: E402

BUDGET_MARKS = (15, 30, 60, 120, 240, 480)
EXT = {"cu": ".cu", "hip": ".hip", "mlu": ".mlu", "c": ".c"}


def migrate(src: Path, out: Path, tune: bool, a) -> float:
    cmd = [sys.executable, "-m", "xpiler", "migrate", str(src), "--to", "c", "-o", str(out), "--force", "--no-perf"]
    if tune:
        cmd += ["--tune", "--budget", str(a.budget), "--jobs", str(a.jobs), "--seed", "0",
                "--tune-sizes", ",".join(f"{k}={v}" for k, v in PERF[src.parent.name].items())]
        if a.max_evals:
            cmd += ["--max-evals", str(a.max_evals)]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    t0 = time.time()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    return time.time() - t0


def budget_curve(log: Path) -> dict:
    ev = [json.loads(x) for x in log.read_text().splitlines()[1:]]
    t = [e for e in ev if e["type"] == "tune"]
    start = next((e for e in t if e["kind"] == "start"), None)
    if start is None or not (start.get("root") or {}).get("latency_ms"):
        return {}
    root = start["root"]["latency_ms"]
    best, pts = root, []
    for e in t:
        if e["kind"] == "evaluate" and e.get("verified") and e.get("latency_ms"):
            best = min(best, e["latency_ms"])
            pts.append((e["time"] - start["time"], root / best))
    return {f"{m}s": max([s for tt, s in pts if tt <= m], default=1.0) for m in BUDGET_MARKS}


def tune_events(log: Path) -> tuple[dict, dict]:
    ev = [json.loads(x) for x in log.read_text().splitlines()[1:]]
    res = next((e for e in ev if e["type"] == "tune" and e["kind"] == "result"), {})
    start = next((e for e in ev if e["type"] == "tune" and e["kind"] == "start"), {})
    return res, start


def gm(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default=",".join(PERF))
    ap.add_argument("--dialects", default="cu,hip,mlu")
    ap.add_argument("--budget", type=float, default=600.0, help="--budget of each tuned migration (s)")
    ap.add_argument("--max-evals", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", help="keep the untuned and tuned output folders here")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    a = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(a.threads)
    except ImportError:
        torch = None
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="xptunecpu"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for op in [x for x in a.ops.split(",") if x]:
        for d in [x for x in a.dialects.split(",") if x]:
            src = ROOT / "examples" / op / f"{op}{EXT[d]}"
            if not src.exists():
                continue
            u, t = work / f"{src.name}__to__c", work / f"{src.name}.tuned__to__c"
            su = migrate(src, u, False, a)
            st = migrate(src, t, True, a)
            ucf, tcf = next(u.glob("*.c"), None), next(t.glob("*.c"), None)
            rel = f"{op}/{src.name}"
            if not ucf or not tcf or ".unverified" in ucf.name + tcf.name:
                rows.append({"source": rel, "error": "not verified", "tune_s": st})
                print(f"{rel}: not verified", flush=True)
                continue
            same = ucf.read_text() == tcf.read_text()
            ums, tms = [], []
            r0 = {}
            for i in range(a.rounds):         # alternately: the shared host's load drifts
                r0 = time_output(ucf, work / "build", a.threads, tag=f"{src.name}-u")
                ums.append(r0.get("ours_ms"))
                if not same:
                    tms.append(time_output(tcf, work / "build", a.threads, tag=f"{src.name}-t").get("ours_ms"))
            if "error" in r0 or not all(ums) or (not same and not all(tms)):
                rows.append({"source": rel, "error": r0.get("error", "timing failed"), "tune_s": st})
                continue
            um = statistics.median(ums)
            tm = um if same else statistics.median(tms)
            base = {name: best_time(fn) for name, fn in baselines(op, r0["ins"], r0["sizes"]).items()}
            res, start = tune_events(t / "provenance.jsonl")
            row = {"source": rel, "shape": r0["shape"], "untuned_ms": um, "tuned_ms": tm,
                   "untuned_rounds_ms": ums, "tuned_rounds_ms": tms or ums,
                   "numpy_ms": base.get("numpy"), "torch_ms": base.get("torch"), "tune_s": st, "untuned_s": su,
                   "same_as_untuned": same, "steps": res.get("steps", []), "evaluations": res.get("evaluations"),
                   "stopped": res.get("stopped"), "latency_source": start.get("latency_source"),
                   "curve": budget_curve(t / "provenance.jsonl")}
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("source", "untuned_ms", "tuned_ms", "numpy_ms", "torch_ms",
                                                  "tune_s", "same_as_untuned")}), flush=True)
    ok = [r for r in rows if r.get("tuned_ms") and r.get("untuned_ms")]
    print(f"\nthreads: {a.threads}; budget {a.budget:.0f} s, max-evals {a.max_evals or 'default'}, rounds {a.rounds}")
    print("| source → c | shape | untuned ms | tuned ms | tuned/untuned speed-up | numpy ms | PyTorch ms "
          "| PyTorch/ours tuned | numpy/ours tuned | tuning s | evaluations | latency source | steps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def f(x, n=3):
        return "-" if x is None else f"{x:.{n}f}"
    for r in ok:
        steps = "; ".join(f"{s['pass']}({', '.join(f'{k}={v}' for k, v in s['params'].items() if k != 'target')})"
                          for s in r["steps"]) or "none"
        if r["same_as_untuned"]:
            steps += " (output identical to untuned, timed once)"
        print(f"| {r['source']} | {r['shape']} | {f(r['untuned_ms'])} | {f(r['tuned_ms'])} | "
              f"{r['untuned_ms'] / r['tuned_ms']:.2f} | {f(r['numpy_ms'])} | {f(r['torch_ms'])} | "
              f"{f(r['torch_ms'] and r['torch_ms'] / r['tuned_ms'], 2)} | "
              f"{f(r['numpy_ms'] and r['numpy_ms'] / r['tuned_ms'], 2)} | {r['tune_s']:.0f} | {r['evaluations']} | "
              f"{r['latency_source']} | {steps} |")
    tq = [r for r in ok if r["torch_ms"]]
    nq = [r for r in ok if r["numpy_ms"]]
    slower = [r["source"] for r in ok if not r["same_as_untuned"] and min(r["tuned_rounds_ms"]) > max(r["untuned_rounds_ms"])]
    print(f"\ngeomean PyTorch CPU/ours over {len(tq)}: untuned {gm([r['torch_ms'] / r['untuned_ms'] for r in tq]):.3f}x, "
          f"tuned {gm([r['torch_ms'] / r['tuned_ms'] for r in tq]):.3f}x")
    print(f"geomean numpy/ours over {len(nq)}: untuned {gm([r['numpy_ms'] / r['untuned_ms'] for r in nq]):.3f}x, "
          f"tuned {gm([r['numpy_ms'] / r['tuned_ms'] for r in nq]):.3f}x")
    print(f"tuned/untuned speed-up geomean over {len(ok)}: {gm([r['untuned_ms'] / r['tuned_ms'] for r in ok]):.3f}x; "
          f"tuned slower than untuned in every round: {len(slower)} {slower}")
    if ok:
        print(f"tuning time per kernel: median {statistics.median([r['tune_s'] for r in ok]):.0f} s, "
              f"max {max(r['tune_s'] for r in ok):.0f} s")
    for r in rows:
        if "error" in r:
            print(f"- {r['source']}: {r['error']}")
    print("\nspeed-up over untuned found within a tuning time of (from the logs, as the tuner measured it):")
    print("| source | latency source | " + " | ".join(f"{m} s" for m in BUDGET_MARKS) + " |")
    print("|---|---|" + "---|" * len(BUDGET_MARKS))
    for r in ok:
        print(f"| {r['source']} | {r['latency_source']} | "
              + " | ".join(f"{r['curve'].get(f'{m}s', 1.0):.2f}" for m in BUDGET_MARKS) + " |")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "tune_cpu.json").write_text(json.dumps(rows, indent=1))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
