"""Loop recovery over the example suite: every cuda / hip / bang kernel is migrated to C with
``detensorize`` (when that pass exists) followed by ``loop_recovery``, and the C result is
verified against the source kernel by the migration driver (differential test on every spec
instance, three seeds, plus the spec's Python reference).

    python benchmarks/bench_loop_recovery.py [--dialect cuda|hip|bang] [--only NAME ...] [--jobs N]

Prints one line per kernel (verified, or the reason it was not) and verified/total per dialect.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXT = {"cuda": ".cu", "hip": ".hip", "bang": ".mlu"}


def kernels(dialects, only):
    out = []
    for d in dialects:
        for p in sorted((ROOT / "examples").glob(f"*/*{EXT[d]}")):
            if only and p.stem not in only and p.name not in only:
                continue
            if (p.parent / (p.name + ".toml")).exists():
                out.append((d, p))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialect", action="append", choices=sorted(EXT))
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-detensorize", action="store_true")
    a = ap.parse_args(argv)
    from xpiler.migrate.driver import migrate
    from xpiler.passes.base import available

    pipeline = []
    if "detensorize" in available() and not a.no_detensorize:
        pipeline.append(("detensorize", {"target": "c"}))
    pipeline.append(("loop_recovery", {}))
    print(f"pipeline: {' -> '.join(p for p, _ in pipeline)}")
    totals = {}
    t_all = time.time()
    for d, src in kernels(a.dialect or ["cuda", "hip", "bang"], set(a.only)):
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="xp-lr-") as tmp:
            try:
                r = migrate(src, "c", outdir=tmp, pipeline=pipeline, jobs=a.jobs)
                ok = r.verified
                why = "" if ok else "; ".join(f"{e.code} {getattr(e, 'why', '') or e}" for e in r.diagnostics
                                             if e.code != "XP4004") or "not verified"
            except Exception as e:  # an internal error is a failure of this kernel, not of the run
                ok, why = False, f"{type(e).__name__}: {e}"
        v, n = totals.get(d, (0, 0))
        totals[d] = (v + ok, n + 1)
        why = why.replace("\n", " ")
        print(f"{'verified' if ok else 'FAILED  '} {d:5s} {src.relative_to(ROOT)} ({time.time() - t0:.1f}s)"
              + ("" if ok else f": {why[:300]}"), flush=True)
    print()
    for d, (v, n) in totals.items():
        print(f"{d:5s}: {v}/{n} verified through C")
    print(f"total time {time.time() - t_all:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
