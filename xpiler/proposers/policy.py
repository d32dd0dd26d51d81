"""``--proposer {symbolic,llm,both}``: which proposers are asked, in which order, and the fallback.

symbolic  the symbolic rewrite only (default; offline, deterministic).
llm       the LLM first, for every pass. When the context has a test hook, the LLM's
          candidates are tested and the symbolic rewrite is asked only if none passes (or the
          LLM gave nothing usable: garbage, timeout, spent budget). Without a test hook the
          answer is ordered: LLM candidates, then the symbolic ones marked ``fallback`` — the
          caller tests in order and keeps the first that passes.
both      both are offered (symbolic first, then LLM; identical programs once), for the tests
          and the search to choose from.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from ..llm.events import LogSink
from .protocol import Candidate, PassContext, Proposer

MODES = ("symbolic", "llm", "both")


def _key(text: str) -> str:
    return re.sub(r"\s+", "", text)


class PolicyProposer:
    """Combines an injected symbolic proposer and an optional LLM proposer under one mode."""

    def __init__(self, mode: str = "symbolic", *, symbolic: Proposer, llm: Proposer | None = None,
                 log: LogSink | None = None):
        if mode not in MODES:
            raise ValueError(f"--proposer must be one of {', '.join(MODES)}, not '{mode}'")
        if mode in ("llm", "both") and llm is None:
            raise ValueError(f"--proposer {mode} needs an LLM: give --llm BACKEND:MODEL")
        self.mode = mode
        self.symbolic = symbolic
        self.llm = llm
        self.log = log
        self.name = f"policy:{mode}"

    def _note(self, **fields) -> None:
        if self.log is not None:
            self.log({"type": "note", "what": "proposer_fallback", **fields})

    def propose(self, pass_name: str, program: Any, target: str,
                context: PassContext | Mapping[str, Any] | None = None) -> list[Candidate]:
        ctx = PassContext.from_any(context)
        if self.mode == "symbolic":
            return list(self.symbolic.propose(pass_name, program, target, ctx))
        if self.mode == "both":
            return _dedupe(list(self.symbolic.propose(pass_name, program, target, ctx))
                           + list(self.llm.propose(pass_name, program, target, ctx)))  # type: ignore[union-attr]
        # llm first
        llm_cands = list(self.llm.propose(pass_name, program, target, ctx))  # type: ignore[union-attr]
        if ctx.check is not None:
            good = [c for c in llm_cands if c.meta.get("verdict") == "passed"]
            if good:
                return good
            sym = list(self.symbolic.propose(pass_name, program, target, ctx))
            for c in sym:
                c.meta["fallback"] = True
            self._note(pass_name=pass_name, reason="no LLM candidate passed its tests" if llm_cands
                       else "the LLM gave no usable candidate", symbolic_candidates=len(sym))
            return sym
        sym = list(self.symbolic.propose(pass_name, program, target, ctx))
        for c in sym:
            c.meta["fallback"] = True
        if not llm_cands:
            self._note(pass_name=pass_name, reason="the LLM gave no usable candidate", symbolic_candidates=len(sym))
        return _dedupe(llm_cands + sym)


def _dedupe(cands: list[Candidate]) -> list[Candidate]:
    seen: set[str] = set()
    out = []
    for c in cands:
        k = _key(c.program_text)
        if k in seen:
            continue
        seen.add(k)
        out.append(c)
    return out


def make_policy(mode: str, *, symbolic: Proposer, llm_option: str | None = None, log: LogSink | None = None,
                budget=None, replay_log: str | None = None, backend_options: dict | None = None,
                retrieve=True) -> PolicyProposer:
    """Build the policy from CLI values: ``--proposer MODE`` and ``--llm BACKEND:MODEL``."""
    llm = None
    if mode in ("llm", "both") or llm_option:
        if not llm_option:
            raise ValueError(f"--proposer {mode} needs --llm BACKEND:MODEL")
        from ..llm import make_backend
        from .llm_proposer import LLMProposer
        backend = make_backend(llm_option, budget=budget, log_path=replay_log, **(backend_options or {}))
        llm = LLMProposer(backend, log=log, retrieve=retrieve)
    return PolicyProposer(mode, symbolic=symbolic, llm=llm, log=log)
