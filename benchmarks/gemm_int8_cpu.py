#!/usr/bin/env python3
"""int8 gemm on this CPU, one thread, side by side in one run: PyTorch CPU's oneDNN int8 matmul,
numpy (int32 matmul) and c outputs of xpiler (each a ``*.c`` file with its ``*.c.toml`` spec).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/gemm_int8_cpu.py LABEL=FILE.c[@NAME=V,...] ... \\
        [--sizes 512,1024] [--repeats 10] [--rounds 5] [--json benchmarks/results/X.json]

``@XP_USE_AMX=1`` builds that output with those compile-time variant values (-D flags; the c
platform's ``build(defines=...)``, xpiler/verify/variants.py), so one output's AMX and VNNI paths
are timed side by side: ``amx=out.c@XP_USE_AMX=1 vnni=out.c@XP_USE_AMX=0``. Each row names its
substrate (``hw:cpu-amx``, ``hw:cpu-avx512vnni``; an ``emu:`` row is no timing). Whether this
machine's Linux grants a process the AMX tile state is probed once in a child process (the AMX
path asks the same and takes its VNNI path when refused, so an "amx" row where it is refused
times VNNI): the line ``AMX:`` says which.

The computation compared: A int8 [M][K] times B int8 [K][N], exact products summed in int32
(C[i][j] = sum_k A[i][k] * B[k][j]). Each c output is built natively (the c platform's build:
gcc -O2 -march=native -fopenmp), run at M = N = K = size on the inputs its spec generates (seed 0)
and checked *exactly* against an exact reference (a mismatch is printed as such), then timed
inside its harness (3 warm-up calls, median of ``repeats``). A kernel whose C is float32 (the
bang source's fixed-point matmul writes the int32 sum converted to float) is compared with the
baseline that converts too.

Baselines, timed in this process on the same A and B:

* ``torch._int_mm(A, B)`` (int8 x int8 -> int32). Which library runs it is found out, not
  assumed: one call is made in a child process with ``ONEDNN_VERBOSE=1`` and the oneDNN primitive
  line it prints (e.g. ``gemm_api ... src_s8 wei_s8 dst_s32``) is shown; when no oneDNN line
  appears, the row is labelled as not oneDNN. The ratios are torch time / kernel time.
* ``torch._int_mm(A, B).float()`` for float32-output kernels (the same int32 sums, converted).
* numpy: ``A32 @ B32`` on int32 copies made before timing (numpy has no int8 -> int32 matmul;
  its integer matmul is a plain loop, not BLAS).

``rounds`` rounds interleave everything; the table gives the median over rounds and its range.
Prints the load average before and after (the host is shared). ``--json`` writes every round's
figures.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # before numpy loads OpenBLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PROBE = """
import torch
torch.set_num_threads(1)
a = torch.ones((64, 64), dtype=torch.int8)
torch._int_mm(a, a)
"""


def onednn_line(probe: str = PROBE) -> str | None:
    """The oneDNN primitive that ``probe`` (by default ``torch._int_mm`` on int8 CPU tensors)
    executes, or None."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    for ln in (r.stdout + r.stderr).splitlines():
        if ln.startswith(("onednn_verbose", "dnnl_verbose")) and ",exec," in ln:
            f = ln.split(",")
            return ",".join(f[3:11])     # engine, primitive, implementation, kind, memory descriptors, ...
    return None


AMX_PROBE = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(158, 0x1023, 18)        # SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA
print(r, ctypes.get_errno())
"""


def amx_line() -> str:
    """Whether this CPU has the AMX int8 tiles and Linux grants a process their state."""
    from xpiler.platforms.c import AMX_FLAGS, cpu_flags
    has = AMX_FLAGS <= cpu_flags()
    r = subprocess.run([sys.executable, "-c", AMX_PROBE], capture_output=True, text=True, timeout=60)
    got = r.stdout.split()
    granted = bool(got) and got[0] == "0"
    why = "granted" if granted else f"refused (return {got[0] if got else '?'}, errno {got[1] if got else '?'})"
    return f"CPU flags amx_tile+amx_int8: {'yes' if has else 'no'}; arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) {why}"


def exact_product(A, B):
    """A @ B of 8-bit matrices as int32, exactly: float64 holds every partial sum (|sum| <= K * 2^14
    < 2^53) and BLAS computes it in milliseconds, where numpy's int64 matmul is a plain loop (minutes
    at 2048^3). Then the int32 wraparound of the kernels' sums."""
    s = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.int64)
    return ((s + 2**31) % 2**32 - 2**31).astype(np.int32)


def parse_output(item: str):
    """``LABEL=PATH[@NAME=V,...]`` -> (label, path, defines or None)."""
    label, rest = item.split("=", 1)
    path, _, defs = rest.partition("@")
    defines = dict(d.split("=", 1) for d in defs.split(",")) if defs else None
    return label, path, defines


def main() -> int:
    from cpu_perf import timeit
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
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--no-numpy", action="store_true", help="leave numpy out (its integer matmul takes seconds "
                    "at 1024^3; for comparing tiles only)")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    plat = get_platform("c")
    work = Path(tempfile.mkdtemp(prefix="xpgemm8"))
    dnnl = onednn_line()
    tname = "torch._int_mm (oneDNN: " + dnnl + ")" if dnnl else "torch._int_mm (NOT oneDNN: no oneDNN primitive ran)"
    print(f"substrate: {plat.substrate()} (one thread: OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, "
          f"torch.set_num_threads(1), OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}); "
          f"numpy {np.__version__}, torch {torch.__version__}")
    print(f"int8 baseline: {tname}")
    amx = amx_line()
    print(f"AMX: {amx}")
    load0 = os.getloadavg()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load0)}")
    print(f"rounds: {a.rounds}, each a median of {a.repeats} calls after 3 warm-ups; table: median over rounds")
    print("| M=N=K | what | C | ms (median) | ms (min–max of rounds) | GOP/s | oneDNN/this | numpy/this | exact |")
    print("|---|---|---|---|---|---|---|---|---|")
    record = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "substrate": plat.substrate(),
              "torch": torch.__version__, "numpy": np.__version__, "int8_baseline": tname, "amx": amx,
              "load_before": load0, "rounds": a.rounds, "repeats": a.repeats, "sizes": {}}
    for size in (int(s) for s in a.sizes.split(",")):
        flop = 2.0 * size ** 3
        runs, arrays, notes, subs = [], None, {}, {}
        for item in a.outputs:
            label, path, defines = parse_output(item)
            c = Path(path)
            spec = load_spec(c.with_name(c.name + ".toml"))
            sizes = dict(spec.sizes)
            sizes.update({"M": size, "N": size, "K": size})
            if not spec.constraints_hold(sizes):      # e.g. gemm_int8_fix.mlu's K <= 512 (its buffers)
                notes[label] = f"not run: outside the spec's constraints {spec.test.get('constraints')}"
                continue
            spec.shapes = [{"name": "perf", **sizes}]
            inst = spec.instances(["perf"])[0]
            exe = plat.build(c, spec, work, sanitize=False, timing=a.repeats, defines=defines)
            subs[label] = plat.substrate_for(defines) if defines else plat.substrate()
            arrs = make_inputs(inst, 0)      # seed 0
            jd = work / f"job-{label.replace(':', '_')}-{size}"
            write_job(jd, inst, arrs)
            cname = next(x.name for x in spec.args if x.role == "out")
            cdt = next(x.dtype for x in spec.args if x.role == "out")
            runs.append((label, exe, jd, inst, arrs, cname, cdt))
        if not runs:
            for k, v in notes.items():
                print(f"| {size} | {k} | | {v} | | | | | |")
            continue
        # the baselines use the first kernel's inputs; every kernel is checked against its own
        A, B = runs[0][4]["A"], runs[0][4]["B"]
        assert A.dtype == np.int8 and B.dtype == np.int8, (A.dtype, B.dtype)
        tA, tB = torch.from_numpy(A), torch.from_numpy(B)
        A32, B32 = A.astype(np.int32), B.astype(np.int32)
        ref_t = torch._int_mm(tA, tB).numpy()
        assert np.array_equal(ref_t, exact_product(A, B)), "_int_mm wrong"
        refs = {r[0]: exact_product(r[4]["A"], r[4]["B"]) for r in runs}     # once per kernel, not per round
        times = {"onednn": [], "onednn+float": [], "numpy": [], **{r[0]: [] for r in runs}}
        exact = {}
        for _ in range(a.rounds):
            times["onednn"].append(timeit(lambda: torch._int_mm(tA, tB), a.repeats))
            times["onednn+float"].append(timeit(lambda: torch._int_mm(tA, tB).float(), a.repeats))
            if not a.no_numpy:
                times["numpy"].append(timeit(lambda: A32 @ B32, a.repeats))
            for label, exe, jd, inst, arrs, cname, cdt in runs:
                oc = run_limited([str(exe), str(jd)], timeout_s=600, mem_mb=None,
                                 env={"OMP_NUM_THREADS": os.environ["OMP_NUM_THREADS"]})
                if not oc.ok:
                    exact[label] = f"RUN FAILED ({oc.reason})"
                    continue
                times[label].append(float(re.search(r"xpiler-time-ms: ([0-9.]+)", oc.stdout).group(1)))
                out = read_outputs(jd, inst)[cname]
                ref = refs[label]
                ok = np.array_equal(out, ref.astype(np.float32) if cdt == "float32" else ref)
                exact[label] = "yes" if ok else f"NO (max diff {np.max(np.abs(out.astype(np.float64) - ref)):.3g})"
        med = {k: statistics.median(v) for k, v in times.items() if v}
        names = {"onednn": "torch._int_mm (s8s8s32)", "onednn+float": "torch._int_mm(...).float()",
                 "numpy": "numpy A32 @ B32", **{k: f"{k} ({v})" for k, v in subs.items()}}
        rows = []
        nmed = med.get("numpy", float("nan"))
        for k in ["onednn", "onednn+float", "numpy"] + [r[0] for r in runs]:
            cdt = next((r[6] for r in runs if r[0] == k), "int32" if k != "onednn+float" else "float32")
            if k not in med:
                print(f"| {size} | {k} | {cdt} | {exact.get(k, '')} | | | | | |")
                continue
            base = med["onednn+float"] if cdt == "float32" else med["onednn"]
            rows.append({"what": names.get(k, k), "substrate": subs.get(k), "C": cdt, "ms_median": med[k],
                         "ms_rounds": times[k],
                         "onednn_over_this": base / med[k], "numpy_over_this": nmed / med[k],
                         "exact": exact.get(k, "-")})
            print(f"| {size} | {names.get(k, k)} | {cdt} | {med[k]:.3f} | {min(times[k]):.3f}–{max(times[k]):.3f} | "
                  f"{flop / med[k] / 1e6:.1f} | {base / med[k]:.2f} | {nmed / med[k]:.2f} | "
                  f"{exact.get(k, '-')} |")
        for k, v in notes.items():
            print(f"| {size} | {k} | | {v} | | | | | |")
            rows.append({"what": k, "note": v})
        record["sizes"][str(size)] = rows
    load1 = os.getloadavg()
    record["load_after"] = load1
    print(f"load average after: {' '.join(f'{x:.2f}' for x in load1)}")
    print("oneDNN/this: the matching oneDNN row (int32 C: torch._int_mm; float32 C: torch._int_mm(...).float()) "
          "over this row's time; > 1 is faster than oneDNN")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
