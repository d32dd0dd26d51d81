#!/usr/bin/env python3
"""A/B of the repair's trace path (issue 14; docs/repair.md, "Localize"): every selected planted
mutant of benchmarks/repair_mutants.py is tested once, and each failing one is repaired twice,
with the per-store access trace (localization from the stores that wrote the wrong elements,
constraints drawn from the reference run) and without it (the static slice only), in alternating
order (even positions trace first), each arm from an empty build cache (``--warm``: shared; then
the arm run second finds the first one's builds of the same programs). Per arm: repaired and verified, median repair time, and how
often the first region the search checked was the planted bug's region (the planted kind's
sketch on the planted line).

    python benchmarks/repair_trace_ab.py [--shard K/N] [--limit N] [--kind KIND] [--json OUT]

The migrations are read from the planted-bug benchmark's work folder (``--bench-work``); the
mutants are those it plants (proven-equivalent ones discarded). Times are on the CPU emulator
and are not performance figures; the host's load is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import tempfile
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import repair_mutants as RM  # noqa: E402
from xpiler.frontend import parse_text  # noqa: E402
from xpiler.repair import repair_kernel  # noqa: E402
from xpiler.repair.localize import get_at  # noqa: E402
from xpiler.spec import DIALECT_EXT, load_spec  # noqa: E402
from xpiler.verify.tester import compare_kernels  # noqa: E402


def first_region(r, text: str, dialect: str):
    """(sketch, line) of the first region the search checked, or None."""
    rec = next((t for t in r.tried if t.get("checked")), None)
    if rec is None or "path" not in rec:
        return None
    try:
        node = get_at(parse_text(text, dialect, "m" + DIALECT_EXT[dialect]), rec["path"])
        line = node.loc.line if getattr(node, "loc", None) else None
    except Exception:
        line = None
    return rec["sketch"], line


def arm(m, spec, src, sspec, v, budget, work: Path, trace: bool, cold: bool) -> dict:
    if cold:   # a build cache of its own: the arm run second must not find the first arm's builds
        cache = tempfile.mkdtemp(prefix="cache-", dir=str(work))
        os.environ["XPILER_CACHE"] = cache
    try:
        return _arm(m, spec, src, sspec, v, budget, work, trace)
    finally:
        if cold:
            os.environ.pop("XPILER_CACHE", None)
            shutil.rmtree(cache, ignore_errors=True)


def _arm(m, spec, src, sspec, v, budget, work: Path, trace: bool) -> dict:
    r = repair_kernel(m["text"], spec.dialect, spec.entry, spec, (src, sspec), budget_s=budget, failing=v,
                      workdir=work / m["id"] / ("trace" if trace else "slice"), jobs=1, run_limit=RM.RUN_LIMIT,
                      trace=trace)
    fr = first_region(r, m["text"], spec.dialect)
    planted = re.search(r"at line (\d+)", m["what"])
    hit = fr is not None and planted is not None and fr[0] == RM.UNDO.get(m["kind"]) and fr[1] == int(planted.group(1))
    loc = r.localization or {}
    return {"repaired": r.repaired, "time_s": round(r.time_s, 2), "solver": r.solver, "sketch": r.sketch,
            "checks": r.checks, "first": fr, "first_is_planted": hit, "by": loc.get("by"), "why": loc.get("why"),
            "hinted": loc.get("hinted", 0), "trace_s": loc.get("time_s"), "trace_constraints": r.trace_constraints,
            "hint_pass_won": bool(r.tried and r.tried[-1].get("trace") and r.repaired)}


def summary(rows: list) -> str:
    f = [r for r in rows if r["failing"]]
    lines = ["| arm | failing | repaired and verified | median repair s | first region = planted | "
             "localized by trace | won in the hint pass |", "|---|---|---|---|---|---|---|"]
    for a in ("trace", "slice"):
        rs = [r[a] for r in f]
        ts = [x["time_s"] for x in rs if x["repaired"]]
        lines.append(f"| {a} | {len(rs)} | {sum(x['repaired'] for x in rs)} | "
                     f"{statistics.median(ts) if ts else 0:.1f} | {sum(x['first_is_planted'] for x in rs)} | "
                     f"{sum(x['by'] == 'trace' for x in rs)} | {sum(x['hint_pass_won'] for x in rs)} |")
    why = {}
    for r in f:
        w = r["trace"].get("why")
        if w:
            k = w.split(":")[0] if w.startswith("trace failed") else w
            why[k] = why.get(k, 0) + 1
    if why:
        lines.append("\ntrace arm fell back to the slice: " + ", ".join(f"{k}: {n}" for k, n in sorted(why.items())))
    both = [r for r in f if r["trace"]["repaired"] and r["slice"]["repaired"]]
    if both:
        d = [r["trace"]["time_s"] - r["slice"]["time_s"] for r in both]
        lines.append(f"repaired by both arms: {len(both)}; median of (trace - slice) time per mutant {statistics.median(d):+.2f} s")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-work", default="/tmp/xpiler-repair-bench", help="repair_mutants.py's work folder")
    ap.add_argument("--work", default="/tmp/xpiler-repair-trace-ab")
    ap.add_argument("--shard", default=None)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--kind", action="append")
    ap.add_argument("--ids", nargs="+")
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--json")
    ap.add_argument("--warm", action="store_true",
                    help="share the build cache between the arms (default: each arm starts from an empty cache)")
    a = ap.parse_args()
    outs = RM.migrated(Path(a.bench_work))
    ms, gone = RM.split_equivalent(RM.mutants(outs, 2))
    print(f"{len(ms)} planted ({len(gone)} discarded as proven equivalent)", flush=True)
    if a.ids:
        ms = [m for m in ms if m["id"] in a.ids]
    if a.kind:
        ms = [m for m in ms if m["kind"] in a.kind]
    if a.shard:
        k, n = map(int, a.shard.split("/"))
        ms = ms[k::n]
    if a.limit:
        ms = ms[:a.limit]
    print(f"load at start: {os.getloadavg()}", flush=True)
    work = Path(a.work)
    rows = []
    for i, m in enumerate(ms):
        spec = load_spec(m["spec"])
        src = Path(m["source"])
        sspec = load_spec(str(src) + ".toml")
        d = work / m["id"]
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"mutant{DIALECT_EXT[spec.dialect]}"
        path.write_text(m["text"])
        v = compare_kernels(path, spec, against=(src, sspec), use_reference=bool(spec.reference), seeds=(0, 1, 2),
                            jobs=1, timeout=RM.RUN_LIMIT, stop_on_failure=True)
        row = {k: m[k] for k in ("id", "kind", "dialect", "what")}
        row["failing"] = not v.verified
        if row["failing"]:
            order = (True, False) if i % 2 == 0 else (False, True)
            for tr in order:
                row["trace" if tr else "slice"] = arm(m, spec, src, sspec, v, a.budget, work, tr, not a.warm)
            t, s = row["trace"], row["slice"]
            print(f"{m['id']:50s} trace: {'R' if t['repaired'] else '-'} {t['time_s']:5.1f}s "
                  f"{'HIT' if t['first_is_planted'] else '   '} by={t['by']} c={t['trace_constraints']} | "
                  f"slice: {'R' if s['repaired'] else '-'} {s['time_s']:5.1f}s {'HIT' if s['first_is_planted'] else '   '}"
                  f"{'  (' + t['why'] + ')' if t.get('why') else ''}", flush=True)
        else:
            print(f"{m['id']:50s} still passes (not a failing candidate)", flush=True)
        rows.append(row)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
    print(f"load at end: {os.getloadavg()}")
    print(summary(rows))
    return 0


if __name__ == "__main__":
    _t0 = time.time()
    rc = main()
    print(f"wall {time.time() - _t0:.0f} s")
    sys.exit(rc)
