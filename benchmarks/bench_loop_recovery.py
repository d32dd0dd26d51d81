"""Loop recovery over the example suite: every cuda / hip / bang kernel is migrated to C with
``detensorize`` (when that pass exists) followed by ``loop_recovery``, and the C result is
verified against the source kernel by the migration driver (differential test on every spec
instance, three seeds, plus the spec's Python reference).

    python benchmarks/bench_loop_recovery.py [--dialect cuda|hip|bang] [--only NAME ...] [--jobs N]

Prints one line per kernel (verified, or the reason it was not) and verified/total per dialect.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXT = {"cuda": ".cu", "hip": ".hip", "bang": ".mlu"}


def kernels(dialects, only):
    out = []
    for d in dialects:
        for p in sorted((ROOT / "examples").glob(f"*/*{EXT[d]}")):
            if only and p.stem not in only and p.name not in only:
                continue
            if (p.parent / (p.name + ".toml")).exists():
                out.append((d, p))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dialect", action="append", choices=sorted(EXT))
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-detensorize", action="store_true")
    ap.add_argument("--no-normalize", action="store_true", help="loop_recovery with normalize=False")
    a = ap.parse_args(argv)
    from xpiler.migration.driver import migrate
    from xpiler.passes.base import available

    pipeline = []
    if "detensorize" in available() and not a.no_detensorize:
        pipeline.append(("detensorize", {"target": "c"}))
    pipeline.append(("loop_recovery", {"normalize": False} if a.no_normalize else {}))
    print(f"pipeline: {' -> '.join(p for p, _ in pipeline)}")
    totals, normalized = {}, {}
    t_all = time.time()
    for d, src in kernels(a.dialect or ["cuda", "hip", "bang"], set(a.only)):
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="xp-lr-") as tmp:
            try:
                r = migrate(src, "c", outdir=tmp, pipeline=pipeline, jobs=a.jobs)
                ok = r.verified
                why = "" if ok else "; ".join(f"{e.code} {getattr(e, 'why', '') or e}" for e in r.diagnostics
                                             if e.code != "XP4004") or "not verified"
            except Exception as e:  # an internal error is a failure of this kernel, not of the run
                ok, why = False, f"{type(e).__name__}: {e}"
        v, n = totals.get(d, (0, 0))
        totals[d] = (v + ok, n + 1)
        norm = "" if a.no_normalize else _normalized(src, pipeline)
        if norm == "normalized":
            normalized[d] = normalized.get(d, 0) + 1
        why = why.replace("\n", " ")
        print(f"{'verified' if ok else 'FAILED  '} {d:5s} {src.relative_to(ROOT)} ({time.time() - t0:.1f}s)"
              + (f" [{norm}]" if norm else "") + ("" if ok else f": {why[:300]}"), flush=True)
    print()
    for d, (v, n) in totals.items():
        print(f"{d:5s}: {v}/{n} verified through C"
              + ("" if a.no_normalize else f", {normalized.get(d, 0)} with the partition loops collapsed"))
    if not a.no_normalize:
        print(f"normalized: {sum(normalized.values())}/{sum(n for _, n in totals.values())}")
    print(f"total time {time.time() - t_all:.0f}s")
    return 0


def _normalized(src, pipeline) -> str:
    """Whether loop recovery collapsed the partition loops of ``src`` ('normalized'), or why not."""
    from xpiler.frontend import parse_file
    from xpiler.migration.driver import _launch_to_params
    from xpiler.passes import loop_recovery
    from xpiler.passes.base import PassError, get
    from xpiler.spec import load_spec
    try:
        spec = load_spec(src.parent / (src.name + ".toml"))
        prog = parse_file(src)
        if pipeline[0][0] == "detensorize":
            try:
                r = get("detensorize").apply(prog, entry=spec.entry, target="c")
                prog = r[0] if isinstance(r, tuple) else r
            except PassError:
                pass
        params = [p.name for p in prog.func(spec.entry).params]
        ok, why = loop_recovery.explain_normalization(prog, entry=spec.entry,
                                                      launch=_launch_to_params(spec.launch, spec, params))
        return "normalized" if ok else f"not normalized: {why}"
    except Exception as e:  # the verdict above already reports failures
        return f"not normalized: {type(e).__name__}"


if __name__ == "__main__":
    sys.exit(main())
