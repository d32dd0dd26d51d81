"""Measure the binding pass end to end: every example migrated with the one-pass pipeline
``[("binding", {...})]`` through ``xpiler.migration.driver.migrate`` and verified on its
substrate (emulators for cuda/hip/bang, native for c) against the source kernel.

Directions measured:
  * c -> cuda, c -> hip, c -> bang  (mode "bind"; every c example)
  * cuda -> hip, hip -> cuda         (mode "retarget"; every SIMT example)

  * with --only cuda2bang,bang2c,... (loop_recovery + binding): every cuda/hip/bang example
    recovered to c and bound to the other model

Usage: python benchmarks/bench_binding.py [--only c2cuda,cuda2hip,...] [--filter SUBSTR] [--json OUT]
Prints one line per kernel (verified / refused with the diagnostic / failed verification) and
a per-direction summary.  A refusal is the pass declining (XP4001 with a location), which is
the expected answer for kernels the pass cannot handle alone (x86 intrinsics, WMMA/MFMA,
64-lane wavefront collectives).
"""
from __future__ import annotations

import argparse
import glob
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIRECTIONS = {
    "c2cuda": ("c", "cuda", "bind"), "c2hip": ("c", "hip", "bind"), "c2bang": ("c", "bang", "bind"),
    "cuda2hip": ("cuda", "hip", "retarget"), "hip2cuda": ("hip", "cuda", "retarget"),
}
# with --recover: loop_recovery then binding (the default pipeline's core for these directions)
RECOVER = {f"{a}2{b}": (a, b, "recover") for a in ("cuda", "hip", "bang") for b in ("cuda", "hip", "bang", "c")
           if a != b and not (a in ("cuda", "hip") and b in ("cuda", "hip"))}
EXT = {"c": ".c", "cuda": ".cu", "hip": ".hip", "bang": ".mlu"}


def run_one(src: Path, target: str, mode: str) -> dict:
    from xpiler.migration.driver import migrate
    t0 = time.time()
    with tempfile.TemporaryDirectory() as out:
        try:
            if mode == "recover":
                pipe = [("loop_recovery", {}), ("binding", {"target": target})]
            else:
                pipe = [("binding", {"target": target, "mode": mode})]
            r = migrate(src, target, outdir=out, pipeline=pipe, jobs=1)
        except Exception as e:  # a crash is a result too
            return {"src": str(src.relative_to(ROOT)), "status": "crash", "why": f"{type(e).__name__}: {e}",
                    "seconds": round(time.time() - t0, 2)}
    refusals = [d for d in r.diagnostics if getattr(d, "code", "") == "XP4001"]
    failures = [d for d in r.diagnostics if getattr(d, "code", "") == "XP4003"]
    if r.verified:
        status, why = "verified", ""
    elif refusals:
        status = "refused"
        why = f"[{getattr(refusals[0], 'pass_name', '?')}] {getattr(refusals[0], 'why', str(refusals[0]))}"
        loc = f"{refusals[0].file}:{refusals[0].line}" if getattr(refusals[0], "line", None) else ""
        why = f"{loc} {why}".strip()
    elif failures:
        status, why = "failed", getattr(failures[0], "why", str(failures[0]))
    else:
        status, why = "skipped", "; ".join(str(d).splitlines()[0] for d in r.diagnostics[:2])
    return {"src": str(src.relative_to(ROOT)), "status": status, "why": why[:300],
            "seconds": round(time.time() - t0, 2),
            "substrate": r.verdict.substrate if r.verdict else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(DIRECTIONS))
    ap.add_argument("--filter", default="")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    results = {}
    for name in args.only.split(","):
        src_d, dst, mode = {**DIRECTIONS, **RECOVER}[name]
        files = sorted(Path(p) for p in glob.glob(str(ROOT / "examples" / "*" / f"*{EXT[src_d]}")))
        files = [f for f in files if args.filter in str(f)]
        rows = []
        for f in files:
            row = run_one(f, dst, mode)
            rows.append(row)
            print(f"{name:9s} {row['status']:9s} {row['seconds']:6.1f}s {row['src']}  {row['why']}", flush=True)
        results[name] = rows
    print("\nsummary (verified / refused / failed / other, of N):")
    for name, rows in results.items():
        c = {k: sum(1 for r in rows if r["status"] == k) for k in ("verified", "refused", "failed")}
        other = len(rows) - sum(c.values())
        print(f"  {name:9s} {c['verified']:3d} / {c['refused']:3d} / {c['failed']:3d} / {other:3d}  of {len(rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
