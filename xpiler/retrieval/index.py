"""Print docs/manuals.md: how manual sections are written, and an index of all of them.

    python -m xpiler.retrieval.index > docs/manuals.md

The index doubles as the user-facing list of what each target supports. A test checks that
the committed file is current.
"""
from __future__ import annotations

import sys
from collections import Counter

from .corpus import TARGETS, load_manuals

TARGET_TITLES = {
    "cuda": "CUDA (NVIDIA)",
    "hip": "HIP (AMD)",
    "bang": "BANG C (Cambricon MLU)",
    "c": "C with AVX-512 / VNNI / AMX intrinsics and OpenMP",
}

HEADER = """\
# Target manuals

`manuals/<target>/` holds the four targets' manuals, written in our own words: one short
markdown file per API, intrinsic, memory space or rule. They serve two purposes: they are
the user documentation of what xpiler supports on each target, and they are the corpus that
the migration's retrieval step searches (BM25, `xpiler.retrieval`) to put the relevant facts
in front of a proposer. The ids of the sections retrieved for each step go into the
provenance log.

## Writing a section

One file per section; the file name is the id with dots replaced by underscores (or a
readable slug). The file starts with front matter:

```
---
id: cuda.shfl.down_sync          # stable id: <target>.<area>.<name>; never reuse or rename
target: cuda                     # cuda | hip | bang | c  (must match the folder)
topic: warp-collectives          # a short group name
signature: "T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize);"
passes: [contraction, tensorize] # optional: passes for which it matters
---
Two to ten sentences: what it does, its exact semantics (types, rounding, saturation,
operand layout), its constraints (alignment, limits, who must call it), and a tiny example.
```

Rules:

- Facts must be checked against the vendor's public documentation; the words must be ours.
- Say what is *exact* (the lane layout of an MFMA operand, the signedness of a VNNI operand,
  the saturation point) and what is *unspecified* (the WMMA fragment layout).
- Name the APIs exactly as a kernel spells them, in the signature: retrieval weighs the
  signature and the id most, and the tokenizer splits `__bang_add`, `_mm512_dpbusd_epi32`
  and camelCase names into their words, so both the exact name and its parts match.
- Tag `passes` with the canonical pass names: loop_recovery, binding, split, fuse, reorder,
  expansion, contraction, cache, pipeline, tensorize, detensorize.
- After adding or changing sections, regenerate this file
  (`python -m xpiler.retrieval.index > docs/manuals.md`) and run
  `python benchmarks/bench_retrieval.py`; if a new section should answer a query, add the
  query to `benchmarks/retrieval_queries.toml`.

## Retrieval

`xpiler.retrieval.query_for(pass, target, apis)` builds the query (the pass name, a few
words describing the pass on that target, and each API present in the program twice);
`xpiler.retrieval.retrieve(query, target, k=3)` returns the top sections of that target.
`benchmarks/bench_retrieval.py` reports recall@1 and recall@3 per target on the query set.
"""


def render(sections=None) -> str:
    sections = load_manuals(strict=True) if sections is None else sections
    counts = Counter(s.target for s in sections)
    out = [HEADER, "## Index\n"]
    out.append("| target | sections |\n|---|---|")
    for t in TARGETS:
        out.append(f"| {t} | {counts.get(t, 0)} |")
    out.append(f"| all | {len(sections)} |\n")
    for t in TARGETS:
        group = [s for s in sections if s.target == t]
        if not group:
            continue
        out.append(f"### {TARGET_TITLES[t]}: {len(group)} sections\n")
        out.append("| id | topic | signature | passes |\n|---|---|---|---|")
        for s in group:
            sig = s.signature.replace("|", "\\|").replace("`", "'")
            if len(sig) > 110:
                sig = sig[:107] + "..."
            out.append(f"| `{s.id}` | {s.topic} | `{sig}` | {', '.join(s.passes)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
