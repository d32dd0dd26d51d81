#!/usr/bin/env python3
"""Time migrated cuda kernels on a real NVIDIA GPU against PyTorch, side by side in one run.

    python benchmarks/gpu_perf.py DIR [--out OUT] [--to cuda|hip]

``--to hip`` times the ``*.hip`` outputs instead, built for the NVIDIA GPU through our
HIP-on-CUDA header (``hip_on_cuda.h``); kernels with AMD builtins (MFMA) cannot run there and are
listed as such. Wave64 assumptions do not hold on 32-lane warps: the result check against
PyTorch catches a kernel that relies on them.

DIR holds migration output folders (``benchmarks/migrate_all.py --keep DIR``); every ``*.cu``
output is rebuilt with nvcc for the GPU present, run at a larger "perf" shape (per operator,
below), checked against PyTorch's result on the same inputs, and timed with CUDA events (warm-up,
the fastest of ``XP_PERF_ROUNDS`` (3) medians of 20 calls). The PyTorch baseline (cuBLAS/cuDNN or its own kernels) is timed the same
way in the same process. Prints op, source, shape, our median, PyTorch's median and the ratio
(PyTorch time / ours: > 1 means ours is faster).
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

# perf sizes per operator (names are the spec's size names); kept within the example kernels' limits
PERF = {
    "gemm": {"M": 1024, "N": 1024, "K": 1024},
    "gemv": {"M": 4096, "K": 4096},
    "bmm": {"batch": 16, "M": 256, "N": 256, "K": 256},
    "relu": {"n": 1 << 24}, "gelu": {"n": 1 << 24}, "sigmoid": {"n": 1 << 24}, "sign": {"n": 1 << 24},
    "add": {"n": 1 << 24},
    "softmax": {"rows": 4096, "cols": 1024},
    "layernorm": {"rows": 4096, "cols": 1024}, "rmsnorm": {"rows": 4096, "cols": 1024},
    # convolutions (valid, stride 1): a ResNet-like 3x3 layer, its NHWC twin, a depthwise 3x3 and a
    # 1-D layer; sized within the BANG sources' NRAM/WRAM limits (their outputs keep those limits)
    "conv2d_nchw": {"N": 8, "Cin": 64, "H": 58, "W": 58, "Cout": 128, "KH": 3, "KW": 3, "S": 1},
    "conv2d_nhwc": {"N": 8, "Cin": 64, "H": 58, "W": 58, "Cout": 128, "KH": 3, "KW": 3, "S": 1},
    "depthwise_conv2d": {"N": 8, "C": 64, "H": 130, "W": 130, "KH": 3, "KW": 3, "S": 1},
    "conv1d": {"N": 8, "Cin": 64, "L": 4098, "Cout": 128, "KW": 3, "S": 1},
}


def torch_ref(op, t, arrays, sizes):
    """(callable, inputs) computing the op with PyTorch on the GPU."""
    import torch
    g = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in arrays.items()}
    if op == "gemm":
        return (lambda: torch.matmul(g["A"], g["B"])), "C"
    if op == "bmm":
        return (lambda: torch.bmm(g["A"], g["B"])), "C"
    if op == "gemv":
        return (lambda: torch.mv(g["A"], g["x"])), "y"
    if op == "relu":
        return (lambda: torch.relu(g["x"])), "y"
    if op == "gelu":
        return (lambda: torch.nn.functional.gelu(g["x"])), "y"
    if op == "sigmoid":
        return (lambda: torch.sigmoid(g["x"])), "y"
    if op == "sign":
        return (lambda: torch.sign(g["x"])), "y"
    if op == "add":
        return (lambda: g["a"] + g["b"]), "c"
    if op == "softmax":
        return (lambda: torch.softmax(g["x"], dim=-1)), "y"
    if op == "layernorm":
        return (lambda: torch.nn.functional.layer_norm(g["x"], (sizes["cols"],), g["gamma"], g["beta"], 1e-5)), "y"
    if op == "rmsnorm":
        return (lambda: g["x"] * torch.rsqrt(g["x"].pow(2).mean(-1, keepdim=True) + 1e-5) * g["gamma"]), "y"
    if op in CONV:
        return _torch_conv(op, g, sizes), "output"
    return None, None


#: convolution operators; their baseline is cuDNN through torch.nn.functional in float32 with
#: TF32 off (``torch.backends.cudnn.allow_tf32 = False``), the arithmetic our kernels do
CONV = ("conv2d_nchw", "conv2d_nhwc", "depthwise_conv2d", "conv1d")


def _torch_conv(op, g, z):
    """A callable computing the convolution with cuDNN on the spec's layouts, without copies in
    the timed call: NHWC goes in as a channels-last view (cuDNN runs it natively), and the result's
    NHWC view is returned."""
    import torch
    import torch.nn.functional as F
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    x, w, s = g["input"], g["weight"], z["S"]
    if op == "conv2d_nchw":
        x4, w4 = x.reshape(z["N"], z["Cin"], z["H"], z["W"]), w.reshape(z["Cout"], z["Cin"], z["KH"], z["KW"])
        return lambda: F.conv2d(x4, w4, stride=s)
    if op == "conv2d_nhwc":
        x4 = x.reshape(z["N"], z["H"], z["W"], z["Cin"]).permute(0, 3, 1, 2)      # channels-last NCHW view
        w4 = w.reshape(z["Cout"], z["KH"], z["KW"], z["Cin"]).permute(0, 3, 1, 2)
        return lambda: F.conv2d(x4, w4, stride=s).permute(0, 2, 3, 1)
    if op == "depthwise_conv2d":
        x4, w4 = x.reshape(z["N"], z["C"], z["H"], z["W"]), w.reshape(z["C"], 1, z["KH"], z["KW"])
        return lambda: F.conv2d(x4, w4, stride=s, groups=z["C"])
    x3, w3 = x.reshape(z["N"], z["Cin"], z["L"]), w.reshape(z["Cout"], z["Cin"], z["KW"])
    return lambda: F.conv1d(x3, w3, stride=s)


#: rounds per timing, each the median of 20 calls; the fastest round is kept, for our kernel and for
#: PyTorch alike. One round of PyTorch's 15-30 us row kernels varied by +-30 % within one run
#: (eighteenth session), so a single median made the rows' ratios mostly noise.
ROUNDS = int(os.environ.get("XP_PERF_ROUNDS", 3))


def time_torch(fn, repeats=20):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(ROUNDS):
        ts = []
        for _ in range(repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        best = min(best, float(np.median(ts)))
    return best


def _perf_spec(cu: Path):
    """(base op, spec with a single 'perf' instance) for an output file, or (None, None)."""
    from xpiler.spec import load_spec
    op = cu.parent.name.split("__")[0].split(".")[0]
    base_op = next((k for k in PERF if op == k or op.startswith(k + "_")), None)
    if base_op is None:
        return None, None
    spec = load_spec(cu.with_name(cu.name + ".toml"))
    sizes = dict(spec.sizes)
    sizes.update({k: v for k, v in PERF[base_op].items() if k in sizes})
    spec.shapes = [{"name": "perf", **sizes}]
    return base_op, spec


def _prebuild(files, dialect: str, work: Path, jobs: int) -> None:
    """Fill the build cache with every timed executable, ``jobs`` nvcc at a time (timing stays
    sequential: one kernel on the GPU at a time)."""
    from concurrent.futures import ThreadPoolExecutor
    from xpiler.platforms import get_platform

    def one(cu):
        try:
            base_op, spec = _perf_spec(cu)
            if spec is not None:
                get_platform(dialect).build(cu, spec, work / f"pre-{cu.parent.name}", sanitize=False, gpu=True,
                                            timing=True)
        except Exception:
            pass                                   # reported by the timed loop
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        list(ex.map(one, files))


def time_output(cu: Path, to: str, work: Path, src_name: str | None = None, torch_ms: dict | None = None):
    """Time one migrated output at its operator's perf shape next to PyTorch: ``(row, detail)``
    (row: source, op, shape, check, ours ms, PyTorch ms, ratio), or ``(None, None)`` for an operator
    without a perf shape. ``torch_ms`` caches PyTorch's time per (op, shape) within one run."""
    from xpiler.platforms import get_platform
    from xpiler.platforms.harness import read_outputs, write_job
    from xpiler.sandbox import run_limited
    from xpiler.verify.inputs import make_inputs
    src_name = src_name or cu.parent.name.split("__to__")[0]
    base_op, spec = _perf_spec(cu)
    if base_op is None:
        return None, None
    sizes = dict(spec.shapes[0])
    sizes.pop("name")
    try:
        inst = spec.instances(["perf"])[0]
        exe = get_platform(to).build(cu, spec, work, sanitize=False, gpu=True, timing=True)
    except Exception as e:
        return ((src_name, base_op, "-", "AMD builtins: not runnable on NVIDIA" if "AMD builtins" in str(e)
                 else "BUILD/SPEC FAILED", "", "", ""), {"source": src_name, "error": str(e)[:2000]})
    arrays = make_inputs(inst, 0)
    work.mkdir(parents=True, exist_ok=True)
    jd = Path(tempfile.mkdtemp(prefix="job-", dir=work))
    write_job(jd, inst, arrays)
    # XP_PERF_RUN_S bounds one output's timed run (warm-up and repeats), so a slow output cannot
    # take a short device call with it
    shape = ",".join(f"{k}={v}" for k, v in PERF[base_op].items())
    ours = float("inf")
    for _ in range(ROUNDS):     # the fastest of ROUNDS runs, each the median of its 20 calls
        oc = run_limited([str(exe), str(jd)], timeout_s=float(os.environ.get("XP_PERF_RUN_S", 180)), mem_mb=None)
        if not oc.ok:
            return (src_name, base_op, shape, f"RUN FAILED ({oc.reason})", "", "", ""), \
                {"source": src_name, "stderr": oc.stderr[-2000:]}
        m = re.search(r"xpiler-time-ms: ([0-9.]+)", oc.stdout)
        if m is None:
            ours = float("nan")
            break
        ours = min(ours, float(m.group(1)))
    got = read_outputs(jd, inst)
    try:
        fn, out_name = torch_ref(base_op, None, {k: v for k, v in arrays.items()}, sizes)
        if fn is None:
            return None, None
        ref = fn().float().cpu().numpy().reshape(got[out_name].shape)
        err = float(np.max(np.abs(got[out_name].astype(np.float64) - ref))) if ref.size else 0.0
        key = (base_op, shape)
        if torch_ms is not None and key in torch_ms:
            tms = torch_ms[key]
        else:
            tms = time_torch(fn)
            if torch_ms is not None:
                torch_ms[key] = tms
    except Exception as e:  # a baseline that cannot run here is reported, not fatal
        return (src_name, base_op, shape, f"baseline failed: {type(e).__name__}", f"{ours:.4f}", "", ""), None
    ok = err < 1e-2 * max(1.0, float(np.abs(ref).max()))
    return ((src_name, base_op, shape, "ok" if ok else "MISMATCH", f"{ours:.4f}", f"{tms:.4f}",
             f"{tms / ours:.2f}" if ours > 0 else "-"),
            {"source": src_name, "op": base_op, "shape": shape, "ours_ms": ours, "torch_ms": tms, "ok": ok,
             "ratio_torch_over_ours": tms / ours if ours > 0 else None, "max_abs_vs_torch": err})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--out", default=".")
    ap.add_argument("--to", choices=["cuda", "hip"], default="cuda")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel nvcc builds before the (sequential) timed runs")
    a = ap.parse_args()
    rows, details = [], []
    work = Path(tempfile.mkdtemp(prefix="xpperf"))
    ext = ".cu" if a.to == "cuda" else ".hip"
    files = sorted(Path(a.dir).glob(f"*__to__{a.to}/*{ext}"))
    _prebuild(files, a.to, work, a.jobs)
    for cu in files:
        row, detail = time_output(cu, a.to, work)
        if row is None:
            continue
        rows.append(row)
        if detail is not None:
            details.append(detail)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / f"gpu_perf_{a.to}.json").write_text(json.dumps(details, indent=1))
    print(f"| source → {a.to} | op | shape | check vs torch | ours ms | PyTorch ms | PyTorch/ours |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    for line in summary(details):
        print(line)
    return 0


#: families of issue 15's table, and the arrays an elementwise operator moves (read + written)
FAMILIES = {"elementwise": ("relu", "gelu", "sigmoid", "sign", "add"), "rows": ("softmax", "layernorm", "rmsnorm"),
            "gemv": ("gemv",), "gemm/bmm": ("gemm", "bmm"), "conv (vs cuDNN, fp32)": CONV}
ARRAYS = {"add": 3}


def summary(details: list) -> list:
    """Geometric means of PyTorch/ours over the outputs that ran and matched, overall and per
    family, and the elementwise outputs' achieved DRAM bandwidth (bytes read + written / time)."""
    import math
    ok = [d for d in details if d.get("ok") and d.get("ratio_torch_over_ours")]

    def gm(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
    out = [f"geomean PyTorch/ours over {len(ok)} outputs that ran and matched "
           f"({len(details) - len(ok)} did not): {gm([d['ratio_torch_over_ours'] for d in ok]):.3f}x"]
    for fam, ops in FAMILIES.items():
        xs = [d["ratio_torch_over_ours"] for d in ok if d["op"] in ops]
        out.append(f"  {fam}: {gm(xs):.3f}x over {len(xs)}")
    bw = []
    for d in ok:
        if d["op"] in FAMILIES["elementwise"]:
            n = int(d["shape"].split("=")[1])
            bw.append(ARRAYS.get(d["op"], 2) * 4 * n / (d["ours_ms"] * 1e-3) / 1e9)
    if bw:
        out.append(f"  elementwise achieved bandwidth: median {sorted(bw)[len(bw) // 2]:.0f} GB/s, "
                   f"min {min(bw):.0f}, max {max(bw):.0f} (read + written bytes / time)")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
