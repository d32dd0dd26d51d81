#!/usr/bin/env python3
"""Run the planted-bug corpus (tests/mutants/*.toml): every mutant must fail its test and
every original must pass. Prints one line per mutant and a count per dialect.

    python benchmarks/mutants.py [--dialect D] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xpiler.api import test  # noqa: E402
from xpiler.diagnostics import XPError  # noqa: E402
from xpiler.spec import default_spec_path, dialect_of  # noqa: E402

CORPUS_DIR = ROOT / "tests" / "mutants"


def load_corpus() -> list[dict]:
    """Every ``[[mutant]]`` of every ``tests/mutants/*.toml`` file."""
    out = []
    for f in sorted(CORPUS_DIR.glob("*.toml")):
        out += tomllib.loads(f.read_text()).get("mutant", [])
    return out


def apply(text: str, m: dict) -> str:
    find, occ = m["find"], int(m.get("occurrence", 0))
    n = text.count(find)
    if occ == 0 and n != 1:
        raise ValueError(f"{m['id']}: 'find' occurs {n} times in {m['source']} (give occurrence)")
    if occ > n:
        raise ValueError(f"{m['id']}: occurrence {occ} > {n}")
    idx = -1
    for _ in range(max(occ, 1)):
        idx = text.index(find, idx + 1)
    return text[:idx] + m["replace"] + text[idx + len(find):]


def run_mutant(m: dict, seeds=(0, 1, 2)) -> dict:
    src = ROOT / m["source"]
    with tempfile.TemporaryDirectory(prefix="xpiler-mutant-") as tmp:
        work = Path(tmp) / src.parent.name
        shutil.copytree(src.parent, work)
        target = work / src.name
        target.write_text(apply(src.read_text(), m))
        try:
            v = test(target, default_spec_path(target), seeds=seeds, timeout=60)
            caught = not v.verified
            why = v.failures[0].code + " " + v.failures[0].message[:120] if v.failures else "passed"
        except XPError as e:
            caught, why = True, f"{e.code} {e.message[:120]}"
    return {"id": m["id"], "dialect": dialect_of(src), "kind": m["kind"], "caught": caught, "how": why}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dialect", action="append")
    ap.add_argument("--json")
    a = ap.parse_args()
    corpus = [m for m in load_corpus() if not a.dialect or dialect_of(ROOT / m["source"]) in a.dialect]
    originals = sorted({m["source"] for m in corpus})
    orig_ok = 0
    for s in originals:
        v = test(ROOT / s, default_spec_path(ROOT / s), timeout=60)
        orig_ok += v.verified
        print(f"original {'PASS' if v.verified else 'FAIL'} {s} on {v.substrate}")
    rows = []
    for m in corpus:
        r = run_mutant(m)
        rows.append(r)
        print(f"mutant {'caught' if r['caught'] else 'MISSED'} {r['dialect']:5s} {r['id']:40s} [{r['kind']}] {r['how']}")
    by = defaultdict(lambda: [0, 0])
    for r in rows:
        by[r["dialect"]][0] += r["caught"]
        by[r["dialect"]][1] += 1
    print("\n| dialect | mutants caught / planted |\n|---|---|")
    for d, (c, n) in sorted(by.items()):
        print(f"| {d} | {c} / {n} |")
    caught = sum(r["caught"] for r in rows)
    print(f"| all | {caught} / {len(rows)} |\noriginals passing: {orig_ok} / {len(originals)}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0 if caught == len(rows) and orig_ok == len(originals) else 3


if __name__ == "__main__":
    sys.exit(main())
