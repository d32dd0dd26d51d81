#!/usr/bin/env python3
"""Speed-up against tuning time, read from tuned migrations' provenance logs (no new runs).

    python benchmarks/tune_curve.py DIR [--sources a,b,...] [--png OUT.png]

DIR holds tuned migration folders (``<source>__to__<target>/provenance.jsonl``, e.g. the
``tuned`` folder of ``benchmarks/tune_gpu.py --work W``). For each, every candidate the search
evaluated is an event with its time and latency; the untuned kernel's latency is the search
root's. The curve is the best speed-up over the untuned kernel found by each elapsed time of the
migration (the plan's own steps included), i.e. what a ``--budget`` that ended then would have
kept, before the confirm step re-times the winner. Latencies are whatever the log's
``latency_source`` says (``hw:…`` measured, or ``model:analytic``), printed with them.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def curve(log: Path) -> dict | None:
    evs = [json.loads(x) for x in log.read_text().splitlines()]
    t0 = evs[0]["time"]
    start = next((e for e in evs if e["type"] == "tune" and e.get("kind") == "start"), None)
    if start is None or not (start.get("root") or {}).get("latency_ms"):
        return None
    base = start["root"]["latency_ms"]
    pts, best = [(round(start["time"] - t0, 1), 1.0)], 1.0
    for e in evs:
        if e["type"] == "tune" and e.get("kind") == "evaluate" and e.get("verified") and e.get("latency_ms"):
            best = max(best, base / e["latency_ms"])
            pts.append((round(e["time"] - t0, 1), round(best, 3)))
    end = next((e for e in evs if e["type"] == "end"), evs[-1])
    return {"source": start.get("latency_source"), "untuned_ms": base, "points": pts,
            "total_s": round(end["time"] - t0, 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--sources", default="")
    ap.add_argument("--png", default="")
    a = ap.parse_args()
    want = {s.strip() for s in a.sources.split(",") if s.strip()}
    curves = {}
    for d in sorted(Path(a.dir).iterdir()):
        name = d.name.split("__to__")[0]
        if (want and name not in want) or not (d / "provenance.jsonl").is_file():
            continue
        c = curve(d / "provenance.jsonl")
        if c:
            curves[name] = c
    for name, c in curves.items():
        pts = ", ".join(f"{t:g} s: {s:.2f}x" for t, s in c["points"])
        print(f"- {name} ({c['source']}, untuned {c['untuned_ms']:.4g} ms, migration {c['total_s']:g} s): {pts}")
    if a.png and curves:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        for name, c in curves.items():
            ts, ss = zip(*c["points"])
            ax.step(ts, ss, where="post", label=name)
        ax.set_xlabel("seconds since the migration started")
        ax.set_ylabel("best speed-up over untuned")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.png, dpi=100)
        print(f"plot: {a.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
