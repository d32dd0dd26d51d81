"""Idiom check: how much of the target's on-chip memory and vector/matrix units a (migrated)
kernel file uses.  One row per file, counts of uses per idiom class, and a verdict column
saying whether the file uses its dialect's fast path at all.

    python benchmarks/idiom_check.py out/*.mlu examples/gemm/gemm_wmma.cu
    python benchmarks/idiom_check.py --json report.json DIR ...

Counts are of source occurrences (comments and string literals are blanked first), so they
measure *use in the code*, not executed instructions.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

DIALECT_OF = {".cu": "cuda", ".hip": "hip", ".mlu": "bang", ".c": "c"}

#: dialect -> {column: regex}
IDIOMS = {
    "cuda": {"onchip": r"__shared__", "barrier": r"__syncthreads\s*\(",
             "matrix": r"\bwmma::(?:mma_sync|load_matrix_sync|store_matrix_sync)\b|\bmma_sync\s*\(",
             "vector": r"\bfloat4\b|\bhalf2\b|__shfl\w*_sync"},
    "hip": {"onchip": r"__shared__", "barrier": r"__syncthreads\s*\(",
            "matrix": r"__builtin_amdgcn_mfma_\w+", "vector": r"\bfloat4\b|\b__shfl\w*\s*\(|ext_vector_type"},
    "bang": {"onchip": r"__nram__|__wram__|__mlu_shared__", "barrier": r"__sync\w*\s*\(",
             "copy": r"__memcpy(?:_async)?\s*\(",
             "matrix": r"__bang_(?:matmul|mlp|conv)\s*\(",
             "vector": r"__bang_(?!matmul|mlp|conv)\w+\s*\("},
    "c": {"onchip": r"(?!x)x", "matrix": r"_mm512_dp(?:bu|ws)sds?_epi32|_tile_dp\w+",
          "vector": r"_mm512_\w+\s*\(", "omp": r"#\s*pragma\s+omp"},
}
FAST = {"cuda": ("onchip", "matrix", "vector"), "hip": ("onchip", "matrix", "vector"),
        "bang": ("matrix", "vector"), "c": ("matrix", "vector")}


def blank_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def check_file(path: Path) -> dict:
    dialect = DIALECT_OF.get(path.suffix)
    if dialect is None:
        raise ValueError(f"{path}: unknown kernel extension")
    code = blank_comments(path.read_text())
    row = {"file": str(path), "dialect": dialect}
    for col, rx in IDIOMS[dialect].items():
        row[col] = len(re.findall(rx, code, flags=re.M))
    row["idiomatic"] = any(row.get(c, 0) for c in FAST[dialect])
    row["matrix_or_vector_names"] = sorted(set(re.findall(
        r"__bang_\w+|_mm512_\w+|wmma::\w+|__builtin_amdgcn_mfma_\w+", code)))
    return row


def collect(paths) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(q for q in p.rglob("*") if q.suffix in DIALECT_OF and ".work" not in q.parts)
        else:
            out.append(p)
    return out


def table(rows) -> str:
    cols = ["onchip", "copy", "barrier", "matrix", "vector", "omp"]
    head = f"{'file':48s} {'dialect':7s} " + " ".join(f"{c:>7s}" for c in cols) + "  idiomatic"
    lines = [head, "-" * len(head)]
    for r in rows:
        name = r["file"] if len(r["file"]) <= 48 else "..." + r["file"][-45:]
        lines.append(f"{name:48s} {r['dialect']:7s} " + " ".join(
            f"{r[c]:>7d}" if c in r else f"{'-':>7s}" for c in cols) + f"  {'yes' if r['idiomatic'] else 'no'}")
    n = sum(r["idiomatic"] for r in rows)
    lines.append(f"{n}/{len(rows)} files use their target's on-chip memory or matrix/vector units")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = [check_file(p) for p in collect(a.paths)]
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
