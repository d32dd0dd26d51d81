#!/usr/bin/env python3
"""Time migrated c kernels on this CPU against numpy and PyTorch (CPU), side by side in one run.

    python benchmarks/cpu_perf.py DIR [--out OUT] [--threads N]

DIR holds migration output folders (``benchmarks/migrate_all.py --keep DIR``); every ``*.c`` output
is built natively (gcc -O2 -march=native -fopenmp), run at a larger "perf" shape per operator,
checked against numpy on the same inputs, and timed inside its harness (3 warm-up calls, median
of 10). numpy (OpenBLAS for matmul) and torch (oneDNN/MKL paths) are timed in the same process
with the same thread count. Ratio = baseline time / ours (> 1: ours is faster).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PERF = {
    "gemm": {"M": 512, "N": 512, "K": 512},
    "gemv": {"M": 2048, "K": 2048},
    "bmm": {"batch": 8, "M": 128, "N": 128, "K": 128},
    "relu": {"n": 1 << 22}, "gelu": {"n": 1 << 22}, "sigmoid": {"n": 1 << 22}, "sign": {"n": 1 << 22},
    "add": {"n": 1 << 22},
    "softmax": {"rows": 1024, "cols": 1024},
    "layernorm": {"rows": 1024, "cols": 1024}, "rmsnorm": {"rows": 1024, "cols": 1024},
}


def baselines(op, arrays, sizes):
    """{name: callable} for numpy and torch on the CPU."""
    import math
    out = {}
    try:
        import torch
        T = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}
    except ImportError:
        torch, T = None, None
    A = arrays
    if op == "gemm":
        out["numpy"] = lambda: A["A"] @ A["B"]
        if torch: out["torch"] = lambda: torch.matmul(T["A"], T["B"])
    elif op == "bmm":
        out["numpy"] = lambda: np.matmul(A["A"], A["B"])
        if torch: out["torch"] = lambda: torch.bmm(T["A"], T["B"])
    elif op == "gemv":
        out["numpy"] = lambda: A["A"] @ A["x"]
        if torch: out["torch"] = lambda: torch.mv(T["A"], T["x"])
    elif op == "relu":
        out["numpy"] = lambda: np.maximum(A["x"], 0)
        if torch: out["torch"] = lambda: torch.relu(T["x"])
    elif op == "sigmoid":
        out["numpy"] = lambda: 1 / (1 + np.exp(-A["x"]))
        if torch: out["torch"] = lambda: torch.sigmoid(T["x"])
    elif op == "gelu":
        if torch: out["torch"] = lambda: torch.nn.functional.gelu(T["x"])
    elif op == "sign":
        out["numpy"] = lambda: np.sign(A["x"])
        if torch: out["torch"] = lambda: torch.sign(T["x"])
    elif op == "add":
        out["numpy"] = lambda: A["a"] + A["b"]
        if torch: out["torch"] = lambda: T["a"] + T["b"]
    elif op == "softmax":
        def np_softmax():
            e = np.exp(A["x"] - A["x"].max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        out["numpy"] = np_softmax
        if torch: out["torch"] = lambda: torch.softmax(T["x"], dim=-1)
    elif op == "layernorm":
        if torch: out["torch"] = lambda: torch.nn.functional.layer_norm(T["x"], (sizes["cols"],), T["gamma"], T["beta"], 1e-5)
    elif op == "rmsnorm":
        if torch: out["torch"] = lambda: T["x"] * torch.rsqrt(T["x"].pow(2).mean(-1, keepdim=True) + 1e-5) * T["gamma"]
    return out


def timeit(fn, repeats=10):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main() -> int:
    from xpiler.platforms import get_platform
    from xpiler.platforms.harness import write_job
    from xpiler.sandbox import run_limited
    from xpiler.spec import load_spec
    from xpiler.verify.inputs import make_inputs
    from xpiler.verify.oracle import reference_outputs
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--out", default=".")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(a.threads)
    except ImportError:
        pass
    rows, details = [], []
    work = Path(tempfile.mkdtemp(prefix="xpcpu"))
    env = {"OMP_NUM_THREADS": str(a.threads)}
    for c in sorted(Path(a.dir).glob("*__to__c/*.c")):
        src_name = c.parent.name.split("__to__")[0]
        op = src_name.split(".")[0]
        base = next((k for k in PERF if op == k), None)
        if base is None:
            continue
        spec = load_spec(c.with_name(c.name + ".toml"))
        sizes = dict(spec.sizes)
        sizes.update({k: v for k, v in PERF[base].items() if k in sizes})
        spec.shapes = [{"name": "perf", **sizes}]
        try:
            inst = spec.instances(["perf"])[0]
            exe = get_platform("c").build(c, spec, work, sanitize=False, timing=10)
        except Exception as e:
            rows.append((src_name, base, "-", "BUILD FAILED", "", "", ""))
            continue
        arrays = make_inputs(inst, 0)
        jd = work / f"job-{len(rows)}"
        write_job(jd, inst, arrays)
        oc = run_limited([str(exe), str(jd)], timeout_s=300, mem_mb=None, env=env)
        shape = ",".join(f"{k}={v}" for k, v in PERF[base].items())
        if not oc.ok:
            rows.append((src_name, base, shape, f"RUN FAILED ({oc.reason})", "", "", ""))
            continue
        ours = float(re.search(r"xpiler-time-ms: ([0-9.]+)", oc.stdout).group(1))
        ins = {a_.name: arrays[a_.name] for a_ in spec.args if a_.role in ("in", "inout")}
        for name, fn in baselines(base, ins, sizes).items():
            t = timeit(fn)
            rows.append((src_name, base, shape, name, f"{ours:.3f}", f"{t:.3f}", f"{t / ours:.2f}"))
            details.append({"source": src_name, "op": base, "shape": shape, "baseline": name, "ours_ms": ours,
                            "baseline_ms": t, "ratio_baseline_over_ours": t / ours})
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "cpu_perf.json").write_text(json.dumps(details, indent=1))
    print(f"threads: {a.threads}")
    print("| source → c | op | shape | baseline | ours ms | baseline ms | baseline/ours |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
