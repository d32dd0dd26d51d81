"""The tuner as a strategy (xpiler/schedule/tune.py ``MCTSStrategy``): what it proposes to the
driver loop, what it makes of the answers, the same search for the same seed, and the time budget
as a wall-clock cap. Real programs and real passes (a rewrite needs no compiler); the evaluator is
scripted: nothing is built, run or timed."""
from __future__ import annotations

import time

from xpiler.frontend import parse_text
from xpiler.migration.stage import Stage
from xpiler.printers import print_program
from xpiler.schedule.evaluator import Evaluation
from xpiler.schedule.step import Step, StepContext, apply_step
from xpiler.schedule.strategy import Confirm, Outcome, Proposal, drive
from xpiler.schedule.timing import MODEL
from xpiler.schedule.tune import SEQUENCE, MCTSStrategy, sequence_steps

SRC = """
void k(const float *x, float *y, int n, int m) {
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < m; ++j)
            y[i * m + j] = x[i * m + j] * 2.0f + 1.0f;
}
"""


class Log:
    def __init__(self):
        self.events = []

    def event(self, type_, **kw):
        self.events.append((type_, kw))

    def tune(self, kind):
        return [kw for k, kw in self.events if k == "tune" and kw["kind"] == kind]


def untuned() -> Stage:
    p = parse_text(SRC, "c", "<t>")
    st = Stage(p, "c", "k")
    st.text = print_program(p, "c")
    return st


def latency(text: str) -> float:
    """The scripted 'timing': more loops (splits) are faster, a little noise from the text."""
    return 100.0 - 9.0 * text.count("for (") + (sum(map(ord, text)) % 7)


def scripted(fail=lambda text: False, sleep=0.0, confirm=None):
    """The evaluator's side of the loop, scripted: ``seen`` records every event in order."""
    seen = []

    def answer(event):
        seen.append((time.monotonic(), event))
        if isinstance(event, Confirm):
            return confirm(event)
        assert isinstance(event, list) and all(isinstance(p, Proposal) and p.stage is not None for p in event)
        out = []
        for p in event:
            time.sleep(sleep)
            t = p.stage.text
            ev = Evaluation(p.stage.hash, False, why="scripted failure") if fail(t) else \
                Evaluation(p.stage.hash, True, latency(t), MODEL)
            out.append(Outcome(evaluation=ev))
        return out
    return answer, seen


def search(seed=0, max_evals=12, budget_s=600.0, source=MODEL, **kw):
    log = Log()
    strat = MCTSStrategy(untuned(), target="c", ctx=StepContext(), budget_s=budget_s, max_evals=max_evals, seed=seed,
                         log=log, source=source)
    answer, seen = scripted(**kw)
    t0 = time.monotonic()
    out = drive(strat, answer)
    return out, seen, log, t0


def proposals(seen):
    return [p for _, ev in seen if isinstance(ev, list) for p in ev]


def test_the_strategy_proposes_programs_and_chooses_the_fastest_verified_one():
    out, seen, log, _ = search(fail=lambda t: t.count("for (") >= 4)
    props = proposals(seen)
    root = props[0]
    assert root.tag == "tune_root" and root.pass_name == "" and root.stage.key == untuned().key
    cands = props[1:]
    assert [p.tag for p in cands] == [f"tune{i}" for i in range(1, len(cands) + 1)] and len(cands) == 12
    # each proposed program is what its step makes from the program it names as its parent
    made = {root.stage.key: root.stage}
    for p in cands:
        assert p.parent in made, "a candidate is built on a program proposed before"
        step = Step(p.pass_name, p.params)
        again = made[p.parent]
        for sub in (sequence_steps(step) if p.pass_name == SEQUENCE else [step]):
            again = apply_step(sub, again, StepContext())
        assert again.key == p.stage.key
        made[p.stage.key] = p.stage
    # a failing program is never built on
    failed = {p.stage.key for p in cands if p.stage.text.count("for (") >= 4}
    assert failed and not any(p.parent in failed for p in cands)
    # the log: start, one evaluate per candidate (the answers as given), result
    assert len(log.tune("start")) == 1 and len(log.tune("result")) == 1
    evs = log.tune("evaluate")
    assert [e["program_hash"] for e in evs] == [p.stage.key for p in cands]
    assert all(e["latency_source"] == MODEL for e in evs if e["verified"])
    # the chosen kernel: the fastest verified candidate, modelled >= 1.03x faster; its steps re-applied
    best = min((p for p in cands if p.stage.key not in failed), key=lambda p: latency(p.stage.text))
    assert latency(root.stage.text) / latency(best.stage.text) >= 1.03
    assert out.stage.key == best.stage.key and out.tuned_ms == latency(best.stage.text)
    cur = root.stage
    for s in out.steps:
        assert s.proposer == "search" and s.in_hash == cur.hash
        cur = apply_step(s, cur, StepContext())
        assert s.out_hash == cur.hash
    assert cur.key == out.stage.key
    res = log.tune("result")[0]
    assert res["chosen"] == out.stage.hash and res["evaluations"] == 12 and res["stopped"] == "evaluation budget"
    assert not any(isinstance(ev, Confirm) for _, ev in seen), "modelled latencies are not timed again"


def test_same_seed_same_search_and_result():
    a, sa, _, _ = search(seed=5)
    b, sb, _, _ = search(seed=5)
    assert [(p.tag, p.pass_name, p.params, p.stage.key) for p in proposals(sa)] == \
        [(p.tag, p.pass_name, p.params, p.stage.key) for p in proposals(sb)]
    assert a.stage.key == b.stage.key and [s.to_json() for s in a.steps] == [s.to_json() for s in b.steps]
    # the seed is what orders a node's untried steps (no prior here): other seeds try others first
    firsts = {proposals(search(seed=s, max_evals=1)[1])[1].stage.key for s in range(5)}
    assert len(firsts) > 1


def test_time_budget_is_a_wall_clock_cap():
    # every evaluation takes 0.05 s; the budget 0.4 s; neither max_evals nor patience would stop it
    out, seen, log, t0 = search(max_evals=1000, budget_s=0.4, sleep=0.05)
    res = log.tune("result")[0]
    assert res["stopped"] == "time budget"
    assert 1 <= res["evaluations"] < 40
    batches = [t for t, ev in seen if isinstance(ev, list)]
    # no round starts after the budget (a round's own evaluation may end after it)
    assert all(t - t0 < 0.4 + 0.25 for t in batches)
    assert time.monotonic() - t0 < 0.4 + 1.0


def test_measured_latencies_are_confirmed_side_by_side_before_the_kernel_is_replaced():
    asked = []

    def confirm(ev):
        asked.append(ev)
        return 10.0, 10.0      # timed again, the candidate is no faster
    out, seen, log, _ = search(source="hw:cpu-test", confirm=confirm)
    assert len(asked) == 1 and asked[0].untuned == untuned().key
    assert out.stage.key == untuned().key and out.steps == [] and "not faster" in out.note
    assert log.tune("confirm")[0]["untuned_ms"] == 10.0
    kept, _, _, _ = search(source="hw:cpu-test", confirm=lambda ev: (10.0, 5.0))
    assert kept.steps and kept.stage.key == asked[0].tuned and kept.tuned_ms == 5.0
