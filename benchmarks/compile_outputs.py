#!/usr/bin/env python3
"""Compile every migrated output with the real compiler of its dialect.

    python benchmarks/compile_outputs.py DIR [--json OUT]

DIR: output folders from ``benchmarks/migrate_all.py --keep DIR``. cuda: nvcc -arch=sm_90;
hip: clang-15 for gfx90a and gfx1100; c: gcc -O2 -march=native; bang: the project's BANG header
with strict warnings (no public BANG compiler exists). Prints counts per dialect/architecture.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    from xpiler.platforms import get_platform
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--json")
    a = ap.parse_args()
    arches = {"cuda": ["sm_90"], "hip": ["gfx90a", "gfx1100"], "c": [None], "bang": [None]}
    ext = {".cu": "cuda", ".hip": "hip", ".c": "c", ".mlu": "bang"}
    counts = defaultdict(lambda: [0, 0])
    rows = []
    for f in sorted(Path(a.dir).glob("*/*")):
        d = ext.get(f.suffix)
        if d is None or ".unverified" in f.name:
            continue
        plat = get_platform(d)
        for arch in arches[d]:
            text = f.read_text()
            if d == "hip" and arch == "gfx1100" and "__builtin_amdgcn_mfma" in text and "XP_USE_MFMA" not in text:
                continue  # MFMA is a CDNA instruction: gfx1100 (RDNA3) has none (our outputs guard it: XP_USE_MFMA)
            r = plat.compile_check(f, arch=arch) if arch else plat.compile_check(f)
            key = f"{d} {arch or ''}".strip()
            counts[key][0] += bool(r["ok"])
            counts[key][1] += 1
            rows.append({"file": str(f), "dialect": d, "arch": arch, "ok": bool(r["ok"]),
                         "resources": r.get("resources"), "log": "" if r["ok"] else r["log"][-800:]})
            if not r["ok"]:
                print(f"FAIL {key}: {f}\n{r['log'][-400:]}")
    print("| compiler | compiles / outputs |\n|---|---|")
    for k, (ok, n) in sorted(counts.items()):
        print(f"| {k} | {ok} / {n} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
