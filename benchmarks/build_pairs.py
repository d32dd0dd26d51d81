#!/usr/bin/env python3
"""Build the verified-pair dataset (issue 16, docs/dataset.md): migrate every kernel of the
corpora in every direction with ``--emit-asm``, keep each run's output folder (kernel, spec,
assembly, provenance log), then ``xpiler export-pairs`` over them.

    python benchmarks/build_pairs.py --runs RUNS -o pairs.jsonl [--suite examples --suite examples/wild]
                                     [--from D] [--to D] [--shard K/N] [--workers 2] [--no-source-asm]

Each migration writes into ``RUNS/<source path>__to__<target>/``; a folder whose log is already
closed is not migrated again, so shards and interrupted runs add up. A verified output is run once
more on fresh inputs against the numpy reference (``migrate_all.recheck``); one that disagrees is
removed from RUNS and never reaches the dataset. The full dataset (both corpora, all 12
directions) is ``--suite examples --suite examples/wild`` without ``--shard``.
"""
from __future__ import annotations

import argparse
import json
import os

# as the xpiler command does (xpiler/__init__.py): reference outputs with one BLAS thread. Without
# it a pool worker spun forever in OpenBLAS (self_attention.cu -> bang, 2026-12-05, twice)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DIALECTS = ("cuda", "hip", "bang", "c")


def _closed(log: Path) -> bool:
    try:
        last = log.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        return json.loads(last).get("type") == "end"
    except (OSError, ValueError):
        return False


def one(job) -> dict:
    src, spec, dst, runs = job
    from migrate_all import recheck
    from xpiler.api import migrate
    from xpiler.diagnostics import XPError
    rel = Path(src).relative_to(ROOT)
    out = Path(runs) / f"{str(rel).replace('/', '__')}__to__{dst}"
    t0 = time.time()
    row = {"source": str(rel), "to": dst}
    if _closed(out / "provenance.jsonl"):
        return {**row, "status": "kept", "seconds": 0.0}
    shutil.rmtree(out, ignore_errors=True)
    try:
        r = migrate(src, to=dst, spec=spec, outdir=out, budget=300, emit_asm=True)
        status = "verified" if r.verified else "unverified"
        if r.verified:
            try:
                bad = recheck(r.output_path, r.spec_path)
            except XPError as e:
                bad = f"re-check could not run: {e.code}"
            if bad and not bad.startswith("no reference"):
                shutil.rmtree(out, ignore_errors=True)   # never in the dataset
                status = f"dropped ({bad})"
    except XPError as e:
        status = f"error {e.code}"
        shutil.rmtree(out, ignore_errors=True)
    except Exception as e:   # a tool crash is a finding, not a row of the dataset
        status = f"INTERNAL {type(e).__name__}: {e}"[:200]
        shutil.rmtree(out, ignore_errors=True)
    return {**row, "status": status, "seconds": round(time.time() - t0, 1)}


def main() -> int:
    from xpiler.examples_index import discover
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", action="append", help="kernel folder(s) (default: examples and examples/wild)")
    ap.add_argument("--from", dest="src", action="append")
    ap.add_argument("--to", dest="dst", action="append")
    ap.add_argument("--shard", help="K/N: every N-th migration from the K-th (0-based)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", required=True, help="folder that keeps every run's output folder")
    ap.add_argument("-o", "--output", required=True, help="pairs.jsonl (or .parquet with pyarrow)")
    ap.add_argument("--no-source-asm", action="store_true")
    a = ap.parse_args()
    jobs = []
    for suite in a.suite or ["examples", "examples/wild"]:
        for ex in discover(ROOT / suite, a.src):
            for dst in a.dst or DIALECTS:
                if dst != ex.dialect:
                    jobs.append((str(ex.source), str(ex.spec), dst, str(Path(a.runs).resolve())))
    if a.shard:
        # shards over a hash order, so each is a sample of every direction (a stride over the
        # source-major list would keep the same target position of every source: 4 directions)
        import hashlib
        k, n = (int(x) for x in a.shard.split("/"))
        jobs = sorted(jobs, key=lambda j: hashlib.sha256(f"{Path(j[0]).relative_to(ROOT)}>{j[2]}".encode()).digest())
        jobs = jobs[k::n]
    print(f"{len(jobs)} migrations", flush=True)
    t0 = time.time()
    counts: dict = {}
    with ProcessPoolExecutor(max_workers=a.workers) as pool:
        for fut in as_completed([pool.submit(one, j) for j in jobs]):
            r = fut.result()
            key = r["status"].split(" ")[0]
            counts[key] = counts.get(key, 0) + 1
            print(f"{r['status'][:60]:12s} {r['source']} -> {r['to']} {r['seconds']}s", flush=True)
    print(f"migrations: {counts} in {time.time() - t0:.0f} s", flush=True)
    from xpiler.pairs import export_pairs
    s = export_pairs([a.runs], a.output, source_asm=not a.no_source_asm)
    for e in s.refused:
        print(e.format().splitlines()[0])
    print(s.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
