"""A local GGUF model through llama-cpp-python (optional extra; imported only when used).

Build note for this project's machines: the default llama.cpp build crashes in AMX code on
Sapphire Rapids; install with
``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
pip install llama-cpp-python`` (see docs/llm.md; llama.cpp has no plain ``GGML_AMX`` option, and
``benchmarks/setup_local_llm.sh`` builds a pinned version and fetches a small code model).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

from .base import (DEFAULT_MAX_TOKENS, DEFAULT_SEED, BackendUnavailable, Completion, Message, approx_tokens,
                   normalize_messages)
from .budget import Budget

INSTALL_HINT = ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" '
                'pip install llama-cpp-python (builds from source, about 5-10 minutes)')


class LlamaCppBackend:
    name = "llamacpp"

    def __init__(self, path: str, *, n_ctx: int = 8192, n_threads: int | None = None, budget: Budget | None = None,
                 llama=None):
        self.model = str(path)
        self.budget = budget
        if llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as e:
                raise BackendUnavailable(f"the llamacpp backend needs llama-cpp-python ({e}); {INSTALL_HINT}") from e
            if not Path(path).is_file():
                raise BackendUnavailable(f"llamacpp backend: GGUF file not found: {path}")
            try:
                llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=DEFAULT_SEED, verbose=False)
            except Exception as e:
                raise BackendUnavailable(f"llamacpp backend: cannot load {path}: {e}") from e
        self._llama = llama

    def describe(self) -> dict:
        return {"backend": self.name, "model": self.model}

    def complete(self, messages: Sequence[Message], *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 seed: int = DEFAULT_SEED) -> Completion:
        msgs = normalize_messages(messages)
        if self.budget is not None:
            max_tokens = self.budget.reserve(max_tokens)
        t0 = time.monotonic()
        r = self._llama.create_chat_completion(messages=msgs, temperature=0.0, top_k=1, seed=seed,
                                               max_tokens=int(max_tokens))
        choice = (r.get("choices") or [{}])[0]
        text = (choice.get("message") or {}).get("content") or ""
        usage = r.get("usage") or {}
        tin = int(usage.get("prompt_tokens") or sum(approx_tokens(m["content"]) for m in msgs))
        tout = int(usage.get("completion_tokens") or approx_tokens(text))
        if self.budget is not None:
            self.budget.charge(tin, tout)
        return Completion(text=text, tokens_in=tin, tokens_out=tout, latency_s=time.monotonic() - t0,
                          meta={"finish_reason": choice.get("finish_reason")})
