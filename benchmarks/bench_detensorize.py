"""Detensorize every example that uses intrinsics, print the result in the SAME dialect and
verify it against the original kernel on its own substrate (emulator / CPU).

    python benchmarks/bench_detensorize.py [--dialect cuda] [--only NAME] [--seeds 1] [--show]

Prints one line per kernel (verified / refused / failed with the reason) and verified/total
per dialect.  Not a timed benchmark: a correctness sweep over the suite.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_one(src: Path, seeds, show=False):
    from xpiler.frontend import parse_file
    from xpiler.passes import detensorize
    from xpiler.passes.base import PassError
    from xpiler.printers import print_program
    from xpiler.spec import load_spec, spec_to_toml
    from xpiler.verify.tester import compare_kernels

    spec = load_spec(str(src) + ".toml")
    prog = parse_file(src, spec.dialect)
    if not detensorize.intrinsic_sites(prog):
        return "skip", "no intrinsics"
    try:
        out = detensorize.apply(prog, entry=spec.entry, target=None)
    except PassError as e:
        return "refused", f"{e.code} {e.why} (line {getattr(e, 'line', None)})"
    text = print_program(out, prog.dialect)
    if show:
        print(text)
    work = Path(tempfile.mkdtemp(prefix="xpd-bench-"))
    cand = work / src.name
    cand.write_text(text)
    cspec = load_spec(str(src) + ".toml")
    if cspec.reference:
        f, fn = cspec.reference.split(":")
        cspec.reference = f"{(src.parent / f).resolve()}:{fn}"
    cspec.path = Path(str(cand) + ".toml")
    cspec.path.write_text(spec_to_toml(cspec))
    v = compare_kernels(cand, cspec, against=(src, spec), seeds=seeds, jobs=1)
    if v.verified:
        return "verified", f"{v.substrate}, {len(v.instances)} shapes x {len(v.seeds)} seeds, max abs err {v.max_abs_error:.3g}"
    msg = v.failures[0].message if v.failures else "?"
    return "failed", f"{v.substrate}: {msg[:400]} (kept in {work})"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--dialect", action="append")
    ap.add_argument("--only", action="append")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--show", action="store_true")
    a = ap.parse_args(argv)
    ext = {".cu": "cuda", ".hip": "hip", ".mlu": "bang", ".c": "c"}
    files = sorted(p for p in (ROOT / "examples").glob("*/*") if p.suffix in ext)
    totals = defaultdict(lambda: [0, 0])
    for f in files:
        d = ext[f.suffix]
        if a.dialect and d not in a.dialect:
            continue
        if a.only and f.stem not in a.only and f.name not in a.only:
            continue
        t0 = time.time()
        try:
            status, why = run_one(f, tuple(range(a.seeds)), a.show)
        except Exception as e:  # a crash is a failure of this kernel, not of the sweep
            status, why = "failed", f"{type(e).__name__}: {e}"
        if status == "skip":
            continue
        totals[d][1] += 1
        totals[d][0] += status == "verified"
        print(f"{status:9s} {f.relative_to(ROOT)}  [{time.time() - t0:.1f}s] {why}", flush=True)
    print()
    for d in ("cuda", "hip", "bang", "c"):
        if d in totals:
            print(f"{d:5s} verified {totals[d][0]}/{totals[d][1]}")
    allv = sum(x[0] for x in totals.values())
    allt = sum(x[1] for x in totals.values())
    print(f"total verified {allv}/{allt}")
    return 0 if allv == allt else 1


if __name__ == "__main__":
    sys.exit(main())
