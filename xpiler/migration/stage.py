"""A program on its way to the target: the IR, its dialect, its launch, and its history."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..ir.nodes import Program
from ..schedule.step import Step  # noqa: F401  (one Step for migrate, replay and the search)


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
