"""Median parse+print time per example kernel (front end + own-dialect printer).

    python benchmarks/bench_parse.py [--repeat 5] [--json OUT]

Prints one line per kernel and a summary (median of medians, worst).  Times are wall-clock on
this machine's CPU, measured in one process, after one warm-up run per kernel.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xpiler.frontend import parse_file  # noqa: E402
from xpiler.printers import print_program  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--suite", default=str(ROOT / "examples"))
    a = ap.parse_args(argv)
    files = sorted(p for ext in ("cu", "hip", "mlu", "c") for p in Path(a.suite).glob(f"*/*.{ext}"))
    rows = []
    for f in files:
        print_program(parse_file(f))  # warm-up
        ts = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            print_program(parse_file(f))
            ts.append(time.perf_counter() - t)
        med = statistics.median(ts)
        rows.append({"kernel": str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f),
                     "lines": f.read_text().count("\n"), "median_s": med})
        print(f"{med * 1000:8.2f} ms  {rows[-1]['lines']:4d} lines  {rows[-1]['kernel']}")
    meds = [r["median_s"] for r in rows]
    summary = {"kernels": len(rows), "median_of_medians_s": statistics.median(meds) if meds else None,
               "worst_s": max(meds) if meds else None, "substrate": "CPU (this machine), one process"}
    print(f"\n{summary['kernels']} kernels: median {summary['median_of_medians_s'] * 1000:.2f} ms, "
          f"worst {summary['worst_s'] * 1000:.2f} ms per parse+print")
    if a.json:
        Path(a.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
