"""A step: one pass with its parameters, applied to a program; the one code path that both
``xpiler migrate`` and ``xpiler replay`` take to apply a pass.

A :class:`Step` serializes to JSON (``to_json``/``from_json``) and is what the provenance log
records for every applied pass. :func:`apply_step` runs the pass's symbolic rewrite on a
:class:`~xpiler.migration.stage.Stage` and returns the next stage (printed, hashed). Two passes
take facts from the migration rather than from the search: loop recovery the source launch over
the kernel's parameter names, binding the instance sizes (run-time sized local arrays); both come
from the :class:`StepContext`, never from the step's own parameters, so a logged step stays
small and a replayed one gets the same facts.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Step:
    """One pass with its parameters, by one proposer; ``in_hash``/``out_hash`` are filled once it
    has been applied (the printed program's hash before and after)."""
    pass_name: str
    params: dict
    proposer: str = "symbolic"
    in_hash: str = ""
    out_hash: str = ""

    def to_json(self) -> dict:
        return {"pass": self.pass_name, "params": self.params, "proposer": self.proposer,
                "in_hash": self.in_hash, "out_hash": self.out_hash}

    @classmethod
    def from_json(cls, d: dict) -> "Step":
        return cls(d["pass"], dict(d.get("params") or {}), d.get("proposer", "symbolic"),
                   d.get("in_hash", ""), d.get("out_hash", ""))

    @property
    def key(self) -> str:
        """A canonical text of what the step does (pass and parameters), for tables and sorting."""
        return self.pass_name + json.dumps(self.params, sort_keys=True, default=str)

    def describe(self) -> str:
        ps = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()) if k != "target")
        return f"{self.pass_name}({ps})"


@dataclass
class StepContext:
    """Facts of the migration that some passes need: ``launch`` (the source launch over the
    kernel's parameter names, for loop recovery), ``instances`` (the integer scalars of each
    spec instance, for binding) and ``assume`` (the spec's ``[preconditions]`` over the kernel's
    parameter names, ``(name, op, integer)`` triples, for loop recovery's proofs)."""
    launch: dict = field(default_factory=dict)
    instances: list = field(default_factory=list)
    assume: tuple = ()

    def call_params(self, pass_name: str, params: dict) -> dict:
        call = dict(params)
        if pass_name == "loop_recovery":
            call.setdefault("launch", self.launch)
            if self.assume:
                call.setdefault("assume", tuple(self.assume))
        if pass_name == "binding":
            call.setdefault("instances", self.instances)
        return call


def apply_program(program, entry: str, pass_name: str, params: dict, ctx: StepContext):
    """Run the pass's symbolic rewrite; returns the new program, its launches in it
    (:attr:`~xpiler.ir.nodes.Program.launches`): a pass that sizes a launch sets the program's,
    one that does not carries the input's (every pass builds on its input with ``with_``). Raises
    the pass's :class:`~xpiler.passes.base.PassError` when it does not apply."""
    from xpiler.passes.base import AlternativeRefused, PassError, get as get_pass
    call = ctx.call_params(pass_name, params)
    call.setdefault("entry", entry)     # a search step names its function itself
    try:
        res = get_pass(pass_name).apply(program, **call)
    except PassError as e:
        # ``as_alternative``: the step is one alternative of a plan step (xpiler/schedule/plans.py),
        # and any refusal says only that this alternative does not apply here
        if params.get("as_alternative") and not isinstance(e, AlternativeRefused):
            raise AlternativeRefused(pass_name, e.why) from None
        raise
    if isinstance(res, tuple):
        # a pass still returning ``(program, launch)``: its launch goes into the program here
        prog, launch = res
        return prog.with_launch(entry, launch)
    return res


def apply_step(step: Step, stage, ctx: StepContext):
    """The stage after ``step`` (a new :class:`~xpiler.migration.stage.Stage`, printed)."""
    from xpiler.migration.stage import Stage
    from xpiler.printers import print_program
    prog = apply_program(stage.program, stage.entry, step.pass_name, step.params, ctx)
    new = Stage(prog, prog.dialect, stage.entry, stage.steps)
    new.text = print_program(prog, prog.dialect)
    return new
