"""Which way round the cache pass reads a contraction (:func:`passes.patterns.simt_tile.analyse`,
``wider``): the orientation of the output and the order of the reduction loops, chosen by the
memory layout so that a warp's accesses are consecutive (issue 15, conv row; docs/decisions.md,
2026-12-06 helper 85).

The tiled kernels map the thread index's fast part to the column ``j`` of C (the store) and read A
k-fastest. How the source's loops were nested decides neither: the staged BANG convolution lifted
by :mod:`passes.unband_conv` is ``for (n, ho): for wo: for co: for p, q, ci``, so the rows were the
output pixels, the columns the output channels and the sum ran over the channels innermost. In
NCHW that made every store, every input load and every weight load of a warp 32 separate
accesses, where conv2d_nchw.c (``for (n, co): for ho, wo: for ci, p, q``) gets consecutive ones.

* :func:`transposed` — C's index read as a polynomial over the innermost row and column loop
  variables: when the column's coefficient is not 1 and the row's is, the contraction is read
  transposed (``C^T = B^T A^T``: A and B swap, the rows become the columns). Each element of C is
  still one sum of the same products in the same order; a product ``a * b`` becomes ``b * a``
  (float multiplication commutes exactly).
* :func:`reduction_order` — the reduction loops of a perfect nest are reordered when that makes an
  operand's K elements consecutive in memory (``f(k) == f(0) + k`` over the flattened k: the
  innermost loop has coefficient 1 and each loop's coefficient is the next inner one's times that
  loop's extent) and the source's order makes neither operand so. This **reassociates** the float
  sum (the terms are added in another order); the differential test's tolerance decides, as for
  the row sums (docs/decisions.md). Integer sums are unchanged.

Both read the indices with :mod:`xpiler.ir.poly`: a subterm with ``/``, ``%`` or a call that uses
no loop variable is an opaque atom (its printed text); one that does makes the reading fail, and
then nothing is changed.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir.visit import walk

from . import common as U


class _Reader(P.Reader):
    """Integer casts read through; names are atoms; any other leaf free of ``loopvars`` is an
    opaque atom named by its text; one that uses a loop variable is :class:`poly.NotPoly`."""

    def __init__(self, loopvars):
        self.loopvars = set(loopvars)

    def strip(self, e):
        return U.strip_casts(e)

    def leaf(self, e):
        if isinstance(e, N.Var):
            return {(e.name,): 1}
        if any(isinstance(n, N.Var) and n.name in self.loopvars for n in walk(e)):
            raise P.NotPoly()
        from xpiler.printers import printer_for
        return {("`" + printer_for("c").expr(e) + "`",): 1}


def _read(e, loopvars):
    try:
        return _Reader(loopvars).read(e)
    except P.NotPoly:
        return None


def _affine_in(p, names) -> bool:
    return all(sum(m.count(v) for v in names) <= 1 for m in p)


ONE = {(): 1}


def transposed(c_index, row: str | None, col: str | None, loopvars) -> bool:
    """Read the contraction transposed: C's index has coefficient 1 in the innermost row loop
    variable ``row`` and not in the innermost column loop variable ``col`` (None: unknown, keep)."""
    if row is None or col is None:
        return False
    p = _read(c_index, loopvars)
    if p is None or not _affine_in(p, loopvars):
        return False
    return P.coeff(p, col) != ONE and P.coeff(p, row) == ONE


def _contiguous_order(p, chain, names):
    """The order of ``chain`` (outermost first) in which the flattened k is stride 1 in the index
    polynomial ``p``, or None."""
    ext = {v: _read(hi, names) for v, hi in chain}
    if any(e is None for e in ext.values()):
        return None
    coef = {v: P.coeff(p, v) for v, _ in chain}
    inner = [v for v in coef if coef[v] == ONE]
    if len(inner) != 1:
        return None
    order, left = inner, set(coef) - set(inner)
    while left:
        want = P.mul(coef[order[0]], ext[order[0]])
        nxt = [v for v in left if coef[v] == want]
        if len(nxt) != 1:
            return None
        order.insert(0, nxt[0])
        left.discard(nxt[0])
    return order


def reduction_order(chain, operand_indices, loopvars):
    """``chain`` ([(placeholder, extent)], outermost first) reordered so that the first operand
    index (A's, then B's) that can be made stride 1 along the flattened k is, when the given order
    makes none of them so; else ``chain`` itself."""
    if len(chain) < 2:
        return chain
    names = set(loopvars)
    polys = [_read(e, names) for e in operand_indices]
    if any(p is None or not _affine_in(p, names) for p in polys):
        return chain
    given = [v for v, _ in chain]
    orders = [_contiguous_order(p, chain, names) for p in polys]
    if given in orders:
        return chain
    best = next((o for o in orders if o is not None), None)
    if best is None:
        return chain
    by = dict(chain)
    return [(v, by[v]) for v in best]
