"""Secrets never reach a log: ``redact(obj)`` returns a copy with API keys and auth headers removed.

Three nets, all applied to every string and mapping in ``obj`` (recursively):
  * mapping keys that name a secret (``api_key``, ``Authorization``, ``x-api-key``, ``password``…)
    have their value replaced whole — token *counts* (``tokens_in``, ``max_tokens``) are kept;
  * values shaped like credentials (``sk-…``, ``Bearer …``, ``hf_…``, ``Basic …``) anywhere in text;
  * the exact values of secrets this process knows: keys handed to a backend
    (:func:`register_secret`) and environment variables whose names look secret
    (``OPENAI_API_KEY``, ``*_TOKEN``, ``*_SECRET``…), so a key of any shape is caught even when
    it was pasted into a prompt.
"""
from __future__ import annotations

import os
import re
import threading
from typing import Any, Iterable

REDACTED = "<redacted>"

_SECRET_KEY = re.compile(r"(api[_-]?key|authorization|proxy[_-]authorization|password|passwd|secret|"
                         r"bearer|access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token|"
                         r"^token$|cookie)", re.I)
_COUNT_KEYS = {"tokens", "tokens_in", "tokens_out", "max_tokens", "prompt_tokens", "completion_tokens",
               "total_tokens", "max_new_tokens"}
_SECRET_ENV = re.compile(r"(api[_-]?key|token|secret|password|passwd|credential)", re.I)
_SECRET_SHAPES = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),                  # OpenAI-style keys
    re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]{6,}", re.I),
    re.compile(r"\bhf_[A-Za-z0-9]{8,}"),                      # Hugging Face tokens
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{16,})"),            # GitHub tokens
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),                      # AWS access key ids
]

_known: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a secret value (e.g. the API key a backend was given) so redact() removes it anywhere."""
    if value and isinstance(value, str) and len(value) >= 8:
        with _lock:
            _known.add(value)


def _env_secrets() -> list[str]:
    return [v for k, v in os.environ.items() if v and len(v) >= 6 and _SECRET_ENV.search(k)]


def _scrub(s: str, values: Iterable[str]) -> str:
    for v in values:
        if v in s:
            s = s.replace(v, REDACTED)
    for pat in _SECRET_SHAPES:
        s = pat.sub(REDACTED, s)
    return s


def redact(obj: Any, extra: Iterable[str] = ()) -> Any:
    """A copy of ``obj`` (dicts, lists, tuples, strings, numbers) with every secret replaced by '<redacted>'."""
    with _lock:
        values = set(_known)
    values.update(_env_secrets())
    values.update(v for v in extra if v)
    # longest first, so a secret that contains another is removed whole
    ordered = sorted(values, key=len, reverse=True)
    return _redact(obj, ordered)


def _redact(obj: Any, values: list[str]) -> Any:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            ks = str(k)
            if ks.lower() not in _COUNT_KEYS and _SECRET_KEY.search(ks) and v not in (None, "", 0):
                out[k] = REDACTED
            else:
                out[k] = _redact(v, values)
        return out
    if isinstance(obj, (list, tuple)):
        return [_redact(v, values) for v in obj]
    if isinstance(obj, str):
        return _scrub(obj, values)
    if isinstance(obj, bytes):
        return _scrub(obj.decode("utf-8", "replace"), values)
    return obj
