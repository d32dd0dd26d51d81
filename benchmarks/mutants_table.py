#!/usr/bin/env python3
"""Markdown report of a planted-bug corpus run (the --json output of benchmarks/mutants.py).

    python3 benchmarks/mutants.py --json /tmp/mutants.json
    python3 benchmarks/mutants_table.py /tmp/mutants.json \
        --known-misses tests/mutants/known_misses/simt_schedule.toml > docs/mutants.md

Prints: counts per dialect and per (dialect, kind), counts per diagnostic, one row per mutant
(id, dialect, kind, source, the XP code that caught it), and -- with --known-misses -- a section
that re-runs the listed real bugs the tester is known to miss and reports whether they are still
missed (a known miss that is now caught is flagged so it can move into the corpus).
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutants  # noqa: E402  (benchmarks/mutants.py: corpus loading and running)

ORDER = ["cuda", "hip", "bang", "c"]


def code_of(how: str) -> str:
    """The diagnostic ID that caught a mutant ('XP2101 output ...' -> 'XP2101'); '-' when missed."""
    head = how.split(" ", 1)[0] if how else ""
    return head if head.startswith("XP") else "-"


def esc(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def dialect_key(d: str):
    return (ORDER.index(d) if d in ORDER else len(ORDER), d)


def table(rows: list[dict], sources: dict[str, str]) -> list[str]:
    out = []
    by_d = defaultdict(lambda: [0, 0])
    by_dk = defaultdict(lambda: [0, 0])
    codes = Counter()
    for r in rows:
        by_d[r["dialect"]][0] += bool(r["caught"])
        by_d[r["dialect"]][1] += 1
        by_dk[(r["dialect"], r["kind"])][0] += bool(r["caught"])
        by_dk[(r["dialect"], r["kind"])][1] += 1
        if r["caught"]:
            codes[code_of(r["how"])] += 1
    caught = sum(bool(r["caught"]) for r in rows)

    out += ["## Summary", "", "| dialect | caught / planted |", "|---|---|"]
    for d in sorted(by_d, key=dialect_key):
        out.append(f"| {d} | {by_d[d][0]} / {by_d[d][1]} |")
    out += [f"| **all** | **{caught} / {len(rows)}** |", ""]

    out += ["## Per dialect and kind", "", "| dialect | kind | caught / planted |", "|---|---|---|"]
    for (d, k) in sorted(by_dk, key=lambda dk: (dialect_key(dk[0]), dk[1])):
        c, n = by_dk[(d, k)]
        out.append(f"| {d} | {esc(k)} | {c} / {n} |")
    out.append("")

    out += ["## How they are caught", "", "| diagnostic | mutants |", "|---|---|"]
    for code, n in sorted(codes.items()):
        out.append(f"| {code} | {n} |")
    out.append("")

    out += ["## All mutants", "",
            "| id | dialect | kind | source | caught by | first failure |", "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (dialect_key(r["dialect"]), r["id"])):
        code = code_of(r["how"]) if r["caught"] else "**MISSED**"
        msg = r["how"].split(" ", 1)[1] if r["caught"] and " " in r["how"] else r["how"]
        out.append(f"| `{r['id']}` | {r['dialect']} | {esc(r['kind'])} | `{sources.get(r['id'], '?')}` | "
                   f"{code} | {esc(msg[:90])} |")
    out.append("")
    return out


def known_misses(paths: list[str]) -> list[str]:
    out = ["## Known misses (real bugs the tester does not catch)", "",
           "These edits are real bugs on a GPU but pass the tester; they are kept out of the corpus "
           "(tests/mutants/*.toml) and listed in `tests/mutants/known_misses/`; the status column comes "
           "from re-running them when this page was generated.", "",
           "Common cause: the SIMT emulator's schedule is deterministic. Inside a block it runs the "
           "threads in index order, each until it blocks, and a warp released from a collective "
           "(shuffle, WMMA load/store/mma, MFMA) goes to the back of the run queue. So when every warp "
           "reaches the same collective, that collective behaves like a block-wide barrier: a missing "
           "__syncthreads() next to a collective, or a shared-memory buffer overwritten right after "
           "one, never shows. The same bugs without a collective nearby (tiled gemm/bmm, softmax "
           "tree) are caught. Remedies: run each seed under more than one schedule (e.g. resume a "
           "released warp at once, reverse or seeded-random warp order) and/or track, per barrier "
           "interval, which thread last wrote and read each shared-memory word (a racecheck).", "",
           "| id | dialect | kind | status now | why it is missed |", "|---|---|---|---|---|"]
    for p in paths:
        for m in tomllib.loads(Path(p).read_text()).get("mutant", []):
            r = mutants.run_mutant(m)
            status = f"caught ({code_of(r['how'])}): move it into the corpus" if r["caught"] else "missed"
            out.append(f"| `{m['id']}` | {r['dialect']} | {esc(m['kind'])} | {status} | {esc(m.get('why', ''))} |")
    out.append("")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_json", help="the file written by `benchmarks/mutants.py --json`")
    ap.add_argument("--known-misses", action="append", default=[], metavar="TOML",
                    help="a TOML file of [[mutant]] entries the tester is known to miss (re-run here)")
    ap.add_argument("--title", default="Planted-bug corpus")
    a = ap.parse_args()
    rows = json.loads(Path(a.run_json).read_text())
    corpus = mutants.load_corpus()
    sources = {m["id"]: m["source"] for m in corpus}
    lines = [f"# {a.title}", "",
             "Generated by `python3 benchmarks/mutants_table.py RUN.json` from the `--json` output of "
             "`python3 benchmarks/mutants.py`. Do not edit by hand.", "",
             "Each mutant is one textual edit (`find` -> `replace`) to an example kernel that makes it wrong "
             "(tests/mutants/*.toml). The tester must fail every mutant and pass every original; "
             "\"caught by\" is the diagnostic of the first failure (see docs/diagnostics.md).", ""]
    missing = sorted(set(sources) - {r["id"] for r in rows})
    if missing:
        lines += [f"Not in this run (filtered out by --dialect?): {len(missing)} corpus mutants.", ""]
    lines += table(rows, sources)
    if a.known_misses:
        lines += known_misses(a.known_misses)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
