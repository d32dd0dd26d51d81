"""The task count of a BANG source as a search parameter (xpiler/schedule/routes_tasks.py): the
search root of a bang -> cuda tuning is the program loop recovery started from; its children
re-run loop recovery with more tasks, then bind. Routes are taken in turn by the search
(xpiler/schedule/mcts.py: ``route``), and a chosen re-launch is logged and replayed."""
from __future__ import annotations

import json
from pathlib import Path

from xpiler.frontend import parse_file, parse_text
from xpiler.migration.pipeline import direction_plans
from xpiler.migration.stage import Stage
from xpiler.printers import print_program
from xpiler.schedule.routes_tasks import _source_tasks, recovery_start, retask_steps, task_route
from xpiler.schedule.step import Step, StepContext, apply_step
from xpiler.schedule.tune import SEQUENCE, needs_concurrent_blocks, sequence_steps

EX = Path(__file__).resolve().parents[1] / "examples"
LAUNCH = {"dim": [8, 1, 1], "func_type": "block"}


def _stages(prog):
    src = Stage(prog.with_launch("rmsnorm", LAUNCH), "bang", "rmsnorm")
    src.text = print_program(prog, "bang")
    ctx = StepContext(dict(LAUNCH), [])
    cur = src
    for s in (Step("detensorize", {"target": "cuda"}), Step("loop_recovery", {})):
        nxt = apply_step(s, cur, ctx)
        nxt.steps = cur.steps + (Step(s.pass_name, s.params, "symbolic", cur.hash, nxt.hash),)
        cur = nxt
    return src, cur, ctx


def test_source_task_count_and_cluster():
    assert _source_tasks({"dim": [8, 1, 1], "func_type": "block"}) == (8, 1)
    assert _source_tasks({"dim": ["4", 1, 1], "func_type": "union1"}) == (4, 4)
    assert _source_tasks({"dim": ["n / 4", 1, 1], "func_type": "block"}) is None   # already sized by the problem
    assert _source_tasks({"dim": [4, 2, 1], "func_type": "block"}) is None
    assert _source_tasks({}) is None


def test_root_children_relaunch_with_more_tasks_then_bind():
    src, start, ctx = _stages(parse_file(EX / "rmsnorm" / "rmsnorm.mlu", "bang"))
    root, tail = recovery_start(src, start, ctx)
    assert root.dialect == "bang" and [s.pass_name for s in tail] == ["loop_recovery"]
    steps = retask_steps(root, tail, start, "cuda", ctx, counts=(4, 64))
    assert steps and all(s.pass_name == SEQUENCE for s in steps)
    routes = {task_route(s) for s in steps}
    assert routes == {"", "tasks=64"}, routes          # 4 is not above the source's 8 tasks
    plain = [s for s in steps if task_route(s) == ""]
    assert all([x.pass_name for x in sequence_steps(s)] == ["loop_recovery", "binding"] for s in plain)
    more = next(s for s in steps if task_route(s) == "tasks=64")
    cur = root
    for sub in sequence_steps(more):
        cur = apply_step(sub, cur, ctx)
    assert cur.dialect == "cuda" and "(rows + 64 - 1) / 64" in cur.text
    # the plain children are what binding offered from the loop form
    cur = root
    for sub in sequence_steps(plain[0]):
        cur = apply_step(sub, cur, ctx)
    assert "(rows + 8 - 1) / 8" in cur.text


def test_no_relaunch_for_a_kernel_that_ignores_its_task_count():
    text = (EX / "rmsnorm" / "rmsnorm.mlu").read_text()
    # every task does all the rows: the result does not depend on the count, the work grows with it
    text = text.replace("int share = (rows + taskDim - 1) / taskDim;", "int share = rows;")
    text = text.replace("for (int r0 = taskId * block_rows; r0 < rows; r0 += taskDim * block_rows)",
                        "for (int r0 = 0; r0 < rows; r0 += block_rows)")
    text = text.replace("// block b goes to task b % taskDim", "")
    assert "taskDim" not in text.split("__mlu_global__", 1)[1].split("void rmsnorm_host", 1)[0]
    src, start, ctx = _stages(parse_text(text, "bang", "rmsnorm_all.mlu"))
    root, tail = recovery_start(src, start, ctx)
    steps = retask_steps(root, tail, start, "cuda", ctx, counts=(64,))
    assert steps and {task_route(s) for s in steps} == {""}


def test_routes_are_taken_in_turn():
    """The prior rates route b's programs slowest; the expansion order still alternates."""
    from xpiler.schedule.mcts import MCTS
    steps = [Step(SEQUENCE, {"steps": [{"pass": "loop_recovery", "params": {"launch": {"dim": [t, 1, 1]}} if t else {}}],
                             "i": i}) for t in (0, 64) for i in range(3)]
    m = MCTS(expand=lambda st: steps, apply=lambda st, step: step, key=lambda st: str(st), seed=0,
             prior=lambda st: 100.0 if task_route(st) else 1.0 + st.params["i"], route=task_route)
    m.states = {"r": "root"}
    order = m._by_prior("r", list(steps))[::-1]         # pop() order
    assert [task_route(s) for s in order] == ["", "tasks=64"] * 3
    assert [s.params["i"] for s in order if not task_route(s)] == [0, 1, 2]
    plain = MCTS(expand=lambda st: steps, apply=lambda st, step: step, key=lambda st: str(st), seed=0,
                 prior=lambda st: 100.0 if task_route(st) else 1.0 + st.params["i"])
    plain.states = {"r": "root"}
    assert [task_route(s) for s in plain._by_prior("r", list(steps))[::-1]] == [""] * 3 + ["tasks=64"] * 3


def test_chosen_relaunch_is_logged_and_replays(tmp_path, monkeypatch):
    """A stand-in model rates the 64-task program fastest: the search takes it; the log holds loop
    recovery with the new launch, and replay re-derives the output from the log."""
    import xpiler.schedule.evaluator as EV
    import xpiler.schedule.tune as TU
    import xpiler.schedule.routes_tasks as RT
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    from xpiler.schedule.timing import MODEL

    def fake(stage, spec, sizes=None):
        t = stage.text or print_program(stage.program, stage.dialect)
        return (0.1 if "+ 64 - 1) / 64" in t else 1.0), {"model": "test stand-in"}
    monkeypatch.setattr(EV, "modelled_latency", fake)
    monkeypatch.setattr(TU, "source_for", lambda dialect, text: MODEL)
    monkeypatch.setattr(RT, "TASK_COUNTS", (64,))
    monkeypatch.setattr(TU, "retask_steps", lambda *a, **k: RT.retask_steps(*a, **k, counts=(64,)))
    # the general plan, which keeps the source's tasks (the default un-stages the rows first:
    # tests/test_pass_unstage_rows.py)
    r = migrate(EX / "rmsnorm" / "rmsnorm.mlu", "cuda", outdir=tmp_path / "out", jobs=1, perf=False, tune=True,
                max_evals=3, seed=0, pipeline=direction_plans("bang", "cuda")[-1])
    assert r.verified
    assert "(rows + 64 - 1) / 64" in r.output_path.read_text()
    events = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()[1:]]
    searched = [e for e in events if e["type"] == "pass" and e.get("proposer") == "search"]
    assert searched[0]["name"] == "loop_recovery" and searched[0]["params"]["launch"]["dim"] == [64, 1, 1]
    # the cost model is the latency source here: no candidate binds a task to a block (rows='core')
    tried = [e for e in events if e["type"] == "tune" and e["kind"] == "evaluate"]
    assert tried and not any('"core"' in json.dumps(e["step"]) for e in tried)
    start = next(e for e in events if e["type"] == "note" and e.get("what") == "search from")
    assert start["program_hash"] == searched[0]["in_hash"]
    rep = replay(tmp_path / "out" / "provenance.jsonl")
    assert rep.ok if hasattr(rep, "ok") else rep


def test_core_binding_only_where_blocks_run_concurrently():
    core = Step("binding", {"target": "cuda", "loop": "task", "rows": "core", "block": 128})
    thread = Step("binding", {"target": "cuda", "loop": "task", "block": 128})
    seq = Step(SEQUENCE, {"steps": [Step("loop_recovery", {}).to_json(), core.to_json()]})
    assert needs_concurrent_blocks(core) and needs_concurrent_blocks(seq)
    assert not needs_concurrent_blocks(thread)
    assert not needs_concurrent_blocks(Step(SEQUENCE, {"steps": [thread.to_json()]}))


def test_search_steps_name_loop_recoverys_normalization():
    """Loop recovery's normalizations are alternatives of the search's routes, each named in its
    step (never the cascade ``normalize=True``), so the tree chooses and a replay re-applies the
    one chosen; an alternative's programs are those the named step makes."""
    from xpiler.passes.loop_recovery import NORMALIZE
    from xpiler.schedule.routes_tasks import recovery_alternatives
    assert [a["normalize"] for a in recovery_alternatives({})] == list(NORMALIZE)
    assert recovery_alternatives({"normalize": True, "x": 1}) == [{"x": 1, "normalize": n} for n in NORMALIZE]
    assert recovery_alternatives({"normalize": False}) == [{"normalize": False}]
    src, start, ctx = _stages(parse_file(EX / "rmsnorm" / "rmsnorm.mlu", "bang"))
    root, tail = recovery_start(src, start, ctx)
    tail = [Step("loop_recovery", {"normalize": "partition"}, "symbolic", tail[0].in_hash, tail[0].out_hash)]
    steps = retask_steps(root, tail, start, "cuda", ctx, counts=(64,))
    recs = [sequence_steps(s)[0] for s in steps]
    assert all(r.pass_name == "loop_recovery" and r.params["normalize"] in NORMALIZE for r in recs)
    by_route = {(task_route(s), r.params["normalize"]) for s, r in zip(steps, recs)}
    # rmsnorm.mlu: its partition loops normalize; the plain loops are the other alternative
    assert by_route == {("", "partition"), ("", "loops"), ("tasks=64", "partition"), ("tasks=64", "loops")}
    one = next(s for s, r in zip(steps, recs) if r.params["normalize"] == "loops" and not task_route(s))
    cur = root
    for sub in sequence_steps(one):
        cur = apply_step(sub, cur, ctx)
    cascade = apply_step(Step("loop_recovery", {"normalize": "loops"}), root, ctx)
    assert cascade.key != start.key     # another program than the plan's partition form


def test_the_search_chooses_a_normalization_and_replay_reapplies_it(tmp_path, monkeypatch):
    """A stand-in model rates the programs of loop recovery's ``loops`` normalization fastest
    (the plan takes ``partition``, whose split of ``block_rows`` leaves ``block_rows_1``): the
    search takes the ``loops`` route, the log names it, and replay re-derives the output."""
    import xpiler.schedule.evaluator as EV
    import xpiler.schedule.tune as TU
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    from xpiler.schedule.timing import MODEL

    def fake(stage, spec, sizes=None):
        t = stage.text or print_program(stage.program, stage.dialect)
        return (1.0 if "block_rows_1" in t else 0.1), {"model": "test stand-in"}
    monkeypatch.setattr(EV, "modelled_latency", fake)
    monkeypatch.setattr(TU, "source_for", lambda dialect, text: MODEL)
    monkeypatch.setattr(TU, "retask_steps", lambda *a, **k: __import__(
        "xpiler.schedule.routes_tasks", fromlist=["x"]).retask_steps(*a, **k, counts=()))
    r = migrate(EX / "rmsnorm" / "rmsnorm.mlu", "cuda", outdir=tmp_path / "out", jobs=1, perf=False, tune=True,
                max_evals=2, seed=0, pipeline=direction_plans("bang", "cuda")[-1])     # the general plan, as above
    assert r.verified and "block_rows_1" not in r.output_path.read_text()
    events = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()[1:]]
    plan = [e for e in events if e["type"] == "pass" and e["name"] == "loop_recovery" and e.get("applied")
            and e.get("proposer") != "search"]
    assert plan and plan[0]["params"]["normalize"] == "partition"
    searched = [e for e in events if e["type"] == "pass" and e.get("proposer") == "search"]
    assert searched[0]["name"] == "loop_recovery" and searched[0]["params"]["normalize"] == "loops"
    rep = replay(tmp_path / "out" / "provenance.jsonl")
    assert rep.ok if hasattr(rep, "ok") else rep
