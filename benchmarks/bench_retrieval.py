"""Retrieval benchmark: recall@1 and recall@3 of the manual index, per target and overall.

    python benchmarks/bench_retrieval.py [--queries benchmarks/retrieval_queries.toml] [-v]

-v lists every query whose expected sections are not all in its top 3.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from xpiler.retrieval import ManualIndex, TARGETS  # noqa: E402
from xpiler.retrieval.bench import evaluate, load_queries  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", default=str(ROOT / "benchmarks" / "retrieval_queries.toml"))
    ap.add_argument("--manuals", default=None, help="manuals folder (default: the installed one)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    index = ManualIndex.from_dir(args.manuals)
    queries = load_queries(args.queries)
    res = evaluate(index, queries)
    dt = time.perf_counter() - t0

    counts = index.targets()
    print(f"{'target':8} {'sections':>8} {'queries':>7} {'recall@1':>8} {'recall@3':>8}")
    for t in TARGETS:
        r = res["per_target"][t]
        print(f"{t:8} {counts[t]:8d} {r['n']:7d} {r['recall@1']:8.3f} {r['recall@3']:8.3f}")
    o = res["overall"]
    print(f"{'overall':8} {sum(counts.values()):8d} {o['n']:7d} {o['recall@1']:8.3f} {o['recall@3']:8.3f}")
    print(f"({dt:.2f} s)")
    if res["missing"]:
        print("expected ids not in the manuals:", ", ".join(res["missing"]))
    if args.verbose:
        for r in res["rows"]:
            if r["recall@3"] < 1.0:
                q = r["query"]
                print(f"- [{q.target}/{q.pass_name}] {', '.join(q.apis)} {q.text!r}\n"
                      f"    expected {list(q.expected)}\n    got      {r['retrieved']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
