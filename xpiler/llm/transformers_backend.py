"""A local Hugging Face model directory, run in this process (optional extra: torch + transformers).

Imports are lazy: xpiler works without these packages, and ``--llm transformers:PATH`` says
plainly what to install when they are missing. Decoding is greedy (deterministic); the seed
is still set so sampling-based configs saved with a model cannot make runs differ.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

from .base import (DEFAULT_MAX_TOKENS, DEFAULT_SEED, BackendUnavailable, Completion, Message,
                   normalize_messages)
from .budget import Budget

INSTALL_HINT = "pip install torch transformers   (or: pip install 'xpiler[llm]')"


def _render_plain(msgs: list[dict]) -> str:
    parts = [f"### {m['role']}\n{m['content']}\n" for m in msgs]
    return "\n".join(parts) + "\n### assistant\n"


class TransformersBackend:
    name = "transformers"

    def __init__(self, path: str, *, device: str = "cpu", budget: Budget | None = None, max_input_tokens: int = 8192,
                 model=None, tokenizer=None):
        self.model = str(path)
        self.budget = budget
        self.max_input_tokens = max_input_tokens
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as e:
            raise BackendUnavailable(f"the transformers backend needs torch and transformers ({e}); {INSTALL_HINT}") from e
        if model is None or tokenizer is None:
            p = Path(path)
            if not p.is_dir():
                raise BackendUnavailable(f"transformers backend: model directory not found: {path}")
            from transformers import AutoModelForCausalLM, AutoTokenizer
            try:
                tokenizer = AutoTokenizer.from_pretrained(str(p))
                model = AutoModelForCausalLM.from_pretrained(str(p))
            except Exception as e:  # corrupt or incomplete directory
                raise BackendUnavailable(f"transformers backend: cannot load {path}: {e}") from e
        self._tok = tokenizer
        self._model = model.to(device).eval()
        self._device = device

    def describe(self) -> dict:
        return {"backend": self.name, "model": self.model, "device": self._device}

    def _encode(self, msgs: list[dict]):
        tok = self._tok
        if getattr(tok, "chat_template", None):
            try:
                ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
                if not hasattr(ids, "shape"):          # newer versions may return a BatchEncoding
                    ids = ids["input_ids"]
                return ids
            except Exception:
                pass
        return tok(_render_plain(msgs), return_tensors="pt")["input_ids"]

    def complete(self, messages: Sequence[Message], *, max_tokens: int = DEFAULT_MAX_TOKENS,
                 seed: int = DEFAULT_SEED) -> Completion:
        import torch
        msgs = normalize_messages(messages)
        if self.budget is not None:
            max_tokens = self.budget.reserve(max_tokens)
        t0 = time.monotonic()
        torch.manual_seed(seed)
        ids = self._encode(msgs)
        if ids.shape[-1] > self.max_input_tokens:   # keep the end: the program and the question are there
            ids = ids[:, -self.max_input_tokens:]
        ids = ids.to(self._device)
        pad = getattr(self._tok, "pad_token_id", None)
        if pad is None:
            pad = getattr(self._tok, "eos_token_id", None)
        with torch.no_grad():
            out = self._model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=int(max_tokens),
                                       do_sample=False, pad_token_id=pad)
        new = out[0, ids.shape[-1]:]
        text = self._tok.decode(new, skip_special_tokens=True)
        tin, tout = int(ids.shape[-1]), int(new.shape[-1])
        if self.budget is not None:
            self.budget.charge(tin, tout)
        return Completion(text=text, tokens_in=tin, tokens_out=tout, latency_s=time.monotonic() - t0,
                          meta={"device": self._device})
