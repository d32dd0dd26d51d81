#!/usr/bin/env python3
"""bfloat16 gemm on this CPU, one thread, side by side in one run: PyTorch CPU's bf16 matmul (oneDNN)
and c outputs of xpiler (``*.c`` with its ``*.c.toml`` spec; A, B bfloat16, C float32).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/gemm_bf16_cpu.py LABEL=FILE.c[@NAME=V,...] ... \\
        [--sizes 512,1024] [--repeats 10] [--rounds 5] [--json benchmarks/results/X.json]

``@XP_USE_AMX=1`` / ``@XP_USE_AVX512BF16=0`` build one output with those variant values, so its AMX,
vdpbf16ps and widening-FMA paths are timed side by side, e.g.
``amx=g.c@XP_USE_AMX=1,XP_USE_AVX512BF16=1 dpbf16=g.c@XP_USE_AMX=0,XP_USE_AVX512BF16=1
fma=g.c@XP_USE_AMX=0,XP_USE_AVX512BF16=0``. Each row names its substrate (an ``emu:`` row is no
timing); the ``AMX:`` line says whether Linux grants the tile state (an AMX build where it is refused
runs its AVX-512 path).

Each output is built natively (gcc -O2 -march=native -fopenmp), run at M = N = K = size on its spec's
inputs (seed 0), checked against the float64 product of the same bf16 values within the spec's
tolerance, then timed in its harness (3 warm-ups, median of ``repeats``). Baselines on the same A
and B: ``torch.matmul`` of bf16 tensors (bf16 out: PyTorch rounds the float sums to bf16; which
oneDNN primitive runs is probed with ONEDNN_VERBOSE and printed) and ``torch.matmul(...)`` of the
same values as float32 (fp32 sgemm). ``rounds`` rounds interleave everything; the table gives the
median over rounds and the range.
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

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PROBE = """
import torch
torch.set_num_threads(1)
a = torch.ones((64, 64), dtype=torch.bfloat16)
torch.matmul(a, a)
"""


def main() -> int:
    from cpu_perf import timeit
    from gemm_int8_cpu import amx_line, onednn_line, parse_output
    from xpiler.dtypes import bf16_to_f32
    from xpiler.platforms import get_platform
    from xpiler.platforms.harness import read_outputs, write_job
    from xpiler.sandbox import run_limited
    from xpiler.spec import load_spec
    from xpiler.verify.inputs import make_inputs
    ap = argparse.ArgumentParser()
    ap.add_argument("outputs", nargs="+", help="LABEL=path/to/output.c[@XP_USE_AMX=1,...]")
    ap.add_argument("--sizes", default="512")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    plat = get_platform("c")
    work = Path(tempfile.mkdtemp(prefix="xpgemmbf16"))
    dnnl = onednn_line(PROBE)
    tname = f"torch.matmul bf16 (oneDNN: {dnnl})" if dnnl else "torch.matmul bf16 (NOT oneDNN: no primitive line)"
    flags = sorted(f for f in __import__("xpiler.platforms.c", fromlist=["cpu_flags"]).cpu_flags()
                   if "bf16" in f or f.startswith("amx"))
    print(f"substrate: {plat.substrate()}; CPU bf16/AMX flags: {' '.join(flags) or 'none'}; one thread; "
          f"numpy {np.__version__}, torch {torch.__version__}")
    print(f"bf16 baseline: {tname}")
    amx = amx_line()
    print(f"AMX: {amx}")
    load0 = os.getloadavg()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load0)}")
    print("| M=N=K | what | ms (median) | ms (min–max) | GFLOP/s | torch bf16/this | within tol |")
    print("|---|---|---|---|---|---|---|")
    record = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "substrate": plat.substrate(),
              "torch": torch.__version__, "baseline": tname, "amx": amx, "load_before": load0, "sizes": {}}
    for size in (int(s) for s in a.sizes.split(",")):
        flop = 2.0 * size ** 3
        runs, subs = [], {}
        for item in a.outputs:
            label, path, defines = parse_output(item)
            c = Path(path)
            spec = load_spec(c.with_name(c.name + ".toml"))
            sizes = dict(spec.sizes)
            sizes.update({"M": size, "N": size, "K": size})
            spec.shapes = [{"name": "perf", **sizes}]
            inst = spec.instances(["perf"])[0]
            exe = plat.build(c, spec, work, sanitize=False, timing=a.repeats, defines=defines)
            subs[label] = plat.substrate_for(defines) if defines else plat.substrate()
            arrs = make_inputs(inst, 0)
            jd = work / f"job-{label.replace(':', '_')}-{size}"
            write_job(jd, inst, arrs)
            runs.append((label, exe, jd, inst, arrs, spec.tolerance_for("float32")))
        A, B = runs[0][4]["A"], runs[0][4]["B"]
        assert A.dtype == np.uint16 and B.dtype == np.uint16, (A.dtype, B.dtype)
        tA = torch.from_numpy(A.view(np.int16).copy()).view(torch.bfloat16)
        tB = torch.from_numpy(B.view(np.int16).copy()).view(torch.bfloat16)
        fA, fB = tA.float(), tB.float()
        refs = {r[0]: bf16_to_f32(r[4]["A"]).astype(np.float64) @ bf16_to_f32(r[4]["B"]).astype(np.float64)
                for r in runs}
        times = {"bf16": [], "fp32": [], **{r[0]: [] for r in runs}}
        ok = {}
        for _ in range(a.rounds):
            times["bf16"].append(timeit(lambda: torch.matmul(tA, tB), a.repeats))
            times["fp32"].append(timeit(lambda: torch.matmul(fA, fB), a.repeats))
            for label, exe, jd, inst, arrs, tol in runs:
                oc = run_limited([str(exe), str(jd)], timeout_s=600, mem_mb=None,
                                 env={"OMP_NUM_THREADS": os.environ["OMP_NUM_THREADS"]})
                if not oc.ok:
                    ok[label] = f"RUN FAILED ({oc.reason})"
                    continue
                times[label].append(float(re.search(r"xpiler-time-ms: ([0-9.]+)", oc.stdout).group(1)))
                out = read_outputs(jd, inst)["C"].astype(np.float64)
                ref = refs[label]
                rtol, atol = tol
                good = np.all(np.abs(out - ref) <= atol + rtol * np.abs(ref))
                ok[label] = "yes" if good else f"NO (max diff {np.max(np.abs(out - ref)):.3g})"
        med = {k: statistics.median(v) for k, v in times.items() if v}
        names = {"bf16": "torch.matmul bf16 x bf16 -> bf16", "fp32": "torch.matmul fp32 (same values)",
                 **{k: f"{k} ({v})" for k, v in subs.items()}}
        rows = []
        for k in ["bf16", "fp32"] + [r[0] for r in runs]:
            if k not in med:
                print(f"| {size} | {k} | {ok.get(k, '')} | | | | |")
                continue
            rows.append({"what": names[k], "substrate": subs.get(k), "ms_median": med[k], "ms_rounds": times[k],
                         "torch_bf16_over_this": med["bf16"] / med[k], "within_tol": ok.get(k, "-")})
            print(f"| {size} | {names[k]} | {med[k]:.3f} | {min(times[k]):.3f}–{max(times[k]):.3f} | "
                  f"{flop / med[k] / 1e6:.1f} | {med['bf16'] / med[k]:.2f} | {ok.get(k, '-')} |")
        record["sizes"][str(size)] = rows
    record["load_after"] = os.getloadavg()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in record['load_after'])}")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
