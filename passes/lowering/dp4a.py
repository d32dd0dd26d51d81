"""detensorize, cuda ``__dp4a``: the packed byte dot product as scalar integer code.

``__dp4a(a, b, c)`` (sm_61+) adds to ``c`` the four products of the bytes of ``a`` and ``b``
(byte e = bits 8e..8e+7).  CUDA has two overloads of 32-bit scalars (registry ``__dp4a``):

* ``int __dp4a(int, int, int)``: bytes sign-extended; becomes
  ``(int)((unsigned)c + (unsigned)(P0 + P1 + P2 + P3))`` with
  ``Pe = (int)(int8_t)((unsigned)a >> 8e) * (int)(int8_t)((unsigned)b >> 8e)``;
* ``unsigned __dp4a(unsigned, unsigned, unsigned)``: bytes zero-extended;
  ``c + (((a >> 8e) & 0xffu) * ((b >> 8e) & 0xffu))`` summed over e.

Each product is at most 2^14 (signed) or 255^2 in magnitude, so the four-term sum cannot
overflow; only the addition of ``c`` wraps, and it is done in ``unsigned`` (defined modulo 2^32),
as the instruction does.  The shift is logical (on ``unsigned``) and the byte is taken by the
conversion to ``int8_t`` (modulo 2^8 on every compiler this project uses, C++20's rule).

Overload resolution follows C++: every operand of a signed integer type no wider than ``int``
(they promote to ``int``) picks the int form, three ``unsigned int`` operands the unsigned form;
anything else (mixed signedness, 64-bit operands, ``char4``/``uchar4``, unknown types) is
ambiguous or not handled here and is refused (XP4001).  Operands are copied four times into the
expression, so an operand with effects (an assignment, an increment, a call) is refused too.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite

from .common import b, c, cast, scalar

NAMES = frozenset({"__dp4a"})

_SIGNED = ("bool", "int8", "uint8", "int16", "uint16", "int32")
UINT = N.Scalar("uint32", "unsigned")
SINT = N.Scalar("int32", "int")


def _kind(env, e):
    """'s' (promotes to int), 'u' (unsigned int) or None (anything else / unknown)."""
    if isinstance(e, N.BinOp):
        if e.op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
            return "s"
        if e.op in ("<<", ">>"):
            return _kind(env, e.lhs)
        kl, kr = _kind(env, e.lhs), _kind(env, e.rhs)
        if kl is None or kr is None:
            return None
        return "u" if "u" in (kl, kr) else "s"
    if isinstance(e, N.Cond):
        kt, ke = _kind(env, e.then), _kind(env, e.else_)
        return None if kt is None or ke is None else ("u" if "u" in (kt, ke) else "s")
    if isinstance(e, N.UnOp) and e.op in ("-", "+", "~"):
        return _kind(env, e.operand)
    if isinstance(e, N.UnOp) and e.op == "!":
        return "s"
    t = env.type_of(e)
    if isinstance(t, N.Scalar):
        if t.dtype in _SIGNED:
            return "s"
        if t.dtype == "uint32":
            return "u"
    return None


def _pure(e) -> bool:
    from ..purity import is_pure
    return is_pure(e)


def _byte(x, e: int, signed: bool):
    if signed:
        sh = cast(UINT, x) if e == 0 else b(">>", cast(UINT, x), c(8 * e))
        return cast(SINT, cast(scalar("int8"), sh))
    sh = x if e == 0 else b(">>", x, c(8 * e))
    return b("&", sh, N.Const(0xFF, "uint32", "0xffu"))


def expand(env, call, refuse):
    """The scalar expression equal to one ``__dp4a`` call (refuse(why) when not handled)."""
    if len(call.args) != 3:
        refuse(f"__dp4a takes three operands, this call has {len(call.args)}")
    a, bb, acc = call.args
    kinds = [_kind(env, x) for x in (a, bb, acc)]
    if kinds == ["s"] * 3:
        signed = True
    elif kinds == ["u"] * 3:
        signed = False
    else:
        refuse("__dp4a: operands must be three ints (signed form) or three unsigned ints (unsigned form); "
               f"found {['int' if k == 's' else 'unsigned' if k == 'u' else 'other/unknown' for k in kinds]} "
               "(mixed is ambiguous in CUDA; the char4/uchar4 forms are not lowered)")
    for x in (a, bb):
        if not _pure(x):
            refuse("__dp4a: an operand with effects would be evaluated four times once lowered")
    prods = [b("*", _byte(a, e, signed), _byte(bb, e, signed)) for e in range(4)]
    total = prods[0]
    for p in prods[1:]:
        total = b("+", total, p)
    if signed:
        return cast(SINT, b("+", cast(UINT, acc), cast(UINT, total)))
    return b("+", acc, total)


def lower_function(func: N.Func, env, refuse) -> N.Func:
    """Every ``__dp4a`` call of ``func`` replaced by its scalar expression (``refuse(why, node)``)."""
    def fn(n):
        if isinstance(n, N.Intrinsic) and n.name in NAMES:
            return expand(env, n, lambda why: refuse(why, n))
        return n
    return rewrite(func, fn)
