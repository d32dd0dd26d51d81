"""The backend protocol every LLM source implements, and the errors they raise.

A backend turns a chat (a list of ``{"role", "content"}`` messages) into one
:class:`Completion`. Everything above this layer (prompt building, parsing, testing,
logging) is backend-agnostic, so a recorded log can stand in for a live model (``replay``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

Message = dict  # {"role": "system" | "user" | "assistant", "content": str}

DEFAULT_MAX_TOKENS = 2048
DEFAULT_SEED = 0


@dataclass
class Completion:
    """One answer: its text, the tokens it cost, and how long it took."""
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)  # e.g. finish_reason, retries, replayed


@runtime_checkable
class Backend(Protocol):
    """``complete(messages, *, max_tokens, seed) -> Completion``; ``name`` and ``model`` for the log."""
    name: str
    model: str

    def complete(self, messages: Sequence[Message], *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 seed: int = DEFAULT_SEED) -> Completion: ...


class LLMError(Exception):
    """Base class: a call that produced no usable completion. ``kind`` goes into the log's verdict."""
    kind = "error"


class BackendUnavailable(LLMError):
    """The backend's package or model is missing, or the configuration is incomplete."""
    kind = "unavailable"


class BackendTimeout(LLMError):
    """Every attempt timed out (or the connection failed) within the retry bound."""
    kind = "timeout"


class BackendHTTPError(LLMError):
    """The endpoint answered with an error status that retrying did not cure."""
    kind = "http_error"

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class BudgetExceeded(LLMError):
    """The per-migration budget of calls or tokens is spent."""
    kind = "budget"


class ReplayMiss(LLMError):
    """The replay log holds no (further) answer for this prompt."""
    kind = "replay_miss"


def normalize_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Plain ``[{"role", "content"}]`` with string contents, in order (what is hashed and logged)."""
    out = []
    for m in messages:
        out.append({"role": str(m.get("role", "user")), "content": str(m.get("content", ""))})
    return out


def prompt_sha256(messages: Sequence[Message]) -> str:
    """The prompt's identity: sha256 of its canonical JSON. Replay looks answers up by it."""
    canon = json.dumps(normalize_messages(messages), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def approx_tokens(text: str) -> int:
    """A rough token count (4 characters a token) for backends that report none."""
    return max(1, (len(text) + 3) // 4) if text else 0
