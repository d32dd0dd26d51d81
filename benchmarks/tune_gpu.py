#!/usr/bin/env python3
"""Tuned vs untuned vs PyTorch for the cuda outputs of our suite, on an NVIDIA GPU, in one run;
and the cost model's rank correlation with the GPU's timings over every tuned candidate.

    python benchmarks/tune_gpu.py [--max-evals N] [--budget S] [--workers K] [--only OP,...] [--out DIR]

1. Every example source of an operator with a perf shape (benchmarks/gpu_perf.py: PERF) that is
   not itself cuda is migrated to cuda twice, K migrations at a time: untuned, and with
   ``--tune --tune-sizes <perf shape>``. The tuner's timed runs take a lock
   (``XPILER_TIMING_LOCK``), so one kernel is timed on the GPU at a time.
2. In this process, one output after the other: the untuned kernel, the tuned kernel and
   PyTorch, each at the perf shape, timed with CUDA events (gpu_perf.time_output), results
   checked against PyTorch.
3. From the tuned runs' logs: every candidate timed on the GPU also has the cost model's figure
   (``detail.model_ms``); Spearman's rank correlation over all of them, and per kernel.

Prints a markdown table and geometric means; writes DIR/tune_gpu.json.

Long runs go in parts: ``--work W`` keeps the migrations in W, and a migration whose folder holds
a closed provenance log (an ``end`` event) is not run again, so a run cut by a time limit is
continued by the same command; ``--phase migrate`` stops after the migrations, ``--phase time``
only times what W holds. ``--untuned-from U`` takes the untuned outputs from U (folders
``<source>__to__cuda`` as made by ``--phase migrate --no-tuned`` on any machine: an untuned
migration does not depend on the GPU), so the GPU machine only runs the tuned ones.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_perf import PERF, _prebuild, time_output  # noqa: E402


def sources(only: set | None) -> list[Path]:
    out = []
    for op in PERF:
        if only and op not in only:
            continue
        for f in sorted((ROOT / "examples" / op).glob("*")):
            if f.suffix in (".c", ".hip", ".mlu") and f.with_name(f.name + ".toml").is_file():
                out.append(f)
    return out


def closed(outdir: Path) -> bool:
    """A finished migration: its log ends with an ``end`` event."""
    log = outdir / "provenance.jsonl"
    try:
        return log.is_file() and json.loads(log.read_text().splitlines()[-1]).get("type") == "end"
    except (OSError, ValueError, IndexError):
        return False


def run_migrate(src: Path, outdir: Path, tune: bool, a) -> dict:
    op = src.parent.name
    if closed(outdir):
        return {"src": str(src.relative_to(ROOT)), "tuned": tune, "rc": "done before", "s": 0, "err": ""}
    cmd = [sys.executable, "-m", "xpiler", "migrate", str(src), "--to", "cuda", "-o", str(outdir), "--force",
           "--no-perf", "--jobs", "2", "--budget", str(a.budget)]
    if tune:
        sizes = ",".join(f"{k}={v}" for k, v in PERF[op].items())
        cmd += ["--tune", "--max-evals", str(a.max_evals), "--tune-sizes", sizes, "--seed", "0"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    return {"src": str(src.relative_to(ROOT)), "tuned": tune, "rc": p.returncode, "s": time.time() - t0,
            "err": (p.stderr or "")[-400:]}


def spearman(xs, ys) -> float | None:
    n = len(xs)
    if n < 3:
        return None

    def ranks(v):
        order = sorted(range(n), key=lambda i: v[i])
        r = [0.0] * n
        i = 0
        while i < n:
            j = i
            while j + 1 < n and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2.0
            i = j + 1
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    vy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (vx * vy) if vx and vy else None


def tune_summary(log: Path) -> dict:
    evs = [json.loads(x) for x in log.read_text().splitlines()[1:]]
    t = [e for e in evs if e["type"] == "tune"]
    res = next((e for e in t if e["kind"] == "result"), {})
    cands = [(e["latency_ms"], e["detail"]["model_ms"]) for e in t
             if e["kind"] == "evaluate" and e.get("verified") and e.get("latency_ms")
             and str(e.get("latency_source", "")).startswith("hw:") and "model_ms" in (e.get("detail") or {})]
    return {"steps": [f"{s['pass']}({', '.join(f'{k}={v}' for k, v in s['params'].items() if k != 'target')})"
                      for s in res.get("steps", [])],
            "evaluations": res.get("evaluations"), "stopped": res.get("stopped"), "note": res.get("note"),
            "source": next((e.get("latency_source") for e in t if e["kind"] == "start"), None),
            "untuned_ms": res.get("untuned_ms"), "tuned_ms": res.get("tuned_ms"), "candidates": cands}


def geomean(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-evals", type=int, default=12)
    ap.add_argument("--budget", type=float, default=400.0)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--only", default="")
    ap.add_argument("--sources", default="", help="only these example files (comma-separated, e.g. relu/relu.c)")
    ap.add_argument("--migrate-s", type=float, default=1e9,
                    help="start no migration after this many seconds (the timing phase still runs)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "tune_gpu"))
    ap.add_argument("--work", default="", help="keep the migrations here (resumable); default: a temp folder")
    ap.add_argument("--phase", choices=["all", "migrate", "time"], default="all")
    ap.add_argument("--untuned-from", default="", help="untuned outputs made elsewhere (<source>__to__cuda folders)")
    ap.add_argument("--no-tuned", action="store_true", help="run only the untuned migrations")
    a = ap.parse_args()
    only = {x for x in a.only.split(",") if x} or None
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="xptune"))
    work.mkdir(parents=True, exist_ok=True)
    untuned_dir = Path(a.untuned_from) if a.untuned_from else work / "untuned"
    os.environ["XPILER_TIMING_LOCK"] = str(work / "timing.lock")
    srcs = sources(only)
    if a.sources:
        want = {x.strip() for x in a.sources.split(",") if x.strip()}
        order = [x.strip() for x in a.sources.split(",") if x.strip()]
        srcs = sorted((s for s in srcs if f"{s.parent.name}/{s.name}" in want),
                      key=lambda s: order.index(f"{s.parent.name}/{s.name}"))    # in the order given
    kinds = [False] if a.no_tuned else [True] if a.untuned_from else [True, False]
    jobs = [(s, (work / "tuned" if t else untuned_dir) / f"{s.name}__to__cuda", t) for s in srcs for t in kinds]
    if a.phase == "time":
        jobs = []
    print(f"{len(srcs)} sources, {len(jobs)} migrations, {a.workers} at a time", flush=True)
    t0 = time.time()

    def one(j):
        if time.time() - t0 > a.migrate_s:     # past the migration phase's share: not started
            return {"src": str(j[0].relative_to(ROOT)), "tuned": j[2], "rc": None, "s": 0, "err": "not started"}
        r = run_migrate(j[0], j[1], j[2], a)
        print(f"  {r['src']} {'tuned' if r['tuned'] else 'untuned'}: rc={r['rc']} {r['s']:.0f} s", flush=True)
        return r
    with ThreadPoolExecutor(a.workers) as ex:
        runs = list(ex.map(one, jobs))
    print(f"migrations: {len(runs)} in {time.time() - t0:.0f} s", flush=True)
    if a.phase == "migrate":
        return 0
    rows, details, all_hw, all_model, torch_ms = [], [], [], [], {}
    outs = [f for s in srcs for d in (untuned_dir, work / "tuned") for f in (d / f"{s.name}__to__cuda").glob("*.cu")
            if ".unverified" not in f.name]
    _prebuild(outs, "cuda", work / "b", os.cpu_count() or 2)     # nvcc in parallel; timing stays one at a time
    print(f"built {len(outs)} outputs in {time.time() - t0:.0f} s", flush=True)
    for s in srcs:
        if rows:
            print("  timed: | " + " | ".join(rows[-1]) + " |", flush=True)
        u = untuned_dir / f"{s.name}__to__cuda"
        t = work / "tuned" / f"{s.name}__to__cuda"
        ucu = next(u.glob("*.cu"), None) if u.is_dir() else None
        tcu = next(t.glob("*.cu"), None) if t.is_dir() else None
        if ucu is None or tcu is None or ".unverified" in ucu.name or ".unverified" in tcu.name:
            rows.append((s.name, "not verified", "", "", "", "", ""))
            continue
        ur, ud = time_output(ucu, "cuda", work / "b", s.name, torch_ms)
        tr, td = time_output(tcu, "cuda", work / "b", s.name, torch_ms)
        if ur is None or not ud or not td or "ours_ms" not in ud or "ours_ms" not in td:
            rows.append((s.name, "timing failed", "", "", "", "", ""))
            details.append({"source": s.name, "untuned": ud, "tuned": td})
            continue
        summ = tune_summary(t / "provenance.jsonl")
        for lat, mod in summ["candidates"]:
            all_hw.append(lat)
            all_model.append(mod)
        rho = spearman([c[0] for c in summ["candidates"]], [c[1] for c in summ["candidates"]])
        d = {"source": s.name, "op": ud["op"], "shape": ud["shape"], "untuned_ms": ud["ours_ms"],
             "tuned_ms": td["ours_ms"], "torch_ms": ud["torch_ms"], "untuned_ok": ud["ok"], "tuned_ok": td["ok"],
             "steps": summ["steps"], "evaluations": summ["evaluations"], "stopped": summ["stopped"],
             "latency_source": summ["source"], "spearman": rho, "n_candidates": len(summ["candidates"])}
        details.append(d)
        rows.append((s.name, d["shape"], f"{d['untuned_ms']:.4f}", f"{d['tuned_ms']:.4f}", f"{d['torch_ms']:.4f}",
                     f"{d['torch_ms'] / d['untuned_ms']:.2f} → {d['torch_ms'] / d['tuned_ms']:.2f}",
                     ("ok" if d["untuned_ok"] and d["tuned_ok"] else "MISMATCH") + f"; {len(d['steps'])} steps"))
    print("| source → cuda | shape | untuned ms | tuned ms | PyTorch ms | PyTorch/ours untuned → tuned | check; steps |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    ok = [d for d in details if "tuned_ms" in d]
    print(f"\ngeomean PyTorch/ours: untuned {geomean([d['torch_ms'] / d['untuned_ms'] for d in ok]):.3f}x, "
          f"tuned {geomean([d['torch_ms'] / d['tuned_ms'] for d in ok]):.3f}x over {len(ok)} kernels; "
          f"tuned slower than untuned (same run): {sum(d['tuned_ms'] > d['untuned_ms'] * 1.03 for d in ok)}")
    rho = spearman(all_hw, all_model)
    print(f"cost model vs GPU timings: Spearman {rho if rho is None else round(rho, 3)} over {len(all_hw)} "
          f"candidates (pooled across kernels)")
    per = [d["spearman"] for d in ok if d.get("spearman") is not None]
    if per:
        print(f"per-kernel Spearman: median {sorted(per)[len(per) // 2]:.3f} over {len(per)} kernels")
    (out / "tune_gpu.json").write_text(json.dumps({"runs": runs, "details": details,
                                                   "pairs": list(zip(all_hw, all_model))}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
