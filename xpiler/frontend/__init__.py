"""Front ends: cuda / hip / bang / c source -> one xpiler IR Program.

``parse_text(text, dialect, file)`` and ``parse_file(path, dialect=None)``.  A user's file read by
``parse_file`` has the compile-time variants of our own outputs resolved to their portable branch
first (variant_guards.py); ``parse_text`` takes the text as it is.  The dialect
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
               ".cpp": "c", ".cxx": "c", ".h": "c"}
DIALECTS = ("cuda", "hip", "bang", "c")


def dialect_of(path) -> str:
    d = EXT_DIALECT.get(Path(path).suffix.lower())
    if d is None:
        raise fe_error("XP1109", str(path), dialect=Path(path).suffix or "?")
    return d


_CLOSER = {")": "(", "]": "[", "}": "{"}


def unbalanced_bracket(toks):
    """The token of the first bracket that has no partner, or None when ( ) [ ] { } balance.

    A closer that does not match the innermost open bracket is the stray one when no bracket
    of its kind is open; otherwise the innermost open bracket is the one left unclosed. At the
    end of input, the innermost bracket still open is reported (gcc points there too)."""
    stack = []
    for t in toks:
        # the source's brackets, whatever the dialect layer wrote for them (a cast's ')' becomes '))')
        if t.kind != "punct" or t.text not in ("(", ")", "[", "]", "{", "}"):
            continue
        if t.text in "([{":
            stack.append(t)
            continue
        want = _CLOSER[t.text]
        if stack and stack[-1].text == want:
            stack.pop()
        elif any(o.text == want for o in stack):
            return stack[-1]
        else:
            return t
    return stack[-1] if stack else None


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
        ub = unbalanced_bracket(prep.toks)
        if ub is not None:  # the usual cause of a parse error far from the mistake (or at end of input)
            raise fe_error("XP1107", file, ub.line, ub.col, token=ub.text) from None
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


def parse_file(path, dialect: str | None = None, notes: list | None = None) -> Program:
    """The IR of the kernel source ``path``. Each ``XP_USE_*`` variant guard of the contract's shape
    is read as its portable (``#else``) branch (variant_guards.py); ``notes``, when given, receives
    one XP1150 note per guard use so resolved."""
    path = Path(path)
    dialect = dialect or dialect_of(path)
    from ..source_text import read_source
    text = read_source(path)  # XP1108 when unreadable or not UTF-8 (the same reader as test/migrate/load)
    if "\x00" in text:  # a binary that happens to decode: not a kernel source
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise fe_error("XP1108", str(path), line, path=str(path), detail=f"a NUL byte at line {line}: not a text file")
    from .variant_guards import resolve
    text, resolved = resolve(text)
    if notes is not None:
        notes.extend(fe_error("XP1150", str(path), r.line, 1, guard=r.guard, what=r.describe()) for r in resolved)
    return parse_text(text, dialect, str(path))


__all__ = ["parse_text", "parse_file", "dialect_of", "XPError", "DIALECTS"]
