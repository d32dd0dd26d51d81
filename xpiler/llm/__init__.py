"""LLM backends for the proposers (DESIGN §5): one protocol, four sources.

``make_backend("openai:gpt-4o-mini")``, ``make_backend("transformers:/models/coder")``,
``make_backend("llamacpp:/models/coder.gguf")``, ``make_backend("replay:out/provenance.jsonl")``
(or ``make_backend("replay", log=...)``). Every backend exposes ``name``, ``model`` and
``complete(messages, *, max_tokens, seed) -> Completion``; the optional ones import their
packages only when chosen.
"""
from __future__ import annotations

from .base import (Backend, BackendHTTPError, BackendTimeout, BackendUnavailable, BudgetExceeded, Completion,
                   LLMError, ReplayMiss, prompt_sha256)
from .budget import Budget
from .events import llm_event
from .redact import redact, register_secret

BACKENDS = ("openai", "transformers", "llamacpp", "replay")

__all__ = ["Backend", "BackendHTTPError", "BackendTimeout", "BackendUnavailable", "Budget", "BudgetExceeded",
           "Completion", "LLMError", "ReplayMiss", "llm_event", "make_backend", "parse_llm_option",
           "prompt_sha256", "redact", "register_secret", "BACKENDS"]


def parse_llm_option(value: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` -> ("openai", "gpt-4o"); ``"replay"`` -> ("replay", ""). Raises ValueError."""
    if not value or not value.strip():
        raise ValueError("--llm needs BACKEND:MODEL (backends: " + ", ".join(BACKENDS) + ")")
    backend, _, model = value.strip().partition(":")
    backend = backend.strip().lower()
    if backend not in BACKENDS:
        raise ValueError(f"unknown LLM backend '{backend}' (choose from {', '.join(BACKENDS)})")
    if backend in ("openai", "transformers", "llamacpp") and not model:
        raise ValueError(f"--llm {backend} needs a model: {backend}:MODEL")
    return backend, model


def make_backend(value: str, *, budget: Budget | None = None, log_path: str | None = None, **options) -> Backend:
    """Build the backend named by a ``--llm`` value. ``options`` go to the backend's constructor
    (openai: base_url, api_key, timeout_s, max_retries, backoff_s…; transformers: device; llamacpp: n_ctx).
    ``replay`` takes its log from the value (``replay:LOG``) or from ``log_path`` (``--resume LOG``)."""
    backend, model = parse_llm_option(value)
    if backend == "openai":
        from .openai_backend import OpenAIBackend
        return OpenAIBackend(model, budget=budget, **options)
    if backend == "transformers":
        from .transformers_backend import TransformersBackend
        return TransformersBackend(model, budget=budget, **options)
    if backend == "llamacpp":
        from .llamacpp_backend import LlamaCppBackend
        return LlamaCppBackend(model, budget=budget, **options)
    from .replay_backend import ReplayBackend
    src = model or log_path
    if not src:
        raise BackendUnavailable("replay backend needs a log: --llm replay:LOG (or --resume LOG)")
    return ReplayBackend(src, **options)
