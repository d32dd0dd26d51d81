"""Any OpenAI-compatible chat-completions endpoint, through the ``openai`` package.

Base URL and key come from the options, else ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. The
client's own retries are switched off; this module retries itself (bounded, exponential
backoff with a cap, honouring ``Retry-After``) on 429, 5xx, timeouts and dropped
connections, so every attempt is counted and the total wait is predictable. Decoding is
deterministic by default: temperature 0 and a fixed seed (endpoints that ignore ``seed`` are
still greedy). With a :class:`Budget` that has a ``deadline``, each attempt's HTTP timeout is
``min(timeout_s, time left)``, no retry or backoff sleep runs past it, and a call cut that way
raises :class:`BudgetExceeded` (not a timeout of the endpoint).
"""
from __future__ import annotations

import os
import time
from typing import Callable, Sequence

from .base import (DEFAULT_MAX_TOKENS, DEFAULT_SEED, BackendHTTPError, BackendTimeout, BackendUnavailable,
                   BudgetExceeded, Completion, Message, approx_tokens, normalize_messages)
from .budget import Budget
from .redact import register_secret

RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend:
    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout_s: float = 60.0, max_retries: int = 3, backoff_s: float = 1.0, backoff_max_s: float = 20.0,
                 temperature: float = 0.0, budget: Budget | None = None,
                 sleep: Callable[[float], None] = time.sleep, client=None):
        if not model:
            raise BackendUnavailable("openai backend needs a model name: --llm openai:MODEL")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url is None:
                raise BackendUnavailable("openai backend: no API key (set OPENAI_API_KEY or pass api_key) and no "
                                         "OPENAI_BASE_URL for a local server")
            key = "not-needed"  # local servers often accept any key; the client insists on one
        else:
            register_secret(key)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.backoff_max_s = float(backoff_max_s)
        self.temperature = float(temperature)
        self.budget = budget
        self._sleep = sleep
        if client is None:
            try:
                import openai
            except ImportError as e:  # pragma: no cover - openai is a core dependency
                raise BackendUnavailable(f"the openai package is not installed ({e}): pip install openai") from e
            client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0)
        self._client = client

    def describe(self) -> dict:
        """What the provenance header records (never the key)."""
        return {"backend": self.name, "model": self.model, "base_url": self.base_url, "timeout_s": self.timeout_s,
                "max_retries": self.max_retries, "temperature": self.temperature}

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        d = min(self.backoff_max_s, self.backoff_s * (2 ** attempt))
        if retry_after is not None:
            d = min(self.backoff_max_s, max(d, retry_after))
        return d

    def complete(self, messages: Sequence[Message], *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 seed: int = DEFAULT_SEED) -> Completion:
        import openai
        msgs = normalize_messages(messages)
        if self.budget is not None:
            max_tokens = self.budget.reserve(max_tokens)
        t0 = time.monotonic()
        last: Exception | None = None
        retries = 0

        def spent(what: str) -> BudgetExceeded:
            return BudgetExceeded(f"the migration's time budget is spent: {what} ({retries + 1} attempt(s))")

        for attempt in range(self.max_retries + 1):
            retry_after = None
            wait = self.timeout_s
            left = self.budget.time_left() if self.budget is not None else None
            if left is not None:
                if left <= 0:
                    raise spent(f"no attempt after the last error ({last})" if last else "the call was not made")
                wait = min(wait, left)
            try:
                r = self._client.chat.completions.create(
                    model=self.model, messages=msgs, temperature=self.temperature, seed=seed,
                    max_tokens=max_tokens, n=1, timeout=wait)
                text = ""
                finish = None
                if r.choices:
                    text = r.choices[0].message.content or ""
                    finish = r.choices[0].finish_reason
                usage = getattr(r, "usage", None)
                tin = getattr(usage, "prompt_tokens", None) if usage else None
                tout = getattr(usage, "completion_tokens", None) if usage else None
                tin = int(tin) if tin is not None else sum(approx_tokens(m["content"]) for m in msgs)
                tout = int(tout) if tout is not None else approx_tokens(text)
                if self.budget is not None:
                    self.budget.charge(tin, tout)
                return Completion(text=text, tokens_in=tin, tokens_out=tout, latency_s=time.monotonic() - t0,
                                  meta={"finish_reason": finish, "retries": retries,
                                        "system_fingerprint": getattr(r, "system_fingerprint", None)})
            except openai.APITimeoutError as e:       # subclass of APIConnectionError: test it first
                if wait < self.timeout_s:
                    raise spent(f"the endpoint had not answered when the call was cut after {wait:.3g} s") from None
                last = BackendTimeout(f"timed out after {self.timeout_s:g} s")
            except openai.APIConnectionError as e:
                last = BackendTimeout(f"connection failed: {type(e).__name__}")
            except openai.APIStatusError as e:
                status = getattr(e, "status_code", None)
                last = BackendHTTPError(f"HTTP {status}: {_short(e)}", status)
                if status not in RETRY_STATUSES and not (status and status >= 500):
                    raise last from None
                ra = e.response.headers.get("retry-after") if getattr(e, "response", None) is not None else None
                try:
                    retry_after = float(ra) if ra is not None else None
                except ValueError:
                    retry_after = None
            if attempt < self.max_retries:
                delay = self._delay(attempt, retry_after)
                left = self.budget.time_left() if self.budget is not None else None
                if left is not None and left <= delay:
                    raise spent(f"no retry after {last}")
                retries += 1
                self._sleep(delay)
        assert last is not None
        if retries:
            last.args = (f"{last.args[0]} ({retries + 1} attempts, {time.monotonic() - t0:.1f} s in all)",)
        raise last


def _short(e: Exception) -> str:
    msg = str(getattr(e, "message", "") or e)
    return msg[:300]
