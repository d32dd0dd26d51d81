"""The provenance event of one LLM call (DESIGN §3.4), built here and handed to a log sink.

Every layer that calls a model accepts ``log: Callable[[dict], None] | None``; the migration
driver passes its provenance writer (e.g. ``lambda ev: plog.event(**ev)`` adapted to its API),
tests pass ``list.append``. Events are redacted before they leave this module.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from .base import normalize_messages, prompt_sha256
from .redact import redact

LogSink = Callable[[dict], None]

# verdicts an llm_call event may carry (docs/llm.md explains each)
VERDICTS = ("passed", "failed_test", "candidate", "rejected_garbage", "rejected_entry", "rejected_parse",
            "rejected_structure", "rejected_duplicate", "error_timeout", "error_http", "error_budget",
            "error_unavailable", "error_replay_miss", "error")


def llm_event(*, backend: str, model: str, messages: Sequence[dict], response: str | None,
              tokens_in: int = 0, tokens_out: int = 0, latency_s: float = 0.0, verdict: str,
              section_ids: Sequence[str] = (), pass_name: str | None = None, target: str | None = None,
              attempt: int = 0, seed: int | None = None, detail: str | None = None,
              extra: dict[str, Any] | None = None) -> dict:
    """The JSON object for one call: type "llm_call", backend, model, prompt (the messages),
    prompt_sha256 (what replay looks up), retrieved section ids, response, tokens, latency, verdict."""
    msgs = normalize_messages(messages)
    ev: dict[str, Any] = {
        "type": "llm_call",
        "time": round(time.time(), 3),
        "backend": backend,
        "model": model,
        "pass": pass_name,
        "target": target,
        "attempt": attempt,
        "seed": seed,
        "prompt": msgs,
        # the hash is of the prompt as sent, before redaction, so replay finds it again
        "prompt_sha256": prompt_sha256(msgs),
        "section_ids": list(section_ids),
        "response": response,
        "tokens": {"in": int(tokens_in), "out": int(tokens_out)},
        "latency_s": round(float(latency_s), 4),
        "verdict": verdict,
    }
    if detail:
        ev["detail"] = detail[:4000]
    if extra:
        ev.update(extra)
    return redact(ev)


def emit(log: LogSink | None, event: dict) -> None:
    """Hand an event to the sink (if any). Sink errors propagate: a log that cannot be written is a real error."""
    if log is None:
        return
    log(event)
