"""Splicing a filled sketch into the program, and re-applying a logged repair (replay) without
a solver: the region's path, the sketch kind and the hole values rebuild the same program."""
from __future__ import annotations

import hashlib

from xpiler.diagnostics import XPError
from xpiler.ir import nodes as N
from xpiler.printers import print_program, printer_for

from .localize import get_at, regions, set_at


def program_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def splice(prog: N.Program, region, sketch, values: dict) -> N.Program:
    return set_at(prog, region.path, sketch.instantiate(values))


def node_text(node, dialect: str) -> str:
    """Short printed form of a region's node (an expression, or the head of a loop/block)."""
    p = printer_for(dialect)
    try:
        if isinstance(node, N.For):
            cmp = "<"
            return f"for ({node.var} = {p.expr(node.lo)}; {node.var} {cmp} {p.expr(node.hi)}; {node.var} += {p.expr(node.step)})"
        if isinstance(node, N.Block):
            return f"{{ {len(node.stmts)} statements }}"
        return p.expr(node)
    except Exception:   # a printer gap never breaks a repair record
        return type(node).__name__


def reapply(prog: N.Program, entry: str, dialect: str, rec: dict) -> tuple[N.Program, str]:
    """The repaired program a ``repair`` event describes (``region.path``, ``sketch``, ``holes``),
    built from ``prog`` (the failing candidate) without a solver; XP4009-style XPError
    (XP4113) when the region is not in the program or the sketch does not apply there."""
    from xpiler.sketches import KINDS
    path = tuple(rec["region"]["path"])
    kind = rec["sketch"]
    if kind not in KINDS:
        raise XPError("XP4113", what=f"unknown sketch kind {kind!r}")
    reg = next((r for r in regions(prog, entry, dialect) if r.path == path), None)
    if reg is None:
        raise XPError("XP4113", what=f"no region at {list(path)} in the candidate")
    sk = KINDS[kind].build(reg)
    if sk is None:
        raise XPError("XP4113", what=f"sketch {kind} does not apply at {list(path)}")
    vals = {h.name: h.orig for h in sk.holes}
    vals.update({k: int(v) for k, v in rec["holes"].items()})
    new = splice(prog, reg, sk, vals)
    return new, print_program(new, dialect)
