"""The directory branch of ``xpiler migrate`` (xpiler/cli.py calls it when SRC is a folder)."""
from __future__ import annotations

import sys

from ..diagnostics import XPError


def cmd_migrate_dir(a, parse_sizes) -> int:
    from .runner import migrate_project
    if a.spec:
        raise XPError("XP1241", flag="--spec", why="it names one kernel's spec; each kernel's spec is taken from "
                                                  "beside it, or inferred", file=a.src)
    if a.resume:
        raise XPError("XP1241", flag="--resume", why="a directory run resumes by itself: run the same command "
                                                    "again and it goes on from OUT/project-state.jsonl", file=a.src)
    tune = a.tune and not a.no_tune

    def say(msg: str):
        print(msg, flush=True)

    r = migrate_project(a.src, a.to, a.outdir, jobs=a.jobs, cluster=a.cluster, proposer=a.proposer, llm=a.llm,
                        budget=a.budget, tune=tune, seed=a.seed, timeout=a.timeout, perf=not a.no_perf,
                        force=a.force, max_evals=a.max_evals,
                        tune_sizes=parse_sizes(a.tune_sizes) if a.tune_sizes else None,
                        extra={"emit_asm": True} if getattr(a, "emit_asm", False) else None, say=say)
    c = r.counts
    needs = [k for k in r.records if k.get("verdict") == "needs spec"]
    for k in needs:
        print((k.get("messages") or [""])[0], file=sys.stderr)
    print(f"{c.get('verified', 0)} / {c.get('total', 0)} verified, {c.get('unresolved', 0)} unresolved, "
          f"{c.get('bad_input', 0)} bad input, {c.get('error', 0)} error(s), {c.get('needs_spec', 0)} need a spec, "
          f"{c.get('already_target', 0)} already {a.to}; "
          f"this run: {c.get('new', 0)} migrated, {c.get('unchanged', 0)} unchanged, {c.get('resumed', 0)} resumed, "
          f"{c.get('restarted', 0)} restarted, {c.get('recovered', 0)} recovered. "
          f"Summary: {r.summary_html} ({r.summary_json})")
    return r.exit_code
