"""Today's fixed plans as a search strategy (issue 13: "today's plans become one strategy").

A strategy tells the driver which step to evaluate next and learns what came of it; the driver
(:func:`xpiler.migration.driver.migrate`) is a loop over strategy, step and evaluator
(:func:`xpiler.schedule.strategy.drive`, where the events are described).

:class:`PlanStrategy` walks the plans of ``xpiler/migration/pipeline.py`` in order: each plan
from the source program, its steps in order, the next plan only while no program in the target
dialect has verified. A step with ``alternatives`` (loop recovery's normalizations) is proposed
once per alternative, in order, with the same step number, while the pass refuses the one
before as not applying (``AlternativeRefused``); each refusal is logged (the ``pass`` event and a
note naming the next alternative). A plan with a ``require``d step is probed first (its passes applied
without tests) and skipped when that step does not apply. The time budget is a wall-clock cap:
a plan or a step that would start after it is not started, and what was not tried is said
(XP4020) and logged. In a probed plan, a step marked ``defer_test`` is proposed with
``Proposal.defer_test``: the driver applies it without a test, and the plan's next tested step
(its last step always is) tests the program the chain made.
:class:`~xpiler.schedule.tune.MCTSStrategy` is the other strategy
(``--tune``), searching from the verified program the plans reached, through the same loop.
"""
from __future__ import annotations

import time
from typing import Callable, Generator

from ..diagnostics import XPError
from .strategy import Outcome, PlanStart, Proposal   # noqa: F401  (the events, shared by every strategy)


class PlanStrategy:
    name = "plans"

    def __init__(self, plans: list, *, probe: Callable, deadline: float, budget: float, log, diags: list,
                 out_of_time: str | None = None):
        self.plans = plans
        self.probe = probe            # plan -> why it is not worth running, or None
        self.deadline = deadline
        self.budget = budget
        self.log = log
        self.diags = diags
        self.out_of_time = out_of_time   # what the budget cut, once it is spent
        self.k_base = 0                  # steps numbered so far (the next step's number)

    def run(self) -> Generator:
        # (xpiler.migration imports the driver, which imports this)
        from ..migration.pipeline import DEFER_TEST, REQUIRE, alternatives, pass_params
        from ..passes.base import AlternativeRefused
        reached = False
        for plan_no, plan in enumerate(self.plans):
            if reached:
                return
            if self.out_of_time is None and time.time() >= self.deadline:
                self.out_of_time = (f"the budget of {self.budget:g} s ran out before plan {plan_no + 1} "
                                    f"of {len(self.plans)}")
            if self.out_of_time is not None:
                left = [f"plan {i + 1} ({', '.join(n for n, _ in p)})"
                        for i, p in enumerate(self.plans[plan_no:], plan_no)]
                self.diags.append(XPError("XP4020", what=f"{self.out_of_time}; not tried: {'; '.join(left)}"))
                self.log.event("note", what="budget spent", cut=self.out_of_time, not_tried=left)
                return
            yield PlanStart(plan_no, [p for p, _ in plan])
            probed = any(p.get(REQUIRE) for _, p in plan)
            if probed:
                why_not = self.probe(plan)
                if why_not:
                    self.log.event("note", what="plan skipped", plan=plan_no, why=why_not)
                    continue   # a skipped plan numbers no steps
            # a deferred test only in a probed plan, never at its last step (that test ends the chain)
            defer = [probed and bool(p.get(DEFER_TEST)) and i + 1 < len(plan) for i, (_, p) in enumerate(plan)]
            plan = [(n, pass_params(p)) for n, p in plan]
            for i, (pname, pparams) in enumerate(plan):
                k = self.k_base + i
                if time.time() >= self.deadline:
                    self.out_of_time = f"the budget of {self.budget:g} s ran out at step {k + 1}"
                    left = ", ".join(n for n, _ in plan[i:])
                    self.diags.append(XPError("XP4020", what=f"{self.out_of_time}; passes not run: {left}"))
                    self.log.event("note", what="budget spent", cut=self.out_of_time,
                                   passes_not_run=left.split(", "))
                    break
                alts = alternatives(pparams)
                for a, aparams in enumerate(alts):
                    outcome = yield Proposal(k, pname, aparams, plan_no, len(plan), [n for n, _ in plan[i + 1:]],
                                             alternatives_left=len(alts) - a - 1, defer_test=defer[i])
                    outcome = outcome or Outcome()
                    if a + 1 < len(alts) and isinstance(outcome.refused, AlternativeRefused):
                        self.log.event("note", what="alternative refused", step=k, pass_name=pname,
                                       params=aparams, code=outcome.refused.code, why=outcome.refused.why,
                                       next=alts[a + 1])
                        continue
                    break
                reached = reached or outcome.reached_target
                if outcome.cut is not None:
                    self.out_of_time = outcome.cut
                    break
            self.k_base += len(plan)
