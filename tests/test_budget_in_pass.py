"""--budget stops a step that is already running (issue 13: the budget is a wall-clock cap;
xpiler/deadline.py, docs/verification.md "The time budget").

Before, the driver looked at its deadline only between steps, so one long pass (a legality check,
a Z3 query, a candidate loop) ran on past it (the AMX int8 c output -> cuda: 806 s against 600).
Here a pass whose check walks the program for 20 s must stop within a second of the deadline
(the migration then writes its output and report: a few seconds more on a loaded host), and a Z3
query that would run for tens of seconds within the deadline plus its grace and a second. Without
the deadline inside the pass both take their full time and the bounds below fail."""
from __future__ import annotations

import json
import time

import pytest
import z3

from xpiler import deadline
from xpiler.ir import smt
from xpiler.ir.visit import walk

from conftest import EXAMPLES

SRC = EXAMPLES / "relu" / "relu.c"
SLOW_S = 20.0       # how long the slow check runs when nothing stops it
STOP_S = 1.0        # the stop, after the deadline (the check itself is within milliseconds of it)
SLACK_S = 8.0       # the driver's work after the stop (the output, the report) on a host at load 8


def test_check_raises_only_under_an_active_deadline_that_has_passed():
    deadline.check()                                   # no deadline: nothing
    with deadline.active(time.time() + 60):
        deadline.check()
        assert 59 < deadline.left() <= 60
        assert deadline.cap(120.0) <= 60 + deadline.GRACE_S
        with deadline.active(time.time() - 1):         # the earlier one wins
            with pytest.raises(deadline.BudgetSpent):
                next(iter(walk(z3)))                   # (walk checks before its first node)
        deadline.check()
    assert deadline.left() is None and deadline.cap(120.0) == 120.0


def test_a_z3_query_stops_at_the_deadline():
    x, y, z = z3.Ints("x y z")
    t0 = time.time()
    with deadline.active(t0 + 1.0):
        s = smt.solver(20_000)    # its own limits: tens of seconds of work
        s.add(x > 0, y > 0, z > 0, x * x * x + y * y * y == z * z * z)
        with pytest.raises(deadline.BudgetSpent) as e:
            s.check()
    assert e.value.where == "a Z3 query"
    assert time.time() - t0 < 1.0 + deadline.GRACE_S + 1.0


@pytest.fixture(scope="module")
def source_verdict():
    """relu.c's own check, run once for the module: the migration below then starts its plan at
    once, so its budget is spent inside the pass, not in the source check."""
    from xpiler.migration.driver import DEFAULT_TIMEOUT_S, check_source
    from xpiler.spec import load_spec
    return check_source(SRC, load_spec(SRC.with_name(SRC.name + ".toml")), (0, 1, 2), 1, DEFAULT_TIMEOUT_S,
                        time.time() + 120)


def test_a_running_pass_stops_at_the_budget(tmp_path, monkeypatch, source_verdict):
    from xpiler.migration import driver
    from xpiler.passes import binding
    from xpiler.passes.base import PassError
    assert source_verdict.verified

    def slow_apply(program, **kw):
        """A legality check that walks the program over and over, then gives up."""
        t_end = time.time() + SLOW_S
        while time.time() < t_end:
            for _ in walk(program):
                pass
        raise PassError("binding", "the check gave up")

    monkeypatch.setattr(binding, "apply", slow_apply)
    monkeypatch.setattr(driver, "check_source", lambda *a, **k: source_verdict)
    budget = 2.0
    t0 = time.time()
    r = driver.migrate(SRC, "cuda", outdir=tmp_path / "o", jobs=1, perf=False, budget=budget,
                       pipeline=[("binding", {"target": "cuda"}), ("cache", {"target": "cuda"})])
    took = time.time() - t0
    assert took < budget + SLACK_S, took
    assert not r.verified
    first = r.diagnostics[0]
    assert first.code == "XP4020", [str(d) for d in r.diagnostics]
    assert "ran out inside plan 1 of 1, its step 1 (binding)" in first.message
    assert "no target program verified" in first.message and "not run: cache" in first.message
    assert "XP4004" in [d.code for d in r.diagnostics]
    # nothing of the stopped step is kept: the candidate written is the source program, unverified
    assert r.output_path.name == "relu.unverified.c"
    events = [json.loads(line) for line in r.log_path.read_text().splitlines()]
    assert not any(e["type"] == "pass" for e in events)
    note = next(e for e in events if e["type"] == "note" and e.get("what") == "budget spent")
    assert note["check"] == "walk" and note["reached_target"] is False
    # stopped at the deadline, not when the check ended by itself
    assert note["time"] - t0 < budget + STOP_S and note["over_s"] < STOP_S, (note, t0)
