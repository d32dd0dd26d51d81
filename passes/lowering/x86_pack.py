"""x86 byte shuffles of the int8 contraction form's B packing, as lane formulas (lowering/x86.py).

The int8 form (passes/patterns/x86_gemm_i8.py) packs four k rows of B into VNNI 4-byte groups with
128-bit interleaves: 16 bytes of a row (``_mm512_castsi512_si128`` of a masked byte load, or
``_mm_setzero_si128`` past K), ``_mm_unpacklo/hi_epi8`` (bytes of two rows interleaved),
``_mm_unpacklo/hi_epi16`` (byte pairs of two interleaves), the four quarters put together with
``_mm512_castsi128_si512`` and ``_mm512_inserti32x4``; column sums are scaled by
``_mm512_slli_epi32``. Each is an exact formula for lane ``l`` (x86 is little-endian, as the byte
view of lowering/x86.py is):

* ``_mm_unpacklo_epi8(a, b)`` byte l (l < 16): byte ``l / 2 + o`` of a (l even) or b (l odd),
  o = 0 (lo) or 8 (hi);
* ``_mm_unpacklo_epi16(a, b)`` byte l: 16-bit word ``l / 4 + o`` (o = 0 or 4) of a when
  ``l % 4 < 2`` else of b, its byte ``l % 2``;
* ``_mm512_castsi512_si128(x)``: the low 16 bytes of x;
* ``_mm512_castsi128_si512(x)``: x in the low 16 bytes; the upper 48 are undefined on the hardware
  (a program that reads them is wrong anyway) and 0 here;
* ``_mm512_inserti32x4(a, x, j)``: a with bytes 16j..16j+15 taken from x's low 16 (j a constant);
* ``_mm512_slli_epi32(a, s)``: each int32 lane shifted left by the constant s (0 from s = 32 on).

A ``__m128i`` is held like every integer vector of the lowering (16 int32 lanes); its bytes past
the 16th are 0 after every formula above, and no formula reads them.
"""
from __future__ import annotations

from xpiler.ir import nodes as N

from .common import b, c, cast, cond, scalar

U32, I32 = scalar("uint32"), scalar("int32")

#: the shuffles this module lowers -> the element kind each one naturally produces
NATURAL = {"_mm_unpacklo_epi8": "i8", "_mm_unpackhi_epi8": "i8", "_mm_unpacklo_epi16": "i16",
           "_mm_unpackhi_epi16": "i16", "_mm512_castsi512_si128": "i32", "_mm512_castsi128_si512": "i32",
           "_mm512_inserti32x4": "i32", "_mm_setzero_si128": "i32", "_mm512_slli_epi32": "i32"}


def _imm(x, e, i):
    """The constant integer argument ``i`` of ``e``, or a refusal."""
    a = e.args[i]
    while isinstance(a, N.Cast):
        a = a.expr
    if not isinstance(a, N.Const) or not isinstance(a.value, int):
        x.refuse(f"{e.name if isinstance(e, N.Intrinsic) else e.func}: argument {i + 1} is not a constant")
    return a.value


def lane(x, e, name, l, view, pre):
    """Lane ``l`` of shuffle ``e`` (called ``name``) seen as ``view`` lanes, or None when ``name`` is
    not one of :data:`NATURAL`. ``x``: the X86 lowering (its lane / materialize / read_var)."""
    if name not in NATURAL:
        return None
    a = list(e.args)
    if name == "_mm_setzero_si128":
        return c(0) if view != "f32" else N.Const(0.0, "float32", "0.0f")
    if view not in ("u8", "i32") or (view == "i32" and NATURAL[name] != "i32"):
        tmp = x.materialize(e, pre)          # computed byte-wise (u8) or as int32 lanes below
        return x.read_var(tmp, l, view)
    if name.startswith("_mm_unpack"):        # view u8
        off = (8 if "epi8" in name else 4) if "hi" in name else 0
        if name.endswith("epi8"):
            src = b("+", b("/", l, 2), off)
            pick = b("==", b("%", l, 2), 0)
        else:
            src = b("+", b("*", 2, b("+", b("/", l, 4), off)), b("%", l, 2))
            pick = b("<", b("%", l, 4), 2)
        val = cond(pick, x.lane(a[0], src, "u8", pre), x.lane(a[1], src, "u8", pre))
        return cond(b("<", l, 16), val, c(0))
    width = 16 if view == "u8" else 4        # bytes or int32 lanes of 128 bits
    if name in ("_mm512_castsi512_si128", "_mm512_castsi128_si512"):
        return cond(b("<", l, width), x.lane(a[0], l, view, pre), c(0))
    if name == "_mm512_inserti32x4":
        j = _imm(x, e, 2)
        if not 0 <= j <= 3:
            x.refuse(f"_mm512_inserti32x4: position {j} is not 0-3")
        lo = j * width
        inside = b("&&", b(">=", l, lo), b("<", l, lo + width))
        return cond(inside, x.lane(a[1], b("-", l, lo), view, pre), x.lane(a[0], l, view, pre))
    # _mm512_slli_epi32
    if view == "u8":
        tmp = x.materialize(e, pre)
        return x.read_var(tmp, l, view)
    s = _imm(x, e, 1)
    if s >= 32 or s < 0:
        return c(0)
    return cast(I32, b("<<", cast(U32, x.lane(a[0], l, "i32", pre)), c(s)))
