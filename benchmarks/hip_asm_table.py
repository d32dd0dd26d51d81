#!/usr/bin/env python3
"""Compile figures of migrated hip outputs for gfx90a (CDNA2, wave64) and gfx1100 (RDNA3, wave32).

    python benchmarks/hip_asm_table.py DIR [--op gemm --op conv1d ...] [--json OUT]

DIR holds migration output folders (``benchmarks/migrate_all.py --keep DIR``). Each ``*.hip``
output is compiled to AMDGPU assembly with clang-15 (``xpiler.asm.assemble``, the same code as
``xpiler migrate --emit-asm``), and the table gives per architecture: whether it compiles, the
matrix instructions in the file (MFMA on gfx90a, WMMA on gfx1100), LDS operations, and per kernel
VGPR / AGPR / LDS bytes / scratch bytes / occupancy (waves per SIMD, clang's own figure). These are
compile-time facts, not timings: no AMD card is available here.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def figures(hip: Path) -> dict:
    from xpiler.asm import assemble
    row = {"output": hip.parent.name}
    for a in assemble(hip, "hip"):
        if not a.available:
            row[a.arch] = {"compiles": False, "why": a.why}
            continue
        f = a.figures
        ks = f.get("kernels") or []
        k = max(ks, key=lambda v: v.get("vgpr") or 0) if ks else {}
        row[a.arch] = {"compiles": True, "matrix": f.get("mfma", 0), "dot": f.get("dot", 0),
                       "lds_ops": f.get("lds_ops", 0), "kernels": len(ks), "vgpr": k.get("vgpr"),
                       "agpr": k.get("agpr", 0), "lds_bytes": k.get("lds_bytes"),
                       "scratch_bytes": k.get("scratch_bytes"), "occupancy": k.get("occupancy")}
    return row


def cell(d: dict) -> str:
    if not d.get("compiles"):
        return "does not compile"
    return (f"{d['matrix']} | {d['vgpr']}/{d['agpr'] or 0} | {d['lds_bytes']} | {d['scratch_bytes']} | "
            f"{d['occupancy'] if d['occupancy'] is not None else '-'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--op", action="append", help="only outputs of these operators and their variants")
    ap.add_argument("--json")
    a = ap.parse_args()
    outs = sorted(Path(a.dir).glob("*__to__hip/*.hip"))
    if a.op:
        def base(o):     # gemm_wmma.cu__to__hip -> gemm_wmma: an --op also takes its variants (gemm_*)
            return o.parent.name.split("__to__")[0].split(".")[0]
        outs = [o for o in outs if any(base(o) == op or base(o).startswith(op + "_") for op in a.op)]
    rows = []
    print("| output | gfx90a: MFMA | VGPR/AGPR | LDS B | scratch B | occupancy "
          "| gfx1100: WMMA | VGPR/AGPR | LDS B | scratch B | occupancy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for o in outs:
        r = figures(o)
        rows.append(r)
        print(f"| {r['output']} | {cell(r.get('gfx90a', {}))} | {cell(r.get('gfx1100', {}))} |", flush=True)
    for arch in ("gfx90a", "gfx1100"):
        ok = [r[arch] for r in rows if r.get(arch, {}).get("compiles")]
        print(f"{arch}: {len(ok)} / {len(rows)} compile; {sum(1 for d in ok if d['matrix'])} use the matrix "
              f"unit; {sum(1 for d in ok if d['scratch_bytes'])} spill to scratch")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
