"""Builtin short-vector types (``float4``, ``int2``, ``half2``...) per dialect.

One row per type name: its lanes, their element dtype, and per dialect a ``status``:

- ``builtin``: the dialect's runtime headers define the type as a struct with members
  ``x, y, z, w`` (first ``lanes`` of them) of the element type, aligned to ``align`` bytes. A
  program's own typedef of that name with exactly that layout is not printed for the dialect (the
  builtin is used);
- ``partial``: the dialect defines the name, but its layout is not pinned here (deprecated
  alignment variants, HIP's template vectors of 1 or 3 lanes, HIP's half2). A program's own
  typedef of that name is printed under another name (``xp_`` prefix);
- ``none`` (absent from ``status``): the dialect has no such name; a program's typedef is
  printed as it is.

The frontend reads the same table for the names a cuda/hip source may use without declaring them
(``xpiler.frontend.lower.VECTOR_NAMES``); the loop recovery pass declares a lowered program's
vector structs from it (``struct_typedef``); the printers decide with ``clash``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..dtypes import ELEM_BYTES
from ..ir import nodes as N

DIALECTS = ("cuda", "hip", "bang", "c")


@dataclass(frozen=True)
class VectorType:
    name: str
    dtype: str
    lanes: int
    align: int                                    # bytes, as CUDA's vector_types.h declares it
    status: dict = field(default_factory=dict)    # dialect -> builtin | partial

    def status_for(self, dialect: str) -> str:
        return self.status.get(dialect, "none")

    @property
    def members(self) -> tuple:
        return tuple("xyzw"[:self.lanes])




def _align(dtype: str, lanes: int) -> int:
    # vector_types.h: 2 and 4 lanes are aligned to their size (at most 16), 1 and 3 to the element
    size = ELEM_BYTES[dtype] * lanes
    return min(size, 16) if lanes in (2, 4) else ELEM_BYTES[dtype]


def _rows() -> dict:
    rows = {}
    for base, dt in (("float", "float32"), ("double", "float64"), ("int", "int32"), ("uint", "uint32"),
                     ("char", "int8"), ("uchar", "uint8"), ("short", "int16"), ("longlong", "int64")):
        for n in (1, 2, 3, 4):
            name = f"{base}{n}"
            # CUDA 13 splits double4 / longlong4 into _16a and _32a variants (the plain name is
            # deprecated, its alignment depends on the version); HIP's 1- and 3-lane vectors are
            # templates over clang vectors whose size and alignment are not pinned here
            cuda = "partial" if n == 4 and dt in ("float64", "int64") else "builtin"
            hip = "partial" if n in (1, 3) or cuda == "partial" else "builtin"
            rows[name] = VectorType(name, dt, n, _align(dt, n), {"cuda": cuda, "hip": hip})
    for name, dt in (("half2", "float16"), ("__half2", "float16"), ("__nv_bfloat162", "bfloat16")):
        rows[name] = VectorType(name, dt, 2, 4, {"cuda": "builtin", "hip": "partial"})
    return rows


TABLE: dict[str, VectorType] = _rows()

_ALIGN_ATTR = re.compile(r"(?:aligned|__align__|alignas)\s*\(\s*(\d+)\s*\)")
_ONLY_ALIGN = re.compile(r"__attribute__\s*\(\(\s*(?:__)?aligned(?:__)?\s*\(\s*\d+\s*\)\s*\)\)"
                         r"|(?:__align__|alignas)\s*\(\s*\d+\s*\)")


def declared_align(attrs) -> int | None:
    """The alignment an attribute list asks for (``__attribute__((aligned(16)))``, ``__align__(16)``,
    ``alignas(16)``), None when it names none."""
    for a in attrs:
        m = _ALIGN_ATTR.search(a)
        if m:
            return int(m.group(1))
    return None


def _layout_matches(row: VectorType, t: N.Typedef) -> bool:
    ty = t.type
    if not isinstance(ty, N.Struct) or ty.kind != "struct" or ty.tag not in (None, t.name):
        return False
    if tuple(f.name for f in ty.fields) != row.members:
        return False
    if not all(isinstance(f.type, N.Scalar) and f.type.dtype == row.dtype and not f.type.const
               and not f.type.volatile for f in ty.fields):
        return False
    attrs = ty.attrs + t.attrs
    return declared_align(attrs) == row.align and all(_ONLY_ALIGN.fullmatch(a) for a in attrs)


def clash(dialect: str, t: N.Typedef) -> str | None:
    """What printing ``t`` for ``dialect`` must do about a builtin of the same name: ``"builtin"``
    (same name and layout: leave the typedef out), ``"rename"`` (another layout, or one not pinned
    here), or None (no builtin of that name in ``dialect``)."""
    row = TABLE.get(t.name)
    if row is None:
        return None
    st = row.status_for(dialect)
    if st == "none":
        return None
    if st == "builtin" and _layout_matches(row, t):
        return "builtin"
    return "rename"


_C_ELEM = {"float32": "float", "float64": "double", "int32": "int", "uint32": "unsigned int", "int8": "int8_t",
           "uint8": "uint8_t", "int16": "short", "uint16": "unsigned short", "int64": "long long",
           "uint64": "unsigned long long", "float16": "_Float16", "bfloat16": "__bf16"}


def struct_typedef(v: N.Vector) -> N.Typedef | None:
    """The C declaration of a cuda/hip vector type ``v`` for a program lowered to C: a struct of
    the lanes ``x, y, z, w`` aligned like the builtin (so a printer for cuda/hip recognizes it and
    uses the builtin); None for more than 4 lanes or an element type C has no spelling for here."""
    elem = _C_ELEM.get(v.elem.dtype)
    if v.n > 4 or elem is None:
        return None
    fields = tuple(N.Field(m, N.Scalar(v.elem.dtype, elem)) for m in "xyzw"[:v.n])
    row = TABLE.get(v.spelling)
    attrs = (f"__attribute__((aligned({row.align})))",) if row and (row.lanes, row.dtype) == (v.n, v.elem.dtype) else ()
    return N.Typedef(v.spelling, N.Struct("struct", None, fields, attrs))


def builtin_plan(dialect: str, prog: N.Program) -> dict:
    """For printing ``prog`` in ``dialect``: each typedef of the program named like a builtin of
    ``dialect`` -> None where ``clash`` says ``builtin`` (the typedef is left out), else the fresh
    name ``xp_<name>`` (``xp_<name>_2``... where the program already uses that one) it is printed
    under, at its declaration and at every use. Only file-scope typedefs clash: one inside a
    function shadows the builtin there (a plain walk of every print would cost the tuner)."""
    plan, taken = {}, None
    for t in prog.items:
        if not isinstance(t, N.Typedef) or t.name not in TABLE or t.name in plan:
            continue
        verdict = clash(dialect, t)
        if verdict is None:
            continue
        if verdict == "builtin":
            plan[t.name] = None
            continue
        if taken is None:
            from ..ir.visit import walk
            taken = {getattr(n, "name", None) for n in walk(prog.items)} | {m.name for m in prog.macros}
        new, k = f"xp_{t.name}", 1
        while new in taken:
            k += 1
            new = f"xp_{t.name}_{k}"
        taken.add(new)
        plan[t.name] = new
    return plan
