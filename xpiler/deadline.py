"""The migration's wall-clock cap as seen from inside a running pass (issue 13: ``--budget`` is
"honoured as a wall-clock cap").

The driver checks its deadline between steps; a pass that is already running, a legality check, a
Z3 query or a candidate loop inside a pass did not see it (the AMX int8 c output -> cuda ran 806 s
against a 600 s budget; docs/decisions.md, 2026-12-06, "the budget stops a running pass"). Here
the driver makes its deadline *active* for the steps it runs (``with active(end)``), and long code
asks :func:`check`, which raises :class:`BudgetSpent` once the deadline has passed:

- :func:`xpiler.ir.visit.walk` checks at each call (every analysis and rewrite walks the IR, so a
  long pass meets a check within milliseconds);
- a Z3 query made through :mod:`xpiler.ir.smt` gets at most the time left plus :data:`GRACE_S`
  as its wall-clock timeout, and one that answers unknown after the deadline raises instead of
  answering (so no pass refuses, and no proof cache keeps an answer, because of the budget).

So a loop needs no check of its own as long as it walks the IR on each round, as the long ones
seen so far do (flatten_lanes' fusions and contractions, loop recovery's normalizers, the
patterns' candidate loops). :func:`cap` cuts a child process's own limit the same way.

The driver catches :class:`BudgetSpent` around its strategies: the step that was running leaves
nothing behind (passes rewrite a frozen IR and return a new program; nothing was logged as applied
or tested), and the migration ends with the last verified program, or UNRESOLVED, with XP4020
naming the step the budget stopped. :class:`BudgetSpent` is a ``BaseException``, like
``KeyboardInterrupt`` or ``asyncio.CancelledError``: a cancellation, which a pass's ``except
Exception`` (a crash taken as a refusal, a probe that never breaks a migration) must not turn
into a refusal or a crash report.

The deadline is a context variable: only the thread that made it active (the driver's) sees it.
The tester's and the tuner's worker threads keep their own, graceful cut (a run not launched or
stopped at the deadline is an XP4020 failure of that test, ``compare_kernels(deadline=...)``).
Outside ``active`` (tests of a pass, replay, the report), :func:`check` does nothing.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar

#: the active deadline: a ``time.time()`` value, or None (no cap)
_END: ContextVar = ContextVar("xpiler_deadline", default=None)

#: what a child process may run past the deadline at most (its own limit is the time left plus this)
GRACE_S = 0.5


class BudgetSpent(BaseException):
    """The active deadline passed; ``where`` says which check saw it."""

    def __init__(self, where: str = "", over_s: float = 0.0):
        super().__init__(where)
        self.where = where
        self.over_s = over_s


@contextmanager
def active(end: float):
    """Make ``end`` (a ``time.time()`` value) the deadline of the code inside (the earlier one
    when a deadline is already active)."""
    old = _END.get()
    token = _END.set(end if old is None else min(old, end))
    try:
        yield
    finally:
        _END.reset(token)


def check(where: str = "") -> None:
    """Raise :class:`BudgetSpent` when the active deadline has passed; nothing otherwise."""
    end = _END.get()
    if end is not None:
        now = time.time()
        if now >= end:
            raise BudgetSpent(where, now - end)


def left() -> float | None:
    """Seconds until the active deadline (negative once it has passed); None without one."""
    end = _END.get()
    return None if end is None else end - time.time()


def cap(seconds: float) -> float:
    """``seconds`` (a child process's or a query's own limit) cut to the time left plus
    :data:`GRACE_S`; ``seconds`` itself without an active deadline."""
    t = left()
    return seconds if t is None else max(0.05, min(seconds, t + GRACE_S))
