"""A program on its way to the target: the IR (with its launches), its dialect, and its history."""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.identity import program_key, text_hash
from ..ir.nodes import Program
from ..schedule.step import Step  # noqa: F401  (one Step for migrate, replay and the search)


@dataclass
class Stage:
    program: Program
    dialect: str
    entry: str
    steps: tuple = ()
    text: str = ""                               # printed program (filled by the driver)

    def __post_init__(self):
        if not isinstance(self.steps, tuple):
            raise TypeError("Stage(program, dialect, entry, steps, text): the launch is the program's "
                            "(Program.with_launch), not a Stage field")

    @property
    def launch(self) -> dict:
        """The entry's launch as the spec's ``[launch]`` table, read from the program ({} when it
        has none). A view: to change it, change the program (``Program.with_launch``)."""
        return self.program.launch_dict(self.entry)

    @property
    def hash(self) -> str:
        """The printed program's hash (what the provenance log's in/out hashes are)."""
        return text_hash(self.text)

    @property
    def key(self) -> str:
        """The program's identity (:func:`xpiler.ir.identity.program_key`): two stages with one
        text but different launches (binding's ``regrid``: the same kernel on another grid) are
        different candidates to test and time. Equal to :attr:`hash` when the program has no
        launch, so logs keyed by the text's hash read the same."""
        return program_key(self.program, self.text)
