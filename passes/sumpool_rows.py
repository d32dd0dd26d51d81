"""A sum-pool of a block of rows read back as row sums (rmsnorm.mlu), a part of
``passes/unstage_row_blocks.py``.

``__bang_sumpool(part, sq, A, nb, Q, 1, Q, 1, Q)`` over a block of ``nb`` rows of ``Q * A`` lanes
(channels-last: ``H = nb``, ``W = Q``, ``C = A``, a ``1 x Q`` window) is detensorized to::

    for (oh < Ho) for (ow < Wo) for (c < A) {
        float acc = 0.0f;
        for (p < 1) for (q < Q) { const float x = (float)sq[((oh + p) * Q + (ow * Q + q)) * A + c]; acc += x; }
        part[(oh * Wo + ow) * A + c] = acc;
    }

and each row ``k`` then adds its ``A`` partial sums: ``for (i < A) acc2 += (float)(part + k * A)[i]``.
:func:`rewrite` drops the pool and makes that loop ``for (i < Q * A) acc2 += (float)(sq + k * Q * A)[i]``:
the row's sum over its own lanes. Obligations (Z3 with the kernel's integer declarations; each
failure an XP4288 naming it, the pool kept when the shape is not this one):

* the nest: ``Ho == nb``, ``Wo == 1`` and the ``p`` loop runs once (``Wo``'s declaration divides by
  ``Q``, so ``Q != 0`` where it is evaluated), ``A >= 1`` not assigned in the block;
* the lanes: the read is ``(oh * Q + q) * A + c`` and the store ``oh * A + c``: row ``oh``'s partial
  ``c`` is the sum of its lanes ``q * A + c``, and the ``A`` partials of a row together hold each of
  its ``Q * A`` lanes once (``(q, c) -> q * A + c`` is one-to-one onto ``[0, Q * A)`` for
  ``0 <= c < A``);
* the reads: ``part`` is stored by the pool only, and read only by such sums of ``A`` lanes at
  ``k * A`` in a loop over the block's rows ``k < nb`` after the pool; ``sq`` is not stored after
  the pool.

The result adds the same terms in another order (reassociated, like a block reduction on the GPU;
decisions.md 2026-12-05): the differential test's tolerance decides, as for every candidate.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite as _rewrite, substitute, walk

from . import dependence as D
from .decache import _is_int, _vars


class Refused(Exception):
    def __init__(self, why: str, node=None):
        super().__init__(why)
        self.code, self.node = "XP4288", node


def _only(body):
    s = [x for x in body.stmts if not isinstance(x, N.Comment)]
    return s


def _unit(lp):
    return isinstance(lp, N.For) and _is_int(lp.lo, 0) and _is_int(lp.step, 1) and lp.binding is None


def _nest(s):
    """``(oh, ow, c, p, q, acc, read, store)`` when ``s`` is the sum-pool nest, else None."""
    try:
        oh = s
        (ow,) = _only(oh.body)
        (c,) = _only(ow.body)
        dacc, p, st = _only(c.body)
        (q,) = _only(p.body)
        dx, add = _only(q.body)
    except (ValueError, AttributeError):
        return None
    if not all(_unit(x) for x in (oh, ow, c, p, q)):
        return None
    if not (isinstance(dacc, N.Decl) and isinstance(dacc.init, N.Const) and dacc.init.value == 0 and
            isinstance(dx, N.Decl) and isinstance(dx.init, N.Cast) and isinstance(dx.init.expr, N.Index) and
            isinstance(add, N.Assign) and add.op == "+=" and add.target == N.Var(dacc.name) and
            isinstance(add.value, N.Var) and add.value.name == dx.name and
            isinstance(st, N.Assign) and st.op == "=" and isinstance(st.target, N.Index) and
            isinstance(st.value, N.Var) and st.value.name == dacc.name):
        return None
    return oh, ow, c, p, q, dacc, dx.init.expr, st.target


def rewrite(stmts: list, buffers, z, nb: N.Expr) -> list:
    """``stmts`` (a block's statements) with each sum-pool nest over ``nb`` rows read back as row sums."""
    stmts = list(stmts)
    for k, s in enumerate(stmts):
        lets, inner = {}, s
        if isinstance(s, N.Block):
            body = _only(s)
            if not body or not all(isinstance(x, N.Decl) for x in body[:-1]):
                continue
            lets = {d.name: d.init for d in body[:-1] if isinstance(d.type, N.Scalar) and d.init is not None}
            inner = body[-1]
        hit = _nest(inner) if isinstance(inner, N.For) else None
        if hit is None:
            continue
        oh, ow, c, p, q, dacc, read, store = hit
        sq, off_r = D.split_ptr_uncast(read.base)
        part, off_w = D.split_ptr_uncast(store.base)
        if sq not in buffers or part not in buffers or off_r is not None or off_w is not None or sq == part:
            continue
        stmts[k] = _checked(stmts, k, s, lets, hit, sq, part, buffers, z, nb)
        return [x for x in stmts if x is not None]
    return stmts


def _checked(stmts, k, s, lets, hit, sq, part, buffers, z, nb):
    oh, ow, c, p, q, dacc, read, store = hit
    ex = lambda e: substitute(substitute(e, lets), lets)
    Q, A = q.hi, c.hi
    if _vars(A) & (D.assigned_names(tuple(stmts)) | {oh.var}) or not z.valid(lambda t: t(A) >= 1):
        raise Refused("the channel count of the sum-pool is not a fixed count >= 1", s)
    # Wo's declaration divides by Q: evaluated in every block, so Q != 0 there (else undefined)
    divides = any(isinstance(n, N.BinOp) and n.op == "/" and z.valid(lambda t, n=n: t(n.rhs) == t(Q))
                  for d in lets.values() for n in walk(d))
    hyp = (lambda t: t(Q) != 0) if divides else (lambda t: z3.BoolVal(True))
    if not z.valid(lambda t: z3.Implies(hyp(t), z3.And(t(ex(oh.hi)) == t(nb), t(ex(ow.hi)) == 1, t(p.hi) == 1))):
        raise Refused("the sum-pool is not one 1 x Q window per row of the block (rows == nb, one output "
                      "column, one window row)", s)
    zero = {ow.var: N.Const(0, "int32", "0"), p.var: N.Const(0, "int32", "0")}
    ri, wi = ex(substitute(read.index, zero)), ex(substitute(store.index, zero))
    o, qq, cc = N.Var(oh.var), N.Var(q.var), N.Var(c.var)
    if not z.valid(lambda t: z3.And(t(ri) == (t(o) * t(Q) + t(qq)) * t(A) + t(cc), t(wi) == t(o) * t(A) + t(cc))):
        raise Refused(f"the sum-pool does not read '{sq}' at (row * Q + q) * A + c and store '{part}' at "
                      "row * A + c", s)
    # every other use of part: a sum of A lanes at k * A in a loop over the rows k < nb, after the pool
    out = list(stmts)
    for j, x in enumerate(stmts):
        if j == k or part not in _vars(x):
            continue
        if j < k or any(isinstance(n, N.Assign) and D._split_ptr(n.target.base)[0] == part
                        for n in walk(x) if isinstance(n, N.Assign) and isinstance(n.target, N.Index)):
            raise Refused(f"'{part}' is used before the sum-pool or stored elsewhere", x)
        out[j] = _sums(x, part, sq, Q, A, z, nb)
    for x in stmts[k + 1:]:
        if any(isinstance(n, N.Assign) and isinstance(n.target, N.Index) and D._split_ptr(n.target.base)[0] == sq
               for n in walk(x)):
            raise Refused(f"'{sq}' is stored after the sum-pool reads it", x)
    out[k] = None
    stmts[:] = out
    return None


def _sums(x, part, sq, Q, A, z, nb):
    """Row loop ``x`` with its sums of ``part``'s A lanes made sums of the row's ``Q * A`` lanes of ``sq``."""
    if not (_unit(x) and z.valid(lambda t: t(x.hi) == t(nb))):
        raise Refused(f"'{part}' is read outside a loop over the block's rows", x)
    kv = N.Var(x.var)
    left = []

    def fn(n):
        if not (isinstance(n, N.For) and _unit(n)):
            return n
        body = _only(n.body)
        if len(body) != 1 or not isinstance(body[0], N.Assign) or body[0].op != "+=":
            return n
        a = body[0]
        v = a.value.expr if isinstance(a.value, N.Cast) else a.value
        if not (isinstance(v, N.Index) and D._split_ptr(v.base)[0] == part and v.index == N.Var(n.var)):
            return n
        off = D._split_ptr(v.base)[1]
        if off is None or not z.valid(lambda t: z3.And(t(off) == t(kv) * t(A), t(n.hi) == t(A))):
            left.append(n)
            return n
        width = N.BinOp("*", Q, A)
        nv = N.Index(N.BinOp("+", N.Var(sq), N.BinOp("*", kv, width)), v.index, loc=v.loc)
        val = a.value.with_(expr=nv) if isinstance(a.value, N.Cast) else nv
        return n.with_(hi=width, body=n.body.with_(stmts=(a.with_(value=val),)))
    new = _rewrite(x, fn)
    if left or part in _vars(new):
        raise Refused(f"'{part}' is read other than as a sum of one row's A partial sums", x)
    return new
