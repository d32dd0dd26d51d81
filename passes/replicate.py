"""Replicated local arrays: a helper of binding's multi-unit plan (not a pass of its own).

When binding spreads several top-level statements of a kernel over threads/tasks, a statement
that only computes thread-invariant values into function-local storage may run in *every*
thread ("all" unit) instead of being split or run once: each thread then owns a complete copy
of what it computes.  Detensorize produces such statements for vector constants, e.g.
``const __m512 zero = _mm512_setzero_ps();`` becomes::

    float zero[16];
    for (int l = 0; l < 16; ++l) zero[l] = 0.0f;

and ``zero`` is then read by the bound loop and by the run-once tail.  A local array is
*replicated* when every unit that may write it runs in every thread: all threads then hold
the same values in their own copy at every point of their program order, so reads from any
unit see what the sequential program sees.  A unit counts as writing an array unless every
use of the array in it is a plain element read (an escape through ``&``, pointer arithmetic
or a call argument counts as a write).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk


def only_reads(node, name: str) -> bool:
    """Every use of array ``name`` under ``node`` is an element read ``name[i]...``."""
    read_bases = set()
    for n in walk(node):
        if isinstance(n, (N.Assign, N.AssignExpr)) and _base(n.target) == name:
            return False
        if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and _base(n.operand) == name:
            return False
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name == name:
            read_bases.add(id(n.base))
    return all(id(v) in read_bases for v in walk(node) if isinstance(v, N.Var) and v.name == name)


def _base(e):
    while isinstance(e, N.Index):
        e = e.base
    return e.name if isinstance(e, N.Var) else None


def replicated(units, arrays) -> set:
    """Names of ``arrays`` (local arrays declared at the top of the entry) that only units
    run by every thread (how ``"all"``) may write.  ``units``: (statement, how) pairs."""
    out = set()
    for name in arrays:
        writers = [h for u, h in units if not (isinstance(u, N.Decl) and u.name == name)
                   and any(isinstance(x, N.Var) and x.name == name for x in walk(u))
                   and not only_reads(u, name)]
        if writers and all(h == "all" for h in writers):
            out.add(name)
    return out
