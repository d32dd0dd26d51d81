"""Check a spec's argument list against the kernel's signature before anything is built.

A light reading of the entry's parameter list (type and name per parameter) is enough here:
the count, pointer vs value, and element type family must agree with ``[[args]]``.
"""
from __future__ import annotations

import re
from pathlib import Path

from .diagnostics import XPError
from .infer import _dtype_of, _params, _strip_comments
from .source_text import read_source
from .spec import Spec

_FAMILY = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int8": "i8", "uint8": "i8", "int16": "i16",
           "int32": "i32", "int64": "i64"}


def check_source_text(text: str, src: Path) -> None:
    """What is wrong with the file comes before what is wrong with the spec: a binary file (a NUL
    byte) is XP1108 and a file without a single declaration is XP1114, as ``xpiler parse`` says,
    never "entry not found" (XP1017). Undecodable bytes are XP1108 already (``read_source``)."""
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise XPError("XP1108", file=src, line=line, path=src, detail=f"a NUL byte at line {line}: not a text file")
    code = re.sub(r"(?m)^[ \t]*#.*(?:\\\n.*)*$", "", _strip_comments(text))  # comments, preprocessor lines
    if not code.strip():
        raise XPError("XP1114", file=src, line=1, col=1)


def check_signature(src: Path, spec: Spec) -> None:
    raw = read_source(src)
    check_source_text(raw, Path(src))
    text = _strip_comments(raw)
    params = _params(text, spec.entry)
    if params is None:
        raise XPError("XP1017", entry=spec.entry, path=src, file=spec.path)
    line = None
    m = re.search(rf"\b{re.escape(spec.entry)}\s*\(", text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
    if len(params) != len(spec.args):
        raise XPError("XP1016", entry=spec.entry, file=src, line=line,
                      detail=f"the kernel has {len(params)} parameters, the spec lists {len(spec.args)}")
    for i, ((ctype, pname), a) in enumerate(zip(params, spec.args)):
        is_ptr = "*" in ctype or "[" in ctype
        if is_ptr != a.is_array:
            raise XPError("XP1016", entry=spec.entry, file=src, line=line,
                          detail=f"parameter {i + 1} '{pname}' is {'a pointer' if is_ptr else 'a value'} "
                                 f"but spec argument '{a.name}' has role {a.role}")
        dt = _dtype_of(ctype)
        if dt is not None and a.dtype in _FAMILY and _FAMILY.get(dt) != _FAMILY[a.dtype]:
            # int8/uint8 and signed/unsigned 32-bit words are interchangeable storage
            if not ({dt, a.dtype} <= {"int8", "uint8"} or {dt, a.dtype} <= {"int32", "int64"} and not is_ptr):
                raise XPError("XP1016", entry=spec.entry, file=src, line=line,
                              detail=f"parameter {i + 1} '{pname}' has type '{ctype}' but spec argument "
                                     f"'{a.name}' has dtype {a.dtype}")
