"""The LLM proposer: meta-prompt + facts + retrieved manual excerpts -> backend -> screened candidate.

One call per attempt, at most ``1 + retries`` attempts (default: one retry). An attempt's
answer is screened (see :mod:`.screen`); a screened answer becomes a Candidate and, when the
context carries a test hook, is tested at once. A rejection or a failing test is fed back
on the retry (the compiler error or the failing test, verbatim). Every call, whatever its
fate, becomes one ``llm_call`` event for the provenance log. Backend errors (timeout after
the retry bound, HTTP errors, spent budget, replay miss) end the proposal with no
candidates; the policy then falls back to the symbolic rewrite. Garbage never leaves here.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Mapping, Sequence

from ..llm.base import Backend, LLMError
from ..llm.events import LogSink, emit, error_verdict, llm_event
from .prompts import build_messages, feedback_message, load_template
from .protocol import Candidate, PassContext, program_text
from .screen import FENCE_LANG, bracket_error, defined_functions, extract_code, find_parser, pass_happened

RetrieveFn = Callable[[str, str, int], Sequence[Any]]


def default_retriever() -> RetrieveFn | None:
    """``xpiler.retrieval.retrieve(query, target, k)`` when that module is installed, else None."""
    try:
        from .. import retrieval  # type: ignore[attr-defined]
    except Exception:
        return None
    fn = getattr(retrieval, "retrieve", None)
    return fn if callable(fn) else None


def _section(item: Any, i: int) -> tuple[str, str]:
    """Normalize one retrieval hit: a (id, text) pair, a mapping, or an object with id/text attributes."""
    if isinstance(item, (tuple, list)) and len(item) >= 2:
        return str(item[0]), str(item[1])
    if isinstance(item, Mapping):
        sid = item.get("id") or item.get("section_id") or item.get("sid") or f"hit{i}"
        text = item.get("text") or item.get("body") or item.get("content") or ""
        return str(sid), str(text)
    sid = getattr(item, "id", None) or getattr(item, "section_id", None) or f"hit{i}"
    text = getattr(item, "text", None)
    if callable(text):  # retrieval's Section.text() renders the excerpt
        text = text()
    text = text or getattr(item, "body", None) or str(item)
    sig = getattr(item, "signature", None)
    if sig and str(sig) not in str(text):
        text = f"{sig}\n{text}"
    return str(sid), str(text)


class LLMProposer:
    """Proposes candidates for any of the eleven passes by asking an LLM backend."""
    name = "llm"

    def __init__(self, backend: Backend, *, log: LogSink | None = None, retrieve: RetrieveFn | None | bool = True,
                 k: int = 4, max_tokens: int = 2048, retries: int = 1, prompts_dir: str | None = None,
                 keep_failed: bool = False):
        self.backend = backend
        self.log = log
        self.retrieve = default_retriever() if retrieve is True else (retrieve or None)
        self.k = k
        self.max_tokens = max_tokens
        self.retries = retries
        self.prompts_dir = prompts_dir
        self.keep_failed = keep_failed  # return well-formed candidates that failed their test (for repair)
        # why the latest propose() ended without a candidate because of the backend (None: it did not):
        # {"kind": "timeout" | "budget" | "http_error" | …, "detail": str, "latency_s": float}
        self.last_error: dict | None = None

    # -- retrieval -------------------------------------------------------------------------------
    def query_for(self, pass_name: str, target: str, program: str, ctx: PassContext) -> str:
        from .intrinsics import intrinsics_in
        words = [pass_name.replace("_", " "), target] + list(ctx.intrinsics) + intrinsics_in(program)
        return " ".join(dict.fromkeys(w for w in words if w))

    def excerpts(self, pass_name: str, target: str, program: str, ctx: PassContext) -> tuple[list[tuple[str, str]], str | None]:
        if ctx.excerpts is not None:
            return [_section(x, i) for i, x in enumerate(ctx.excerpts)], None
        if self.retrieve is None:
            return [], None
        try:
            hits = self.retrieve(self.query_for(pass_name, target, program, ctx), target, self.k)
            return [_section(x, i) for i, x in enumerate(hits or [])], None
        except Exception as e:  # retrieval is an aid, not a requirement
            return [], f"retrieval failed: {type(e).__name__}: {e}"

    # -- screening -------------------------------------------------------------------------------
    def screen(self, answer: str, pass_name: str, original: str, target: str, ctx: PassContext,
               parser) -> tuple[str | None, str, str, Any]:
        """(code or None, verdict, detail, parsed IR or None). 'candidate' means it passed every screen."""
        out_d = ctx.out_dialect or target
        src_d = ctx.source_dialect or target
        code, where = extract_code(answer, out_d, ctx.entry)
        if code is None or not code.strip():
            return None, "rejected_garbage", "the answer is empty", None
        fns = defined_functions(code)
        if not fns:
            return None, "rejected_garbage", "the answer contains no function definition", None
        if ctx.entry and ctx.entry not in fns:
            return None, "rejected_entry", (f"the entry function `{ctx.entry}` is not defined "
                                            f"(found: {', '.join(dict.fromkeys(fns))})"), None
        err = bracket_error(code)
        if err:
            return None, "rejected_parse", err, None
        ir = None
        if parser is not None:
            try:
                ir = parser(code, out_d)
            except Exception as e:
                return None, "rejected_parse", f"{type(e).__name__}: {e}", None
        if ctx.structure_check is not None:
            why = ctx.structure_check(original, code, pass_name)
        else:
            why = pass_happened(pass_name, original, code, src_d, out_d)
        if why:
            return None, "rejected_structure", why, None
        return code, "candidate", where, ir

    def _parser_for(self, original: str, ctx: PassContext, target: str):
        if ctx.parse is not None:
            return ctx.parse
        parser = find_parser()
        if parser is None:
            return None
        try:  # trust the front end only if it accepts the (valid) input program
            parser(original, ctx.source_dialect or target)
        except Exception:
            return None
        return parser

    # -- the protocol ----------------------------------------------------------------------------
    def propose(self, pass_name: str, program: Any, target: str,
                context: PassContext | Mapping[str, Any] | None = None) -> list[Candidate]:
        ctx = PassContext.from_any(context)
        original = program_text(program)
        if ctx.entry is None:  # a copy: the caller's context is not modified
            fns = defined_functions(original)
            entry = getattr(ctx.spec, "entry", None) or (fns[0] if len(fns) == 1 else None)
            ctx = dataclasses.replace(ctx, entry=entry)
        excerpts, retrieval_note = self.excerpts(pass_name, target, original, ctx)
        section_ids = [sid for sid, _ in excerpts]
        messages = build_messages(pass_name, original, target, ctx, excerpts,
                                  template=load_template(pass_name, self.prompts_dir))
        language = FENCE_LANG.get(ctx.out_dialect or target, "c")
        parser = self._parser_for(original, ctx, target)
        backend_name = getattr(self.backend, "name", type(self.backend).__name__)
        model = getattr(self.backend, "model", "?")
        kept: list[Candidate] = []
        self.last_error = None

        for attempt in range(1 + max(0, self.retries)):
            t_call = time.monotonic()
            try:
                comp = self.backend.complete(messages, max_tokens=self.max_tokens, seed=ctx.seed)
            except Exception as e:  # an LLM failure is a failed proposal, never a dead migration
                waited = time.monotonic() - t_call   # what the call really cost, retries included
                kind = e.kind if isinstance(e, LLMError) else "error"
                detail = str(e) if isinstance(e, LLMError) else f"{type(e).__name__}: {e}"
                emit(self.log, llm_event(backend=backend_name, model=model, messages=messages, response=None,
                                         latency_s=waited, verdict=error_verdict(kind),
                                         section_ids=section_ids, pass_name=pass_name, target=target,
                                         attempt=attempt, seed=ctx.seed, detail=detail))
                self.last_error = {"kind": kind, "detail": detail, "latency_s": round(waited, 3)}
                return kept
            code, verdict, detail, ir = self.screen(comp.text, pass_name, original, target, ctx, parser)
            cand = None
            if code is not None:
                cand = Candidate(program_text=code, proposer=self.name, pass_name=pass_name, params=dict(ctx.params),
                                 meta={"backend": backend_name, "model": model, "attempt": attempt,
                                       "section_ids": section_ids, "extracted_from": detail})
                if ir is not None:
                    cand.meta["ir"] = ir  # the parsed program (front end), not serialized
                if ctx.check is not None:
                    fb = ctx.check(cand)
                    if fb is None:
                        verdict, detail = "passed", "tests passed"
                    else:
                        verdict, detail = "failed_test", str(fb)
                cand.meta["verdict"] = verdict
            note = detail if verdict not in ("candidate", "passed") else None
            if retrieval_note and attempt == 0:
                note = (note + "; " if note else "") + retrieval_note
            emit(self.log, llm_event(backend=backend_name, model=model, messages=messages, response=comp.text,
                                     tokens_in=comp.tokens_in, tokens_out=comp.tokens_out, latency_s=comp.latency_s,
                                     verdict=verdict, section_ids=section_ids, pass_name=pass_name, target=target,
                                     attempt=attempt, seed=ctx.seed, detail=note,
                                     extra={"backend_meta": {k: v for k, v in comp.meta.items()
                                                             if isinstance(v, (str, int, float, bool, type(None)))}}))
            if verdict in ("candidate", "passed"):
                return kept + [cand]  # type: ignore[list-item]
            if verdict == "failed_test" and self.keep_failed and cand is not None:
                cand.meta["feedback"] = detail
                kept.append(cand)
            messages = messages + [{"role": "assistant", "content": comp.text},
                                   {"role": "user", "content": feedback_message(verdict, detail, language)}]
        return kept
