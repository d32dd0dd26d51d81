#!/usr/bin/env python3
"""Tuned vs untuned vs numpy and PyTorch (CPU) for c outputs, on this CPU, in one run; and the
speed-up reached as a function of the tuning time spent (from the same runs' logs).

    python benchmarks/tune_cpu.py [--sources softmax/softmax.cu,...] [--max-evals N] [--budget S]

1. Each source is migrated to c twice, one after the other: untuned, and with ``--tune
   --tune-sizes <shape>`` (candidates timed natively: ``hw:cpu-native`` when the kernel has no
   AVX-512 intrinsic, which is what the tuner's timing source says).
2. In this process, one after the other at the shape: the untuned kernel, the tuned kernel (both
   built natively, median of 15 calls after 3 warm-up calls), the numpy reference and, when
   installed, PyTorch on the CPU (median of 15).
3. Speed-up vs budget: the tuner searches the same prefix for the same seed whatever its budget,
   so the best latency found by t seconds into one run is what a budget of t seconds gives; it is
   read from the log's ``tune`` events (their time stamps).

Prints markdown tables; writes OUT/tune_cpu.json.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHAPES = {
    "softmax": {"rows": 512, "cols": 1024}, "layernorm": {"rows": 512, "cols": 1024},
    "rmsnorm": {"rows": 512, "cols": 1024}, "relu": {"n": 1 << 22}, "add": {"n": 1 << 22},
    "gemv": {"M": 1024, "K": 1024}, "gemm": {"M": 256, "N": 256, "K": 256}, "sigmoid": {"n": 1 << 22},
}
TORCH = {
    "softmax": lambda t, g: t.softmax(g["x"], dim=-1),
    "relu": lambda t, g: t.relu(g["x"]),
    "sigmoid": lambda t, g: t.sigmoid(g["x"]),
    "add": lambda t, g: g["a"] + g["b"],
    "gemv": lambda t, g: t.mv(g["A"], g["x"]),
    "gemm": lambda t, g: t.matmul(g["A"], g["B"]),
}
BUDGET_MARKS = (15, 30, 60, 120, 240, 480)


def median_ms(fn, repeats=15):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def migrate(src: Path, out: Path, tune: bool, a) -> float:
    op = src.parent.name
    cmd = [sys.executable, "-m", "xpiler", "migrate", str(src), "--to", "c", "-o", str(out), "--force", "--no-perf",
           "--budget", str(a.budget), "--jobs", "2"]
    if tune:
        cmd += ["--tune", "--max-evals", str(a.max_evals), "--seed", "0",
                "--tune-sizes", ",".join(f"{k}={v}" for k, v in SHAPES[op].items())]
    t0 = time.time()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
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


def main() -> int:
    from xpiler.schedule.timing import measure_kernel, native_c_substrate, timing_instance
    from xpiler.spec import load_spec
    from xpiler.verify.inputs import make_inputs
    from xpiler.verify.oracle import load_reference, reference_args
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", default="softmax/softmax.cu,layernorm/layernorm.cu,rmsnorm/rmsnorm.cu,"
                                         "gemv/gemv.cu,relu/relu.cu")
    ap.add_argument("--max-evals", type=int, default=20)
    ap.add_argument("--budget", type=float, default=600.0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    a = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(2)
    except ImportError:
        torch = None
    work = Path(tempfile.mkdtemp(prefix="xptunecpu"))
    rows = []
    for rel in [x for x in a.sources.split(",") if x]:
        src = ROOT / "examples" / rel
        op = src.parent.name
        u, t = work / f"{src.name}.untuned", work / f"{src.name}.tuned"
        su, st = migrate(src, u, False, a), migrate(src, t, True, a)
        ucf, tcf = next(u.glob("*.c"), None), next(t.glob("*.c"), None)
        if not ucf or not tcf or ".unverified" in ucf.name + tcf.name:
            rows.append({"source": rel, "error": "not verified"})
            print(f"{rel}: not verified", flush=True)
            continue
        spec = load_spec(ucf.with_name(ucf.name + ".toml"))
        sizes = SHAPES[op]
        subs = {native_c_substrate(ucf.read_text()), native_c_substrate(tcf.read_text())}
        if None in subs:
            # an AVX-512 kernel on a CPU without it runs through SIMDe: an emulation, never a timing
            rows.append({"source": rel, "error": "uses AVX-512 intrinsics this CPU runs only emulated: not timed"})
            print(f"{rel}: AVX-512 output on a CPU without it: not timed", flush=True)
            continue
        same = ucf.read_text() == tcf.read_text()
        # timed alternately, three times each, best median kept: one pass on a shared 2-core machine
        # varied by 2x between two builds of the same file
        ums, tms_ = [], []
        for _ in range(3):
            ums.append(measure_kernel(ucf, spec, repeats=15, sizes=sizes)[0])
            if not same:
                tms_.append(measure_kernel(tcf, load_spec(tcf.with_name(tcf.name + ".toml")), repeats=15,
                                           sizes=sizes)[0])
        um = min((x for x in ums if x), default=None)
        tm = um if same else min((x for x in tms_ if x), default=None)
        inst = timing_instance(spec, sizes)          # the instance and inputs (seed 0) the kernels were timed on
        arrays = make_inputs(inst, 0)
        fn = load_reference(spec)
        args = reference_args(spec, inst, arrays)
        npm = median_ms(lambda: fn(*args))
        thm = None
        if torch is not None and op in TORCH:
            g = {k: torch.from_numpy(v) for k, v in arrays.items()}
            thm = median_ms(lambda: TORCH[op](torch, g))
        ev = [json.loads(x) for x in (t / "provenance.jsonl").read_text().splitlines()[1:]]
        res = next((e for e in ev if e["type"] == "tune" and e["kind"] == "result"), {})
        start = next((e for e in ev if e["type"] == "tune" and e["kind"] == "start"), {})
        row = {"source": rel, "shape": ",".join(f"{k}={v}" for k, v in sizes.items()), "untuned_ms": um, "tuned_ms": tm,
               "numpy_ms": npm, "torch_ms": thm, "tune_s": st, "same_as_untuned": same, "untuned_s": su, "steps": res.get("steps", []),
               "evaluations": res.get("evaluations"), "stopped": res.get("stopped"),
               "latency_source": start.get("latency_source"), "curve": budget_curve(t / "provenance.jsonl")}
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("source", "untuned_ms", "tuned_ms", "numpy_ms", "torch_ms", "tune_s")}),
              flush=True)
    ok = [r for r in rows if "tuned_ms" in r and r["tuned_ms"] and r["untuned_ms"]]
    print("\n| source → c | shape | untuned ms | tuned ms | numpy ms | PyTorch CPU ms | numpy/ours untuned → tuned "
          "| PyTorch/ours tuned | tuning s | latency source | steps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in ok:
        tr = f"{r['torch_ms'] / r['tuned_ms']:.2f}" if r["torch_ms"] else "-"
        steps = "; ".join(f"{s['pass']}({', '.join(f'{k}={v}' for k, v in s['params'].items() if k != 'target')})"
                          for s in r["steps"]) or "none (the untuned kernel, timed once)"
        print(f"| {r['source']} | {r['shape']} | {r['untuned_ms']:.4f} | {r['tuned_ms']:.4f} | {r['numpy_ms']:.4f} | "
              f"{r['torch_ms'] if r['torch_ms'] is None else round(r['torch_ms'], 4)} | "
              f"{r['numpy_ms'] / r['untuned_ms']:.2f} → {r['numpy_ms'] / r['tuned_ms']:.2f} | {tr} | {r['tune_s']:.0f} | "
              f"{r['latency_source']} | {steps} |")

    def gm(v):
        v = [x for x in v if x and x > 0]
        return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
    print(f"\ngeomean numpy/ours: untuned {gm([r['numpy_ms'] / r['untuned_ms'] for r in ok]):.3f}x, tuned "
          f"{gm([r['numpy_ms'] / r['tuned_ms'] for r in ok]):.3f}x; PyTorch CPU/ours tuned "
          f"{gm([r['torch_ms'] / r['tuned_ms'] for r in ok if r['torch_ms']]):.3f}x "
          f"({sum(1 for r in ok if r['torch_ms'])} kernels); tuned slower than untuned by > 3%: "
          f"{sum(r['tuned_ms'] > 1.03 * r['untuned_ms'] for r in ok)}; median tuning time "
          f"{statistics.median([r['tune_s'] for r in ok]) if ok else float('nan'):.0f} s")
    for r in rows:
        if "error" in r:
            print(f"- {r['source']}: {r['error']}")
    print("\nspeed-up over untuned found within a tuning time of (same runs, from the logs; as the tuner saw it):")
    print("| source | latency source | " + " | ".join(f"{m} s" for m in BUDGET_MARKS) + " |")
    print("|---|---|" + "---|" * len(BUDGET_MARKS))
    for r in ok:
        print(f"| {r['source']} | {r['latency_source']} | "
              + " | ".join(f"{r['curve'].get(f'{m}s', 1.0):.2f}" for m in BUDGET_MARKS) + " |")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "tune_cpu.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
