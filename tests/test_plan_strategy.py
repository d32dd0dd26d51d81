"""The fixed plans as a strategy (xpiler/schedule/plans.py): what the driver is told to evaluate,
in which order, and when it stops (no compiler, no migration: the evaluator is scripted here)."""
import time

from xpiler.schedule.plans import Outcome, PlanStart, PlanStrategy, Proposal


class Log:
    def __init__(self):
        self.events = []

    def event(self, kind, **kw):
        self.events.append((kind, kw))


def drive(strategy, answer):
    """The driver's loop with a scripted evaluator: ``answer(proposal) -> Outcome``."""
    seen, run, outcome = [], strategy.run(), None
    while True:
        try:
            ev = run.send(outcome)
        except StopIteration:
            return seen
        outcome = None
        if isinstance(ev, PlanStart):
            seen.append(("plan", ev.plan_no))
            continue
        assert isinstance(ev, Proposal)
        assert "require" not in ev.params   # the flag is the strategy's: the step gets its own parameters
        seen.append((ev.k, ev.pass_name, tuple(ev.later)))
        outcome = answer(ev)


PLANS = [
    [("detensorize", {}), ("unthread", {"require": True}), ("binding", {})],
    [("loop_recovery", {}), ("binding", {}), ("tensorize", {})],
    [("binding", {}), ("cache", {})],
]


def make(plans=PLANS, probe=lambda plan: None, deadline=None, out_of_time=None):
    log, diags = Log(), []
    st = PlanStrategy(plans, probe=probe, deadline=deadline or time.time() + 3600, budget=600.0, log=log,
                      diags=diags, out_of_time=out_of_time)
    return st, log, diags


def test_plans_run_in_order_until_the_target_verifies():
    st, log, diags = make()
    # the second plan's binding reaches the target dialect: the third plan is never started
    seen = drive(st, lambda p: Outcome(reached_target=(p.plan_no == 1 and p.pass_name == "binding")))
    assert seen == [("plan", 0), (0, "detensorize", ("unthread", "binding")), (1, "unthread", ("binding",)),
                    (2, "binding", ()), ("plan", 1), (3, "loop_recovery", ("binding", "tensorize")),
                    (4, "binding", ("tensorize",)), (5, "tensorize", ())]
    assert st.k_base == 6 and not diags


def test_a_plan_whose_required_step_does_not_apply_is_skipped_and_numbers_no_steps():
    st, log, diags = make(probe=lambda plan: "unthread: XP4002 nothing to unthread"
                          if any(n == "unthread" for n, _ in plan) else None)
    seen = drive(st, lambda p: Outcome())
    assert seen[:2] == [("plan", 0), ("plan", 1)]
    assert seen[2][0] == 0   # the skipped plan numbered no steps
    assert ("note", {"what": "plan skipped", "plan": 0, "why": "unthread: XP4002 nothing to unthread"}) in log.events
    assert [s for s in seen if s[0] == "plan"] == [("plan", 0), ("plan", 1), ("plan", 2)]


def test_a_cut_test_stops_the_plan_and_no_further_plan_starts():
    st, log, diags = make()
    seen = drive(st, lambda p: Outcome(cut="the test of the program after unthread was cut")
                 if p.pass_name == "unthread" else Outcome())
    assert seen == [("plan", 0), (0, "detensorize", ("unthread", "binding")), (1, "unthread", ("binding",))]
    assert [d.code for d in diags] == ["XP4020"]
    assert "not tried: plan 2" in diags[0].format() and "plan 3" in diags[0].format()
    assert st.out_of_time.startswith("the test of the program after unthread")


def test_a_spent_budget_stops_before_a_step_and_says_what_was_not_run():
    clock = {"left": 2}

    def answer(p):
        clock["left"] -= 1
        if clock["left"] <= 0:
            st.deadline = time.time() - 1    # the budget runs out during this step's test
        return Outcome()
    st, log, diags = make()
    seen = drive(st, answer)
    assert seen == [("plan", 0), (0, "detensorize", ("unthread", "binding")), (1, "unthread", ("binding",))]
    assert [d.code for d in diags] == ["XP4020", "XP4020"]
    assert "passes not run: binding" in diags[0].format()
    assert "not tried: plan 2" in diags[1].format()
    cuts = [kw for kind, kw in log.events if kind == "note" and kw.get("what") == "budget spent"]
    assert cuts[0]["passes_not_run"] == ["binding"]


def test_a_source_check_cut_means_no_plan_runs():
    st, log, diags = make(out_of_time="the source check was cut after 9.0 s")
    assert drive(st, lambda p: Outcome()) == []
    assert [d.code for d in diags] == ["XP4020"] and "plan 1 (detensorize, unthread, binding)" in diags[0].format()
