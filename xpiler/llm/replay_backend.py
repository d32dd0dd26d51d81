"""Answers taken from a provenance log: the ``llm_call`` events, looked up by prompt hash.

``xpiler replay LOG`` and ``--llm replay:LOG`` use it: the same prompt gets the same answer
(several calls with one prompt get their recorded answers in order), no model is needed,
and a prompt the log never saw is a :class:`ReplayMiss`, never an invented answer.
Calls that ended in an error (timeout, budget…) were recorded without a response and are
replayed as the same error kind, so fallbacks replay too.
"""
from __future__ import annotations

import json
from collections import defaultdict, deque
from pathlib import Path
from typing import Iterable, Sequence

from .base import (DEFAULT_MAX_TOKENS, DEFAULT_SEED, BackendHTTPError, BackendTimeout, BackendUnavailable,
                   BudgetExceeded, Completion, LLMError, Message, ReplayMiss, prompt_sha256)

_ERRORS = {"error_timeout": BackendTimeout, "error_http": BackendHTTPError, "error_budget": BudgetExceeded,
           "error_unavailable": BackendUnavailable,
           "error_http_error": BackendHTTPError}   # the name logs written before the verdict table used


def load_llm_events(source: str | Path | Iterable[dict]) -> list[dict]:
    """The llm_call events of a JSONL log (header and other events skipped; a torn last line ignored)."""
    if isinstance(source, (str, Path)):
        p = Path(source)
        if not p.is_file():
            raise BackendUnavailable(f"replay backend: log not found: {source}")
        events = []
        with open(p, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    break
                if isinstance(obj, dict) and obj.get("type") == "llm_call":
                    events.append(obj)
        return events
    return [e for e in source if isinstance(e, dict) and e.get("type") == "llm_call"]


class ReplayBackend:
    name = "replay"

    def __init__(self, source: str | Path | Iterable[dict], *, model: str | None = None):
        events = load_llm_events(source)
        self.source = str(source) if isinstance(source, (str, Path)) else "<events>"
        self._answers: dict[str, deque] = defaultdict(deque)
        models = []
        for ev in events:
            h = ev.get("prompt_sha256")
            if not h:
                continue
            self._answers[h].append(ev)
            if ev.get("model"):
                models.append(str(ev["model"]))
        self.model = model or (models[0] if models else "replay")
        self.recorded = len(events)

    def describe(self) -> dict:
        return {"backend": self.name, "model": self.model, "log": self.source, "recorded_calls": self.recorded}

    def complete(self, messages: Sequence[Message], *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 seed: int = DEFAULT_SEED) -> Completion:
        h = prompt_sha256(messages)
        q = self._answers.get(h)
        if not q:
            raise ReplayMiss(f"replay: no recorded answer for prompt {h[:12]}…")
        ev = q.popleft()
        resp = ev.get("response")
        if resp is None:
            err = _ERRORS.get(str(ev.get("verdict")), LLMError)
            raise err(f"replayed error: {ev.get('detail') or ev.get('verdict')}")
        tok = ev.get("tokens") or {}
        return Completion(text=str(resp), tokens_in=int(tok.get("in", 0)), tokens_out=int(tok.get("out", 0)),
                          latency_s=0.0, meta={"replayed": True, "recorded_latency_s": ev.get("latency_s")})
