"""What every sketch is made of: holes with finite integer domains, a cost (how far an
assignment is from the program as written; 0 = unchanged), and ``instantiate`` (the
replacement node for the region, given a value per hole). Builders are pure functions of the
region's node and its context, so a logged repair (kind, region, hole values) re-applies
without a solver (``xpiler replay``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from xpiler.ir import nodes as N


@dataclass(frozen=True)
class Hole:
    """An integer hole: ``lo <= value <= hi``, ``orig`` the value that reproduces the region as
    written. ``weight`` scales its cost; ``metric`` "abs" (|value - orig|), "changed" (0/1) or
    "table" (``costs[value - lo]``: a cost per value, 0 for ``orig``)."""
    name: str
    lo: int
    hi: int
    orig: int
    weight: int = 1
    metric: str = "abs"
    exclude: tuple = ()
    costs: tuple = ()


@dataclass
class Sketch:
    kind: str                    # the sketch kind (a module of sketches/)
    region: str                  # what it replaces: "expr" (the node at the path) or "block"
    holes: list
    instantiate: Callable        # dict hole -> int  =>  the replacement node
    describe: Callable = None    # dict hole -> int  =>  short text of the change
    extra: list = field(default_factory=list)   # callables z3vars -> z3 constraint


@dataclass
class Region:
    """A place in the entry function a sketch may rewrite: ``path`` from the Program (field
    names and tuple indices), the node there, and what a builder needs to know around it."""
    path: tuple
    node: object
    kind: str                    # index | bound | guard | stride | divmod | copy | init | block
    loops: tuple = ()            # enclosing canonical loops, outermost first
    dialect: str = "c"
    int_names: frozenset = frozenset()   # int scalar params and locals in the function
    shared: frozenset = frozenset()      # names of on-chip buffers (shared/nram/...)
    stmt_path: tuple = ()        # path of the enclosing statement

    @property
    def line(self):
        loc = getattr(self.node, "loc", None)
        return loc.line if loc is not None else None


def const(v: int) -> N.Const:
    return N.Const(int(v), "int32", str(int(v)))


def add_const(e, d: int):
    """``e + d`` with the constant folded into a trailing ``+ c`` / ``- c`` of ``e``."""
    if d == 0:
        return e
    if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return const(e.value + d)
    if isinstance(e, N.BinOp) and e.op in ("+", "-") and isinstance(e.rhs, N.Const) \
            and isinstance(e.rhs.value, int) and not isinstance(e.rhs.value, bool):
        c = (e.rhs.value if e.op == "+" else -e.rhs.value) + d
        if c == 0:
            return e.lhs
        return N.BinOp("+" if c > 0 else "-", e.lhs, const(abs(c)))
    return N.BinOp("+" if d > 0 else "-", e, const(abs(d)))


def is_int_const(e) -> bool:
    return isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool)


# -- symbolic hole values: the same builders give the concrete replacement (ints) and one
# parametric program whose holes are read at run time (one build checks every assignment)
def is_sym(v) -> bool:
    return isinstance(v, N.Expr)


def pick(v, options: list, first: int = 0):
    """``options[v - first]``; for a symbolic ``v`` a chain of ternaries over the options."""
    if not is_sym(v):
        return options[v - first]
    e = options[-1]
    for i in range(len(options) - 2, -1, -1):
        e = N.Cond(N.BinOp("==", v, const(i + first)), options[i], e)
    return e


def addv(e, v):
    """``e + v``: folded for an int, ``e + (hole)`` for a symbolic hole."""
    return add_const(e, v) if not is_sym(v) else N.BinOp("+", e, v)


def scale(v, ex):
    """``v * ex`` for a coefficient hole (int or symbolic)."""
    return N.BinOp("*", v, ex)
