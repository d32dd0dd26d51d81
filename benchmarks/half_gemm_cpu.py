#!/usr/bin/env python3
"""Time the c outputs of the half-precision matrix sources (half A, B; float C) against PyTorch CPU,
side by side in one run.

    python benchmarks/half_gemm_cpu.py DIR [--out OUT.json] [--threads N]

DIR holds migration output folders ``<src>__to__c/`` of gemm_wmma.cu, bmm_wmma.cu and
gemm_mfma_f16.hip (any ``*__to__c/*.c`` whose spec has float16 A and B). Each output is built
natively (the c platform's timing build), run at a larger shape (gemm 512^3, bmm 8 x 128^3) and
timed inside its harness (3 warm-up calls, median of 10). Its result is checked against numpy on
the same inputs. PyTorch has no fast half matmul on this CPU, so the baseline is what a user
would write: ``torch.matmul(a.float(), b.float())`` on the half tensors (the widening counted, as
the kernel widens while packing), and the same with the float copies made before timing
(``prewidened``: matmul only). numpy (OpenBLAS) on prewidened float32 for reference. Ratio =
baseline time / ours (> 1: ours is faster).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cpu_perf import best_time  # noqa: E402

PERF = {"gemm": {"M": 512, "N": 512, "K": 512}, "bmm": {"batch": 8, "M": 128, "N": 128, "K": 128}}


def time_half_output(c: Path, work: Path, threads: int) -> dict:
    from xpiler.platforms import get_platform
    from xpiler.platforms.harness import read_outputs, write_job
    from xpiler.sandbox import run_limited
    from xpiler.spec import load_spec
    from xpiler.verify.inputs import make_inputs
    spec = load_spec(c.with_name(c.name + ".toml"))
    dts = {a.name: a.dtype for a in spec.args}
    if dts.get("A") != "float16" or dts.get("B") != "float16":
        return {}
    base = "bmm" if "batch" in spec.sizes else "gemm"
    sizes = {**spec.sizes, **PERF[base]}
    spec.shapes = [{"name": "perf", **sizes}]
    inst = spec.instances(["perf"])[0]
    bdir = work / c.parent.name
    bdir.mkdir(parents=True, exist_ok=True)
    exe = get_platform("c").build(c, spec, bdir, sanitize=False, timing=10)
    arrays = make_inputs(inst, 0)
    jd = bdir / "job"
    write_job(jd, inst, arrays)
    oc = run_limited([str(exe), str(jd)], timeout_s=300, mem_mb=None, env={"OMP_NUM_THREADS": str(threads)})
    if not oc.ok:
        raise RuntimeError(f"{c}: run failed ({oc.reason})")
    ours = float(re.search(r"xpiler-time-ms: ([0-9.]+)", oc.stdout).group(1))
    out = read_outputs(jd, inst)["C"]
    return {"source": c.parent.name.split("__to__")[0], "op": base, "sizes": PERF[base], "ours_ms": ours,
            "A": arrays["A"], "B": arrays["B"], "out": out}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    work = Path(tempfile.mkdtemp(prefix="xphalf"))
    rows = []
    for c in sorted(Path(a.dir).glob("*__to__c/*.c")):
        r = time_half_output(c, work, a.threads)
        if not r:
            continue
        s = r["sizes"]
        shp = (s.get("batch", 1), s["M"], s["K"]), (s.get("batch", 1), s["K"], s["N"])
        A16 = np.ascontiguousarray(r["A"]).reshape(shp[0])
        B16 = np.ascontiguousarray(r["B"]).reshape(shp[1])
        ta, tb = torch.from_numpy(A16), torch.from_numpy(B16)
        fa, fb = ta.float(), tb.float()
        na, nb = A16.astype(np.float32), B16.astype(np.float32)
        ref = np.matmul(na.astype(np.float64), nb.astype(np.float64))
        err = float(np.max(np.abs(np.asarray(r["out"], np.float64).reshape(ref.shape) - ref)))
        base = {"torch matmul(a.float(), b.float())": lambda: torch.matmul(ta.float(), tb.float()),
                "torch matmul, prewidened": lambda: torch.matmul(fa, fb),
                "numpy matmul, prewidened": lambda: np.matmul(na, nb)}
        for name, fn in base.items():
            t = best_time(fn)
            rows.append({"source": r["source"], "op": r["op"], "shape": ",".join(f"{k}={v}" for k, v in s.items()),
                         "baseline": name, "ours_ms": r["ours_ms"], "baseline_ms": t,
                         "ratio_baseline_over_ours": t / r["ours_ms"], "max_abs_err_vs_float64": err})
    print(f"threads: {a.threads}")
    print("| source → c | shape | baseline | ours ms | baseline ms | baseline/ours |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['source']} | {r['shape']} | {r['baseline']} | {r['ours_ms']:.3f} | {r['baseline_ms']:.3f} | "
              f"{r['ratio_baseline_over_ours']:.2f} |")
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
