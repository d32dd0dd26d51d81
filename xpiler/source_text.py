"""Reading a user's kernel source: one function for every entry point (parse, test, load,
migrate, spec --infer), so a file that cannot be read is the same diagnostic everywhere.

A kernel source is UTF-8 text. A file that is not (Latin-1 comments, a binary given by
mistake) is ordinary bad input: XP1108 at the line and column of the first bad byte, never an
exception from deep inside a compiler step.
"""
from __future__ import annotations

from pathlib import Path

from .diagnostics import XPError


def read_source(path: str | Path) -> str:
    """The text of the kernel source ``path``; XP1108 when it cannot be read as UTF-8 text."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise XPError("XP1108", file=path, path=path, detail=f"{type(e).__name__}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise XPError("XP1108", file=path, line=line, col=col, path=path,
                      detail=f"not UTF-8 text (byte 0x{data[e.start]:02x} at line {line}, column {col})") from None
    # the same newlines as Path.read_text (universal newlines), so hashes of the text agree
    return text.replace("\r\n", "\n").replace("\r", "\n")
