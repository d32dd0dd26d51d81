"""Blocks of rows dealt to the tasks in turn (rmsnorm.mlu), a part of ``passes/unstage_row_blocks.py``.

A BANG kernel may give its blocks of ``B`` rows to the tasks round-robin::

    for (int r0 = taskId * B; r0 < H; r0 += taskDim * B) {
        int nb = H - r0 < B ? H - r0 : B;
        ... the block's rows r0 .. r0 + nb - 1 ...
    }

Task ``t`` visits the blocks ``q = j * taskDim + t`` (``j >= 0``), block ``q`` holding the rows
``q * B + K`` with ``0 <= K < min(H - q * B, B)``. :func:`dealt_in_turn` proves (Z3) that the tasks
together visit every row of ``[0, H)`` exactly once and no other row, from two facts it checks for
every integer value of its names:

* **division** (``M >= 1``): every ``i >= 0`` is ``(i / M) * M + i % M`` with ``0 <= i % M < M`` and
  ``i / M >= 0`` (each row lies in a block, each block in a task's turn), and
* **uniqueness** (``M >= 1``): ``a * M + u == b * M + v`` with ``0 <= u, v < M`` gives ``a == b`` and
  ``u == v`` (no row in two blocks, no block in two turns),

applied with ``M = B`` (rows of blocks) and ``M = taskDim`` (blocks of tasks); a row visited is
``r0 + K < H`` and ``>= 0``. ``B >= 1`` is assumed as for contiguous blocks (with ``B <= 0`` the loop,
once entered, never ends: undefined), ``taskDim >= 1`` and ``0 <= taskId < taskDim`` are the BANG
model's. The row un-staging then writes the rows as ``for (long r0 = taskId; r0 < H; r0 += taskDim)``:
the same rows, dealt one at a time instead of a block at a time. That is the source's result when
the rows are independent, which ``passes/unstage_rows.py`` checks on the written loop
(``dependence.check_parallel``: no row reads or writes what another row writes) and refuses
otherwise (XP4287).
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt

from . import dependence as D

TASK_ID, TASK_DIM = N.Builtin("taskId"), N.Builtin("taskDim")


def _lemmas_hold() -> bool:
    """The division and uniqueness facts, for every integer ``M >= 1`` (Z3)."""
    M, i, a, b, u, v = z3.Ints("M i a b u v")
    s = smt.solver(D.TIMEOUT_MS)
    s.add(M >= 1, i >= 0)
    s.add(z3.Not(z3.And(i == (i / M) * M + i % M, i % M >= 0, i % M < M, i / M >= 0)))
    if s.check() != z3.unsat:
        return False
    s = smt.solver(D.TIMEOUT_MS)
    s.add(M >= 1, u >= 0, u < M, v >= 0, v < M, a * M + u == b * M + v)
    s.add(z3.Not(z3.And(a == b, u == v)))
    return s.check() == z3.unsat


def shaped_in_turn(loop: N.For, B, z) -> bool:
    """``loop`` starts at ``taskId * B`` and steps ``taskDim * B`` (Z3 identities over the kernel's
    integer declarations)."""
    return z.valid(lambda t: z3.And(t(loop.lo) == t(TASK_ID) * t(B), t(loop.step) == t(TASK_DIM) * t(B)))


def dealt_in_turn(loop: N.For, B, z) -> bool:
    """True when ``loop`` starts at ``taskId * B`` and steps ``taskDim * B`` (Z3 identities over the
    kernel's integer declarations) and the cover facts hold; False when its bounds are not that
    shape. ``z`` is the row un-staging's Z3 helper."""
    return shaped_in_turn(loop, B, z) and _lemmas_hold()
