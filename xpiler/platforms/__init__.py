"""Platform registry: one module per dialect (cuda, hip, bang, c).

A platform knows its toolchains, how to build a kernel with a verification harness, and
which substrate it runs on here (``hw:…`` real hardware, ``emu:…`` an emulator,
``compile:…`` compile-only).  Modules are imported lazily so a missing toolchain in one
dialect never breaks the others.
"""
from __future__ import annotations

import importlib

from ..diagnostics import XPError

_MODULES = {"c": ("c", "CPlatform"), "cuda": ("cuda", "CudaPlatform"), "hip": ("hip", "HipPlatform"),
            "bang": ("bang", "BangPlatform")}


def get_platform(dialect: str):
    if dialect not in _MODULES:
        raise XPError("XP1004", value=dialect)
    mod, cls = _MODULES[dialect]
    try:
        m = importlib.import_module(f".{mod}", __name__)
    except ImportError as e:
        raise XPError("XP2004", what=dialect, why=f"platform module unavailable ({e})") from None
    return getattr(m, cls)()


def all_platforms():
    out = []
    for d in _MODULES:
        try:
            out.append(get_platform(d))
        except XPError:
            pass
    return out
