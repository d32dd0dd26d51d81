"""A program on its way to the target: the IR, its dialect, its launch, and its history."""
from __future__ import annotations

import hashlib
import json
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

    @property
    def key(self) -> str:
        """The program together with its launch: two stages with one text but different launches
        (binding's ``regrid``: the same kernel on another grid) are different candidates to test
        and time. Equal to :attr:`hash` when the stage has no launch, so logs keyed by the text's
        hash read the same."""
        if not self.launch:
            return self.hash
        canon = json.dumps(self.launch, sort_keys=True, default=str)
        return hashlib.sha256((self.text + "\n/* launch " + canon + " */").encode()).hexdigest()[:16]
