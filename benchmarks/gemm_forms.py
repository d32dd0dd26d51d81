#!/usr/bin/env python3
"""Time every register-blocked form of the cache pass against cuBLAS (torch) in one process.

    python benchmarks/gemm_forms.py [--ops gemm,bmm] [--work DIR] [--make-only] [--verify]

For each operator (examples/<op>/<op>.c) the kernel is bound for cuda (the binding pass, as a
``--no-tune`` migration does), then each cache step the search can choose is applied to it
(the pass's ``candidates``: the one-element tiles, the square register tiles, the wide ``vec=4``
tiles), through the same code path the tuner and ``xpiler replay`` take
(:func:`xpiler.schedule.step.apply_program`). Each variant is written as ``<op>__<label>/<op>.cu``
with its spec (launch included) under ``--work``. Unless ``--make-only``, each is then built with
nvcc, run at the operator's perf shape of benchmarks/gpu_perf.py (gemm 1024^3, bmm 16 x 256^3),
checked against torch on the same inputs and timed with CUDA events next to torch.matmul /
torch.bmm (cuBLAS), all in this one process: the ratio column is torch's time over ours (1.0 = as
fast as cuBLAS; the issue asks >= 0.8). ``--verify`` first tests each variant on the SIMT emulator
(``emu:simt-cpu``, the spec's instances): correctness only, never a timing.
"""
from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _label(params: dict) -> str:
    if "thread_tile" not in params:
        return f"tile{params['tile']}"
    bn = params.get("tile_n", params["tile"])
    kind = "wide" if params.get("vec") else "reg"
    tn = params.get("thread_tile_n", params["thread_tile"])
    tt = f"{params['thread_tile']}" + (f"x{tn}" if tn != params["thread_tile"] else "")
    return f"{kind}{params['tile']}x{bn}_t{tt}_bk{params['bk']}" + ("_pf" if params.get("prefetch") else "")


def _apply(program, entry: str, launch: dict, pass_name: str, params: dict):
    """(program, launch) after one step, whichever form ``apply_program`` has here (it is moving
    the launch into the program: the old form takes and returns the launch)."""
    from xpiler.schedule.step import StepContext, apply_program
    ctx = StepContext()
    if "launch" in inspect.signature(apply_program).parameters:
        return apply_program(program, entry, launch, pass_name, params, ctx)
    prog = apply_program(program, entry, pass_name, params, ctx)
    return prog, prog.launch_dict(entry)


def make_variants(op: str, work: Path, target: str = "cuda") -> list[tuple[str, Path, dict]]:
    """Write the untuned bound kernel and one kernel per cache candidate; ``[(label, path, step
    params)]``."""
    from xpiler.frontend import parse_file
    from xpiler.passes import cache
    from xpiler.printers import print_program
    from xpiler.spec import DIALECT_EXT, load_spec, spec_to_toml
    src = ROOT / "examples" / op / f"{op}.c"
    sp = load_spec(str(src) + ".toml")
    entry = sp.entry
    bound, launch = _apply(parse_file(src), entry, {}, "binding", {"target": target})
    out = []
    for params in [None] + cache.candidates(bound, target):
        if params is None:
            label, prog, lch = "untuned", bound, launch
        else:
            label = _label(params)
            prog, lch = _apply(bound, entry, launch, "cache", params)
        d = work / f"{op}__{label}"
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{op}{DIALECT_EXT[target]}"
        path.write_text(print_program(prog, target))
        cs = sp.with_dialect(target, entry, lch)
        ref, fn = sp.reference.split(":")
        cs.reference = f"{(src.parent / ref).resolve()}:{fn}"
        cs.path = path.with_name(path.name + ".toml")
        cs.path.write_text(spec_to_toml(cs))
        out.append((label, path, params or {}))
    return out


def verify_variant(op: str, path: Path) -> bool:
    from xpiler.spec import load_spec
    from xpiler.verify.tester import compare_kernels
    src = ROOT / "examples" / op / f"{op}.c"
    v = compare_kernels(path, load_spec(str(path) + ".toml"), against=(src, load_spec(str(src) + ".toml")))
    return bool(v.verified)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="gemm,bmm")
    ap.add_argument("--work", default=None, help="where the variants are written (default: a temporary folder)")
    ap.add_argument("--make-only", action="store_true", help="write the variants, time nothing (no GPU needed)")
    ap.add_argument("--verify", action="store_true", help="test each variant on the SIMT emulator first")
    a = ap.parse_args(argv)
    work = Path(a.work or tempfile.mkdtemp(prefix="xp-gemm-forms-"))
    made = {op: make_variants(op, work) for op in a.ops.split(",")}
    for op, vs in made.items():
        for label, path, _ in vs:
            line = f"{op}\t{label}\t{path}"
            if a.verify:
                line += "\temu:simt-cpu " + ("verified" if verify_variant(op, path) else "FAILED")
            print(line, flush=True)
    if a.make_only:
        return 0
    from gpu_perf import time_output
    torch_ms: dict = {}
    build = Path(tempfile.mkdtemp(prefix="xp-gemm-forms-build-"))
    print("| op | form | shape | check vs torch | ours ms | torch ms | torch/ours |")
    print("|---|---|---|---|---|---|---|")
    for op, vs in made.items():
        for label, path, _ in vs:
            row, _ = time_output(path, "cuda", build / f"{op}-{label}", src_name=label, torch_ms=torch_ms)
            if row is not None:
                src_name, base_op, shape, check, ours, tms, ratio = row
                print(f"| {base_op} | {src_name} | {shape} | {check} | {ours} | {tms} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
