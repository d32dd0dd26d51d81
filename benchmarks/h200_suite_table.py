#!/usr/bin/env python3
"""The suite-level H200 figure of issue 13/15, combined across tuning runs (stated as such).

    python benchmarks/h200_suite_table.py RUN.json... [--extra SOURCE=RATIO ...]

Each RUN.json is a ``benchmarks/tune_gpu.py`` result, given oldest first. Every ratio is
PyTorch/ours *tuned* as measured side by side in its own run (ratios of different runs are not
comparable in absolute time, so only ratios are combined). For each source the *latest* run that
timed it and the *best* of its runs are reported, with the geometric mean per family and over the
suite. ``--extra`` adds a ratio from a run whose JSON was lost (e.g. a cut call), in order.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

FAMILY = {"gemm": "gemm/bmm", "bmm": "gemm/bmm", "gemv": "gemv", "softmax": "rows", "layernorm": "rows",
          "rmsnorm": "rows", "relu": "elementwise", "gelu": "elementwise", "sigmoid": "elementwise",
          "sign": "elementwise", "add": "elementwise"}


def gm(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--extra", action="append", default=[], help="SOURCE=RATIO, after the runs")
    a = ap.parse_args()
    hist: dict[str, list[tuple[str, float]]] = {}
    for r in a.runs:
        for d in json.loads(Path(r).read_text())["details"]:
            if d.get("tuned_ms") and d.get("torch_ms") and d.get("tuned_ok", True):
                hist.setdefault(d["source"], []).append((Path(r).stem, d["torch_ms"] / d["tuned_ms"]))
    for e in a.extra:
        s, v = e.split("=")
        hist.setdefault(s, []).append(("extra", float(v)))
    print("| source | runs | latest | best |\n|---|---|---|---|")
    fam_l, fam_b = {}, {}
    for s in sorted(hist, key=lambda s: (FAMILY[s.split(".")[0].split("_")[0]], s)):
        h = hist[s]
        lat, best = h[-1][1], max(x for _, x in h)
        f = FAMILY[s.split(".")[0].split("_")[0]]
        fam_l.setdefault(f, []).append(lat)
        fam_b.setdefault(f, []).append(best)
        print(f"| {s} | {len(h)} | {lat:.2f} ({h[-1][0]}) | {best:.2f} |")
    lat_all = [x for v in fam_l.values() for x in v]
    best_all = [x for v in fam_b.values() for x in v]
    print(f"\n{len(lat_all)} sources; geomean PyTorch/ours tuned: latest {gm(lat_all):.3f}x, best {gm(best_all):.3f}x; "
          f"median latest {sorted(lat_all)[len(lat_all) // 2]:.2f}x; >= 1.0x: {sum(x >= 1 for x in lat_all)} latest, "
          f"{sum(x >= 1 for x in best_all)} best")
    for f in sorted(fam_l):
        print(f"  {f}: latest {gm(fam_l[f]):.3f}x / best {gm(fam_b[f]):.3f}x over {len(fam_l[f])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
