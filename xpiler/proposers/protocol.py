"""The proposer protocol shared by the symbolic rewrites and the LLM (DESIGN §5).

A proposer answers one question: *given this program, this pass and this target, which
programs could the pass produce?* It returns :class:`Candidate` objects; it never decides
whether a candidate is correct (the tests do) — except that an LLM proposer screens out
answers that are not programs at all, and may run the test hook it is given to retry once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

PASSES = ("loop_recovery", "binding", "split", "fuse", "reorder", "expansion", "contraction", "cache",
          "pipeline", "tensorize", "detensorize")
DIALECTS = ("cuda", "hip", "bang", "c")


@dataclass
class Candidate:
    """One proposed program. ``program_text`` is complete source in the candidate's dialect."""
    program_text: str
    proposer: str                      # "symbolic" | "llm" | a custom name
    pass_name: str
    params: dict[str, Any] = field(default_factory=dict)   # the pass parameters (tile, loop, factor…)
    meta: dict[str, Any] = field(default_factory=dict)     # backend, model, attempt, verdict, fallback…

    def to_json(self) -> dict:
        return {"proposer": self.proposer, "pass": self.pass_name, "params": dict(self.params),
                "meta": {k: v for k, v in self.meta.items() if _jsonable(v)}, "program_text": self.program_text}


def _jsonable(v) -> bool:
    return isinstance(v, (str, int, float, bool, type(None), list, dict, tuple))


# check(candidate) -> None when the candidate passes its tests, else the feedback (compiler error
# or failing test, as text) that the LLM gets on its one retry.
CheckFn = Callable[[Candidate], "str | None"]


@dataclass
class PassContext:
    """What the driver knows when it asks for candidates. Every field is optional.

    entry           kernel function name (the answer must define it)
    source_dialect  dialect of the program handed in; out_dialect: of the candidates (default: target)
    facts           facts the tool computed (trip counts, tile/split bounds, buffer sizes…), shown verbatim
    intrinsics      names of the intrinsics in play (their exact signatures are added to the facts)
    params          the pass parameters chosen by the enumerator/search (e.g. {"loop": "i", "factor": 16})
    spec            the kernel's Spec (sizes and buffer shapes become facts)
    excerpts        pre-retrieved manual sections [(id, text)]; when None the proposer retrieves
    example         a worked example replacing the template's own
    check           test hook: candidate -> None (pass) | feedback text (fail)
    parse           parser hook: (text, dialect) -> anything, raising on a parse error
    structure_check (original_text, candidate_text, pass_name) -> None | reason the pass did not happen
    seed            decoding seed
    """
    entry: str | None = None
    source_dialect: str | None = None
    out_dialect: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    intrinsics: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    spec: Any = None
    excerpts: list | None = None
    example: str | None = None
    check: CheckFn | None = None
    parse: Callable[[str, str], Any] | None = None
    structure_check: Callable[[str, str, str], "str | None"] | None = None
    seed: int = 0

    @classmethod
    def from_any(cls, ctx: "PassContext | Mapping[str, Any] | None") -> "PassContext":
        if ctx is None:
            return cls()
        if isinstance(ctx, cls):
            return ctx
        if isinstance(ctx, Mapping):
            known = {k: v for k, v in ctx.items() if k in cls.__dataclass_fields__}
            c = cls(**known)
            if c.entry is None and c.spec is not None:
                c.entry = getattr(c.spec, "entry", None)
            return c
        raise TypeError(f"context must be a PassContext or a mapping, not {type(ctx).__name__}")


@runtime_checkable
class Proposer(Protocol):
    """``propose(pass_name, program, target, context) -> list[Candidate]``; ``name`` labels candidates."""
    name: str

    def propose(self, pass_name: str, program: Any, target: str,
                context: PassContext | Mapping[str, Any] | None = None) -> list[Candidate]: ...


class FunctionProposer:
    """Adapts a plain function (e.g. a pass module's symbolic rewrite) to the protocol.

    ``fn(pass_name, program, target, context)`` may return Candidates, program texts, or a mix.
    """

    def __init__(self, fn: Callable[..., Sequence[Any]], name: str = "symbolic"):
        self.fn = fn
        self.name = name

    def propose(self, pass_name, program, target, context=None) -> list[Candidate]:
        ctx = PassContext.from_any(context)
        out = []
        for c in self.fn(pass_name, program, target, ctx) or []:
            if isinstance(c, Candidate):
                out.append(c)
            else:
                out.append(Candidate(program_text=str(c), proposer=self.name, pass_name=pass_name,
                                     params=dict(ctx.params)))
        return out


def program_text(program: Any) -> str:
    """The source text of ``program``: a string as is, else its ``text``/``source`` attribute,
    else the IR printer's output when the front end offers one, else ``str(program)``."""
    if isinstance(program, str):
        return program
    for attr in ("program_text", "text", "source"):
        v = getattr(program, attr, None)
        if isinstance(v, str):
            return v
    for mod, fn in (("xpiler.printers", "print_program"), ("xpiler.printers", "to_source")):
        try:
            m = __import__(mod, fromlist=[fn])
            f = getattr(m, fn, None)
            if callable(f):
                return str(f(program))
        except Exception:
            pass
    return str(program)
