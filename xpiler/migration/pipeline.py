"""Default pass pipelines per direction (DESIGN §1: detensorize + recover → normalize → bind,
cache, pipeline, tensorize for the target).

A pipeline is a list of ``(pass name, params)``; params may be ``"auto"`` for the pass to
choose its default for the target. Passes that do not apply to a program (nothing to
detensorize, no SIMT indices to recover) raise ``PassError("XP4002")`` and are skipped.
"""
from __future__ import annotations

SIMT = ("cuda", "hip")


def default_pipeline(src: str, dst: str) -> list[tuple[str, dict]]:
    steps: list[tuple[str, dict]] = []
    steps.append(("detensorize", {"target": dst}))
    if src in SIMT and dst in SIMT:
        # SIMT to SIMT keeps the thread structure: rebind to the other model directly
        steps.append(("binding", {"target": dst, "mode": "retarget"}))
    else:
        steps.append(("loop_recovery", {}))
        if dst != "c" or src != "c":
            steps.append(("binding", {"target": dst}))
    steps.append(("cache", {"target": dst}))
    steps.append(("tensorize", {"target": dst}))
    return steps
