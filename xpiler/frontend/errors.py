"""Front-end diagnostics (XP1100-XP1199): the XPError type and the table in DIAGNOSTICS.txt."""
from __future__ import annotations

from pathlib import Path

try:  # the project's diagnostic type (xpiler/diagnostics.py)
    from xpiler.diagnostics import XPError
except ImportError:  # pragma: no cover - stand-in until diagnostics.py exists
    class XPError(Exception):
        def __init__(self, code, message=None, file=None, line=None, col=None, hint=None, **fields):
            self.code, self.message, self.file, self.line, self.col = code, message or code, file, line, col
            self.hint = hint or ""
            super().__init__(f"{file}:{line}:{col}: error {code}: {self.message}")


def _table() -> dict:
    rows = {}
    for line in (Path(__file__).parent / "DIAGNOSTICS.txt").read_text().splitlines():
        if line.startswith("XP"):
            code, sev, msg, hint = line.split("|", 3)
            rows[code] = (sev, msg, hint)
    return rows


TABLE = _table()


def fe_error(code: str, file=None, line=None, col=None, **fields) -> XPError:
    """Build an XPError for a front-end code, formatting the table's template here so the
    message is right even when the lead's table has not merged DIAGNOSTICS.txt yet."""
    sev, msg, hint = TABLE[code]
    try:
        text = msg.format(**fields)
    except (KeyError, IndexError):
        text = msg
    return XPError(code, text, file=file, line=line, col=col, hint=hint)
