"""The search's screening tier (issue 13, helper 79; docs/schedule.md "Screening"): a candidate is
first tested on one instance with one seed, and the full test (every instance and seed, as every
migration step) runs only for one whose latency beats the incumbent. A candidate that passes
screening and fails the full test is never the search's answer.

The real strategy, evaluator, pool and job function (``run_candidate``: which tests it runs, in
what order); the test itself and the timing are scripted (nothing is built), so the tiers' logic
is what is checked; the last test runs a real tuned migration and reads the tiers in its log."""
from __future__ import annotations

import pytest

from xpiler.schedule import jobs as J
from xpiler.schedule.evaluator import Evaluation, Evaluator
from xpiler.schedule.mcts import MCTS
from xpiler.schedule.pool import LocalPool
from xpiler.schedule.step import Step, StepContext
from xpiler.schedule.strategy import drive
from xpiler.schedule.timing import MODEL
from xpiler.schedule.tune import MCTSStrategy
from xpiler.verify.tester import RunFailure, Verdict

from test_mcts_strategy import Log, latency, untuned


def scripted_tests(monkeypatch, full_fails=lambda text: False):
    """``run_candidate``'s test and timing scripted: every screening test passes, a full test
    fails where ``full_fails(text)``; the latency is ``latency(text)``. Returns the tests run,
    as (job tag, "screen" or "full")."""
    ran = []

    def write(job, d):
        return None, None, job.text, None

    def test(job, src, sspec, cand, cspec, *, screen):
        ran.append((job.tag, "screen" if screen else "full"))
        v = Verdict(True, "test:scripted", "k.c", [0] if screen else [0, 1, 2],
                    ["small"] if screen else ["small", "big"], runs=1 if screen else 6)
        if not screen and full_fails(cand):
            v.verified = False
            v.failures.append(RunFailure("XP2101", "scripted: wrong on the big instance", "big", 1))
        return v, None

    monkeypatch.setattr(J, "_write", write)
    monkeypatch.setattr(J, "_test", test)
    monkeypatch.setattr(J, "_latency", lambda job, cand, cspec: {"latency_source": MODEL,
                                                                "latency_ms": latency(cand)})
    return ran


def job_for(st, tag):
    return J.CandidateJob(tag, st.text, "c", "k", "", "k.c", "", "", None, None, (0, 1, 2), 120.0, 1, None, MODEL)


class RecLog(Log):
    def __init__(self):
        super().__init__()
        self.tests = []

    def log_test(self, st, tag, v, tier="full"):
        self.tests.append((tag, st.key, tier, v.verified))


def tune(max_evals=12, seed=0, screen=True):
    log = RecLog()
    strat = MCTSStrategy(untuned(), target="c", ctx=StepContext(), budget_s=600.0, max_evals=max_evals, seed=seed,
                         log=log, source=MODEL)
    ev = Evaluator(job_for, MODEL, pool=LocalPool(1), log_test=log.log_test, screen=screen)
    out = drive(strat, ev.answer)
    return out, log


def evaluated(log):
    return [e for e in log.tune("evaluate")]


def test_only_a_candidate_that_beats_the_incumbent_is_tested_in_full(monkeypatch):
    ran = scripted_tests(monkeypatch)
    out, log = tune()
    evs = evaluated(log)
    # the untuned kernel is screened only (the migration tested it in full before the search)
    assert ("tune_root", "screen") in ran and ("tune_root", "full") not in ran
    # a full test exactly for each candidate faster than every fully tested one before it
    best, want_full = latency(untuned().text), set()
    for i, e in enumerate(evs, 1):
        if e["latency_ms"] < best:
            want_full.add(f"tune{i}")
            best = e["latency_ms"]
    assert want_full, "the scripted space has faster candidates"
    assert {t for t, tier in ran if tier == "full"} == want_full
    assert sum(1 for _, tier in ran if tier == "screen") == len(evs) + 1, "every candidate is screened first"
    assert len(want_full) < len(evs), "slower candidates are not tested in full"
    # screening-only evaluations say so; the chosen kernel's test is a full one, and verified
    assert all(e.get("tier") == "screen" for i, e in enumerate(evs, 1) if f"tune{i}" not in want_full)
    assert out.steps and (out.stage.key, "full", True) in {(k, tier, ok) for _, k, tier, ok in log.tests}
    assert out.tuned_ms == best


def test_a_screened_candidate_that_fails_the_full_test_is_not_returned(monkeypatch):
    # find the program the search would return when every test passes, then make its full test fail
    scripted_tests(monkeypatch)
    first, _ = tune()
    bad = first.stage.text
    assert first.steps, "the search returns a tuned kernel"
    ran = scripted_tests(monkeypatch, full_fails=lambda text: text == bad)
    out, log = tune()
    assert out.stage.text != bad, "a candidate that failed its full test became the answer"
    # it passed screening, was tested in full (it beat the incumbent), failed, and got reward 0
    tags = [tag for tag, k, tier, ok in log.tests if k == first.stage.key]
    assert [(tier, ok) for tag, k, tier, ok in log.tests if k == first.stage.key] == [("screen", True), ("full", False)]
    e = next(e for e in evaluated(log) if e["program_hash"] == first.stage.key)
    assert not e["verified"] and "failed the full test" in e["why"]
    assert (tags[0], "full") in ran
    # the answer falls back to the next best fully verified program (or the untuned kernel)
    if out.steps:
        assert (out.stage.key, "full", True) in {(k, tier, ok) for _, k, tier, ok in log.tests}
    assert out.tuned_ms is None or out.tuned_ms > latency(bad)


def test_screening_keeps_the_search_deterministic_for_a_seed(monkeypatch):
    scripted_tests(monkeypatch)
    a, la = tune(seed=3)
    b, lb = tune(seed=3)
    assert [e["program_hash"] for e in evaluated(la)] == [e["program_hash"] for e in evaluated(lb)]
    assert a.stage.key == b.stage.key and la.tests == lb.tests


def test_without_screening_every_candidate_is_tested_in_full(monkeypatch):
    ran = scripted_tests(monkeypatch)
    tune(max_evals=5, screen=False)
    assert ran and all(tier == "full" for _, tier in ran)


@pytest.mark.parametrize("tier,best", [("screen", False), ("full", True)])
def test_mcts_makes_only_a_fully_tested_program_the_best(tier, best):
    """A screened evaluation faster than the root (an evaluator that did not test it in full)
    earns its reward but never becomes the search's best."""
    def expand(state):
        return [Step("split", {"to": "a"})] if state == "root" else []
    m = MCTS(expand=expand, apply=lambda st, step: "a", key=lambda st: st,
             evaluate=lambda st: Evaluation(st, True, 1.0, MODEL, tier=tier))
    res = m.search("root", Evaluation("root", True, 10.0, MODEL), budget_s=60, max_evals=1)
    assert res.evaluations == 1 and (res.best_hash == "a") is best
    assert m.g.nodes["a"]["value"] > 0, "a screened program's reward comes from its screening verdict"



def test_a_real_tuned_migration_screens_and_returns_a_fully_tested_kernel(tmp_path, monkeypatch):
    """softmax.c -> cuda with --tune (the cost model; candidates built and run on emu:simt-cpu):
    the candidates' tests are screening tests (one instance, one seed) unless a candidate beat the
    incumbent, and the returned kernel has a verified full test (every instance, every seed)."""
    from pathlib import Path
    import json
    import xpiler.schedule.tune as T
    from xpiler.api import migrate
    monkeypatch.setattr(T, "source_for", lambda dialect, text: MODEL)
    src = Path(__file__).resolve().parents[1] / "examples" / "softmax" / "softmax.c"
    r = migrate(src, "cuda", outdir=tmp_path / "o", tune=True, max_evals=4, perf=False, seed=1)
    assert r.verified
    ev = [json.loads(x) for x in Path(r.log_path).read_text().splitlines()[1:]]
    tests = [e for e in ev if e["type"] == "test" and str(e["stage"]).startswith("tune")]
    screens = [e for e in tests if e["tier"] == "screen"]
    fulls = [e for e in tests if e["tier"] == "full"]
    assert screens and all(len(e["instances"]) == 1 and len(e["seeds"]) == 1 for e in screens)
    assert len(fulls) < len(screens)
    out = next(e for e in ev if e["type"] == "output")
    full = [e for e in ev if e["type"] == "test" and e["program_hash"] == out["program_hash"]
            and e.get("tier", "full") == "full" and e["verified"]]
    assert full and len(full[-1]["seeds"]) == 3 and len(full[-1]["instances"]) > 1
