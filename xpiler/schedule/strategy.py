"""The strategy interface and the driver's loop (issue 13: "strategies behind one interface").

A strategy decides which step or program to evaluate next and learns what came of it; it never
builds, tests or times anything itself. Its ``run()`` is a generator: it yields an event, the
driver answers it (the *step*: apply a pass and test its candidates, or test and time programs
the strategy made), and the answer is sent back in. :func:`drive` is that loop, and the only one:
``xpiler migrate`` runs the plans (:class:`~xpiler.schedule.plans.PlanStrategy`, what
``--no-tune`` does) and then, with ``--tune``, the search
(:class:`~xpiler.schedule.tune.MCTSStrategy`) through it.

The events:

- :class:`PlanStart`: start again from the source program (answered by ``None``);
- :class:`Proposal` without a ``stage``: apply ``pass_name(params)`` to the current program and
  test what it makes, as a migration step (answered by an :class:`Outcome`);
- a list of :class:`Proposal` with a ``stage`` each: test (and, when verified, time) these
  programs, which the strategy made by applying a step to one it knew (answered by a list of
  :class:`Outcome` in the same order, each with its :class:`~xpiler.schedule.evaluator.Evaluation`:
  verified, latency, the latency's source, hardware or cost model; or not evaluated, when the
  search's deadline cut its test: ``Evaluation.cut``). A list is a batch: its programs may be
  evaluated in parallel;
- :class:`Confirm`: time two evaluated programs again, side by side (answered by their two
  latencies in ms, ``None`` where there is no measurement).

The generator's return value is the strategy's result (``drive`` returns it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generator


@dataclass
class PlanStart:
    """The driver starts again from the source program (a new plan)."""
    plan_no: int
    passes: list


@dataclass
class Proposal:
    """One step to evaluate. ``k`` numbers it (a plan's step number across plans, the log's
    ``step``; a search candidate's number, its test's ``tune<k>`` tag). A plan's proposal names
    the plan (``plan_no``, ``plan_len``) and its passes after it (``later``). A search proposal
    carries the program the step made (``stage``, already applied by the strategy through
    :func:`~xpiler.schedule.step.apply_step`), the tag of its test and the key of the program it
    was made from (``parent``); a plan's step that is one of several alternatives says how many
    follow it (``alternatives_left``: proposed, with the same ``k``, while this one is refused as
    not applying); ``defer_test``: a plan's step whose program is not tested on its own (the
    plan's next tested step tests the chain; xpiler/schedule/plans.py); the untuned kernel
    itself is proposed with no pass (``pass_name``
    empty) as the search's baseline. ``deadline`` (a ``time.time()`` value): the search's end;
    the evaluator cuts the program's test and timing to it (evaluator.py)."""
    k: int
    pass_name: str
    params: dict
    plan_no: int = 0
    plan_len: int = 0
    later: list = field(default_factory=list)
    stage: object = None
    tag: str = ""
    parent: str = ""
    alternatives_left: int = 0
    deadline: float | None = None
    defer_test: bool = False


@dataclass
class Outcome:
    """What the driver's evaluation of a proposal came to: ``reached_target`` once a program in
    the target dialect has verified (sticky for the rest of the migration); ``cut`` when the
    budget, not the program, ended the step's test (the plan stops there); ``evaluation`` for a
    search proposal (verified, latency, latency source); ``refused``: the pass's
    :class:`~xpiler.passes.base.PassError` when it refused the step and no candidate was taken."""
    reached_target: bool = False
    cut: str | None = None
    evaluation: object = None
    refused: object = None


@dataclass
class Confirm:
    """Time the untuned and the tuned program (their keys) again, one after the other."""
    untuned: str
    tuned: str


def drive(strategy, step: Callable):
    """The driver: ``step(event)`` answers each event ``strategy.run()`` yields; returns what the
    strategy returns."""
    return answer_all(strategy.run(), step)


def answer_all(run: Generator, step: Callable):
    """Send ``step(event)`` back for every event the generator ``run`` yields; its return value."""
    answer = None
    while True:
        try:
            event = run.send(answer)
        except StopIteration as stop:
            return stop.value
        answer = step(event)
