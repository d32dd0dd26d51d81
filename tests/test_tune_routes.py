"""The tuner's route through loops for cuda <-> hip (xpiler/schedule/tune.py: through_loops):
besides the retarget, the root offers loop recovery + un-tiling + each binding alternative as one
search step, so the target passes' loop forms (register-blocked tiles) are reachable from a SIMT
source. The chosen steps are logged pass by pass, and replay re-derives the kernel from them."""
from __future__ import annotations

import json
from pathlib import Path

from xpiler.frontend import parse_file
from xpiler.migration.stage import Stage
from xpiler.printers import print_program
from xpiler.schedule.step import StepContext
from xpiler.schedule.tune import SEQUENCE, sequence_steps, through_loops

EX = Path(__file__).resolve().parents[1] / "examples"


def test_route_steps_end_in_the_target_dialect():
    prog = parse_file(EX / "gemm" / "gemm.hip", "hip")
    st = Stage(prog.with_launch("gemm", {"grid": ["cdiv(N,16)", "cdiv(M,16)", 1], "block": [16, 16, 1]}), "hip", "gemm")
    st.text = print_program(prog, "hip")
    ctx = StepContext({"grid": ["(N + 15) / 16", "(M + 15) / 16", 1], "block": [16, 16, 1]}, [])
    steps = through_loops(st, "cuda", ctx)
    assert steps and all(s.pass_name == SEQUENCE for s in steps)
    names = [[x.pass_name for x in sequence_steps(s)] for s in steps]
    assert all(n in (["loop_recovery", "untile", "binding"], ["loop_recovery", "untile", "binding", "cache"])
               for n in names)
    # each binding alternative, then the register tiles after one of them (a matmul)
    assert ["loop_recovery", "untile", "binding"] in names
    assert all(sequence_steps(s)[-1].params.get("thread_tile") for s, n in zip(steps, names) if len(n) == 4)
    assert any(len(n) == 4 for n in names)
    # loop recovery's normalization is named in every step (the search chooses; replay re-applies it)
    from xpiler.passes.loop_recovery import NORMALIZE
    assert all(sequence_steps(s)[0].params.get("normalize") in NORMALIZE for s in steps)
    assert through_loops(st, "bang", ctx) == []          # only between the SIMT dialects
    c = Stage(prog, "c", "gemm")
    assert through_loops(c, "cuda", ctx) == []


def test_chosen_route_is_logged_pass_by_pass_and_replays(tmp_path, monkeypatch):
    """A stand-in model rates register tiles fastest, loops bound afresh next, the retargeted
    kernel slowest: the search must take the route, then the cache step; the log holds the
    route's passes one by one, and replay re-derives the output from them."""
    import xpiler.schedule.evaluator as EV
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay

    def fake(stage, spec, sizes=None):
        t = stage.text or print_program(stage.program, stage.dialect)
        return (0.1 if "xp_acc[" in t else 2.0 if "__shared__" in t else 1.0), {"model": "test stand-in"}
    monkeypatch.setattr(EV, "modelled_latency", fake)
    # the stand-in model decides only where the model is the latency source (not on a GPU host)
    import xpiler.schedule.tune as TU
    from xpiler.schedule.timing import MODEL
    monkeypatch.setattr(TU, "source_for", lambda dialect, text: MODEL)
    from conftest import plans_before_20261205
    plans_before_20261205(monkeypatch)    # (the default writes the register tiles itself since 2026-12-05)
    r = migrate(EX / "gemm" / "gemm.hip", "cuda", outdir=tmp_path / "out", jobs=1, perf=False, tune=True,
                max_evals=6, seed=0)
    assert r.verified
    events = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()[1:]]
    res = next(e for e in events if e["type"] == "tune" and e["kind"] == "result")
    assert [s["pass"] for s in res["steps"]] == ["loop_recovery", "untile", "binding", "cache"], res["steps"]
    assert res["steps"][-1]["params"].get("thread_tile")
    searched = [e["name"] for e in events if e["type"] == "pass" and e.get("proposer") == "search"]
    assert searched == ["loop_recovery", "untile", "binding", "cache"]
    assert "xp_acc[" in r.output_path.read_text()
    rep = replay(tmp_path / "out" / "provenance.jsonl")
    assert rep.ok if hasattr(rep, "ok") else rep
