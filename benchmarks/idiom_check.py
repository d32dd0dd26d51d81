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
    "c": {"onchip": r"(?!x)x", "matrix": r"_mm512_dp(?:bu|ws)sds?_epi32|_mm512_dpbf16_ps|_tile_dp\w+",
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


#: operator families (example folder names) of the issue's idiom requirement
MATRIX_OPS = {"gemm", "bmm", "conv1d", "conv2d_nchw", "conv2d_nhwc", "depthwise_conv2d"}
VECTOR_OPS = {"add", "relu", "gelu", "sigmoid", "sign", "softmax", "layernorm", "rmsnorm",
              "avgpool2d", "maxpool2d", "minpool2d", "sumpool2d"}


def op_of(path: str) -> str | None:
    """The operator of a migration output folder ``<op>[_variant].<ext>__to__<dialect>/``."""
    for part in Path(path).parts[::-1]:
        if "__to__" in part:
            return part.split("__to__")[0].split(".")[0]
    return None


def requirement(row: dict) -> tuple[str, bool] | None:
    """(what is required, met?) for the issue's idiom rule, or None when no rule applies:
    gemm/bmm/conv use on-chip memory and the matrix unit (cuda: shared memory; WMMA only for half
    inputs, which this text check cannot see), and elementwise/norm/pool ops use vector forms on
    bang and c."""
    op = op_of(row["file"])
    base = next((m for m in MATRIX_OPS | VECTOR_OPS if op == m or (op or "").startswith(m + "_")), None)
    d = row["dialect"]
    if base in MATRIX_OPS:
        if d == "cuda":
            return "shared memory", row["onchip"] > 0
        if d == "hip":
            return "LDS + MFMA", row["onchip"] > 0 and row["matrix"] > 0
        if d == "bang":
            return "NRAM/WRAM + __bang_matmul/conv", row["onchip"] > 0 and row["matrix"] > 0
        return "AVX-512 (VNNI for int8)", row["vector"] > 0 or row["matrix"] > 0
    if base in VECTOR_OPS and d in ("bang", "c"):
        return "vector forms", row["vector"] > 0
    return None


def requirement_table(rows) -> str:
    from collections import defaultdict
    met, total = defaultdict(int), defaultdict(int)
    for r in rows:
        req = requirement(r)
        if req is None:
            continue
        fam = "gemm/bmm/conv" if op_of(r["file"]) and any(
            op_of(r["file"]).startswith(m) for m in MATRIX_OPS) else "elementwise/norm/pool"
        total[(fam, r["dialect"])] += 1
        met[(fam, r["dialect"])] += req[1]
    lines = ["| family | target | rule | meets it / outputs |", "|---|---|---|---|"]
    rules = {("gemm/bmm/conv", "cuda"): "shared memory", ("gemm/bmm/conv", "hip"): "LDS + MFMA",
             ("gemm/bmm/conv", "bang"): "NRAM/WRAM + __bang_matmul/conv",
             ("gemm/bmm/conv", "c"): "AVX-512", ("elementwise/norm/pool", "bang"): "__bang vector ops",
             ("elementwise/norm/pool", "c"): "AVX-512"}
    for k in sorted(total):
        lines.append(f"| {k[0]} | {k[1]} | {rules.get(k, '')} | {met[k]} / {total[k]} |")
    lines.append(f"| all | | | {sum(met.values())} / {sum(total.values())} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = [check_file(p) for p in collect(a.paths)]
    for r in rows:
        req = requirement(r)
        r["required"], r["meets_requirement"] = (req if req else (None, None))
    print(table(rows))
    print()
    print(requirement_table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
