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

#: every verdict an llm_call event can carry, and what it means. The list in docs/llm.md is printed
#: from this table (``python -m xpiler.llm.events``); tests/test_exit_codes.py checks that the doc is
#: current and that the proposer and the backends produce no verdict outside it.
VERDICTS: dict[str, str] = {
    "passed": "screened, compiled and run against the reference: it passed",
    "failed_test": "well-formed, but it failed its tests (the failure is fed back for one retry)",
    "candidate": "passed every screen; not tested here (no test hook was given)",
    "rejected_garbage": "empty, or no function definition in the answer",
    "rejected_entry": "the entry function is not defined in the answer",
    "rejected_parse": "unbalanced brackets, an unterminated comment or string, or the front end rejects it",
    "rejected_structure": "the program is unchanged, or the pass's signature change is absent",
    "error_timeout": "every attempt timed out (or could not connect) within the retry bound",
    "error_http": "the endpoint answered with an HTTP error status that retrying did not cure",
    "error_budget": "the call or token budget, or the migration's --budget deadline, is spent",
    "error_unavailable": "the backend's package, model or configuration is missing",
    "error_replay_miss": "replay: the log holds no (further) answer for this prompt",
    "error": "the backend failed in another way (an unexpected exception; `detail` has its type and message)",
}

#: ``LLMError.kind`` (xpiler/llm/base.py) -> the verdict its failed call is logged with
ERROR_VERDICTS = {"timeout": "error_timeout", "http_error": "error_http", "budget": "error_budget",
                  "unavailable": "error_unavailable", "replay_miss": "error_replay_miss", "error": "error"}


def error_verdict(kind: str) -> str:
    """The verdict of a call that raised an error of ``kind`` (unknown kinds: ``error``)."""
    return ERROR_VERDICTS.get(kind, "error")


def verdicts_markdown() -> str:
    """The verdict list of docs/llm.md, generated from ``VERDICTS``."""
    return "\n".join(f"- `{v}`: {why}." for v, why in VERDICTS.items()) + "\n"


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


if __name__ == "__main__":  # pragma: no cover
    import sys
    sys.stdout.write(verdicts_markdown())
