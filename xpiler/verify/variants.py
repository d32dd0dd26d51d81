"""Compile-time alternatives in a kernel, and the builds that test every one of them.

An output may hold two code paths chosen by the compiler: MFMA on CDNA and a plain path on RDNA
for a hip output, AMX tiles where the compiler targets them and VNNI otherwise for a c output.
Each choice is a guard macro ``XP_USE_<NAME>`` printed as

    #ifndef XP_USE_<NAME>
    #if <what the target compiler defines>
    #define XP_USE_<NAME> 1
    #else
    #define XP_USE_<NAME> 0
    #endif
    #endif

The verifier cannot rely on the auto-detection: the substrate here picks one path, and the user's
compiler may pick the other. So every value of every guard is built (``-DXP_USE_<NAME>=0`` and
``=1``) and tested with the same instances and seeds, and a verdict holds only if all of them pass
(``xpiler/verify/tester.py``; the substrate names each build, e.g.
``emu:simt-cpu[XP_USE_MFMA=1] + emu:simt-cpu[XP_USE_MFMA=0]``).
"""
from __future__ import annotations

import itertools
import re

GUARD = re.compile(r"^[ \t]*#[ \t]*ifndef[ \t]+(XP_USE_[A-Z0-9_]+)[ \t]*$", re.M)
MAX_BUILDS = 4


def guards(text: str) -> list[str]:
    """The ``XP_USE_*`` guard names of ``text``, in order of first appearance."""
    seen: list[str] = []
    for m in GUARD.finditer(text):
        if m.group(1) not in seen:
            seen.append(m.group(1))
    return seen


def variants(text: str) -> list[dict[str, str]]:
    """The ``-D`` sets to build ``text`` with: [] where it has no guard.

    Every combination where that is at most ``MAX_BUILDS`` builds; past that, all guards at 1,
    then each guard at 0 with the others at 1 (each path of each guard still runs once).
    """
    names = guards(text)
    if not names:
        return []
    combos = list(itertools.product("10", repeat=len(names)))
    if len(combos) > MAX_BUILDS:
        combos = [("1",) * len(names)] + [tuple("0" if j == i else "1" for j in range(len(names)))
                                          for i in range(len(names))]
    return [dict(zip(names, c)) for c in combos]


def label(defines: dict[str, str] | None) -> str:
    """``[XP_USE_MFMA=1]`` for a substrate name; '' for the plain build."""
    if not defines:
        return ""
    return "[" + ",".join(f"{k}={v}" for k, v in defines.items()) + "]"


def flags(defines: dict[str, str] | None) -> list[str]:
    """The compiler flags of a variant."""
    return [f"-D{k}={v}" for k, v in (defines or {}).items()]
