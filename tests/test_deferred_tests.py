"""Deferred tests in a probed plan (docs/passes.md, "Deferred tests"), and the c -> bang row plan
that uses them: softmax_avx512.c -> bang reaches NRAM rows and a __bang_* op, with one test of the
plan's final program instead of one per step (issue 15, the idiom rule; issue 13, migration time).

The strategy part is scripted (no compiler); the migrations run on emu:bang-cpu."""
from __future__ import annotations

import json
import time

import pytest

from xpiler.migration.pipeline import DEFER_TEST, REQUIRE, deferred, pass_params, plans
from xpiler.schedule.plans import Outcome, PlanStart, PlanStrategy, Proposal

from conftest import EXAMPLES

SRC = EXAMPLES / "softmax" / "softmax_avx512.c"


class Log:
    def __init__(self):
        self.events = []

    def event(self, kind, **kw):
        self.events.append((kind, kw))


def _proposals(plans_, probe=lambda plan: None):
    st = PlanStrategy(plans_, probe=probe, deadline=time.time() + 3600, budget=600.0, log=Log(), diags=[])
    run, out, seen = st.run(), None, []
    while True:
        try:
            ev = run.send(out)
        except StopIteration:
            return seen
        out = None
        if isinstance(ev, Proposal):
            seen.append(ev)
            out = Outcome()
        else:
            assert isinstance(ev, PlanStart)


def test_a_probed_plan_defers_every_marked_step_but_its_last():
    plan = deferred([("detensorize", {}), ("binding", {REQUIRE: True}), ("tensorize", {REQUIRE: True})])
    assert [bool(p.get(DEFER_TEST)) for _, p in plan] == [True, True, False]
    seen = _proposals([plan])
    assert [(p.pass_name, p.defer_test) for p in seen] == [("detensorize", True), ("binding", True),
                                                            ("tensorize", False)]
    # the markers are the plan's: the pass gets its own parameters
    assert all(DEFER_TEST not in p.params and REQUIRE not in p.params for p in seen)
    # a marked last step is still tested (that test ends the chain)
    seen = _proposals([[("binding", {REQUIRE: True, DEFER_TEST: True}), ("cache", {DEFER_TEST: True})]])
    assert [p.defer_test for p in seen] == [True, False]


def test_an_unprobed_plan_tests_every_step():
    # deferral needs the probe (the plan is known to apply): without a required step it is ignored
    seen = _proposals([[("binding", {DEFER_TEST: True}), ("cache", {DEFER_TEST: True}), ("tensorize", {})]])
    assert [p.defer_test for p in seen] == [False, False, False]
    assert pass_params({"target": "bang", REQUIRE: True, DEFER_TEST: True}) == {"target": "bang"}


def test_the_c_to_bang_row_plan_is_probed_and_tests_only_its_final_program():
    ps = plans("c", "bang")
    assert len(ps) == 3
    rows = ps[1]
    assert [n for n, _ in rows] == ["detensorize", "loop_recovery", "flatten_lanes", "binding", "cache",
                                    "tensorize"]
    assert rows[2][1] == {"rows": True, REQUIRE: True, DEFER_TEST: True}
    assert [n for n, p in rows if p.get(REQUIRE)] == ["flatten_lanes", "tensorize"]
    assert [n for n, p in rows if not p.get(DEFER_TEST)] == ["tensorize"]
    # the other plans test every step, as before
    assert not any(p.get(DEFER_TEST) for plan in (ps[0], ps[2]) for _, p in plan)


def _events(r):
    return [json.loads(x) for x in r.log_path.read_text().splitlines()[1:]]


def _replay_ok(r):
    from xpiler.replay import replay
    res = replay(r.log_path)
    assert res.ok and res.output_hash and res.verified is r.verified


def test_softmax_avx512_to_bang_reaches_nram_rows_and_a_bang_op(tmp_path):
    from xpiler.migration.driver import migrate
    r = migrate(SRC, "bang", outdir=tmp_path / "o", jobs=1, perf=False)
    assert r.verified, [str(d) for d in r.diagnostics]
    assert r.verdict.substrate == "emu:bang-cpu"
    text = r.output_path.read_text()
    assert "__nram__" in text and "__bang_mul_scalar(" in text
    assert [s.pass_name for s in r.steps] == ["detensorize", "flatten_lanes", "binding", "cache", "tensorize"]
    ev = _events(r)
    applied = [e for e in ev if e["type"] == "pass" and e.get("applied")]
    assert [e.get("test") for e in applied] == ["deferred"] * 4 + [None]
    # one test of the plan's programs: the final one, the full differential + reference test
    tests = [e for e in ev if e["type"] == "test" and e["stage"] not in ("source", "host_launcher")]
    assert [t["stage"] for t in tests] == ["step6_tensorize_symbolic"]
    assert tests[0]["verified"] and tests[0]["program_hash"] == applied[-1]["out_hash"]
    # every instance the source was tested on (and the boundaries derived from the final loops)
    src_test = next(e for e in ev if e["type"] == "test" and e["stage"] == "source")
    assert set(src_test["instances"]) <= set(tests[0]["instances"]) and tests[0]["seeds"] == src_test["seeds"]
    _replay_ok(r)


def _break(program, entry):
    """``program`` with every float constant 1 of ``entry`` made 2 (a wrong kernel that builds)."""
    from xpiler.ir import nodes as N
    from xpiler.ir.visit import rewrite
    from xpiler.passes.patterns.common import replace_func
    fn, done = program.func(entry), []

    def one(n):
        if isinstance(n, N.Const) and n.dtype == "float32" and n.value == 1.0:
            done.append(n)
            return n.with_(value=2.0, text="2.0f")
        return n
    body = rewrite(fn.body, one)
    assert done
    return replace_func(program, fn, fn.with_(body=body))


def test_a_failing_row_plan_falls_back_to_the_general_plan(tmp_path, monkeypatch):
    from xpiler.migration.driver import migrate
    from xpiler.passes.base import get
    tz = get("tensorize")
    real = tz.apply

    def wrong(program, **kw):   # the row plan's final step made wrong on purpose
        out = real(program, **kw)
        return _break(out, kw["entry"]) if kw.get("target") == "bang" else out
    monkeypatch.setattr(tz, "apply", wrong)
    r = migrate(SRC, "bang", outdir=tmp_path / "o", jobs=1, perf=False, repair=False)
    assert r.verified, [str(d) for d in r.diagnostics]
    # today's plan's scalar kernel, reached after the row plan's final program failed its test
    assert "__bang_" not in r.code
    assert [s.pass_name for s in r.steps] == ["detensorize", "binding"]
    assert "XP4310" in [d.code for d in r.diagnostics]
    ev = _events(r)
    failed = [e for e in ev if e["type"] == "note" and e.get("what") == "deferred steps failed"]
    assert len(failed) == 1 and failed[0]["steps"] == ["detensorize", "flatten_lanes", "binding", "cache"]
    assert any(e["type"] == "test" and e["stage"] == "step6_tensorize_symbolic" and not e["verified"] for e in ev)
    assert any(e["type"] == "note" and e.get("what") == "next plan" and e["plan"] == 2 for e in ev)
    _replay_ok(r)


def test_a_refused_last_step_tests_the_deferred_program(tmp_path, monkeypatch):
    # the general plan with every step deferred: its last step (tensorize) does not apply to the
    # scalar row kernel, so the program the deferred steps made is tested in its place, and it is
    # the very kernel today's plan writes
    from xpiler.migration import driver
    general = plans("c", "bang")[-1]
    plan = deferred([(n, {**p, REQUIRE: True}) if n == "binding" else (n, p) for n, p in general])
    monkeypatch.setattr(driver, "default_plans", lambda src, dst: [plan])
    r = driver.migrate(SRC, "bang", outdir=tmp_path / "o", jobs=1, perf=False)
    assert r.verified, [str(d) for d in r.diagnostics]
    assert [s.pass_name for s in r.steps] == ["detensorize", "binding"]
    ev = _events(r)
    tests = [e for e in ev if e["type"] == "test" and e["stage"] not in ("source", "host_launcher")]
    assert [t["stage"] for t in tests] == ["step5_tensorize_deferred"] and tests[0]["verified"]
    monkeypatch.undo()
    ref = driver.migrate(SRC, "bang", outdir=tmp_path / "ref", jobs=1, perf=False, pipeline=general)
    assert ref.verified and ref.output_path.read_text() == r.output_path.read_text()
    _replay_ok(r)
