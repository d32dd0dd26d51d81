"""A per-migration budget of LLM calls and tokens, shared by every backend call of one job.

``reserve()`` before a call (raises :class:`BudgetExceeded` when nothing is left and says how
many tokens the answer may still use); ``charge()`` after it with what the call really cost.
``deadline`` (a ``time.time()`` value: the end of the migration's ``--budget``) is a wall-clock
cap: no call starts after it, and a backend that can bound a call's wait (openai: the HTTP
timeout) waits at most ``time_left()``. Thread-safe, because candidates may be proposed from
several workers.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from .base import BudgetExceeded


@dataclass
class Budget:
    max_calls: int | None = 64          # None: unlimited
    max_tokens: int | None = 400_000    # prompt + completion tokens; None: unlimited
    calls: int = 0
    tokens: int = 0
    deadline: float | None = None       # time.time() after which no call may start; None: no wall-clock cap
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def reserve(self, want_tokens: int) -> int:
        """Count one call; return how many completion tokens it may use (<= want_tokens)."""
        with self._lock:
            if self.deadline is not None and time.time() >= self.deadline:
                raise BudgetExceeded("the migration's time budget is spent: the call was not made")
            if self.max_calls is not None and self.calls >= self.max_calls:
                raise BudgetExceeded(f"LLM call budget spent ({self.calls}/{self.max_calls} calls)")
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                raise BudgetExceeded(f"LLM token budget spent ({self.tokens}/{self.max_tokens} tokens)")
            self.calls += 1
            if self.max_tokens is None:
                return want_tokens
            return max(1, min(want_tokens, self.max_tokens - self.tokens))

    def charge(self, tokens_in: int, tokens_out: int) -> None:
        with self._lock:
            self.tokens += int(tokens_in) + int(tokens_out)

    def time_left(self) -> float | None:
        """Seconds until the deadline (negative once it has passed); None without a deadline."""
        return None if self.deadline is None else self.deadline - time.time()

    def remaining(self) -> dict:
        with self._lock:
            return {"calls": None if self.max_calls is None else self.max_calls - self.calls,
                    "tokens": None if self.max_tokens is None else self.max_tokens - self.tokens}

    def to_json(self) -> dict:
        return {"max_calls": self.max_calls, "max_tokens": self.max_tokens, "calls": self.calls,
                "tokens": self.tokens, "deadline": self.deadline}
