"""Barrier placement sketch (cuda, hip): a statement list of the kernel that touches shared
memory, outside any condition and any thread-bound loop, gets a position hole: where to insert
one ``__syncthreads()`` (block barrier), -1 = nowhere (as written).

Fixes: one missing block barrier between a shared-memory write and a read in the same
statement list. Cannot fix: a barrier that must sit inside a condition (that would diverge),
a misplaced barrier (it only inserts), warp-level synchronization, BANG's __sync_* (not
sketched), more than one missing barrier."""
from __future__ import annotations

from xpiler.ir import nodes as N

from ._base import Hole, Sketch, const, is_sym

DATA = {
    "kind": "barrier",
    "replaces": "a statement list (inserts one block barrier)",
    "holes": {"pos": "-1 (none, as written) or the gap index 0..len(stmts) where __syncthreads() goes"},
    "cost": "1 when a barrier is inserted",
}


def build(region) -> Sketch | None:
    b = region.node
    if not isinstance(b, N.Block) or region.dialect not in ("cuda", "hip"):
        return None
    n = len(b.stmts)
    # gaps next to an existing barrier add nothing
    bad = tuple(i for i in range(n + 1)
                if (i > 0 and isinstance(b.stmts[i - 1], N.Barrier)) or (i < n and isinstance(b.stmts[i], N.Barrier)))

    def inst(vals):
        p = vals["pos"]
        if is_sym(p):   # parametric: a barrier at every allowed gap, taken when the hole names it
            out = []
            for i in range(n + 1):
                if i not in bad:
                    out.append(N.If(N.BinOp("==", p, const(i)), N.Block((N.Barrier("block"),))))
                if i < n:
                    out.append(b.stmts[i])
            return b.with_(stmts=tuple(out))
        if p < 0:
            return b
        return b.with_(stmts=b.stmts[:p] + (N.Barrier("block"),) + b.stmts[p:])

    return Sketch("barrier", "expr", [Hole("pos", -1, n, -1, metric="changed", exclude=bad)], inst)
