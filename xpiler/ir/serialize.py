"""IR <-> JSON (round-trips exactly, locations included) and a readable indented dump."""
from __future__ import annotations

import json
from dataclasses import fields

from . import nodes as N

_CLASSES = {c.__name__: c for c in vars(N).values() if isinstance(c, type) and issubclass(c, N.Node)}


def to_json(node):
    if isinstance(node, N.Node):
        d = {"_": type(node).__name__}
        for f in fields(node):
            v = getattr(node, f.name)
            if f.name == "loc":
                if v is not None:
                    d["loc"] = [v.file, v.line, v.col]
                continue
            if f.name == "launches" and v == ():
                continue     # a program without launches dumps as before they were in the IR
            d[f.name] = to_json(v)
        return d
    if isinstance(node, tuple):
        return [to_json(x) for x in node]
    if isinstance(node, float) and (node != node or node in (float("inf"), float("-inf"))):
        return {"_float": repr(node)}
    return node


def from_json(obj):
    if isinstance(obj, list):
        return tuple(from_json(x) for x in obj)
    if isinstance(obj, dict):
        if "_float" in obj:
            return float(obj["_float"])
        cls = _CLASSES[obj["_"]]
        kw = {}
        for f in fields(cls):
            if f.name == "loc":
                if "loc" in obj:
                    kw["loc"] = N.Loc(*obj["loc"])
                continue
            if f.name in obj:
                kw[f.name] = from_json(obj[f.name])
        return cls(**kw)
    return obj


def dumps(program) -> str:
    return json.dumps(to_json(program), indent=1)


def dump(node, indent: int = 0) -> str:
    """Indented one-node-per-line view of the IR (what `xpiler parse FILE` shows)."""
    lines: list = []
    _dump(node, indent, lines, "")
    return "\n".join(lines) + "\n"


def _short(v):
    if isinstance(v, N.Type) or isinstance(v, N.Expr):
        from ..printers.base import Printer
        p = _ANY()
        try:
            return p.declare(v, "") if isinstance(v, N.Type) else p.expr(v)
        except Exception:
            return type(v).__name__
    return repr(v)


class _ANY:
    """A permissive printer for the dump: every builtin, scope and fragment is printable."""

    def __new__(cls):
        from ..printers.cuda import CudaPrinter

        class P(CudaPrinter):
            def builtin(self, b):
                return b.name
        return P()


def _dump(node, ind, lines, label):
    pad = "  " * ind + (f"{label}: " if label else "")
    if isinstance(node, (N.Expr, N.Type)):
        lines.append(pad + _short(node))
        return
    if isinstance(node, tuple):
        for x in node:
            _dump(x, ind, lines, label)
        return
    if not isinstance(node, N.Node):
        lines.append(pad + repr(node))
        return
    name = type(node).__name__
    scalars, kids = [], []
    for f in fields(node):
        if f.name == "loc":
            continue
        v = getattr(node, f.name)
        if v is None or v == () or v is False:
            continue
        if isinstance(v, (N.Stmt, N.Func, N.Param, N.Program, N.Typedef, N.Directive, N.Using, N.Macro)) or (
                isinstance(v, tuple) and v and isinstance(v[0], (N.Stmt, N.Func, N.Param, N.Typedef, N.Directive,
                                                                  N.Using, N.Macro, N.Decl))):
            kids.append((f.name, v))
        elif isinstance(v, (N.Expr, N.Type)):
            scalars.append(f"{f.name}={_short(v)}")
        elif isinstance(v, tuple) and v and isinstance(v[0], (N.Expr, N.Type)):
            scalars.append(f"{f.name}=[{', '.join(_short(x) for x in v)}]")
        else:
            scalars.append(f"{f.name}={v!r}")
    loc = getattr(node, "loc", None)
    at = f"  @{loc.line}" if loc is not None else ""
    lines.append(pad + name + (" " + " ".join(scalars) if scalars else "") + at)
    for k, v in kids:
        if isinstance(v, tuple):
            lines.append("  " * (ind + 1) + k + ":")
            for x in v:
                _dump(x, ind + 2, lines, "")
        else:
            _dump(v, ind + 1, lines, k)
