"""Run the cuda/hip examples on a real NVIDIA GPU (the device machine), check them against
their numpy references and time them with CUDA events; also runs the GPU-marked pytest tests.

    python benchmarks/gpu_run_simt.py [--only NAME ...] [--out DIR]

Needs nvcc and a GPU (``nvidia-smi``).  Prints one line per example instance (verdict,
max abs error, median ms), a summary table last, and writes details to DIR/gpu_results.json.
HIP kernels go through xpiler/runtime/simt/hip_on_cuda.h (32-lane warps); kernels with AMD
builtins (MFMA) are skipped: they run only on the emulator.
"""
from __future__ import annotations

import argparse
import glob
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xpiler.diagnostics import XPError  # noqa: E402
from xpiler.platforms import get_platform  # noqa: E402
from xpiler.platforms.harness import read_outputs, write_job  # noqa: E402
from xpiler.sandbox import run_limited  # noqa: E402
from xpiler.spec import load_spec  # noqa: E402
from xpiler.verify.inputs import make_inputs  # noqa: E402
from xpiler.verify.oracle import reference_outputs  # noqa: E402
from xpiler.verify.tester import _compare  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    files = sorted(glob.glob(str(ROOT / "examples/*/*.cu")) + glob.glob(str(ROOT / "examples/*/*.hip")))
    if a.only:
        files = [f for f in files if any(o in f for o in a.only)]
    rows, details = [], []
    work = Path(tempfile.mkdtemp(prefix="xpgpu"))
    for f in files:
        src = Path(f)
        spec = load_spec(str(src) + ".toml")
        name = src.relative_to(ROOT / "examples").as_posix()
        if "__builtin_amdgcn" in src.read_text():
            rows.append((name, "-", "skip (AMD builtins)", "", ""))
            continue
        plat = get_platform(spec.dialect)
        t0 = time.time()
        try:
            exe = plat.build(src, spec, work, sanitize=False, gpu=True, timing=True)
        except XPError as e:
            rows.append((name, "-", "BUILD FAILED", "", ""))
            details.append({"kernel": name, "error": e.format(), "log": getattr(e, "log", "")[-3000:]})
            continue
        for inst in spec.instances():
            arrays = make_inputs(inst, 0)
            jd = work / f"job-{len(details)}"
            write_job(jd, inst, arrays)
            oc = run_limited([str(exe), str(jd)], timeout_s=120, mem_mb=None)
            if not oc.ok:
                rows.append((name, inst.name, f"RUN FAILED ({oc.reason})", "", ""))
                details.append({"kernel": name, "instance": inst.name, "stderr": oc.stderr[-3000:]})
                continue
            got = read_outputs(jd, inst)
            exp = reference_outputs(spec, inst, arrays)
            fails, mabs, _ = _compare(spec, inst, 0, got, exp, arrays)
            m = re.search(r"xpiler-time-ms: ([0-9.]+)", oc.stdout)
            ms = float(m.group(1)) if m else float("nan")
            rows.append((name, inst.name, "ok" if not fails else "WRONG", f"{mabs:.2e}", f"{ms:.4f}"))
            details.append({"kernel": name, "instance": inst.name, "ok": not fails, "max_abs": mabs, "median_ms": ms,
                            "failures": [x.to_json() for x in fails], "build_s": round(time.time() - t0, 2)})
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "gpu_results.json").write_text(json.dumps(details, indent=1))
    print(f"{'kernel':45} {'instance':10} {'verdict':22} {'max_abs':>9} {'median_ms':>10}")
    for r in rows:
        print(f"{r[0]:45} {r[1]:10} {r[2]:22} {r[3]:>9} {r[4]:>10}")
    bad = [r for r in rows if r[2] not in ("ok",) and not r[2].startswith("skip")]
    print(f"{len(rows) - len(bad)} ok/skipped, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
