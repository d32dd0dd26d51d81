"""Loop binding: map the loops of a sequential program onto the target's parallel model.

Mode ``bind`` (default) takes a ``c`` program (an original C kernel, or what loop recovery made
of a cuda/hip/bang kernel) and returns it in the target dialect with its launch table:

* ``c``: the outermost dependence-free loop gets ``#pragma omp parallel for`` (``For.binding =
  "omp"``); launch ``{}``.
* ``cuda`` / ``hip``: the outermost dependence-free loop becomes a grid-stride loop over the
  global thread index (``For.binding = "global.x"``); when its body is exactly one more
  dependence-free loop, the pair becomes ``global.y`` / ``global.x``.  The entry becomes a
  ``__global__`` kernel; launch ``{"grid": ["(n + 255) / 256", 1, 1], "block": [256, 1, 1]}``
  (expressions over the kernel's parameters; grid-stride loops stay correct for any grid).
* ``bang``: the outermost dependence-free loop becomes a task-stride loop over ``taskId``;
  the entry becomes ``__mlu_global__``; launch ``{"dim": [4, 1, 1], "func_type": "union1"}``.

Before (c)::

    void relu(const float* x, float* y, int n) {
        for (int i = 0; i < n; i++) { float v = x[i]; y[i] = v > 0.0f ? v : 0.0f; }
    }

After (``binding(target="cuda")``)::

    extern "C" __global__ void relu(const float* x, float* y, int n) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
            float v = x[i]; y[i] = v > 0.0f ? v : 0.0f;
        }
    }
    launch = {"grid": ["(n + 255) / 256", 1, 1], "block": [256, 1, 1]}

Mode ``retarget`` moves a SIMT kernel between cuda and hip keeping its thread structure:
``warpSize`` becomes the literal 32 for hip (wave64 hardware would report 64), CUDA mask
shuffles become HIP width-32 shuffles, host runtime calls/types/includes are renamed through
``xpiler.mappings.host_api``.  A hip kernel that still holds 64-lane collectives (shuffles
without an explicit width <= 32) is refused: detensorize must lower them first.

Legality (:func:`check`): every statement of the entry outside the bound loop must be uniform
(scalar declarations, local arrays that can be privatized) and read no element that the bound
loop writes unless proved disjoint (``check_prelude_reads``: no barrier orders them across
blocks/tasks), the bound loop must carry no
dependence (exact test in ``passes/dependence.py``), except a ``+=`` reduction into memory when
``atomics=True`` (cuda/hip), which becomes ``atomicAdd``.  Refusals are ``PassError`` XP4001
naming the loop and its location; XP4002 means there is nothing to do.
"""
from __future__ import annotations

import re

from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import rewrite, substitute, walk

from .base import AlternativeRefused, PassError
from . import block_core
from . import block_rows
from . import warp_reduce
from . import warp_rows
from . import dependence as D
from . import forward
from . import phases
from . import privatize
from . import regrid as regrid_pass
from . import purity
from . import replicate
from . import row_blocks
from . import runtime_arrays

NAME = "binding"
TARGETS = ("cuda", "hip", "bang", "c")
SIMT = ("cuda", "hip")
BLOCK_SIZES = (64, 128, 256, 512)
GRID_CAPS = (None, 1024, 65535)
BANG_DIMS = ((4, "union1"), (4, "block"), (16, "union1"))
FALLBACK_GRID = 256          # blocks when the trip count is not an expression over parameters


# ============================================================================ entry points
def apply(program: N.Program, *, entry: str, target: str = "cuda", mode: str = "bind", loop=None,
          block: int = 256, grid_cap=None, dims: int | None = None, tasks: int = 4,
          func_type: str = "union1", atomics: bool = False, rows: str = "thread", instances=None,
          regrid: bool = False, reduce: str = "tree", row_kernel: bool = False, **_):
    """Bind (or retarget) ``entry``; returns ``(Program, launch)`` or a Program (retarget, c).
    ``regrid=True`` (retarget of a grid-stride kernel): the returned Program's launch
    (``Program.launch_of(entry)``) is sized from the problem,
    ``block`` threads and at most ``grid_cap`` blocks (``passes/regrid.py``).
    ``rows="block"`` (cuda/hip): the bound loop's iterations go to thread blocks and its inner
    loops over the block's threads (``passes/block_rows.py``).
    ``reduce="shuffle"`` (cuda/hip block forms: rows="block" / "core" / the phases plan): block
    reductions fold with warp shuffles instead of a shared-memory tree (``passes/warp_reduce.py``).
    ``rows="warp"`` (cuda/hip): one warp per row, column loops over its lanes, shuffle
    reductions, no shared memory (``passes/warp_rows.py``).
    ``row_kernel=True`` (with ``rows="block"``): the default plans' form of a row kernel; the
    kernel must also meet the row-kernel rule (``block_rows.check_row_kernel``), and every refusal
    is an ``AlternativeRefused`` (XP4002), so a plan may take it as a required step or an
    alternative and keep today's binding where it does not apply.
    ``instances`` (the spec's instances as parameter name -> value dicts, given by the driver,
    never logged as a parameter) lets run-time sized local arrays get a constant size on SIMT
    targets (``passes/runtime_arrays.py``)."""
    plan = check(program, entry=entry, target=target, mode=mode, loop=loop, block=block,
                 grid_cap=grid_cap, dims=dims, tasks=tasks, func_type=func_type, atomics=atomics, rows=rows,
                 regrid=regrid, reduce=reduce, row_kernel=row_kernel)
    if mode == "retarget":
        prog = _retarget(program, plan)
        # regrid sizes the launch from the problem: the program's launch (docs/ir.md); a plain
        # retarget keeps the launch the program came with
        return prog.with_launch(entry, regrid_pass.launch(plan, block, grid_cap)) if regrid else prog
    prog, launch = _bind(plan.get("program", program), plan)
    if plan["target"] in SIMT:
        # run-time sized local arrays (BANG NRAM VLAs) -> the instances' largest size + a guard
        prog, _ = runtime_arrays.bound_runtime_arrays(prog, entry, instances, plan["target"])
        # large per-thread arrays -> device-global slices
        prog, launch = privatize.hoist_private_arrays(prog, entry, launch)
    return prog, launch


def check(program: N.Program, *, reduce: str = "tree", row_kernel: bool = False, **kw) -> dict:
    """Raise PassError when the binding is illegal; else return the plan ``apply`` follows.
    ``reduce`` other than "tree" must have block reductions to fold (``warp_reduce``).
    ``row_kernel=True``: ``rows="block"`` for a row kernel only, refusals as AlternativeRefused."""
    if not row_kernel:
        plan = _check(program, reduce=reduce, **kw)
        if reduce != "tree":
            warp_reduce.check_planned(plan, reduce)
        return plan
    try:
        if kw.get("rows") != "block" or kw.get("mode", "bind") != "bind":
            raise PassError(NAME, "row_kernel=True qualifies rows='block' (mode='bind')", None, "XP4001")
        plan = _check(program, reduce=reduce, **kw)
        block_rows.check_row_kernel(plan["rows_plan"])
        if reduce != "tree":
            warp_reduce.check_planned(plan, reduce)
        return plan
    except AlternativeRefused:
        raise
    except PassError as e:
        raise AlternativeRefused(NAME, f"row kernel: {e.why}") from None


def _check(program: N.Program, *, entry: str, target: str = "cuda", mode: str = "bind", loop=None,
           block: int = 256, grid_cap=None, dims: int | None = None, tasks: int = 4,
           func_type: str = "union1", atomics: bool = False, rows: str = "thread", regrid: bool = False,
           reduce: str = "tree", **_) -> dict:
    if target not in TARGETS:
        raise PassError(NAME, f"unknown target '{target}' (one of {', '.join(TARGETS)})", code="XP4001")
    try:
        func = program.func(entry)
    except KeyError:
        raise PassError(NAME, f"entry function '{entry}' not found", code="XP4001") from None
    if mode == "retarget":
        plan = check_retarget(program, func, target)
        if regrid:
            if block not in regrid_pass.BLOCK_SIZES + BLOCK_SIZES:
                raise PassError(NAME, f"block size {block} is not one of {BLOCK_SIZES}", func)
            plan.update(regrid_pass.check(program, func, block))
        return plan
    if regrid:
        raise PassError(NAME, "regrid=True sizes the launch of a retargeted SIMT kernel (mode='retarget')", func)
    if mode not in ("bind", "auto"):
        raise PassError(NAME, f"unknown mode '{mode}' (bind | retarget)", func)
    if program.dialect != "c":
        if program.dialect in SIMT and target in SIMT:
            raise PassError(NAME, f"program is already {program.dialect}: use mode='retarget'", func, "XP4002")
        if program.dialect == target:
            raise PassError(NAME, f"program is already bound for {target}", func, "XP4002")
        raise PassError(NAME, f"binding maps sequential c programs; this one is {program.dialect} "
                              f"(run loop_recovery first)", func)
    if rows not in ("thread", "block", "core", "warp"):
        raise PassError(NAME, f"unknown rows='{rows}' (thread | block | core | warp)", func)
    if rows in ("block", "core", "warp") and (target not in SIMT or dims is not None or atomics):
        raise PassError(NAME, f"rows='{rows}' binds a loop's iterations to cuda/hip thread blocks; it takes no "
                              "dims= or atomics=" if target in SIMT else
                        f"rows='{rows}' binds a loop's iterations to cuda/hip thread blocks, not {target}", func)
    if target in SIMT and block not in BLOCK_SIZES:
        raise PassError(NAME, f"block size {block} is not one of {BLOCK_SIZES}", func)
    warp_reduce.check_reduce(reduce, target, block, func)
    if target == "bang" and func_type not in ("block", "union1", "union2", "union4"):
        raise PassError(NAME, f"unknown BANG function type '{func_type}'", func)
    if target == "bang" and (tasks < 1 or func_type.startswith("union") and tasks % (4 * int(func_type[5:])) != 0):
        raise PassError(NAME, f"{tasks} tasks do not fill whole {func_type} clusters", func)
    check_portable(program, target)
    spliced = splice_blocks(program, func, omp_regions=target != "c")
    if spliced is not program:      # an inlined helper's body as top-level statements, then plan
        plan = check(spliced, entry=entry, target=target, mode=mode, loop=loop, block=block,
                     grid_cap=grid_cap, dims=dims, tasks=tasks, func_type=func_type, atomics=atomics, rows=rows,
                     reduce=reduce)
        plan.setdefault("program", spliced)
        return plan
    if target == "c":
        return _plan_c(program, func, loop)
    if rows == "block":
        return _plan_block_rows(program, func, target, loop, block, grid_cap, reduce)
    if rows == "core":
        return _plan_block_core(program, func, target, loop, block, grid_cap, reduce)
    if rows == "warp":
        return _plan_warp_rows(program, func, target, loop, block, grid_cap)
    try:
        return _plan_device(program, func, target, loop, block, grid_cap, dims, tasks, func_type, atomics)
    except PassError as first:
        fwd = forward.forward_temporaries(program, func)     # packed temporaries -> one nest
        if fwd is not None:
            try:
                plan = _plan_device(fwd, fwd.func(entry), target, loop, block, grid_cap, dims, tasks, func_type,
                                    atomics)
                plan["program"] = fwd
                return plan
            except PassError:
                pass
        if loop is not None or dims is not None or atomics:
            raise first from None
        try:                       # ordered phases in one block / one task (passes/phases.py)
            return _plan_phases(program, func, target, block, grid_cap, tasks, func_type, reduce)
        except PassError as second:
            at = N.Comment("", loc=N.Loc(first.file, first.line, first.col or 0)) if first.file else None
            raise PassError(NAME, f"{first.why}; {second.why}", at, first.code) from None


def candidates(program: N.Program, target: str) -> list:
    """Legal parameter sets: each bindable loop x block size x grid cap (cuda/hip), x task
    configurations (bang); on cuda/hip also each loop whose iterations can run one per block
    (``rows="block"``, else ``rows="core"``) x block size x grid cap, each also with
    ``reduce="shuffle"`` where it has block reductions; the retarget mode for SIMT -> SIMT."""
    out = []
    for f in program.kernels or program.funcs:
        if f.body is None:
            continue
        if program.dialect in SIMT and target in SIMT:
            try:
                check_retarget(program, f, target)
                out.append({"target": target, "mode": "retarget"})
                regrid_pass.check(program, f)      # a grid-stride kernel: its launch is free
                out += [{"target": target, "mode": "retarget", "regrid": True, "block": b, "grid_cap": cap}
                        for b in regrid_pass.BLOCK_SIZES for cap in regrid_pass.GRID_CAPS]
            except PassError:
                pass
            continue
        g = splice_blocks(program, f, omp_regions=target != "c").func(f.name)   # as check() plans it
        for lp in _top_loops(g):
            ref = D.loop_ref(g, lp)
            base = {"target": target, "loop": ref}
            if target in SIMT:       # a block per row (each legal loop; its own check)
                try:
                    check(program, entry=f.name, **base, rows="block")
                    out += [dict(base, rows="block", block=b, grid_cap=cap)
                            for b in block_rows.BLOCK_SIZES for cap in block_rows.GRID_CAPS]
                    out += warp_reduce.variants(program, f.name, dict(base, rows="block"), block_rows)
                    out += warp_reduce.variants(program, f.name, dict(base, rows="warp"), warp_rows, None)
                except PassError:
                    try:             # else a block per task (buffers, nested loops; passes/block_core.py)
                        check(program, entry=f.name, **base, rows="core")
                        out += [dict(base, rows="core", block=b, grid_cap=cap)
                                for b in block_core.BLOCK_SIZES for cap in block_core.GRID_CAPS]
                        out += warp_reduce.variants(program, f.name, dict(base, rows="core"), block_core)
                    except PassError:
                        pass
            try:
                check(program, entry=f.name, **base)
            except PassError:
                continue
            if target in SIMT:
                for b in BLOCK_SIZES:
                    for cap in GRID_CAPS:
                        out.append(dict(base, block=b, grid_cap=cap))
            elif target == "bang":
                for t, ft in BANG_DIMS:
                    out.append(dict(base, tasks=t, func_type=ft))
            else:
                out.append(base)
    return out


# ============================================================================ named checks
def check_portable(program: N.Program, target: str) -> None:
    """Every intrinsic and vector type of the program must exist in ``target`` (x86 intrinsics,
    WMMA, MFMA, __bang_* must first be lowered by detensorize; AMX tile calls have no lowering)."""
    from .lowering.x86 import is_amx_tile
    for n in walk(program.items):
        if isinstance(n, N.Intrinsic):
            d = REGISTRY.get(n.name)
            if d is not None and d.category != "math" and target not in d.dialects:
                raise PassError(NAME, f"'{n.name}' ({d.category}) does not exist in {target}: detensorize it "
                                      f"first", n)
        if isinstance(n, N.Call) and isinstance(n.func, str) and is_amx_tile(n.func) and target != "c":
            raise PassError(NAME, f"'{n.func}' (an AMX tile intrinsic) does not exist in {target}, and nothing "
                                  f"lowers it", n)
        if isinstance(n, N.Vector) and n.spelling.startswith("__m") and target != "c":
            raise PassError(NAME, f"x86 vector type '{n.spelling}' does not exist in {target}: detensorize "
                                  f"first", n)


def check_uniform_prelude(func: N.Func, loop: N.For, macros=frozenset()) -> tuple:
    """Statements of ``func`` outside ``loop`` run in every thread/task: they must be uniform
    (declarations with side-effect-free initialisers, uninitialised local arrays, early
    returns).  Returns the local arrays declared there."""
    arrays = []
    for s in func.body.stmts:
        if s is loop or isinstance(s, (N.Comment, N.Pragma)):
            continue
        if isinstance(s, N.Decl):
            if isinstance(s.type, N.Array) and s.init is None:
                arrays.append(s.name)
                continue
            if isinstance(s.type, (N.Scalar, N.Pointer, N.Named)) and _pure(s.init, macros):
                continue
        if isinstance(s, N.ExprStmt) and isinstance(s.expr, N.Cast) and _pure(s.expr, macros):
            continue                          # (void)x;
        if isinstance(s, N.Return) and s.value is None:
            continue
        if isinstance(s, N.If) and s.else_ is None and _pure(s.cond, macros) and _only_returns(s.then):
            continue                          # if (n <= 0) return;
        if isinstance(s, N.For) and arrays and _replicable(s, frozenset(arrays), macros):
            continue                          # fills local arrays: each thread/task its own copy
        what = type(s).__name__.lower()
        if isinstance(s, (N.For, N.CFor, N.While)):
            what = "another loop"
        raise PassError(NAME, f"{what} outside loop '{loop.var}' would run in every thread/task "
                              f"(only one parallel loop nest per kernel can be bound)", s)
    return tuple(arrays)


def check_prelude_reads(program, func: N.Func, loop: N.For, trusted=()) -> None:
    """Statements before ``loop`` at the top level of ``func`` run in every thread/task, and no
    barrier orders them against the iterations of ``loop`` in other blocks/tasks: a prelude read
    of an element that some iteration writes (``float first = y[0]; for (i...) y[i] -= first;``)
    may see the old or the new value.  Raise PassError naming the read and the loop unless the
    dependence test proves the element is never written by ``loop`` (``first = y[0]`` with ``i``
    from 1).  Local arrays are per-thread copies (the thread's own prelude runs before its own
    iterations); ``trusted``: buffers the source's own tasks share (``source_trusted``)."""
    view = D.analysis_view(func)
    vloop = D._same_position(func, view, loop)
    local = {d.name for d in walk(view.body) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}
    skip = local | set(trusted) | D._private_names(vloop.body) | {vloop.var}
    writes = [a for a in D.collect(vloop.body, view, program) if a.mode != "r" and a.buffer not in skip]
    if not writes:
        return
    top_assigned = D.assigned_names(view.body)
    for s in view.body.stmts:
        if s is vloop:
            return                            # after the loop: nothing the loop's result depends on
        if isinstance(s, (N.Comment, N.Pragma)):
            continue
        for r in D.collect(s, view, program):
            for w in writes:
                if r.buffer != w.buffer:
                    continue
                if r.index is not None and w.index is not None and _never_same(program, view, s, vloop, r, w,
                                                                               top_assigned):
                    continue
                line = getattr(getattr(r.stmt, "loc", None), "line", None)
                at = f" at line {line}" if line is not None else ""
                raise PassError(NAME, f"'{r.buffer}' read{at} by every thread/task before loop '{loop.var}' may be "
                                      f"an element that loop writes (no barrier orders the read against other "
                                      f"blocks/tasks): read it in a separate kernel or phase", _at(loop, func))


def _never_same(program, view, stmt, vloop, r, w, top_assigned) -> bool:
    """The element read by ``r`` (in the prelude statement ``stmt``) is written by no iteration
    of ``vloop`` (access ``w``): the overlap constraints are unsatisfiable."""
    def build(expand):
        env = D._make_env(program, view, N.Block((stmt, vloop)), (), expand)
        env.varying |= {n for n in top_assigned if n not in env.loopvars}
        D._bounds(vloop, "b", env)
        for acc, side in ((r, "a"), (w, "b")):
            for lp in acc.loops:
                D._bounds(lp, side, env)
            env.cons += D.guard_constraints(acc, side, env)
        if r.extent is None and w.extent is None:
            env.cons += D.equal_subscripts(r.index, tuple(r.loops), w.index, (vloop,) + tuple(w.loops), env)
        else:
            ia, ib = D.to_z3(r.index, "a", env), D.to_z3(w.index, "b", env)
            xa = D.to_z3(r.extent, "a", env) if r.extent is not None else D.z3.IntVal(1)
            xb = D.to_z3(w.extent, "b", env) if w.extent is not None else D.z3.IntVal(1)
            env.cons += [ia < ib + xb, ib < ia + xa]
        return env.cons
    return D._decide(build) == "unsat"


def source_trusted(func: N.Func, loop: N.For) -> tuple:
    """Buffers whose dependences across ``loop`` need no proof: the kernel's pointer parameters
    when loop recovery marked ``loop`` as the source's own parallel BANG tasks
    (:data:`passes.loop_recovery.SOURCE_PARTITION_PRAGMA`). The source launch runs those tasks in
    no particular order, so a race-free source never lets two of them touch one global element
    where one writes; re-deriving that with the dependence test fails on clamped contiguous
    slices (conv rows split as [begin, min(begin + per, n))). Local and file-scope buffers are
    still checked: recovery may have made per-core memories shared."""
    from .loop_recovery import SOURCE_PARTITION_PRAGMA
    if SOURCE_PARTITION_PRAGMA not in getattr(loop, "pragmas", ()):
        return ()
    return tuple(p.name for p in func.params if isinstance(p.type, (N.Pointer, N.Array)))


def check_loop_parallel(program, func, loop, private=()) -> None:
    dep = D.check_parallel(program, func, loop, private)
    if dep is not None:
        raise PassError(NAME, f"loop '{loop.var}' carries a dependence: {dep}", loop)


def check_retarget(program: N.Program, func: N.Func, target: str) -> dict:
    src = program.dialect
    if src not in SIMT or target not in SIMT:
        raise PassError(NAME, f"retarget moves SIMT kernels between cuda and hip, not {src} -> {target}", func)
    if src == target:
        raise PassError(NAME, f"program is already {target}", func, "XP4002")
    for n in walk(program.items):
        if isinstance(n, N.Fragment):
            raise PassError(NAME, "WMMA fragments have no hip form: detensorize first", n)
        if isinstance(n, N.Intrinsic):
            d = REGISTRY.get(n.name)
            cat = d.category if d else ""
            if cat in ("wmma", "mfma"):
                raise PassError(NAME, f"'{n.name}' ({cat}) has no {target} form: detensorize first", n)
            if cat == "warp":
                if src == "hip":
                    w = _shuffle_width(n, program)
                    if w is None or w > 32:
                        raise PassError(NAME, f"'{n.name}' is a {'64' if w is None or w == 64 else w}-lane "
                                              f"wavefront collective (width {'warpSize' if w is None else w}); "
                                              f"lower it with detensorize before moving to {target}", n)
                elif n.name == "__ballot_sync":
                    raise PassError(NAME, "__ballot_sync returns a 64-bit mask on hip: not retargeted", n)
                elif n.name.endswith("_sync") and not _full_mask(n.args[0], program):
                    raise PassError(NAME, f"'{n.name}' with a partial lane mask has no hip form", n)
            elif d is not None and cat != "math" and target not in d.dialects:
                raise PassError(NAME, f"'{n.name}' does not exist in {target}", n)
        # AMD builtins (lane counts, ds_bpermute, readfirstlane...) mean wave64 lanes; carried into
        # cuda they would not compile there, and the emulator would run them on 32-lane warps
        if target == "cuda" and isinstance(n, N.Call) and isinstance(n.func, str) and \
                n.func.startswith("__builtin_amdgcn_"):
            raise PassError(NAME, f"'{n.func}' is an AMD builtin with no cuda form (its lanes are a 64-lane "
                                  "wavefront's): lower it with detensorize first", n)
    return {"mode": "retarget", "target": target, "entry": func.name}


# ============================================================================ planning
def _at(node, func):
    """``node`` when it has a source location (else its function: loops made by loop recovery
    have none)."""
    return node if getattr(node, "loc", None) is not None else func


def splice_blocks(program: N.Program, func: N.Func, omp_regions: bool = False) -> N.Program:
    """``program`` with each plain ``{ ... }`` block at the top level of ``func`` replaced by its
    statements (repeatedly), when that changes no name's meaning: no name the block declares
    directly is a parameter of ``func`` or appears anywhere in ``func`` outside the block.  An
    inlined helper call (``passes/inline_helpers.py``) leaves such a block; its loops become
    top-level loops that binding can bind.  A block right after a pragma is left alone (the
    pragma applies to it), except, with ``omp_regions`` (device targets), an OpenMP parallel
    region ``#pragma omp parallel { ... }``: the pragma goes with the braces (binding reads the
    sequential program; the region's ``omp for`` loops are bound like any other loop and their
    pragmas dropped).  Returns ``program`` itself when nothing changes."""
    params = {p.name for p in func.params}

    def omp_region(p):
        w = p.text.split()
        return omp_regions and w[:2] == ["omp", "parallel"] and not (len(w) > 2 and w[2] in ("for", "sections",
                                                                                              "loop", "workshare"))

    names = row_blocks.names
    stmts, changed = tuple(func.body.stmts), False
    while True:
        out, spliced = [], False
        for k, s in enumerate(stmts):
            j = k - 1
            while j >= 0 and isinstance(stmts[j], N.Comment):
                j -= 1
            prev = stmts[j] if j >= 0 else None      # a pragma applies to the next statement
            if type(s) is N.Block and not spliced and (not isinstance(prev, N.Pragma) or omp_region(prev)):
                own = {d.name for d in s.stmts if isinstance(d, N.Decl)}
                rest = set()
                for j, o in enumerate(stmts):
                    if j != k:
                        rest |= names(o)
                if not (own & (params | rest)):
                    if isinstance(prev, N.Pragma):   # '#pragma omp parallel' goes with its region
                        out = [o for o in out if o is not prev]
                    out.extend(s.stmts)
                    spliced = True
                    continue
            out.append(s)
        if not spliced:
            break
        stmts, changed = tuple(out), True
    if not changed:
        return program
    return _replace_func(program, func, func.with_(body=func.body.with_(stmts=stmts)))


def _top_loops(func: N.Func) -> list:
    return [s for s in func.body.stmts if isinstance(s, N.For)]


def _pick_loop(func: N.Func, loop) -> N.For:
    if loop is not None:
        if D.is_ambiguous(func, loop):
            raise PassError(NAME, f"loop reference '{loop}' is ambiguous (use '{loop}#k' or 'line:N')", func)
        lp = D.find_loop(func, loop)
        if lp is None:
            raise PassError(NAME, f"no loop '{loop}' in {func.name}", func)
        return lp
    tops = _top_loops(func)
    if not tops:
        raise PassError(NAME, f"{func.name} has no canonical loop to bind", func, "XP4002")
    return tops[0]


def _first_work_loop(func: N.Func, macros=frozenset()) -> N.For:
    """The first top-level loop that is not a fill of local arrays declared before it (such a fill
    runs in every thread/task, see check_uniform_prelude); the first loop when all are fills."""
    tops = _pick_loop(func, None) and _top_loops(func)
    arrays = set()
    for s in func.body.stmts:
        if isinstance(s, N.Decl) and isinstance(s.type, N.Array) and s.init is None:
            arrays.add(s.name)
        if isinstance(s, N.For) and not (arrays and _replicable(s, frozenset(arrays), macros)):
            return s
    return tops[0]


def _plan_c(program, func, loop):
    tops = [_pick_loop(func, loop)] if loop is not None else _top_loops(func)
    if not tops:
        raise PassError(NAME, f"{func.name} has no canonical loop to parallelize", func, "XP4002")
    todo, first_err = [], None
    for lp in tops:
        if lp.binding == "omp" or any(p.startswith("omp") for p in lp.pragmas):
            continue
        dep = D.check_parallel(program, func, lp, source_trusted(func, lp))
        if dep is not None:
            first_err = first_err or PassError(NAME, f"loop '{lp.var}' carries a dependence: {dep}", _at(lp, func))
            continue
        todo.append(lp)
    if not todo:
        if first_err is not None and loop is not None:
            raise first_err
        raise PassError(NAME, "every parallel top-level loop already has an OpenMP pragma" if first_err is None
                        else f"no parallel loop: {first_err.why}", func, "XP4002")
    return {"mode": "bind", "target": "c", "func": func, "loops": [(lp, "omp") for lp in todo], "private": ()}


def _plan_device(program, func, target, loop, block, grid_cap, dims, tasks, func_type, atomics):
    lp = _pick_loop(func, loop) if loop is not None else _first_work_loop(func, purity.pure_macros(program))
    if not any(s is lp for s in func.body.stmts):
        raise PassError(NAME, f"loop '{lp.var}' is not at the top level of {func.name}: binding it would need a "
                              f"grid-wide barrier per iteration of the loops around it", _at(lp, func))
    try:
        arrays = check_uniform_prelude(func, lp, purity.pure_macros(program))
    except PassError as first:
        if loop is not None or dims == 2:
            raise
        plan = _plan_multi(program, func, target, first)
        plan.update(block=block, grid_cap=grid_cap, tasks=tasks, func_type=func_type, atomic=())
        return plan
    check_prelude_reads(program, func, lp, source_trusted(func, lp))
    # fill loops of the prelude (a std::vector's zeroing, a detensorized constant): every thread
    # runs them on its own copy; an array they fill stays declared at the top (not moved into lp)
    fills = [s for s in func.body.stmts if isinstance(s, N.For) and s is not lp]
    private, why_not = D.privatizable(program, func, lp, besides=fills) if arrays else ((), {})
    filled = {a for a in private if any(isinstance(x, N.Var) and x.name == a for f in fills for x in walk(f))}
    moved = tuple(a for a in private if a not in filled)
    atomic_stmts = ()
    dep = D.check_parallel(program, func, lp, tuple(private) + source_trusted(func, lp))
    if dep is not None:
        if atomics and target in SIMT:
            atomic_stmts = _atomic_reductions(program, func, lp, private)
        if not atomic_stmts:
            extra = f" ({dep.buffer}: {why_not[dep.buffer]})" if dep.buffer in why_not else ""
            raise PassError(NAME, f"loop '{lp.var}' carries a dependence: {dep}{extra}", _at(lp, func))
    bound = [(lp, "global.x" if target in SIMT else "taskId")]
    if target in SIMT and dims != 1 and not atomic_stmts:
        body = D.strip_comments(lp.body.stmts)
        if len(body) == 1 and isinstance(body[0], N.For):
            inner = body[0]
            if D.check_parallel(program, func, inner, private) is None:
                bound = [(lp, "global.y"), (inner, "global.x")]
    if dims == 2 and len(bound) == 1:
        raise PassError(NAME, f"loop '{lp.var}' has no directly nested parallel loop for a 2-D binding", lp)
    return {"mode": "bind", "target": target, "func": func, "loops": bound, "private": moved,
            "block": block, "grid_cap": grid_cap, "tasks": tasks, "func_type": func_type, "atomic": atomic_stmts}


def _fresh_namer(func):
    """A ``fresh(base)`` that gives names unused in ``func`` and never the same one twice."""
    issued = set()

    def fresh(base):
        name = _fresh_name(func, base)
        k = 0
        while name in issued:
            k += 1
            name = _fresh_name(func, f"{base}{k}")
        issued.add(name)
        return name
    return fresh


def _plan_phases(program, func, target, block, grid_cap, tasks, func_type, reduce="tree") -> dict:
    """Scalar reductions and dependent sibling nests: the kernel as ordered phases of one block
    (cuda/hip) or one task (bang); see passes/phases.py."""
    fresh = _fresh_namer(func)
    body, launch = phases.try_plan(program, func, target, block, fresh, reduce)
    return {"mode": "bind", "target": target, "func": func, "loops": [], "private": (), "phases": True,
            "body": body, "launch": launch, "block": block, "grid_cap": grid_cap, "tasks": tasks,
            "func_type": func_type, "atomic": ()}


def _plan_block_rows(program, func, target, loop, block, grid_cap, reduce="tree") -> dict:
    """``rows="block"``: the loop's iterations (rows) on thread blocks, its inner loops over the
    block's threads with block reductions; see passes/block_rows.py."""
    lp = _pick_loop(func, loop) if loop is not None else _first_work_loop(func, purity.pure_macros(program))
    # blocks holding loops in the row body (an inlined helper's) made row-body statements first,
    # where no name changes meaning (passes/row_blocks.py); the plan then sees their column loops
    spliced = row_blocks.splice(func, lp, _fresh_namer(func))
    extra = {}
    if spliced is not None:
        new_func, lp = spliced
        program, func = _replace_func(program, func, new_func), new_func
        extra["program"] = program
    pl = block_rows.plan(program, func, lp, target, block, reduce)
    fresh = _fresh_namer(func)
    body, launch = block_rows.build(program, func, pl, trip_count_expr(program, func, lp), grid_cap, fresh)
    return {"mode": "bind", "target": target, "func": func, "loops": [], "private": (), "phases": True,
            "body": body, "launch": launch, "block": block, "grid_cap": grid_cap, "tasks": 4,
            "func_type": "union1", "atomic": (), "rows_plan": pl, **extra}


def _plan_warp_rows(program, func, target, loop, block, grid_cap) -> dict:
    """``rows="warp"``: the loop's iterations (rows) on warps, its inner loops over the warp's
    lanes with shuffle reductions; see passes/warp_rows.py."""
    lp = _pick_loop(func, loop) if loop is not None else _first_work_loop(func, purity.pure_macros(program))
    pl = warp_rows.plan(program, func, lp, target, block)
    fresh = _fresh_namer(func)
    body, launch = warp_rows.build(program, func, pl, target, trip_count_expr(program, func, lp), grid_cap, fresh)
    return {"mode": "bind", "target": target, "func": func, "loops": [], "private": (), "phases": True,
            "body": body, "launch": launch, "block": block, "grid_cap": grid_cap, "tasks": 4,
            "func_type": "union1", "atomic": ()}


def _plan_block_core(program, func, target, loop, block, grid_cap, reduce="tree") -> dict:
    """``rows="core"``: the loop's iterations (BANG tasks) on thread blocks, their buffers one
    copy per block, their leaf loops over the block's threads; see passes/block_core.py."""
    lp = _pick_loop(func, loop) if loop is not None else _first_work_loop(func, purity.pure_macros(program))
    pl = block_core.plan(program, func, lp, target, block, grid_cap, _fresh_namer(func), reduce)
    return {"mode": "bind", "target": target, "func": func, "loops": [], "private": (), "phases": True,
            "body": pl["body"], "launch": pl["launch"], "globals": pl["globals"], "block": block,
            "grid_cap": grid_cap, "tasks": 4, "func_type": "union1", "atomic": ()}


def _replicable(s, arrays=frozenset(), macros=frozenset()) -> bool:
    """A statement every thread/task may run redundantly: it writes no memory (only local
    scalars and elements of the entry's local ``arrays``, see ``passes/replicate.py``), calls
    nothing with side effects and declares only scalars, pointers and uninitialised local
    arrays."""
    if isinstance(s, (N.Comment, N.Pragma)):
        return True
    if isinstance(s, N.Decl):
        if isinstance(s.type, N.Array):
            return s.init is None
        return isinstance(s.type, (N.Scalar, N.Pointer, N.Named)) and _pure(s.init, macros)
    if isinstance(s, N.ExprStmt) and isinstance(s.expr, N.Cast):
        return _pure(s.expr, macros)
    if isinstance(s, N.Return):
        return s.value is None
    if isinstance(s, N.Assign):
        if isinstance(s.target, N.Index) and replicate._base(s.target) in arrays:
            return _pure(s.target, macros) and _pure(s.value, macros)
        return isinstance(s.target, N.Var) and _pure(s.value, macros)
    if isinstance(s, N.Block):
        return all(_replicable(x, arrays, macros) for x in s.stmts)
    if isinstance(s, N.If):
        return _pure(s.cond, macros) and _replicable(s.then, arrays, macros) and \
            (s.else_ is None or _replicable(s.else_, arrays, macros))
    if isinstance(s, N.For) and arrays:       # fills local arrays (each thread its own copy)
        return all(_pure(x, macros) for x in (s.lo, s.hi, s.step)) and _replicable(s.body, arrays, macros)
    return False


def _plan_multi(program, func, target, first: PassError) -> dict:
    """Several top-level units: every canonical loop nest is bound (its own grid-/task-stride
    loop), other statements that write memory run once (in thread/task 0), statements that
    only compute local scalars run in every thread.  Legal when no element one unit writes is
    touched by a later unit in another thread (``dependence.sibling_conflict``)."""
    units = []
    local_arrays = frozenset(s.name for s in func.body.stmts if isinstance(s, N.Decl) and isinstance(s.type, N.Array))
    macros = purity.pure_macros(program)
    for s in func.body.stmts:
        if isinstance(s, (N.Comment, N.Pragma)):
            continue
        if isinstance(s, N.For) and local_arrays and _replicable(s, local_arrays, macros):
            units.append((s, "all"))           # e.g. a detensorized vector constant
        elif isinstance(s, N.For):
            units.append((s, "loop"))
        elif _replicable(s, local_arrays, macros):
            units.append((s, "all"))
        elif isinstance(s, N.Decl):
            raise first                        # a declaration with side effects (malloc, ...)
        else:
            units.append((s, "once"))
    if not any(h == "loop" for _, h in units):
        raise first
    declared_top = {s.name for s in func.body.stmts if isinstance(s, N.Decl)}
    arrays = [s.name for s in func.body.stmts if isinstance(s, N.Decl) and isinstance(s.type, N.Array)]
    private = []
    shared = replicate.replicated(units, arrays)
    for name in arrays:
        users = [(u, h) for u, h in units if not (isinstance(u, N.Decl) and u.name == name)
                 and any(isinstance(x, N.Var) and x.name == name for x in walk(u))]
        if name in shared:
            continue
        if len(users) > 1:
            raise PassError(NAME, f"local array '{name}' is used by several loop nests / statements: each "
                                  f"thread/task would see only its own part of it", _at(users[1][0], func))
        if users and users[0][1] == "loop":
            ok, _why = D.privatizable(program, func, users[0][0])
            if name in ok:
                private.append(name)
    for u, h in units:
        if h == "once":
            inside = {d.name for d in walk(u) if isinstance(d, N.Decl)}
            outer = (D.assigned_names(u) - inside) & declared_top
            if outer:
                raise PassError(NAME, f"statement run once assigns '{sorted(outer)[0]}', which the other "
                                      f"threads/tasks also use", _at(u, func))
        if h == "loop":
            dep = D.check_parallel(program, func, u, tuple(private))
            if dep is not None:
                raise PassError(NAME, f"loop '{u.var}' carries a dependence: {dep}", _at(u, func))
    why = D.sibling_conflict(program, func, units, replicated=shared)
    if why is not None:
        raise PassError(NAME, f"sibling loop nests cannot run in one kernel: {why}", _at(units[-1][0], func))
    b = "global.x" if target in SIMT else "taskId"
    return {"mode": "bind", "target": target, "func": func, "private": tuple(private), "multi": True,
            "loops": [(u, b) for u, h in units if h == "loop"],
            "once": [(u, b) for u, h in units if h == "once"]}


def _atomic_reductions(program, func, lp, private) -> tuple:
    """Statements ``B[e] += v`` that are the only accesses to the buffers carrying a
    dependence of ``lp`` (and no scalar is carried): they can become atomicAdd."""
    deps = D.carried(program, func, lp, private=private)
    if any(d.kind == "scalar" for d in deps):
        return ()
    bufs = {d.buffer for d in deps}
    stmts = []
    for n in walk(lp.body):
        touched = {x.name for x in walk(n) if isinstance(x, N.Var)} & bufs if isinstance(n, N.Stmt) and \
            not isinstance(n, (N.Block, N.For, N.If, N.While, N.CFor)) else set()
        if not touched:
            continue
        if isinstance(n, N.Assign) and n.op == "+=" and isinstance(n.target, N.Index) and \
                isinstance(n.target.base, N.Var) and n.target.base.name in bufs and \
                not ({x.name for x in walk(n.value) if isinstance(x, N.Var)} & bufs):
            stmts.append(n)
        else:
            return ()
    return tuple(stmts)


# ============================================================================ rewriting
def _bind(program: N.Program, plan: dict):
    func, target = plan["func"], plan["target"]
    marks = {id(lp): b for lp, b in plan["loops"]}
    once = {id(u): b for u, b in plan.get("once", ())}
    atomic = {id(s) for s in plan.get("atomic", ())}
    private = set(plan["private"])
    moved = {s.name: s for s in func.body.stmts if isinstance(s, N.Decl) and s.name in private}
    outer = plan["loops"][0][0] if plan["loops"] else None

    # rewrite by identity: walk the original tree and rebuild
    def rebuild(n):
        if id(n) in once:
            # a statement that writes memory outside the loop nests: thread/task 0 runs it
            inner = rebuild_plain(n)
            return N.For(var=_fresh_name(func, "once"), lo=N.Const(0), hi=N.Const(1), step=N.Const(1),
                         body=inner if isinstance(inner, N.Block) else N.Block((inner,)),
                         binding=once[id(n)], var_type=N.Scalar("int32", "int"), loc=n.loc)
        if isinstance(n, N.For) and id(n) in marks:
            body = rebuild(n.body)
            pr = tuple(p for p in n.pragmas if not p.startswith("xpiler "))   # its proof obligation is met
            pr = tuple(p for p in pr if not p.startswith("omp")) if target != "c" else pr
            if moved and (n is outer or plan.get("multi")):
                mine = tuple(d for k, d in moved.items() if any(isinstance(x, N.Var) and x.name == k
                                                              for x in walk(n.body)))
                body = body.with_(stmts=mine + body.stmts)
            return n.with_(body=body, binding=marks[id(n)], pragmas=pr)
        if isinstance(n, N.Assign) and id(n) in atomic:
            return N.ExprStmt(N.Intrinsic("atomicAdd", (N.UnOp("&", n.target), n.value), loc=n.loc), loc=n.loc)
        if isinstance(n, N.Block):
            stmts = tuple(rebuild(s) for s in n.stmts if not (n is func.body and isinstance(s, N.Decl)
                                                                and s.name in moved))
            return n.with_(stmts=stmts)
        if isinstance(n, N.Node) and not isinstance(n, N.Expr):
            from dataclasses import fields, replace
            ch = {}
            for f in fields(n):
                if f.name == "loc":
                    continue
                v = getattr(n, f.name)
                if isinstance(v, N.Stmt):
                    nv = rebuild(v)
                    if nv is not v:
                        ch[f.name] = nv
            return replace(n, **ch) if ch else n
        return n

    def rebuild_plain(n):
        saved = dict(once)
        once.clear()
        try:
            return rebuild(n)
        finally:
            once.update(saved)

    body = plan["body"] if plan.get("phases") else rebuild(func.body)
    if target == "c":
        new_func = func.with_(body=body)
        return _replace_func(program, func, new_func), {}
    attrs = tuple(a for a in func.attrs if a not in ("static", "inline"))
    from xpiler.platforms.harness import RESERVED_ENTRY_NAMES
    if func.name in RESERVED_ENTRY_NAMES:
        # a kernel named exp/sin/abs: C linkage would clash with the math library's own C
        # declaration of that name in nvcc/hipcc; with C++ linkage it is an overload
        attrs = tuple(a for a in attrs if a != "extern_c")
    elif "extern_c" not in attrs:
        attrs = ("extern_c",) + attrs
    new_func = func.with_(body=body, kind="kernel", attrs=attrs)
    prog = _replace_func(program, func, new_func)
    if plan.get("globals"):      # rows="core": the tasks' buffers, one slice per block
        at = prog.items.index(new_func)
        prog = prog.with_(items=prog.items[:at] + tuple(plan["globals"]) + prog.items[at:])
    items = []
    for it in prog.items:
        if isinstance(it, N.Func) and it is not new_func and it.body is not None and it.kind != "kernel":
            it = it.with_(kind="device", attrs=tuple(a for a in it.attrs if a != "extern_c"))
        items.append(it)
    from xpiler.printers.headers import headers_for, foreign_include
    heads = tuple(h for h in headers_for(program, target)
                  if not any(isinstance(i, N.Directive) and i.text == h.text for i in items))
    items = [i for i in items if not (isinstance(i, N.Directive) and i.kind == "include"
                                      and foreign_include(i.text, target))]
    lead = 0
    while lead < len(items) and isinstance(items[lead], N.Comment):
        lead += 1
    items = items[:lead] + list(heads) + items[lead:]
    prog = prog.with_(dialect=target, items=tuple(items))
    return prog, _launch(program, func, plan)


def _fresh_name(func, base):
    used = {n.name for n in walk(func) if isinstance(n, (N.Var, N.Decl))} | \
        {n.var for n in walk(func) if isinstance(n, N.For)}
    k, name = 0, base
    while name in used:
        k += 1
        name = f"{base}{k}"
    return name


def _replace_func(program, old, new):
    return program.with_(items=tuple(new if it is old else it for it in program.items))


def _launch(program, func, plan) -> dict:
    target = plan["target"]
    if plan.get("phases"):
        return dict(plan["launch"])
    if target == "bang":
        return {"dim": [plan["tasks"], 1, 1], "func_type": plan["func_type"]}
    block = plan["block"]
    cap = plan["grid_cap"]
    loops = plan["loops"]
    if plan.get("multi"):
        exts = [_blocks(program, func, lp, block, cap) for lp, _ in loops]
        if any(isinstance(e, int) for e in exts):
            grid = FALLBACK_GRID if cap is None else min(FALLBACK_GRID, cap)
        else:
            grid = exts[0]
            for e in exts[1:]:
                grid = grid if e == grid else f"max({grid}, {e})"
            if plan.get("once"):
                grid = f"max({grid}, 1)"           # thread 0 must exist for the run-once statements
        return {"grid": [grid, 1, 1], "block": [block, 1, 1]}
    if len(loops) == 1:
        return {"grid": [_blocks(program, func, loops[0][0], block, cap), 1, 1], "block": [block, 1, 1]}
    bx = 32 if block >= 32 else block
    by = max(1, block // bx)
    gy = _blocks(program, func, loops[0][0], by, cap if cap else 65535)
    gx = _blocks(program, func, loops[1][0], bx, cap)
    return {"grid": [gx, gy, 1], "block": [bx, by, 1]}


def _blocks(program, func, loop, per_block, cap):
    ext = trip_count_expr(program, func, loop)
    if ext is None:
        return FALLBACK_GRID if cap is None else min(FALLBACK_GRID, cap)
    text = f"({ext} + {per_block - 1}) / {per_block}"
    return f"min({text}, {cap})" if cap else text


def trip_count_expr(program, func, loop):
    """The trip count of ``loop`` as an expression over the kernel's integer parameters (text
    for the spec's [launch]), or None."""
    lets = {}
    assigned = D.assigned_names(func.body)
    for s in func.body.stmts:
        if isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None and s.name not in assigned:
            lets[s.name] = s.init
    macros = program.macro_table()
    e = loop.hi if isinstance(loop.lo, N.Const) and loop.lo.value == 0 else N.BinOp("-", loop.hi, loop.lo)
    if not (isinstance(loop.step, N.Const) and loop.step.value == 1):
        e = N.BinOp("/", N.BinOp("+", e, N.BinOp("-", loop.step, N.Const(1))), loop.step)
    for _ in range(10):
        mapping = dict(lets)
        for m in macros.values():
            if m.params is None and m.expr is not None:
                mapping[m.name] = m.expr
        ne = rewrite(substitute(e, mapping), lambda n: _expand_macro_call(n, macros))
        if ne == e:
            break
        e = ne
    params = {p.name for p in func.params if isinstance(p.type, N.Scalar) and p.type.dtype in D.INT_DTYPES}
    ok = True

    def strip(n):
        nonlocal ok
        if isinstance(n, N.Type):
            return n                      # the type of a cast (visited before the cast itself)
        if isinstance(n, N.Cast):
            if not (isinstance(n.type, N.Scalar) and n.type.dtype in D.INT_DTYPES):
                ok = False
            return n.expr
        if isinstance(n, N.Var) and n.name not in params:
            ok = False
        if isinstance(n, N.Const) and not isinstance(n.value, int):
            ok = False
        if not isinstance(n, (N.Var, N.Const, N.BinOp, N.UnOp, N.Cast, N.Block)):
            ok = False
        if isinstance(n, N.BinOp) and n.op not in ("+", "-", "*", "/", "%"):
            ok = False
        return n
    e = rewrite(e, strip)
    if not ok:
        return None
    from xpiler.printers import printer_for
    pr = printer_for("c")
    return _const_text(pr.expr(e))


def _expand_macro_call(n, macros):
    """A use of a function-like macro whose body is an expression -> the body with the arguments
    (parenthesised by the printer as the tree needs)."""
    if isinstance(n, N.Call) and isinstance(n.func, str):
        m = macros.get(n.func)
        if m is not None and m.params is not None and m.expr is not None and len(m.params) == len(n.args):
            return substitute(m.expr, dict(zip(m.params, n.args)))
    return n


def _const_text(s: str) -> str:
    return re.sub(r"\b(\d+)[uUlL]+\b", r"\1", s)


# ============================================================================ retarget
# cuda_fp16.h's half max/min, which the HIP headers do not declare: a device helper each, with
# CUDA's NaN rule (a NaN operand yields the other one); __hmax2 / __hmin2 per half
_HIP_HALF_MINMAX = {
    "__hmax": ("xp_hmax", "__device__ static inline __half xp_hmax(__half a, __half b) "
                          "{ return (__hgt(a, b) || __hisnan(b)) ? a : b; }"),
    "__hmin": ("xp_hmin", "__device__ static inline __half xp_hmin(__half a, __half b) "
                          "{ return (__hlt(a, b) || __hisnan(b)) ? a : b; }"),
    "__hmax2": ("xp_hmax2", "__device__ static inline __half2 xp_hmax2(__half2 a, __half2 b) "
                            "{ return __halves2half2(xp_hmax(__low2half(a), __low2half(b)), "
                            "xp_hmax(__high2half(a), __high2half(b))); }"),
    "__hmin2": ("xp_hmin2", "__device__ static inline __half2 xp_hmin2(__half2 a, __half2 b) "
                            "{ return __halves2half2(xp_hmin(__low2half(a), __low2half(b)), "
                            "xp_hmin(__high2half(a), __high2half(b))); }"),
}


def _hip_half_minmax(items):
    used = set()

    def fn(n):
        name = n.name if isinstance(n, N.Intrinsic) else n.func if isinstance(n, N.Call) else None
        if isinstance(name, str) and name in _HIP_HALF_MINMAX and len(n.args) == 2:
            used.add(name)
            return N.Call(_HIP_HALF_MINMAX[name][0], tuple(n.args), loc=n.loc)
        return n
    items = rewrite(items, fn)
    if not used:
        return items
    if "__hmax2" in used:
        used.add("__hmax")
    if "__hmin2" in used:
        used.add("__hmin")
    helpers = [N.Directive(text, "other") for k, (_, text) in _HIP_HALF_MINMAX.items() if k in used]
    items = list(items)
    at = max((i + 1 for i, it in enumerate(items) if isinstance(it, N.Directive) and it.kind == "include"), default=0)
    return tuple(items[:at] + helpers + items[at:])


def _retarget(program: N.Program, plan: dict) -> N.Program:
    src, dst = program.dialect, plan["target"]
    rename = host_rename_table(src, dst)

    def fn(n):
        if isinstance(n, N.Builtin) and n.name == "warpSize" and dst == "hip":
            return N.Const(32, "int32", "32", loc=n.loc)
        if isinstance(n, N.Intrinsic) and dst == "hip" and n.name.startswith("__shfl") and n.name.endswith("_sync"):
            args = tuple(n.args[1:])
            if len(args) == 2:
                args += (N.Const(32, "int32", "32"),)
            return N.Intrinsic(n.name[:-len("_sync")], args, loc=n.loc)
        if isinstance(n, N.Intrinsic) and dst == "cuda" and n.name.startswith("__shfl") and \
                not n.name.endswith("_sync"):
            return N.Intrinsic(n.name + "_sync", (N.Const(0xffffffff, "uint32", "0xffffffffu"),) + tuple(n.args),
                               loc=n.loc)
        if isinstance(n, N.Barrier) and n.kind == "warp" and dst == "hip":
            # HIP has no __syncwarp. A wavefront runs its lanes in lock-step, so the execution
            # half is a wave barrier (no reordering across it); the memory half, which a bare
            # comment dropped (non-volatile shared data could stay in registers across it), is a
            # wavefront-scope release/acquire fence pair
            def fence(order):
                return N.ExprStmt(N.Call("__builtin_amdgcn_fence", (N.Var(order), N.Const(
                    "wavefront", "str", '"wavefront"'))), loc=n.loc)
            return N.Block((fence("__ATOMIC_RELEASE"),
                            N.ExprStmt(N.Call("__builtin_amdgcn_wave_barrier", ()), loc=n.loc),
                            fence("__ATOMIC_ACQUIRE")), loc=n.loc)
        if isinstance(n, (N.Intrinsic, N.Call)) and dst == "hip" and len(n.args) == 1 and \
                (getattr(n, "name", None) or getattr(n, "func", None)) in _BF16_CONVERSIONS:
            # ROCm 5's hip_bfloat16 has no __bfloat162float / __float2bfloat16; its conversions
            # (operator float, the float constructor) are exact widening / round-to-nearest-even
            to = _BF16_CONVERSIONS[getattr(n, "name", None) or getattr(n, "func", None)]
            return N.Cast(N.Scalar(to[0], to[1]), n.args[0], loc=n.loc)
        if isinstance(n, N.Call) and isinstance(n.func, str) and n.func in rename:
            return n.with_(func=rename[n.func])
        if isinstance(n, N.Var) and n.name in rename:
            return n.with_(name=rename[n.name])
        if isinstance(n, N.Named) and n.name in rename:
            return n.with_(name=rename[n.name])
        if isinstance(n, N.Launch) and dst == "cuda" and n.style == "ggl":
            return n.with_(style="chevron")
        if isinstance(n, N.Directive) and n.kind == "include":
            for a, b in INCLUDE_MAP[(src, dst)]:
                if a in n.text:
                    return n.with_(text=n.text.replace(a, b))
        return n
    items = rewrite(program.items, fn)
    if dst == "hip":
        items = _hip_half_minmax(items)
    # a vendor header whose intrinsics detensorize already lowered has no counterpart on the target
    uses_wmma = any(isinstance(n, N.Intrinsic) and n.name.startswith("wmma::") for n in walk(items))
    if not uses_wmma:
        items = tuple(i for i in items if not (isinstance(i, N.Directive) and i.kind == "include"
                                               and "<mma.h>" in i.text))
    return program.with_(dialect=dst, items=items)


#: cuda_bf16.h -> hip/hip_bfloat16.h: its hip_bfloat16 is in ROCm 5 and 6 alike (hip_bf16.h's
#: __hip_bfloat16 only in ROCm 6; this host's clang-15 check has ROCm 5.2)
INCLUDE_MAP = {("cuda", "hip"): (("<cuda_runtime.h>", "<hip/hip_runtime.h>"), ("<cuda_fp16.h>", "<hip/hip_fp16.h>"),
                                 ("<cuda_bf16.h>", "<hip/hip_bfloat16.h>")),
               ("hip", "cuda"): (("<hip/hip_runtime.h>", "<cuda_runtime.h>"), ("<hip/hip_fp16.h>", "<cuda_fp16.h>"),
                                 ("<hip/hip_bf16.h>", "<cuda_bf16.h>"), ("<hip/hip_bfloat16.h>", "<cuda_bf16.h>"))}
#: CUDA's bfloat16 conversion functions -> a cast to (dtype, spelling) on hip
_BF16_CONVERSIONS = {"__bfloat162float": ("float32", "float"), "__float2bfloat16": ("bfloat16", "hip_bfloat16"),
                     "__float2bfloat16_rn": ("bfloat16", "hip_bfloat16")}


def host_rename_table(src: str, dst: str) -> dict:
    """Identifier renames src -> dst read off the host API mapping table (same position of
    differing identifiers in the two forms of a row)."""
    from xpiler.mappings.host_api import TABLE
    out = {}
    ident = re.compile(r"[A-Za-z_]\w*")
    for row in TABLE:
        a, b = row.forms.get(src), row.forms.get(dst)
        if not a or not b or a.startswith("#"):
            continue
        ta = [t for t in ident.findall(a) if not row.operands or t not in row.operands]
        tb = [t for t in ident.findall(b) if not row.operands or t not in row.operands]
        if len(ta) != len(tb):
            continue
        for x, y in zip(ta, tb):
            if x != y and x.startswith(("cuda", "hip")):
                out.setdefault(x, y)
    return out


def _shuffle_width(n: N.Intrinsic, program):
    """Explicit shuffle width (int) or None when it is the hardware wavefront width."""
    d = REGISTRY.get(n.name)
    names = [a.name for a in d.args] if d else []
    if "width" not in names or names.index("width") >= len(n.args):
        return None
    w = n.args[names.index("width")]
    return _const_value(w, program)


def _const_value(e, program):
    if isinstance(e, N.Const) and isinstance(e.value, int):
        return e.value
    if isinstance(e, N.Var):
        m = program.macro_table().get(e.name)
        if m is not None and m.expr is not None:
            return _const_value(m.expr, program)
    if isinstance(e, N.Builtin) and e.name == "warpSize":
        return None
    return None


def _full_mask(e, program) -> bool:
    v = _const_value(e, program)
    if v is None and isinstance(e, N.UnOp) and e.op == "~":
        inner = _const_value(e.operand, program)
        return inner == 0
    return v is not None and v & 0xffffffff == 0xffffffff


def _only_returns(s) -> bool:
    if isinstance(s, N.Return):
        return s.value is None
    if isinstance(s, N.Block):
        body = D.strip_comments(s.stmts)
        return bool(body) and all(_only_returns(x) for x in body)
    return False


def _pure(e, macros=frozenset()) -> bool:
    """No assignment, increment or call with effects in ``e``; ``macros``: the program's pure
    function-like macros (``passes/purity.py``), whose uses count as pure calls."""
    return e is None or purity.is_pure(e, macros)
    for n in walk(e):
        if isinstance(n, N.Call) and not (isinstance(n.func, str) and (n.func in D.PURE_CALLS or n.func in macros)):
            return False
        if isinstance(n, N.AssignExpr) or isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
            return False
        if isinstance(n, N.Intrinsic):
            d = REGISTRY.get(n.name)
            if d is None or d.category != "math":
                return False
    return True
