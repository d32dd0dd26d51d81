"""What every pass module shares: the typed refusal, the registry, and the pass protocol.

A pass module ``passes/<name>.py`` defines (Exo's scheduling primitives are the model):

- ``NAME``: its name (one of :data:`PASSES`);
- ``apply(program, **params) -> Program``: a pure rewrite; it calls ``check`` first;
- ``check(program, **params) -> None``: the named legality check; raises :class:`PassError`
  naming the loop/buffer and its source location, and saying why;
- ``candidates(program, target) -> list[dict]``: legal parameter sets for the search;
- its meta-prompt for the LLM proposer lies in ``passes/prompts/<name>.md``.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from xpiler.diagnostics import XPError

PASSES = ("loop_recovery", "binding", "split", "fuse", "reorder", "expansion", "contraction", "cache",
          "pipeline", "tensorize", "detensorize")
#: normalization steps a plan may run like a pass (same protocol), not among the eleven passes:
#: ``untile`` turns a recovered shared-memory tiled matmul back into the plain contraction,
#: ``unblock`` does the same for a recovered BANG blocked matmul (NRAM/WRAM slices, task rows),
#: ``guard_loops`` turns an ``if`` around a row body's loops into a loop (for rows='block'),
#: ``vectorize_simt`` gives a cuda/hip elementwise loop float4 loads and stores,
#: ``unthread`` turns recovered cyclic thread nests and block reduction trees into plain loops,
#: ``modulo_split`` turns a loop indexing ``seg[i % m]`` (BANG cycle ops) into rows of ``m``,
#: ``argmax_value`` turns a max / min search whose index is never read into a fold,
#: ``flatten_lanes`` turns a detensorized vector loop and its lane loops into one element loop,
#: ``unstage_rows`` turns a BANG row loop over one NRAM-staged padded row into a plain row body,
#: ``row_registers`` holds a bound cuda/hip row's elements in registers when the row is short
STEPS = ("untile", "unblock", "guard_loops", "vectorize_simt", "unthread", "modulo_split", "argmax_value",
         "flatten_lanes", "unstage_rows", "row_registers")


class PassError(XPError):
    """A pass refused: ``PassError("reorder", "loop 'k' carries a dependence on C", node)``."""

    def __init__(self, pass_name: str, why: str, node=None, code: str = "XP4001"):
        loc = getattr(node, "loc", None) if node is not None else None
        super().__init__(code, pass_name=pass_name, why=why,
                         file=getattr(loc, "file", None), line=getattr(loc, "line", None),
                         col=getattr(loc, "col", None) or None)
        self.pass_name = pass_name
        self.why = why


class AlternativeRefused(PassError):
    """One alternative of a pass parameter does not apply (``XP4002``), e.g. loop recovery's
    ``normalize="task_slices"`` on a program without contiguous task slices; the pass's other
    alternatives may. The plans then propose the next alternative (xpiler/schedule/plans.py),
    and the refusal stays in the provenance log as the reason this alternative was not taken."""

    def __init__(self, pass_name: str, why: str, node=None):
        super().__init__(pass_name, why, node, "XP4002")


def get(name: str) -> ModuleType:
    if name not in PASSES + STEPS:
        raise KeyError(f"unknown pass {name!r}; passes are {', '.join(PASSES)}")
    return importlib.import_module(f"xpiler.passes.{name}")


def available() -> list[str]:
    out = []
    for n in PASSES:
        try:
            get(n)
            out.append(n)
        except ImportError:
            pass
    return out


def applying_steps(apply):
    """``check`` and ``candidates`` of a step without parameters whose only test is applying it:
    ``check`` applies it (a PassError says why not), ``candidates`` offers ``{}`` once when it
    applies and nothing when it is refused."""
    def check(program, **params) -> None:
        apply(program, **params)

    def candidates(program, target: str | None = None) -> list[dict]:
        try:
            apply(program)
        except PassError:
            return []
        return [{}]
    return check, candidates


def checked_kernels(program, check, **kw) -> list:
    """The names of ``program``'s kernels (else functions) with a body that ``check(program,
    entry=name, **kw)`` accepts (raises no :class:`PassError`): where a step's ``candidates()``
    can offer its parameter sets."""
    out = []
    for f in program.kernels or program.funcs:
        if f.body is None:
            continue
        try:
            check(program, entry=f.name, **kw)
        except PassError:
            continue
        out.append(f.name)
    return out
