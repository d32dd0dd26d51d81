#!/usr/bin/env python3
"""fp32 gemm on this CPU, one thread, side by side in one run: PyTorch (oneDNN/MKL), numpy
(OpenBLAS) and c outputs of xpiler (each a ``*.c`` file with its ``*.c.toml`` spec beside it).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/gemm_cpu.py LABEL=FILE.c ... \\
        [--sizes 512,1024] [--repeats 10] [--rounds 5]

Each c output is built natively (the c platform's build: gcc -O2 -march=native -fopenmp), run
at M = N = K = size on the same inputs as the baselines, checked against numpy (float64
reference: the max abs error is printed) and timed inside its harness (3 warm-up calls, median
of ``repeats``). numpy and torch are timed in this process the same way. ``rounds`` rounds
interleave all of them; the table gives the median over rounds and its range. Ratio = torch
time / this (> 1: faster than torch). Prints the load average: the host is shared, so the
figures move with it.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # before numpy loads OpenBLAS
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    from cpu_perf import timeit
    from xpiler.platforms import get_platform
    from xpiler.platforms.harness import read_outputs, write_job
    from xpiler.sandbox import run_limited
    from xpiler.spec import load_spec
    from xpiler.verify.inputs import make_inputs
    ap = argparse.ArgumentParser()
    ap.add_argument("outputs", nargs="+", help="LABEL=path/to/output.c")
    ap.add_argument("--sizes", default="512")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    plat = get_platform("c")
    work = Path(tempfile.mkdtemp(prefix="xpgemm"))
    print(f"substrate: {plat.substrate()} (one thread: OMP_NUM_THREADS=1, torch.set_num_threads(1), "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}); numpy {np.__version__}, "
          f"torch {torch.__version__}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"rounds: {a.rounds}, each a median of {a.repeats} calls after 3 warm-ups; table: median over rounds")
    print("| M=N=K | what | ms (median) | ms (min–max of rounds) | GFLOP/s | torch/this | max abs err vs float64 |")
    print("|---|---|---|---|---|---|---|")
    for size in (int(s) for s in a.sizes.split(",")):
        flop = 2.0 * size ** 3
        runs, arrays, inst = [], None, None
        for item in a.outputs:
            label, path = item.split("=", 1)
            c = Path(path)
            spec = load_spec(c.with_name(c.name + ".toml"))
            sizes = dict(spec.sizes)
            sizes.update({"M": size, "N": size, "K": size})
            spec.shapes = [{"name": "perf", **sizes}]
            inst = spec.instances(["perf"])[0]
            exe = plat.build(c, spec, work, sanitize=False, timing=a.repeats)
            arrays = make_inputs(inst, 0)      # seed 0: the same inputs for every output
            jd = work / f"job-{label.replace(':', '_')}-{size}"
            write_job(jd, inst, arrays)
            runs.append((label, exe, jd))
        A, B = arrays["A"], arrays["B"]
        tA, tB = torch.from_numpy(A), torch.from_numpy(B)
        ref = A.astype(np.float64) @ B.astype(np.float64)
        # rounds interleave everything, so that a burst of load from other jobs hits all of them
        times = {"torch": [], "numpy": [], **{r[0]: [] for r in runs}}
        errs = {}
        for _ in range(a.rounds):
            times["torch"].append(timeit(lambda: torch.matmul(tA, tB), a.repeats))
            times["numpy"].append(timeit(lambda: A @ B, a.repeats))
            for label, exe, jd in runs:
                oc = run_limited([str(exe), str(jd)], timeout_s=600, mem_mb=None, env={"OMP_NUM_THREADS": "1"})
                if not oc.ok:
                    errs[label] = f"RUN FAILED ({oc.reason})"
                    continue
                times[label].append(float(re.search(r"xpiler-time-ms: ([0-9.]+)", oc.stdout).group(1)))
                out = read_outputs(jd, inst)["C"]
                errs[label] = f"{np.max(np.abs(out - ref)):.2e}"
        med = {k: statistics.median(v) for k, v in times.items() if v}
        t_torch = med["torch"]
        names = {"torch": "PyTorch CPU (torch.matmul)", "numpy": "numpy (OpenBLAS)"}
        for k in ["torch", "numpy"] + [r[0] for r in runs]:
            if k not in med:
                print(f"| {size} | {k} | {errs.get(k, '')} | | | | |")
                continue
            spread = f"{min(times[k]):.3f}–{max(times[k]):.3f}"
            print(f"| {size} | {names.get(k, k)} | {med[k]:.3f} | {spread} | {flop / med[k] / 1e6:.1f} | "
                  f"{t_torch / med[k]:.2f} | {errs.get(k, '-')} |")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
