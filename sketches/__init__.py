"""Sketch templates for Z3 repair (docs/repair.md): one module per kind, each with ``DATA``
(what it replaces, its holes and their domains, its cost) and ``build(region)`` (the sketch
for one region of a program, or None when the kind does not apply there)."""
from . import affine_index, barrier, bound, copy, divmod, guard, reduction_init, stride

#: region kind (xpiler/repair/localize.py) -> the sketch kinds built for it, in order
BUILDERS = {
    "index": [affine_index],
    "divmod": [divmod],
    "bound": [bound],
    "stride": [stride],
    "guard": [guard],
    "copy": [copy],
    "init": [reduction_init],
    "block": [barrier],
}
KINDS = {m.DATA["kind"]: m for ms in BUILDERS.values() for m in ms}
