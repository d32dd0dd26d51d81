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


def retask_steps(root, tail: list, start, target: str, ctx, counts=TASK_COUNTS) -> list:
    """The root's children: the plan's tail then each binding alternative (what the search
    offered from ``start`` before), and the same with loop recovery given each larger task
    count. Each is one ``sequence`` step."""
    from xpiler.passes.base import PassError
    out = [Step("sequence", {"steps": [s.to_json() for s in _plain(tail) + [b]]}, "search")
           for b in legal_steps(start.program, start.entry, target, ("binding",))]
    src = _source_tasks(ctx.launch)
    if src is None or not _reads_task_count(root.program):
        return out
    t0, cluster = src
    for t in counts:
        if t <= t0 or t % cluster:
            continue
        launch = dict(ctx.launch)
        launch["dim"] = [t, 1, 1]
        prefix = [Step("loop_recovery", {**tail[0].params, "launch": launch}, "search")] + _plain(tail[1:])
        cur = root
        try:
            for s in prefix:
                cur = apply_step(s, cur, ctx)
        except PassError:
            continue
        except Exception:   # a pass bug on one count drops that count, never the search
            continue
        if cur.dialect != "c":
            continue
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
