"""One place that sets how long a Z3 query may run, for every analysis (dependence, decache,
task slices, unblock, the polynomial proofs).

A query gets a *resource* budget (Z3's ``rlimit``: a count of solver steps), not only a
wall-clock timeout. With a wall-clock timeout alone, the same query on the same program could be
proved on an idle machine and come back "unknown" (a refusal) on a loaded one, so a migration's
result depended on the machine's load (bmm.mlu -> cuda took another plan on a shared 2-core host
than on the 16-core GPU machine, 2026-12-03). A resource budget gives the same answer
everywhere. The wall-clock timeout stays as a safety net, :data:`WALL_FACTOR` times longer, so it
only ends a query on a machine far slower than the one the budget was measured on (or one that
Z3 does not charge to the resource count).

:data:`WALL_FACTOR` was 10 until 2026-12-06: on the shared 2-core host at load 8-11 a process gets
about a fifth of a core, so a 4000 ms query (about 6 s of CPU before its rlimit) reached the 40 s
net, and conv2d_nchw.mlu lost its lift in some runs and not in others (docs/decisions.md). At 30 the
net is reached only below about a fifteenth of a core.

:data:`RLIMIT_PER_MS`: Z3 resource units per millisecond of budget. Measured on the 2-core
development host (2026-12-03, one non-linear query): 4.4–6 million units per second of CPU; 8000
per ms gives each query about the CPU time its old timeout gave on an idle machine, or more.

:func:`until` is the tuner's wall-clock cap for the analyses: a search step applies passes in the
tuner's own process, and one slow proof there (a 4096-task tiling proof took minutes, 2026-12-06)
held a 90 s search for many minutes. Inside ``with until(t_end)``, a solver made after ``t_end``
gets no budget at all (its query answers unknown at once, so the pass refuses: a refusal is never
a wrong rewrite), and before ``t_end`` nothing changes, so a search's answers do not depend on
how close to the cap a proof ran.

The migration's deadline (:mod:`xpiler.deadline`, active while the driver runs its steps) is
another matter: it ends the migration, not a proof. A query made under it gets at most the time
left (plus :data:`xpiler.deadline.GRACE_S`) as its wall-clock timeout, and a query that answers
unknown once that deadline has passed raises :class:`~xpiler.deadline.BudgetSpent` from its
``check()`` instead of answering: the pass that asked stops there (it neither refuses nor caches
the answer), and the driver ends the migration with its last verified program. Before the
deadline nothing changes (the rlimit still decides every answer).
"""
from __future__ import annotations

import time
import weakref
from contextlib import contextmanager
from contextvars import ContextVar

import z3

from .. import deadline as _migration

RLIMIT_PER_MS = 8000
WALL_FACTOR = 30
#: time.monotonic() past which a new query gets no budget. A context variable, not a global: a
#: search's cap held in one thread (or left open by a search generator never resumed) must not
#: make every later query of the process refuse (docs/decisions.md, 2026-12-06, "until leaked").
_DEADLINE: ContextVar = ContextVar("xpiler_smt_until", default=None)


@contextmanager
def until(t_end: float):
    """Queries made after ``t_end`` (``time.monotonic()``) inside this block, in this thread,
    answer unknown at once. Hold it around synchronous code only (never across a ``yield``)."""
    old = _DEADLINE.get()
    token = _DEADLINE.set(t_end if old is None else min(old, t_end))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def limit(solver, budget_ms: int):
    """Set ``solver``'s resource budget for ``budget_ms`` milliseconds (and the safety timeout);
    returns the solver. Under the migration's deadline the timeout is at most the time left
    (module doc) and the solver's ``check`` raises once that deadline has passed."""
    _migration.check("a Z3 query")
    cap = _DEADLINE.get()
    if cap is not None and time.monotonic() >= cap:
        solver.set("rlimit", 1)          # (0 would mean no limit)
        solver.set("timeout", 1)
        return solver
    solver.set("rlimit", int(budget_ms * RLIMIT_PER_MS))
    wall_ms = int(budget_ms * WALL_FACTOR)
    left = _migration.left()
    if left is not None:
        wall_ms = max(1, min(wall_ms, int((left + _migration.GRACE_S) * 1000)))
        solver.check = _checked(solver)
    solver.set("timeout", wall_ms)
    return solver


def _checked(solver):
    """``solver.check`` that raises :class:`~xpiler.deadline.BudgetSpent` where the migration's
    deadline, not the query, ended it (unknown, and the deadline has passed). It holds the solver
    weakly: a bound method kept on the solver would make a cycle, and Z3's native memory would
    then wait for the cycle collector."""
    ref, plain = weakref.ref(solver), type(solver).check

    def run(*assumptions):
        r = plain(ref(), *assumptions)
        if r == z3.unknown:
            _migration.check("a Z3 query")
        return r
    return run


def solver(budget_ms: int, tactic=None):
    """A fresh solver (``tactic``: a ``z3.Then(...)`` pipeline, else the default) with the budget."""
    return limit(tactic.solver() if tactic is not None else z3.Solver(), budget_ms)
