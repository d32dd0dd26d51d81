#!/usr/bin/env python3
"""Tree against warp-shuffle block reductions, same kernel, same block: outputs for gpu_perf.py.

    python benchmarks/reduce_ab.py DIR [--to cuda|hip] [--blocks 128,256,512] [--tasks 1024] [--jobs N]
    python benchmarks/gpu_perf.py DIR --to cuda

Migrates the row kernels of examples/ with a fixed pipeline whose binding step is
``rows="block"`` (the c sources) or ``rows="core"`` (the BANG sources, loop recovery given
``--tasks`` tasks as the tuner's task-count route does), once with ``reduce="tree"`` and once
with ``reduce="shuffle"`` per block size, and the c sources also with ``rows="warp"`` (blocks up to
256). Each verified output lands in ``DIR/<op>_<tree|shuffle|warp><block>_<source>__to__<target>/`` where ``benchmarks/gpu_perf.py`` finds it
(the op prefix picks its perf shape); an output that does not verify is reported and left out.
The migrations run on the emulator (no GPU needed); gpu_perf.py times them on the GPU.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (source under examples/, the bound loop, the binding form)
SOURCES = (
    ("softmax/softmax.c", "r", "block"),
    ("layernorm/layernorm.c", "r", "block"),
    ("rmsnorm/rmsnorm.c", "r", "block"),
    ("gemv/gemv.c", "i", "block"),
    ("softmax/softmax.mlu", "r", "core"),
    ("layernorm/layernorm.mlu", "task", "core"),
    ("gemv/gemv.mlu", "task", "core"),
)


def pipeline(src: str, loop: str, form: str, target: str, block: int, reduce: str, tasks: int) -> list:
    params = {"target": target, "loop": loop, "rows": form, "block": block, "grid_cap": None}
    if reduce != "tree":
        params["reduce"] = reduce
    bind = ("binding", params)
    if form in ("block", "warp"):
        return [bind]
    from xpiler.spec import load_spec
    launch = dict(load_spec(ROOT / "examples" / (src + ".toml")).launch)
    launch["dim"] = [tasks, 1, 1]
    return [("detensorize", {"target": target}), ("loop_recovery", {"launch": launch}), bind]


def one(job) -> str:
    """Migrate one (source, block, reduce) and copy a verified output into its folder."""
    from xpiler.migration.driver import migrate
    out, src, loop, form, target, block, reduce, tasks = job
    op, name = src.split("/")
    dest = out / f"{op}_{'warp' if form == 'warp' else reduce}{block}_{name}__to__{target}"
    r = migrate(ROOT / "examples" / src, target, outdir=out / ".work" / dest.name, jobs=1, perf=False, repair=False,
                pipeline=pipeline(src, loop, form, target, block, reduce, tasks))
    if not r.verified or r.output_path is None:
        return f"NOT VERIFIED {dest.name}: " + "; ".join(str(d).splitlines()[0] for d in r.diagnostics)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(r.output_path, dest / r.output_path.name)
    toml = r.output_path.with_name(r.output_path.name + ".toml")
    if toml.exists():
        shutil.copy(toml, dest / toml.name)
    return f"ok {dest.name} ({r.output_path.name})"


def main() -> int:
    from concurrent.futures import ProcessPoolExecutor
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--to", choices=["cuda", "hip"], default="cuda")
    ap.add_argument("--blocks", default="128,256,512")
    ap.add_argument("--tasks", type=int, default=1024, help="task count of the BANG sources' loop recovery")
    ap.add_argument("--sources", default=None, help="only these (comma-separated, e.g. softmax/softmax.c)")
    ap.add_argument("--jobs", type=int, default=1, help="migrations at a time (processes)")
    a = ap.parse_args()
    out = Path(a.dir).resolve()
    only = set(a.sources.split(",")) if a.sources else None
    jobs = [(out, src, loop, form, a.to, block, reduce, a.tasks)
            for src, loop, form in SOURCES if not only or src in only
            for block in (int(b) for b in a.blocks.split(","))
            if not (form == "core" and block > 256)      # rows="core" offers 128 and 256 (passes/block_core.py)
            for reduce in ("tree", "shuffle")]
    # rows="warp" (one warp per row; its reductions are always shuffles) for the c sources
    jobs += [(out, src, loop, "warp", a.to, block, "shuffle", a.tasks)
             for src, loop, form in SOURCES if (not only or src in only) and form == "block"
             for block in (int(b) for b in a.blocks.split(",")) if block <= 256]
    with ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        lines = list(ex.map(one, jobs))
    for line in lines:
        print(line)
    return 1 if any(line.startswith("NOT") for line in lines) else 0

if __name__ == "__main__":
    raise SystemExit(main())
