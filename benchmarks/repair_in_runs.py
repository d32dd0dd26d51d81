#!/usr/bin/env python3
"""Issue 14's "with and without repair" table over a folder of migration runs (build_pairs.py).

    python benchmarks/repair_in_runs.py RUNS [--suite wild|examples|all] [--json OUT]

Per direction: migrations, verified (the default run, with repair), migrations that sent a
candidate to repair, and repairs accepted. A migration in which no repair was accepted took the
path it takes with ``--no-repair`` (a candidate repair could not fix is dropped either way), so
its verdict is the same without repair; the migrations with an accepted repair are listed, and
their verdict without repair must come from a ``--no-repair`` run (``--rerun`` does that).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXT = {".cu": "cuda", ".hip": "hip", ".mlu": "bang", ".c": "c", ".cpp": "c"}


def runs(folder: Path, suite: str):
    for d in sorted(folder.iterdir()):
        log = d / "provenance.jsonl"
        if not log.is_file() or "__to__" not in d.name:
            continue
        wild = d.name.startswith("examples__wild__")
        if (suite == "wild" and not wild) or (suite == "examples" and wild):
            continue
        src, dst = d.name.rsplit("__to__", 1)
        yield d, src.replace("__", "/"), EXT.get(Path(src).suffix, "?"), dst, log


def scan(log: Path) -> dict:
    evs = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    end = next((e for e in reversed(evs) if e.get("type") == "end"), None)
    rep = [e for e in evs if e.get("type") == "repair"]
    return {"closed": end is not None, "verified": bool(end and end.get("verified")),
            "repairs": len(rep), "accepted": sum(bool(e.get("accepted")) for e in rep)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--suite", choices=["wild", "examples", "all"], default="all")
    ap.add_argument("--json")
    ap.add_argument("--rerun", action="store_true", help="re-run each migration with an accepted repair with --no-repair")
    a = ap.parse_args()
    tab = defaultdict(lambda: defaultdict(int))
    accepted = []
    for d, src, sd, dst, log in runs(Path(a.runs), a.suite):
        s = scan(log)
        t = tab[f"{sd} → {dst}"]
        t["migrations"] += 1
        t["closed"] += s["closed"]
        t["verified"] += s["verified"]
        t["sent to repair"] += s["repairs"] > 0
        t["repair accepted"] += s["accepted"] > 0
        if s["accepted"]:
            accepted.append((src, dst, s["verified"]))
    without = {}
    for src, dst, ver in accepted:
        if not a.rerun:
            continue
        with tempfile.TemporaryDirectory() as td:
            p = subprocess.run([sys.executable, "-m", "xpiler", "migrate", str(ROOT / src), "--to", dst, "-o",
                                f"{td}/o", "--no-repair", "--no-perf"], capture_output=True, text=True, cwd=ROOT)
            without[(src, dst)] = p.returncode == 0 and "VERIFIED" in p.stdout
    print("| direction | migrations | verified with repair | sent a candidate to repair | repair accepted | verified without repair |")
    print("|---|---|---|---|---|---|")
    tot = defaultdict(int)
    for k in sorted(tab):
        t = tab[k]
        wo = t["verified"] - sum(1 for (s, d, v) in accepted if f"{EXT.get(Path(s).suffix)} → {d}" == k and v
                                 and not without.get((s, d), False))
        unknown = sum(1 for (s, d, v) in accepted if f"{EXT.get(Path(s).suffix)} → {d}" == k and (s, d) not in without)
        for f in ("migrations", "closed", "verified", "sent to repair", "repair accepted"):
            tot[f] += t[f]
        tot["without"] += wo
        print(f"| {k} | {t['migrations']} | {t['verified']} | {t['sent to repair']} | {t['repair accepted']} | "
              f"{wo}{' (' + str(unknown) + ' not re-run)' if unknown else ''} |")
    print(f"| all | {tot['migrations']} | {tot['verified']} | {tot['sent to repair']} | {tot['repair accepted']} | {tot['without']} |")
    print(f"\nclosed logs: {tot['closed']} of {tot['migrations']}")
    for src, dst, ver in accepted:
        print(f"accepted repair: {src} -> {dst} (verified {ver}; without repair: "
              f"{without.get((src, dst), 'not re-run')})")
    if a.json:
        Path(a.json).write_text(json.dumps({"table": {k: dict(v) for k, v in tab.items()},
                                            "accepted": [{"source": s, "to": d, "verified": v,
                                                          "without_repair": without.get((s, d))}
                                                         for s, d, v in accepted]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
