"""Which elements of a buffer an access through a pointer of another element type reaches.

A kernel that moves data in vectors reads and writes a ``float`` buffer through a cast pointer,
``float4 *c4 = (float4 *)c; c4[i] = ...``: element ``i`` of ``c4`` is the four floats
``c[4*i] .. c[4*i + 3]``. :func:`pointer_target` follows a pointer expression (casts, ``+``/``-``,
``&x[k]``, single-assignment pointer locals) back to the buffer it points into and says

* the offset of the pointer in elements of that buffer (``(float4 *)c + k`` is ``c + 4*k``),
* ``lanes``: how many elements of the buffer one element of the pointer covers.

Lanes come from sizes: one element of type ``T`` covers ``sizeof(T) / sizeof(B)`` elements of a
buffer of ``B`` when that is a whole number (``float4`` of ``float``: 4; ``__half2`` of ``__half``:
2; ``char4`` of ``char``: 4; ``int`` of ``float``: 1). Where it is not (a ``float`` seen through a
``char *``), where a size is not known, or where the buffer's element type is not known, the
lane count (and any offset added after that cast) is unknown (None): the caller must then take
the access as touching an unknown element. The dependence test (``passes/dependence.py``), the
access functions (:mod:`xpiler.ir.affine`) and regrid's tail rule (``passes/regrid_tail.py``)
all read cast pointers through this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..dtypes import ELEM_BYTES
from . import nodes as N


OWN = "own"          # the element type of the buffer itself (no cast on the way)
MAX_ALIAS = 8        # pointer locals followed one into another


def size_of(t) -> Optional[int]:
    """Bytes of a scalar or short-vector type, None when not known."""
    if isinstance(t, N.Scalar):
        return ELEM_BYTES.get(t.dtype)
    if isinstance(t, N.Vector) and isinstance(t.elem, N.Scalar) and ELEM_BYTES.get(t.elem.dtype):
        return ELEM_BYTES[t.elem.dtype] * int(t.n)
    return None


def lanes_of(elem, base) -> Optional[int]:
    """Elements of type ``base`` one element of type ``elem`` covers (``elem`` may be :data:`OWN`),
    None when that is not a whole number or not known."""
    if elem == OWN:
        return 1
    a, b = size_of(elem), size_of(base)
    if not a or not b or a % b:
        return None
    return a // b


def element_type(t):
    """The element type of a pointer or array type (arrays of arrays: the innermost), else None."""
    while isinstance(t, (N.Pointer, N.Array)):
        t = t.elem
        if not isinstance(t, N.Array):
            return t
    return None


def pointer_types(func: N.Func) -> dict:
    """{name: pointer or array type} of the parameters and declarations of ``func``."""
    out = {p.name: p.type for p in func.params if isinstance(p.type, (N.Pointer, N.Array))}
    if func.body is not None:
        from .visit import walk
        for d in walk(func.body):
            if isinstance(d, N.Decl) and isinstance(d.type, (N.Pointer, N.Array)):
                out.setdefault(d.name, d.type)
    return out


@dataclass(frozen=True)
class Target:
    buffer: str
    offset: Optional[N.Expr]     # in elements of ``buffer``; None: not known
    elem: object                 # the pointer's element type, or OWN
    lanes: Optional[int]         # elements of ``buffer`` one element of the pointer covers

    @property
    def retyped(self) -> bool:
        """A cast on the way changed what one element of the pointer is, or made it or the offset
        unknown: the access must be read through :attr:`lanes` (or taken as unknown)."""
        return self.lanes != 1 or self.offset is None


def _zero():
    return N.Const(0, "int32", "0")


def plus(off, k):
    """``off + k`` (None when either is unknown; ``k`` alone when ``off`` is 0)."""
    if off is None or k is None:
        return None
    if isinstance(off, N.Const) and off.value == 0:
        return k
    return N.BinOp("+", off, k)


def times(k, lanes):
    """``lanes * k`` (None when ``lanes`` is unknown; ``k`` itself for one lane)."""
    if lanes is None:
        return None
    if lanes == 1:
        return k
    return N.BinOp("*", N.Const(lanes, "int32", str(lanes)), k)


def pointer_target(e, types: dict, lets: Optional[dict] = None, depth: int = 0) -> Optional[Target]:
    """The buffer the pointer expression ``e`` points into, the offset and the lanes of its
    elements (see the module), or None when ``e`` is not read as a pointer into a named buffer.
    ``types``: {name: pointer/array type} (:func:`pointer_types`); ``lets``: single-assignment
    locals {name: initializer}, followed for pointer locals (their declared type counts as a cast)."""
    if depth > 4 * MAX_ALIAS:
        return None
    t = _walk(e, types, lets or {}, depth)
    if t is None:
        return None
    buf, off, elem = t
    base = element_type(types.get(buf))
    lanes = lanes_of(elem, base)
    return Target(buf, off, elem, lanes)


def _walk(e, types, lets, depth):
    """(buffer, offset in its elements or None, element type of ``e`` or OWN), or None."""
    if isinstance(e, N.Var):
        init = lets.get(e.name)
        declared = types.get(e.name)
        if init is not None and depth < MAX_ALIAS and not isinstance(declared, N.Array):
            t = _walk(init, types, lets, depth + 1)
            if t is not None and t[0] != e.name:
                return _retype(t, declared.elem, types) if isinstance(declared, N.Pointer) else t
        return e.name, _zero(), OWN
    if isinstance(e, N.Cast) and isinstance(e.type, N.Pointer):
        t = _walk(e.expr, types, lets, depth + 1)
        return None if t is None else _retype(t, e.type.elem, types)
    if isinstance(e, N.BinOp) and e.op in ("+", "-"):
        t = _walk(e.lhs, types, lets, depth + 1)
        if t is None:
            return None
        buf, off, elem = t
        k = e.rhs if e.op == "+" else N.UnOp("-", e.rhs)
        return buf, plus(off, times(k, lanes_of(elem, element_type(types.get(buf))))), elem
    if isinstance(e, N.Index) or (isinstance(e, N.UnOp) and e.op == "&" and isinstance(e.operand, N.Index)):
        root = e if isinstance(e, N.Index) else e.operand
        while isinstance(root, N.Index):
            root = root.base
        declared = types.get(root.name) if isinstance(root, N.Var) else None
        if isinstance(declared, N.Array) and len(declared.dims) > 1:
            # a row or element of a multi-dimensional array seen as a pointer (``&s[1][0]``,
            # ``s[1]``, ``&s[1]``): its buffer is the array, the offset is not kept
            t = _walk(root, types, lets, depth + 1)
            return None if t is None else (t[0], None, t[2])
        if isinstance(e, N.Index):
            return None
        t = _walk(e.operand.base, types, lets, depth + 1)
        if t is None:
            return None
        buf, off, elem = t
        return buf, plus(off, times(e.operand.index, lanes_of(elem, element_type(types.get(buf))))), elem
    return None


def _retype(t, elem, types):
    """``t`` seen as a pointer to ``elem``: OWN again when ``elem`` is the buffer's own type."""
    buf, off, _ = t
    base = element_type(types.get(buf))
    if base is not None and _same(elem, base):
        elem = OWN
    return buf, off, elem


def _same(a, b) -> bool:
    if isinstance(a, N.Scalar) and isinstance(b, N.Scalar):
        return a.dtype == b.dtype
    if isinstance(a, N.Vector) and isinstance(b, N.Vector):
        return int(a.n) == int(b.n) and _same(a.elem, b.elem)
    return False
