"""A program on its way to the target: the IR, its dialect, its launch, and its history."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..ir.nodes import Program


@dataclass(frozen=True)
class Step:
    """One applied pass: what was done, with which parameters, by which proposer."""
    pass_name: str
    params: dict
    proposer: str = "symbolic"
    in_hash: str = ""
    out_hash: str = ""

    def to_json(self) -> dict:
        return {"pass": self.pass_name, "params": self.params, "proposer": self.proposer,
                "in_hash": self.in_hash, "out_hash": self.out_hash}


@dataclass
class Stage:
    program: Program
    dialect: str
    entry: str
    launch: dict = field(default_factory=dict)   # the spec's [launch] for this dialect
    steps: tuple = ()
    text: str = ""                               # printed program (filled by the driver)

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]
