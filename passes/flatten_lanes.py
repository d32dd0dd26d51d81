"""Lane loops to flat element loops: the normalization a detensorized vector kernel needs before
the BANG passes (a plan step like ``untile``; ``xpiler/migration/pipeline.py``, c -> bang).

A detensorized AVX-512 kernel walks its data in vectors: a loop ``v`` whose body fills lane
arrays ``va[16]`` through lane loops ``l < 16`` and stores through another lane loop. The BANG
cache and tensorize passes stage and vectorize a loop over elements (``c[i] = a[i] + b[i]``), not
``v`` with its lane arrays. This step applies, in turn and each as often as it applies (at most
:data:`MAX_STEPS` times):

1. ``fuse(loop=l)`` on lane loops (``for (l = 0; l < L; ++l)``, constant ``L <= 64``): adjacent
   lane loops with equal bounds become one (the fuse pass's Z3 dependence check);
2. ``contraction(array=va)`` on lane arrays (a 1-d local of constant length <= 64): the array
   becomes a scalar of each lane (the contraction pass's checks);
3. ``fuse(mode="collapse", loop=v)``: ``v`` and the lane loop inside it become one loop over
   ``v*L + l`` (``passes/collapse.py``: bijection by exact rules, no carried dependence by Z3).

Every rewrite is the named pass's own ``apply``, which runs that pass's legality check; a
candidate the pass refuses is skipped. The sub-steps are the ones the tuner's lane route offers
for c -> cuda / hip (``xpiler/schedule/routes_lanes.py``, which logs them one by one); here the
plan logs the whole normalization as one step, and ``xpiler replay`` re-derives it by running
this step again (it is deterministic: candidates are taken in the passes' own order).

Parameters: ``entry``. Refusals: XP4002 when no loop collapses (the program has no lane loop
under a vector loop, so there is nothing to flatten: the plan without this step follows).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .base import PassError, get
from . import dependence as D

NAME = "flatten_lanes"
#: a lane loop runs 0 .. L by 1 with a constant L up to this (AVX-512: 16 floats, 64 int8)
MAX_LANES = 64
#: at most this many rewrites of one kind (a bound on the walk)
MAX_STEPS = 32


def _const(e):
    return e.value if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


def is_lane_loop(lp) -> bool:
    """A loop over the lanes of one vector: ``for (l = 0; l < L; ++l)``, ``L`` constant, unbound."""
    hi = _const(lp.hi)
    return (isinstance(lp, N.For) and lp.binding is None and lp.cmp == "<" and _const(lp.lo) == 0
            and _const(lp.step) == 1 and hi is not None and 0 < hi <= MAX_LANES)


def is_lane_array(fn, name: str) -> bool:
    """``name`` is declared in ``fn`` as a 1-d local array of constant length <= MAX_LANES."""
    return any(isinstance(d, N.Decl) and d.name == name and isinstance(d.type, N.Array) and len(d.type.dims) == 1
               and 0 < (_const(d.type.dims[0]) or 0) <= MAX_LANES for d in walk(fn.body))


def _candidates(program, entry: str, kind: str) -> list:
    from . import collapse as C
    if kind == "collapse":
        return [c for c in C.candidates(program) if c["entry"] == entry]
    return [c for c in get(kind).candidates(program, "c") if c.get("entry", entry) == entry]


def _picks(fn, kind: str, params: dict) -> bool:
    if kind == "fuse":
        first = D.find_loop(fn, params["loop"])
        return first is not None and is_lane_loop(first)
    if kind == "contraction":
        return is_lane_array(fn, params["array"])
    return True


def flatten(program: N.Program, entry: str) -> tuple[N.Program, list]:
    """The program after the lane fusions, contractions and collapses, and the ``(pass, params)``
    applied, in order."""
    done = []
    for kind in ("fuse", "contraction", "collapse"):
        for _ in range(MAX_STEPS):
            fn = program.func(entry)
            for params in _candidates(program, entry, kind):
                if not _picks(fn, kind, params):
                    continue
                try:
                    program = get("fuse" if kind == "collapse" else kind).apply(program, **params)
                except PassError:
                    continue
                done.append(("fuse" if kind == "collapse" else kind, dict(params)))
                break
            else:
                break
    return program, done


def check(program: N.Program, *, entry: str, **_) -> None:
    apply(program, entry=entry)


def apply(program: N.Program, *, entry: str, **_) -> N.Program:
    if program.dialect != "c":
        raise PassError(NAME, f"program is {program.dialect}; lane loops are flattened in c", None, "XP4002")
    try:
        program.func(entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}'", None, "XP4002")
    out, done = flatten(program, entry)
    if not any(p.get("mode") == "collapse" for _, p in done):
        raise PassError(NAME, f"no vector loop of '{entry}' with a lane loop inside collapses to a flat loop",
                        None, "XP4002")
    return out


def candidates(program: N.Program, target: str) -> list[dict]:
    return []
