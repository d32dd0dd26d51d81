#!/usr/bin/env python3
"""The cost model's rank correlation with GPU timings over many candidates of the search space
(issue 13: "Spearman correlation with H200 timings over >= 100 candidates").

The tuner times few candidates per migration (each is tested on the emulator first), so its logs
hold too few GPU-timed candidates for this figure. This script takes the candidates straight from
the search space instead, in two phases:

    python benchmarks/cost_rank.py make KEEP OUT [--per-kernel 12] [--seed 0]   # any machine
    python benchmarks/cost_rank.py time OUT [--jobs 16]                          # on an NVIDIA GPU
    python benchmarks/cost_rank.py remodel OUT TIMED.json                        # a changed model, same timings

``make``: for every untuned cuda output folder in KEEP (``benchmarks/migrate_all.py --keep``) of an
operator with a perf shape (gpu_perf.PERF), the output is re-derived from its provenance log
(``xpiler.replay``: the output as IR with its launch), and its candidates are the programs one or
two search steps away (``xpiler.schedule.space.legal_steps``, each applied by the pass itself,
refusals dropped, duplicates by printed text dropped), at most ``--per-kernel`` per output chosen
with ``--seed``; the output itself is one of them. Each is written as a migration output folder
(``<source>__to__cuda__<k>/``: the kernel and its spec) with the cost model's latency at the perf
shape in ``OUT/manifest.json``: the tuner's own ``modelled_latency`` of the candidate's text
parsed again, as the tuner models a candidate (jobs.py ``_latency``).

``time``: every candidate is built and timed at the perf shape with CUDA events and checked
against PyTorch (``gpu_perf.time_output``, as the suite tables are); Spearman's rank correlation
of modelled and measured latency over the candidates that ran and matched PyTorch, pooled and
per output. A candidate that does not match is reported and left out. These candidates are not
run through the migration's emulator tests (the tuner would test each before timing it); the
check against PyTorch on the GPU at the perf shape is their test here.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_perf import PERF, _perf_spec, _prebuild, time_output  # noqa: E402
from tune_gpu import spearman  # noqa: E402


def _base_op(folder: Path) -> str | None:
    op = folder.name.split("__")[0].split(".")[0]
    return next((k for k in PERF if op == k or op.startswith(k + "_")), None)


def _expand(steps, st, entry: str, ctx, seen: set, passes=None) -> list:
    """[(steps + (step,), stage)] for every legal step of ``passes`` from ``st`` that applies and
    gives a program not seen before."""
    from xpiler.schedule.space import TUNING_PASSES, legal_steps
    from xpiler.schedule.step import apply_step
    nxt = []
    for step in legal_steps(st.program, entry, "cuda", passes or TUNING_PASSES):
        try:
            new = apply_step(step, st, ctx)
        except Exception:   # a refusal (PassError) or a pass failing on a candidate: no candidate
            continue
        if new.dialect != "cuda" or new.text in seen:
            continue
        seen.add(new.text)
        nxt.append((steps + (step,), new))
    return nxt


def _candidates(root, bind_in, entry: str, ctx, per_kernel: int, rng: random.Random) -> list:
    """[(steps, stage)]: the root (the untuned output), then programs one or two search steps
    away: the tuning passes' steps from the root, and (as the tuner's route) each other binding of
    the program binding started from, alone or followed by one tuning step. Deduplicated by text."""
    from xpiler.migration.stage import Stage
    seen = {root.text}
    near = _expand((), root, entry, ctx, seen)
    far = []
    for steps, st in near:
        far += _expand(steps, st, entry, ctx, seen)
    if bind_in is not None:
        b_prog, b_text = bind_in
        b_st = Stage(b_prog, b_prog.dialect, entry)
        b_st.text = b_text
        binds = _expand((), b_st, entry, ctx, seen, ("binding",))
        near += binds
        for steps, st in binds:
            far += _expand(steps, st, entry, ctx, seen)
    # round robin over the kinds of step sequence (the passes in order), so that no one pass's many
    # parameter values (split factors) fill the sample
    groups: dict = {}
    for steps, st in near + far:
        groups.setdefault(tuple(s.pass_name for s in steps), []).append((steps, st))
    order = sorted(groups)
    for g in order:
        rng.shuffle(groups[g])
    rng.shuffle(order)
    picked = []
    while len(picked) < per_kernel - 1 and any(groups[g] for g in order):
        for g in order:
            if groups[g] and len(picked) < per_kernel - 1:
                picked.append(groups[g].pop())
    return [((), root)] + picked


def _text_model(cu: Path) -> tuple:
    """(ms, detail) of the cost model for the kernel file ``cu`` at its operator's perf shape, read
    as the tuner reads a candidate: its printed text parsed again (xpiler/schedule/jobs.py
    ``_latency``), not the passes' IR."""
    from xpiler.frontend import parse_text
    from xpiler.migration.stage import Stage
    from xpiler.schedule.evaluator import modelled_latency
    try:
        _, pspec = _perf_spec(cu)
        prog = parse_text(cu.read_text(), "cuda", cu.name)
        return modelled_latency(Stage(prog, "cuda", pspec.entry), pspec, None)
    except Exception as e:   # what the front end or the model cannot read is no figure
        return None, {"error": f"{type(e).__name__}: {str(e)[:200]}"}


def _figures(rows: list, key: str) -> tuple:
    """(pooled Spearman, {output: (n, Spearman)}, median per output, picks, outputs): the model
    figure ``key`` against ``gpu_ms``; a pick counts when the model's fastest candidate of an output
    is within 5 % of its measured fastest (outputs of 3 or more candidates)."""
    per: dict = {}
    for r in rows:
        per.setdefault(r["output"], []).append(r)
    each = {o: (len(rs), spearman([r[key] for r in rs], [r["gpu_ms"] for r in rs])) for o, rs in per.items()}
    vals = [v for _, v in each.values() if v is not None]
    ranked = [rs for rs in per.values() if len(rs) >= 3]
    picks = sum(min(rs, key=lambda r: r[key])["gpu_ms"] <= 1.05 * min(r["gpu_ms"] for r in rs) for rs in ranked)
    return (spearman([r[key] for r in rows], [r["gpu_ms"] for r in rows]), each,
            statistics.median(vals) if vals else None, picks, len(ranked))


def _events(log: Path) -> list:
    from xpiler.provenance import read_log
    return read_log(log)[1]


def _make_one(args) -> tuple:
    """(output folder name, manifest rows, note) for one untuned output folder."""
    folder, out, per_kernel, seed = args
    from xpiler.migration.driver import _launch_to_spec
    from xpiler.migration.stage import Stage
    from xpiler.printers import print_program
    from xpiler.replay import replay
    from xpiler.spec import load_spec, spec_to_toml
    base = _base_op(folder)
    log = folder / "provenance.jsonl"
    cus = list(folder.glob("*.cu"))
    if base is None or not log.is_file() or len(cus) != 1:
        return folder.name, [], "skipped (no perf shape, log or single .cu)"
    try:
        r = replay(log, output=cus[0])
    except Exception as e:
        return folder.name, [], f"replay failed: {type(e).__name__}: {str(e)[:200]}"
    prog, kspec, params = r.program, r.kernel_spec, r.kernel_params
    entry = kspec.entry
    spec_out = load_spec(cus[0].with_name(cus[0].name + ".toml"))
    root = Stage(prog, "cuda", entry)
    root.text = print_program(prog, "cuda")
    rng = random.Random(f"{seed}:{folder.name}")
    # the program the migration's binding step started from (the loop form), if it bound one
    bind_ev = [e for e in _events(log) if e.get("type") == "pass" and e.get("name") == "binding"
               and e.get("applied")]
    bind_in = r.derived.get(bind_ev[-1]["in_hash"]) if bind_ev else None
    cands = _candidates(root, bind_in, entry, r.step_context, per_kernel, rng)
    rows = []
    for k, (steps, st) in enumerate(cands):
        d = out / f"{folder.name}__k{k:02d}"
        d.mkdir(parents=True, exist_ok=True)
        cspec = kspec.with_dialect("cuda", entry, _launch_to_spec(st.launch, kspec, params))
        cspec.reference = spec_out.reference
        cu = d / cus[0].name
        cu.write_text(st.text)
        cu.with_name(cu.name + ".toml").write_text(spec_to_toml(cspec))
        for extra in folder.iterdir():
            if extra.suffix == ".py":
                (d / extra.name).write_text(extra.read_text())
        model_ms, detail = _text_model(cu)
        rows.append({"output": folder.name, "op": base, "candidate": d.name, "k": k,
                     "steps": [s.to_json() for s in steps], "model_ms": model_ms, "model": detail})
    return folder.name, rows, f"{len(rows)} candidates ({sum(r['model_ms'] is not None for r in rows)} modelled)"


def make(keep: Path, out: Path, per_kernel: int, seed: int, jobs: int = 1) -> int:
    from concurrent.futures import ProcessPoolExecutor
    out.mkdir(parents=True, exist_ok=True)
    folders = sorted(keep.glob("*__to__cuda"))
    work = [(f, out, per_kernel, seed) for f in folders]
    manifest = []
    with ProcessPoolExecutor(max(1, jobs)) as ex:
        for name, rows, note in ex.map(_make_one, work):
            print(f"{name}: {note}", flush=True)
            manifest += rows
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{len(manifest)} candidates from {len({m['output'] for m in manifest})} outputs in {out}")
    return 0


def time_all(out: Path, jobs: int) -> int:
    # one candidate's timed run (warm-up and repeats) at most this long: a far slower candidate is
    # reported as not timed, not left to take the device call with it
    os.environ.setdefault("XP_PERF_RUN_S", "30")
    manifest = json.loads((out / "manifest.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="xprank"))
    files = [next((out / m["candidate"]).glob("*.cu")) for m in manifest]
    _prebuild(files, "cuda", work, jobs)
    torch_ms: dict = {}
    for m, cu in zip(manifest, files):
        row, detail = time_output(cu, "cuda", work, src_name=m["candidate"], torch_ms=torch_ms)
        detail = detail or {}
        m["gpu_ms"] = detail.get("ours_ms")
        m["ok"] = bool(detail.get("ok"))
        m["check"] = row[3] if row else "-"
        print(f"{m['candidate']}: model {m['model_ms'] and round(m['model_ms'], 4)} ms, "
              f"gpu {m['gpu_ms'] and round(m['gpu_ms'], 4)} ms, {m['check']}", flush=True)
    (out / "timed.json").write_text(json.dumps(manifest, indent=1))
    good = [m for m in manifest if m["ok"] and m.get("gpu_ms") and m.get("model_ms")]
    bad = [m for m in manifest if not m["ok"]]
    for m in bad:
        print(f"not in the figure: {m['candidate']}: {m['check']}")
    rho, each, median, picks, ranked = _figures(good, "model_ms")
    print(f"\npooled: Spearman {rho if rho is None else round(rho, 3)} over {len(good)} candidates "
          f"that ran and matched PyTorch ({len(bad)} did not: "
          f"{', '.join(sorted({m['check'] for m in bad})) or '-'})")
    for name, (n, r) in sorted(each.items()):
        ms = [m for m in good if m["output"] == name]
        fast = min(ms, key=lambda m: m["gpu_ms"])
        root = next((m for m in ms if m["k"] == 0), None)
        print(f"| {name} | {n} | {'-' if r is None else f'{r:+.3f}'} | "
              f"{root['gpu_ms'] if root else float('nan'):.4f} | {fast['gpu_ms']:.4f} "
              f"({'; '.join(s['pass'] for s in fast['steps']) or 'root'}) |")
    if median is not None:
        print(f"per-output median Spearman {median:+.3f} over {sum(r is not None for _, r in each.values())} outputs; "
              f"the model's pick within 5 % of the fastest for {picks} of {ranked}")
    return 0


def remodel(out: Path, timed: Path) -> int:
    """The candidates of OUT modelled again with this checkout's cost model (from their text, as
    ``make`` does), against the GPU times of an earlier ``time`` run (TIMED: its timed.json).
    Candidates are matched by name and by their steps, so a candidate made from other steps is left
    out, not compared."""
    mine = {m["candidate"]: m for m in json.loads((out / "manifest.json").read_text())}
    rows = []
    for t in json.loads(timed.read_text()):
        m = mine.get(t["candidate"])
        if not (t.get("ok") and t.get("gpu_ms") and t.get("model_ms") and m) or m["steps"] != t["steps"]:
            continue
        ms, _ = _text_model(next((out / t["candidate"]).glob("*.cu")))
        if ms is not None:
            rows.append({**t, "old_model_ms": t["model_ms"], "model_ms": ms})
    print(f"{len(rows)} candidates matched")
    for key in ("old_model_ms", "model_ms"):
        rho, each, median, picks, ranked = _figures(rows, key)
        print(f"{key}: pooled Spearman {rho:+.3f}, per-output median {median:+.3f}, "
              f"the model's pick within 5 % of the fastest for {picks} of {ranked}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="phase", required=True)
    m = sub.add_parser("make")
    m.add_argument("keep", type=Path)
    m.add_argument("out", type=Path)
    m.add_argument("--per-kernel", type=int, default=12)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--jobs", type=int, default=1)
    t = sub.add_parser("time")
    t.add_argument("out", type=Path)
    t.add_argument("--jobs", type=int, default=16)
    r = sub.add_parser("remodel")
    r.add_argument("out", type=Path)
    r.add_argument("timed", type=Path)
    a = ap.parse_args()
    if a.phase == "remodel":
        return remodel(a.out, a.timed)
    if a.phase == "make":
        return make(a.keep, a.out, a.per_kernel, a.seed, a.jobs)
    return time_all(a.out, a.jobs)


if __name__ == "__main__":
    sys.exit(main())
