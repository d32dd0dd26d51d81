"""The search space: the legal steps of a program, from every pass's ``candidates()``.

Each pass module lists the parameter sets it can legally apply to a program for a target
(``passes/<name>.py: candidates(program, target)``, each checked by the pass's named legality
check). The tuner searches over the passes in :data:`TUNING_PASSES`: those that rewrite a program
already in the target dialect (split, reorder, fuse, expansion, contraction, cache, pipeline,
tensorize), the ``vectorize_simt`` step (float4 loads for a cuda/hip elementwise loop) and the
``row_registers`` step (a bound row held in registers).
Loop recovery, detensorize and binding change the program's dialect or model; they
are the plan's steps, taken before the search starts from the verified target program.

A candidate that the pass's ``apply`` still refuses is dropped when it is expanded (the search
never tests a program a legality check refused).
"""
from __future__ import annotations

from .step import Step

#: the passes whose candidates the search expands, in this order (ties in the search are broken
#: by this order, then by the parameters' canonical text)
TUNING_PASSES = ("split", "reorder", "fuse", "expansion", "contraction", "cache", "pipeline", "tensorize",
                 "vectorize_simt", "row_registers")


def legal_steps(program, entry: str, target: str, passes=TUNING_PASSES) -> list[Step]:
    """Every candidate step of ``passes`` for ``program`` (its function ``entry``), in a
    deterministic order. A pass that cannot list candidates for this program lists none."""
    from xpiler.passes.base import PassError, get as get_pass
    out: list[Step] = []
    for name in passes:
        try:
            mod = get_pass(name)
            cands = mod.candidates(program, target)
        except (PassError, ImportError, KeyError, NotImplementedError):
            continue
        except Exception:   # a pass's candidate listing must never end a search
            continue
        seen = set()
        for params in cands:
            if params.get("entry", entry) != entry:
                continue
            st = Step(name, dict(params), "search")
            if st.key not in seen:
                seen.add(st.key)
                out.append(st)
    return out
