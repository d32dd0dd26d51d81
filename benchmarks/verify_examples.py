#!/usr/bin/env python3
"""Verify every example instance on its best substrate here; print counts per dialect.

    python benchmarks/verify_examples.py [--dialect D] [--op OP] [--seeds N] [--json OUT]

Each example kernel is built once (AddressSanitizer on) and run on every instance of its spec
for N seeds against its numpy reference. The table names the substrate of each dialect; an
emulator's verdict is a functional verdict, never a performance figure.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xpiler.diagnostics import XPError  # noqa: E402
from xpiler.examples_index import discover  # noqa: E402
from xpiler.api import test  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialect", action="append")
    ap.add_argument("--op", action="append")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--no-asan", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    t_all = time.time()
    for ex in discover(ROOT / "examples", a.dialect, a.op):
        t0 = time.time()
        try:
            v = test(ex.source, ex.spec, seeds=range(a.seeds), sanitize=not a.no_asan)
            ok, sub = v.verified, v.substrate
            why = "" if ok else (v.failures[0].code + " " + v.failures[0].message)[:160]
            runs = v.runs
        except XPError as e:
            ok, sub, why, runs = False, "-", f"{e.code} {e.message}"[:160], 0
        dt = time.time() - t0
        rows.append({"op": ex.op, "dialect": ex.dialect, "variant": ex.variant, "source": str(ex.source.relative_to(ROOT)),
                     "verified": ok, "substrate": sub, "runs": runs, "seconds": round(dt, 2), "reason": why})
        print(f"{'PASS' if ok else 'FAIL'} {ex.dialect:5s} {ex.op:22s} {ex.variant:10s} {sub:20s} {dt:6.1f}s {why}",
              flush=True)
    by = defaultdict(lambda: [0, 0, set()])
    for r in rows:
        b = by[r["dialect"]]
        b[0] += r["verified"]
        b[1] += 1
        b[2].add(r["substrate"])
    print(f"\n| dialect | verified / kernels | substrate |\n|---|---|---|")
    for d in ("cuda", "hip", "bang", "c"):
        if d in by:
            print(f"| {d} | {by[d][0]} / {by[d][1]} | {', '.join(sorted(by[d][2]))} |")
    tot = sum(r["verified"] for r in rows)
    print(f"| all | {tot} / {len(rows)} | |\n\ntotal time {time.time() - t_all:.0f} s")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0 if tot == len(rows) else 3


if __name__ == "__main__":
    sys.exit(main())
