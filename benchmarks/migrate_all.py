#!/usr/bin/env python3
"""Migrate every example in every direction with the symbolic pipeline (no tuning) and verify.

    python benchmarks/migrate_all.py [--from D] [--to D] [--op OP] [--variant base] [--suite DIR] [--source FILE]
                                     [--workers 2] [--json OUT]

Prints one line per migration and a table per direction: verified / total, median and p90
migration time on this machine, and the first failure reason of each unverified kernel.
Verification runs on this machine's substrates (emulators for cuda/hip/bang, native for c):
functional verdicts, not performance.
"""
from __future__ import annotations

import argparse
import json
import os

# as the xpiler command does (xpiler/__init__.py): reference outputs with one BLAS thread
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DIALECTS = ("cuda", "hip", "bang", "c")


RECHECK_SEED = 7919   # not one of the seeds the migration's own tests use


def recheck(out: Path, spec_path: Path) -> str:
    """Run a verified output once more, outside the migration, on fresh inputs of every instance,
    and compare it with the spec's numpy reference here (NaN never passes). '' when it agrees,
    else what disagreed. The migration's verdict is not trusted for this."""
    import numpy as np
    from xpiler.dtypes import is_float
    from xpiler.kernel import Kernel
    from xpiler.spec import load_spec
    from xpiler.verify.inputs import make_inputs
    from xpiler.verify.oracle import reference_outputs
    spec = load_spec(spec_path)
    if not spec.reference:
        return "no reference to re-check against"
    k = Kernel(out, spec)
    try:
        for inst in spec.instances():
            arrays = make_inputs(inst, RECHECK_SEED)
            expected = reference_outputs(spec, inst, arrays)
            got = k(*[arrays[a.name].copy() for a in spec.arrays], **inst.scalars)
            got = got if isinstance(got, tuple) else (got,)
            for a, g in zip(spec.outputs, got):
                g = np.asarray(g, dtype=np.float64 if is_float(a.dtype) or a.dtype == "bfloat16" else np.int64)
                e = expected[a.name].reshape(g.shape)
                if is_float(a.dtype) or a.dtype == "bfloat16":
                    rtol, atol = spec.tolerance_for(a.dtype)
                    with np.errstate(invalid="ignore", over="ignore"):
                        bad = ~((np.abs(g - e) <= atol + rtol * np.abs(e)) | ((g == e) & ~np.isnan(g))) | np.isnan(g)
                else:
                    bad = g != e
                if bad.any():
                    return f"re-check: {int(bad.sum())} of {bad.size} elements of '{a.name}' wrong in instance {inst.name}"
    finally:
        k.close()
    return ""


def one(job):
    src, spec, dst, keep = job
    from xpiler.api import migrate
    from xpiler.diagnostics import XPError
    t0 = time.time()
    recheck_note = ""
    with tempfile.TemporaryDirectory(prefix="xpiler-mig-") as tmp:
        try:
            r = migrate(src, to=dst, spec=spec, outdir=Path(tmp) / "out", budget=300)
            ok = r.verified
            why = "" if ok else "; ".join(f"{d.code} {d.message}" for d in r.diagnostics[:2])[:200]
            sub = r.verdict.substrate if r.verdict else "-"
            if ok:
                try:
                    recheck_note = recheck(r.output_path, r.spec_path) or "ok"
                except XPError as e:
                    recheck_note = f"re-check could not run: {e.code} {e.message}"[:200]
                if recheck_note != "ok" and not recheck_note.startswith("no reference"):
                    ok, why = False, "SILENTLY WRONG? " + recheck_note
            if keep and ok:
                import shutil
                dest = Path(keep) / f"{Path(src).name}__to__{dst}"
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(Path(tmp) / "out", dest, ignore=shutil.ignore_patterns(".work", "*.png"))
        except XPError as e:
            ok, why, sub = False, f"{e.code} {e.message}"[:200], "-"
        except Exception as e:  # a crash of the tool is a finding, not a skipped row
            ok, why, sub = False, f"INTERNAL {type(e).__name__}: {e}"[:200], "-"
    return {"source": str(Path(src).relative_to(ROOT)), "to": dst, "verified": ok, "seconds": round(time.time() - t0, 2),
            "substrate": sub, "reason": why, "recheck": recheck_note}


def main() -> int:
    from xpiler.examples_index import discover
    from xpiler.spec import dialect_of
    ap = argparse.ArgumentParser()
    ap.add_argument("--from", dest="src", action="append")
    ap.add_argument("--to", dest="dst", action="append")
    ap.add_argument("--op", action="append")
    ap.add_argument("--variant", action="append")
    ap.add_argument("--suite", action="append", help="kernel folder(s) (default: examples); e.g. "
                    "--suite examples --suite examples/wild")
    ap.add_argument("--source", action="append", help="only these kernel files (paths relative to the repository root)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--keep", help="copy every verified output folder here")
    ap.add_argument("--shard", help="K/N: only every N-th migration starting at the K-th (0-based), so a "
                    "corpus can be split over several time-limited calls or taken as a sample")
    ap.add_argument("--shard-order", choices=["hash", "stride"], default="hash",
                    help="hash (default): a shard samples every direction; stride: the order before "
                         "2026-12-03's fourth session (source-major), to re-run recorded commands")
    a = ap.parse_args()
    jobs = []
    exs = [ex for suite in (a.suite or ["examples"]) for ex in discover(ROOT / suite, a.src, a.op)]
    for ex in exs:
        if a.variant and ex.variant not in a.variant:
            continue
        if a.source and str(Path(ex.source).relative_to(ROOT)) not in {str(Path(x)) for x in a.source}:
            continue
        for dst in (a.dst or DIALECTS):
            if dst != ex.dialect:
                jobs.append((str(ex.source), str(ex.spec), dst, a.keep))
    if a.shard:
        k, n = (int(x) for x in a.shard.split("/"))
        if a.shard_order == "hash":
            # a stride over the source-major list keeps one target position of every source when
            # N is a multiple of 3 (three targets per source): a hash order samples every direction
            import hashlib
            jobs = sorted(jobs, key=lambda j: hashlib.sha256(
                f"{Path(j[0]).resolve().relative_to(ROOT)}>{j[2]}".encode()).digest())
        jobs = jobs[k::n]
        print(f"shard {k}/{n} ({a.shard_order} order): {len(jobs)} migrations", flush=True)
    rows = []
    t_all = time.time()
    from concurrent.futures import as_completed
    with ProcessPoolExecutor(max_workers=a.workers) as pool:
        # rows are printed as they finish, so a run cut short still shows every finished migration
        for fut in as_completed([pool.submit(one, job) for job in jobs]):
            r = fut.result()
            rows.append(r)
            print(f"{'PASS' if r['verified'] else 'FAIL'} {r['source']:45s} -> {r['to']:5s} {r['seconds']:6.1f}s "
                  f"{r['reason']}", flush=True)
    by = defaultdict(list)
    for r in rows:
        by[(dialect_of(Path(r["source"])), r["to"])].append(r)
    print("\n| direction | verified / total | median s | p90 s |\n|---|---|---|---|")
    for (s, d), rs in sorted(by.items()):
        times = sorted(x["seconds"] for x in rs)
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        print(f"| {s} → {d} | {sum(x['verified'] for x in rs)} / {len(rs)} | {statistics.median(times):.1f} | {p90:.1f} |")
    tot = sum(r["verified"] for r in rows)
    wrong = [r for r in rows if r["reason"].startswith("SILENTLY WRONG")]
    print(f"\nre-checked against the numpy reference by this script: {sum(r['recheck'] == 'ok' for r in rows)} "
          f"outputs agree, {len(wrong)} disagree (counted as not verified)")
    for r in wrong:
        print(f"  {r['source']} -> {r['to']}: {r['reason']}")
    times = sorted(r["seconds"] for r in rows) or [0]
    print(f"| all | {tot} / {len(rows)} | {statistics.median(times):.1f} | "
          f"{times[min(len(times) - 1, int(0.9 * len(times)))]:.1f} |\n\nwall time {time.time() - t_all:.0f} s")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0 if tot == len(rows) else 3


if __name__ == "__main__":
    sys.exit(main())
