"""One printer per dialect over the single IR: ``print_program(program, dialect=None)``."""
from __future__ import annotations

from .bang import BangPrinter
from .base import Printer
from .c import CPrinter
from .cuda import CudaPrinter
from .hip import HipPrinter

PRINTERS = {"cuda": CudaPrinter, "hip": HipPrinter, "bang": BangPrinter, "c": CPrinter}


def printer_for(dialect: str) -> Printer:
    return PRINTERS[dialect]()


def print_program(program, dialect: str | None = None) -> str:
    """The program as source text of ``dialect`` (default: its own)."""
    return printer_for(dialect or program.dialect).print_program(program)


__all__ = ["print_program", "printer_for", "PRINTERS"]
