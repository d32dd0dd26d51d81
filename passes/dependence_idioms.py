"""Integer idioms the Z3 translation of ``passes/dependence.py`` cannot read term by term.

Each rule turns one recognised expression shape into constraints that follow from C's
semantics for every execution without undefined behaviour; a shape that is not recognised
exactly is left to the generic translation (a fresh unknown), so a rule can only make an
answer more precise, never wrong.

* :func:`lane_bit` -- the lane test of a low-lane mask, ``(M >> l) & 1`` with
  ``M = (1 << t) - 1`` (what detensorize makes of AVX-512 masked loads/stores whose mask is
  built as ``(__mmask16)((1u << rest) - 1u)``).  When the bit is set, ``0 <= l < t``.
* :func:`low_bits` -- ``x & M`` with a constant ``M = 2**k - 1`` (``k <= 8``): the low ``k`` bits
  of ``x``, which in two's complement are ``x`` modulo ``2**k`` (``0 <= r < 2**k``, for negative
  ``x`` too), whatever integer type of at least 8 bits ``x`` is cast to on the way. The odd tail
  of a vector kernel, ``if (n & 1) c[n - 1] = ...`` after ``half2`` pairs, needs it: only an odd
  ``n`` leaves ``c[n - 1]`` outside the pairs.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N

# casts that keep "bit l set => l < t" for M = (1 << t) - 1: unsigned types only clear high
# bits; int32/int64 hold every such M without becoming negative (t <= 31, else the shift is UB)
_MASK_CASTS = {"uint8", "uint16", "uint32", "uint64", "int32", "int64"}


def _resolve(e, env, depth=0):
    """``e`` with let-bound scalars / object-like macros replaced and mask-safe casts dropped."""
    for _ in range(12):
        if isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in _MASK_CASTS:
            e = e.expr
        elif isinstance(e, N.Var) and e.name in env.lets:
            e = env.lets[e.name]
        elif isinstance(e, N.Var) and e.name in env.macros and env.macros[e.name].params is None \
                and env.macros[e.name].expr is not None:
            e = env.macros[e.name].expr
        else:
            break
    return e


def _is_one(e) -> bool:
    return isinstance(e, N.Const) and e.value == 1 and not isinstance(e.value, bool)


def lane_bit(e, side, env, to_z3, depth=0):
    """A Z3 Bool for ``(M >> l) & 1`` (or ``1 & (M >> l)``) when ``M`` resolves to
    ``(1 << t) - 1``: a fresh Bool ``g`` with the constraint ``g => 0 <= l < t`` added to
    ``env.cons`` (only the implication: a truncating cast may clear bits, so an unset bit says
    nothing).  None when ``e`` is not of that shape."""
    if not (isinstance(e, N.BinOp) and e.op == "&"):
        return None
    if _is_one(e.rhs):
        shift = e.lhs
    elif _is_one(e.lhs):
        shift = e.rhs
    else:
        return None
    if not (isinstance(shift, N.BinOp) and shift.op == ">>"):
        return None
    m = _resolve(shift.lhs, env)
    if not (isinstance(m, N.BinOp) and m.op == "-" and _is_one(_resolve(m.rhs, env))):
        return None
    sh = _resolve(m.lhs, env)
    if not (isinstance(sh, N.BinOp) and sh.op == "<<" and _is_one(_resolve(sh.lhs, env))):
        return None
    t = to_z3(sh.rhs, side, env, depth + 1)
    lane = to_z3(shift.rhs, side, env, depth + 1)
    g = z3.Bool(f"lanebit{next(env.fresh)}__{side}")
    env.cons.append(z3.Implies(g, z3.And(lane >= 0, lane < t)))
    return g


def low_bits(e, side, env, to_z3, depth=0):
    """A Z3 Int for ``x & M`` (or ``M & x``), ``M`` an integer constant ``2**k - 1`` with
    ``1 <= k <= 8``: ``x mod 2**k`` (Z3's ``%`` on Ints is the non-negative remainder). None
    when ``e`` is not of that shape."""
    if not (isinstance(e, N.BinOp) and e.op == "&"):
        return None
    for m, x in ((e.rhs, e.lhs), (e.lhs, e.rhs)):
        if isinstance(m, N.Const) and isinstance(m.value, int) and not isinstance(m.value, bool) \
                and 1 <= m.value <= 255 and (m.value & (m.value + 1)) == 0:
            return to_z3(x, side, env, depth + 1) % (m.value + 1)
    return None
