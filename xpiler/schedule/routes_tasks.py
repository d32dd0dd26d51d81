"""The task count of a BANG source as a search parameter (``bang -> cuda / hip``).

A BANG kernel is written over its launch: each task finds its share of the work from
``taskId`` and ``taskDim`` (or ``clusterId``/``clusterDim``), and the host launches a handful of
tasks, one per MLU core (4 or 8). Loop recovery writes the launch's task count into the loop
form (``share = (rows + 8 - 1) / 8``), so after binding a SIMT kernel has no more independent
iterations than the source had tasks, times its own blocking: ``layernorm.mlu`` runs on 4 threads
of an H200.

The task count is a free choice of whoever launches a kernel written over ``taskDim``. This
route re-runs the plan's steps from the program loop recovery started from, with loop recovery
given a larger task count (``loop_recovery(launch={"dim": [T, 1, 1], ...})``), then each of
binding's alternatives, as one ``sequence`` search step per (T, binding) pair. Nothing about the
new count is assumed: loop recovery and un-blocking prove their rewrites again for T (their Z3
coverage checks run with the new launch), and every candidate is tested like any other.
Loop recovery's normalizations are alternatives here too (:func:`recovery_alternatives`): each
one that applies, at each count, leads its own steps, named in loop recovery's parameters.

The route exists only when the kernel reads a task-count builtin (``taskDim``, ``taskDimX``,
``clusterDim``); a kernel that never reads one would do the same work once per task. The
counts tried are :data:`TASK_COUNTS` above the source's own, multiples of the cluster size for a
union launch.
"""
from __future__ import annotations

from .space import legal_steps
from .step import Step, apply_step

#: task counts the route tries (each above the source's own count)
TASK_COUNTS = (64, 256, 1024, 4096)
#: the builtins through which a BANG kernel adapts to its task count
_TASK_COUNT = {"taskDim", "taskDimX", "clusterDim"}
#: cores per cluster of each union launch type (a union launch's task count is a multiple of it)
_UNION = {"union1": 4, "union2": 8, "union4": 16, "union8": 32}


def _source_tasks(launch: dict):
    """The source's constant task count and the launch's cluster size, or None when the launch
    is not a constant one-dimensional BANG launch."""
    dim = launch.get("dim") if isinstance(launch, dict) else None
    if not isinstance(dim, (list, tuple)) or len(dim) != 3:
        return None
    try:
        d = [int(str(x)) for x in dim]
    except ValueError:
        return None
    if d[1] != 1 or d[2] != 1 or d[0] < 1:
        return None
    ft = str(launch.get("func_type", "block")).lower()
    return d[0], _UNION.get(ft.replace("cnrt_func_type_", ""), 1)


def recovery_start(origin, start, ctx):
    """The stage loop recovery started from (re-derived from ``origin`` by ``start``'s steps),
    and the plan's steps from it up to ``start``; None when ``start`` did not come from a BANG
    program through loop recovery."""
    steps = list(getattr(start, "steps", ()) or ())
    idx = next((i for i, s in enumerate(steps) if s.pass_name == "loop_recovery"), None)
    if origin is None or idx is None or origin.dialect != "bang":
        return None
    cur = origin
    for s in steps[:idx]:
        nxt = apply_step(s, cur, ctx)
        nxt.steps = cur.steps + (s,)
        cur = nxt
    if cur.hash != steps[idx].in_hash or cur.dialect != "bang":
        return None
    return cur, steps[idx:]


def recovery_alternatives(params: dict) -> list[dict]:
    """Loop recovery's parameter sets a search route tries: one per normalization
    (``passes/loop_recovery.py: NORMALIZE``, in the plans' order), each naming it
    (``normalize="partition"`` ...), over ``params``' other parameters. ``params`` saying
    ``normalize=True`` (or nothing: the cascade inside the pass, as logs before 2026-12-05 have
    it) or naming one alternative gives them all, so the search chooses; ``normalize=False``
    stays as it is."""
    from xpiler.passes.loop_recovery import NORMALIZE
    if params.get("normalize", True) is False:
        return [dict(params)]
    base = {k: v for k, v in params.items() if k != "normalize"}
    return [{**base, "normalize": how} for how in NORMALIZE]


def retask_steps(root, tail: list, start, target: str, ctx, counts=TASK_COUNTS) -> list:
    """The root's children: the plan's tail then each binding alternative (what the search
    offered from ``start`` before); the same with each other normalization of loop recovery that
    applies (:func:`recovery_alternatives`); and all of these with loop recovery given each larger
    task count. Each is one ``sequence`` step whose loop recovery names its normalization."""
    from xpiler.passes.base import PassError
    out, seen = [], {start.key}
    out += [Step("sequence", {"steps": [s.to_json() for s in _plain(tail) + [b]]}, "search")
            for b in legal_steps(start.program, start.entry, target, ("binding",))]
    launches = [None]
    src = _source_tasks(ctx.launch)
    if src is not None and _reads_task_count(root.program):
        t0, cluster = src
        for t in counts:
            if t > t0 and not t % cluster:
                launch = dict(ctx.launch)
                launch["dim"] = [t, 1, 1]
                launches.append(launch)
    for launch in launches:
        for rec in recovery_alternatives(tail[0].params):
            if launch is not None:
                rec = {**rec, "launch": launch}
            prefix = [Step("loop_recovery", rec, "search")] + _plain(tail[1:])
            cur = root
            try:
                for s in prefix:
                    cur = apply_step(s, cur, ctx)
            except PassError:     # (this normalization, or this count, does not apply)
                continue
            except Exception:     # a pass bug on one count drops that count, never the search
                continue
            if cur.dialect != "c" or cur.key in seen:
                continue          # (the plan's own form, or one two normalizations share, once)
            seen.add(cur.key)
            out += [Step("sequence", {"steps": [s.to_json() for s in prefix + [b]]}, "search")
                    for b in legal_steps(cur.program, cur.entry, target, ("binding",))]
    return out


def _plain(steps) -> list:
    """The plan's steps as search steps (no hashes: the search re-applies them)."""
    return [Step(s.pass_name, dict(s.params), "search") for s in steps]


def task_route(step: Step) -> str:
    """The search route of a step: the task count a ``sequence`` step gives loop recovery, else
    "" (the search's own route)."""
    if step.pass_name != "sequence" or not step.params.get("steps"):
        return ""
    first = step.params["steps"][0]
    launch = (first.get("params") or {}).get("launch") if first.get("pass") == "loop_recovery" else None
    return f"tasks={launch['dim'][0]}" if isinstance(launch, dict) and launch.get("dim") else ""


def _reads_task_count(program) -> bool:
    """Whether some function of ``program`` reads a task-count builtin (comments do not count)."""
    from xpiler.ir import nodes as N
    from xpiler.ir.visit import walk
    return any(isinstance(n, (N.Var, N.Builtin)) and n.name in _TASK_COUNT
               for f in program.funcs if f.body is not None for n in walk(f.body))
