"""Front ends: cuda / hip / bang / c source -> one xpiler IR Program.

``parse_text(text, dialect, file)`` and ``parse_file(path, dialect=None)``.  The dialect
layer (dialect.py) rewrites the dialect constructs into C that pycparser parses and records
what it removed; lower.py builds the IR.  Every failure is an XPError with an XP11xx code and
a source location (never a Python traceback for bad input).
"""
from __future__ import annotations

import re
from pathlib import Path

from pycparser import c_parser

from ..ir.nodes import Program
from .dialect import prepare
from .errors import XPError, fe_error
from .lower import Lowerer

EXT_DIALECT = {".cu": "cuda", ".cuh": "cuda", ".hip": "hip", ".mlu": "bang", ".c": "c", ".cc": "c",
               ".cpp": "c", ".h": "c"}
DIALECTS = ("cuda", "hip", "bang", "c")


def dialect_of(path) -> str:
    d = EXT_DIALECT.get(Path(path).suffix.lower())
    if d is None:
        raise fe_error("XP1109", str(path), dialect=Path(path).suffix or "?")
    return d


def parse_text(text: str, dialect: str, file: str = "<input>") -> Program:
    if dialect not in DIALECTS:
        raise fe_error("XP1109", file, dialect=dialect)
    parser = c_parser.CParser()
    try:
        prep = prepare(text, file, dialect, parser)
    except XPError:
        raise
    except Exception as e:  # the dialect layer met a token sequence it does not model
        raise fe_error("XP1101", file, None, None, token=f"{type(e).__name__}: {e}") from None
    try:
        ast = parser.parse(prep.text, "<xpiler-prelude>")
    except c_parser.ParseError as e:
        m = re.match(r"(.*?):(\d+):(\d+): before: (.*)", str(e))
        if m:
            line, col = int(m.group(2)), int(m.group(3))
            raise fe_error("XP1101", file, line, prep.src_col(line, col), token=m.group(4)) from None
        try:  # errors raised without a coordinate: use the parser's current token
            tok = parser._peek()
            coord = parser._tok_coord(tok) if tok is not None else None
        except Exception:  # pragma: no cover - private API changed
            tok = coord = None
        if coord is not None and coord.line:
            raise fe_error("XP1101", file, coord.line, prep.src_col(coord.line, coord.column or 0),
                           token=tok.value) from None
        m = re.match(r"(.*?):(\d+)(?::(\d+))?: (.*)", str(e))
        if m:
            raise fe_error("XP1101", file, int(m.group(2)), None, token=m.group(4)) from None
        msg = str(e)
        if msg.startswith(file + ":"):
            msg = msg[len(file) + 1:].strip()
        raise fe_error("XP1101", file, None, None, token=msg) from None
    except RecursionError:
        raise fe_error("XP1112", file, None, None, detail="nesting too deep") from None
    except AssertionError:  # pycparser's scope stack: a '}' without its '{'
        line = col = None
        depth = 0
        for t in prep.toks:
            if t.kind == "punct" and t.out is None and t.text in "{}":
                depth += 1 if t.text == "{" else -1
                if depth < 0:
                    line, col = t.line, t.col
                    break
        raise fe_error("XP1107", file, line, col, token="}") from None
    except Exception as e:  # any other parser failure is still a syntax error of the input
        raise fe_error("XP1101", file, None, None, token=f"{type(e).__name__}: {e}") from None
    return Lowerer(prep).program(ast)


def parse_file(path, dialect: str | None = None) -> Program:
    path = Path(path)
    dialect = dialect or dialect_of(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise fe_error("XP1108", str(path), path=str(path), detail=e.__class__.__name__ + ": " + str(e)) from None
    return parse_text(text, dialect, str(path))


__all__ = ["parse_text", "parse_file", "dialect_of", "XPError", "DIALECTS"]
