"""One thread block per core: binding's ``rows="core"`` form for cuda / hip.

A BANG task runs on one MLU core: scalar code steers vector instructions over NRAM buffers, and
after loop recovery and detensorization its body is a sequence of loops over those buffers
(copies, maps, reductions) nested in ordinary sequential loops (row blocks, rows of a block).
Bound one task per thread (``rows="thread"``) each thread replays a whole core's work alone. Here
the task loop is bound to the thread blocks (``For.binding = "blockIdx.x"``, block-stride when
the grid is capped), and inside it:

* every *leaf loop* (a loop with no loop inside) that carries no dependence through memory is
  spread over the block's threads (``threadIdx.x``, block-stride); the scalars it accumulates
  (``+ * & | ^ max min``) meet in a shared-memory tree whose result every thread reads
  (``passes/phases.py``), as in ``passes/block_rows.py``, or through warp shuffles with
  ``reduce="shuffle"`` (``passes/warp_reduce.py``);
* every other loop runs in every thread, its body lowered the same way (its bounds and
  conditions read only values every thread has alike); so does a leaf loop that stores nothing
  and updates scalars in a way that is no reduction (an argmax);
* a statement that stores to memory outside a spread loop runs in thread 0;
* scalar statements, declarations and conditions run in every thread;
* a ``__syncthreads()`` comes before and after every statement that stores to memory (a spread
  loop or a thread-0 statement), so that every read of a buffer sees the last store to it and no
  store overtakes an earlier read;
* the task's local arrays (the NRAM/WRAM buffers) become one copy per block: ``__shared__`` while
  they fit in :data:`SHARED_BYTES`, the others device-global slices ``xp_core_<name>[G][...]``
  indexed by ``blockIdx.x`` (``G`` the grid; a block reuses its slice for each task it runs,
  which is unobservable: the array was declared inside the iteration).

Why every thread's scalars agree: a scalar is assigned only by statements every thread runs (with
values from other such scalars or from memory read after a barrier), or as a reduction whose tree
gives every thread the total; a thread-0 statement that assigns a scalar is refused.

Legality (:func:`plan`, every refusal a ``PassError`` XP4001 naming the statement): the task loop
is at the top level, carries no dependence (``dependence.check_parallel``) and has no return or
break out of its body; the statements outside it are uniform and read nothing it writes; its
local arrays are declared at the top of its body with constant sizes and no initialiser; no other
local array; a leaf loop is a map or reduction (``block_rows``' column-loop test); no barrier or
call with side effects.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from .base import PassError
from . import dependence as D
from . import phases
from . import purity
from xpiler.dtypes import itemsize

NAME = "binding"
SHARED_BYTES = 24 * 1024           # local arrays kept in __shared__ memory, at most (the trees add theirs)
SHARED_LIMIT = 48 * 1024           # static shared memory of one block (cuda and hip)
MAX_GLOBAL_BYTES = 256 * 1024 * 1024   # device-global slices, at most (as passes/privatize.py)
DEFAULT_GRID = 256                 # blocks when the task count is not a constant
BLOCK_SIZES = (128, 256)           # offered by binding.candidates() (a core's vectors are short)
GRID_CAPS = (None,)                # offered by binding.candidates(): the task count is the search's


def _has_loop(s) -> bool:
    return any(isinstance(n, (N.For, N.CFor, N.While)) for n in walk(s))


def _at(node, outer):
    return node if getattr(node, "loc", None) is not None else outer


def plan(program, func: N.Func, core: N.For, target: str, block: int, grid_cap, fresh, reduce: str = "tree") -> dict:
    """The one-block-per-core form of ``core`` (a top-level loop of ``func``): the new body of
    ``func``, the launch, and the file-scope arrays to declare; raises PassError."""
    from .binding import check_prelude_reads, check_uniform_prelude
    from .block_rows import _column_loop, spread_loop
    from .privatize import _const_int
    if target not in ("cuda", "hip"):
        raise PassError(NAME, f"rows='core' binds tasks to cuda/hip thread blocks, not {target}", core)
    if not any(s is core for s in func.body.stmts):
        raise PassError(NAME, f"loop '{core.var}' is not at the top level of {func.name}", _at(core, func))
    macros = purity.pure_macros(program)
    table = program.macro_table()
    if check_uniform_prelude(func, core, macros):
        raise PassError(NAME, f"rows='core': a local array outside loop '{core.var}' would be one copy per "
                              f"thread, not per block", _at(core, func))
    check_prelude_reads(program, func, core)
    if any(isinstance(n, N.Return) for n in walk(core.body)) or _breaks(core.body, 0):
        # (a ``continue`` is fine: its condition reads only values every thread has alike)
        raise PassError(NAME, f"rows='core': loop '{core.var}' returns or breaks out of its body (every task "
                              f"of a block must run to its end)", _at(core, func))
    if any(isinstance(n, N.Barrier) for n in walk(core.body)):
        raise PassError(NAME, f"rows='core': loop '{core.var}' already holds a barrier", _at(core, func))
    dep = D.check_parallel(program, func, core)
    if dep is not None:
        raise PassError(NAME, f"loop '{core.var}' carries a dependence: {dep}", _at(core, func))

    # the task's buffers: one copy per block
    arrays, rest = [], []
    for s in core.body.stmts:
        if isinstance(s, N.Decl) and isinstance(s.type, N.Array):
            arrays.append(s)
        else:
            rest.append(s)
    nested = [n for s in rest for n in walk(s) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)]
    if nested:
        raise PassError(NAME, f"rows='core': local array '{nested[0].name}' is not declared at the top of the "
                              f"body of loop '{core.var}'", _at(nested[0], core))
    outside = {n.name for s in func.body.stmts if s is not core for n in walk(s) if isinstance(n, N.Decl)}
    sizes = {}
    for a in arrays:
        n, t = 1, a.type
        while isinstance(t, N.Array):
            for d in t.dims:
                v = _const_int(d, table) if d is not None else None
                n = n * v if v is not None and v > 0 else 0
            t = t.elem
        if not n or a.init is not None or "static" in a.attrs or a.name in outside:
            raise PassError(NAME, f"rows='core': local array '{a.name}' needs a constant size, no initialiser and "
                                  f"a name of its own", _at(a, core))
        sizes[a.name] = n * (itemsize(t.dtype) if isinstance(t, N.Scalar) else 4)

    uniform = {d.name for d in walk(core.body) if isinstance(d, N.Decl)} | {p.name for p in func.params} | \
        {s.name for s in func.body.stmts if isinstance(s, N.Decl)}
    types = {d.name: d.type for d in walk(func.body) if isinstance(d, N.Decl)}
    tid = N.Builtin("threadIdx.x")
    trees: list = []

    def lower(stmts, where) -> list:
        out: list = []

        def barrier():
            if not out or not isinstance(out[-1], N.Barrier):
                out.append(N.Barrier("block"))
        for s in stmts:
            if isinstance(s, (N.Comment, N.Pragma)):
                out.append(s)
            elif isinstance(s, N.Decl):
                if s.init is not None and not phases._pure(s.init, macros):
                    raise PassError(NAME, f"rows='core': declaration of '{s.name}' has side effects", _at(s, where))
                out.append(s)
            elif isinstance(s, N.Block):
                out.append(s.with_(stmts=tuple(lower(s.stmts, s))))
            elif isinstance(s, N.If) and (_has_loop(s) or phases.writes_memory(s, macros)):
                if not phases._pure(s.cond, macros):
                    raise PassError(NAME, f"rows='core': a condition with side effects", _at(s, where))
                then = N.Block(tuple(lower(_stmts(s.then), s)))
                other = N.Block(tuple(lower(_stmts(s.else_), s))) if s.else_ is not None else None
                out.append(s.with_(then=then, else_=other))
            elif isinstance(s, N.For) and _has_loop(s.body):
                # a loop around other loops: every thread runs it (uniform bounds), its body lowered
                if not (phases._pure(s.lo, macros) and phases._pure(s.hi, macros) and phases._pure(s.step, macros)):
                    raise PassError(NAME, f"rows='core': loop '{s.var}' has bounds with side effects", _at(s, where))
                if s.var in D.assigned_names(s.body):
                    raise PassError(NAME, f"rows='core': loop '{s.var}' assigns its own variable", _at(s, where))
                out.append(s.with_(body=N.Block(tuple(lower(s.body.stmts, s)))))
            elif isinstance(s, N.For):
                try:
                    reds = _column_loop(program, func, s, core)
                except PassError:
                    if phases.writes_memory(s, macros) or not phases._pure_control(s, macros):
                        raise
                    out.append(s)       # a scalar recurrence that stores nothing (an argmax): every
                    continue            # thread runs it alike, reading what the last barrier ordered
                barrier()
                out.append(spread_loop(s, reds, types, block, tid, fresh, trees, reduce, target))
                barrier()
            elif isinstance(s, (N.CFor, N.While)):
                raise PassError(NAME, f"rows='core': a {type(s).__name__} loop (only counted loops are lowered)",
                                _at(s, where))
            elif not phases.writes_memory(s, macros) and phases._pure_control(s, macros):
                out.append(s)                       # scalar work: every thread
            else:
                inside = {d.name for d in walk(s) if isinstance(d, N.Decl)}
                assigned = (D.assigned_names(s) - inside) & uniform
                if assigned:
                    raise PassError(NAME, f"rows='core': statement run by thread 0 assigns '{sorted(assigned)[0]}', "
                                          f"which the other threads also use", _at(s, where))
                barrier()
                out.append(N.If(N.BinOp("==", tid, N.Const(0)), s if isinstance(s, N.Block) else N.Block((s,)),
                                loc=s.loc))
                barrier()
        return out

    body = lower(rest, core)
    if not any(isinstance(n, N.For) and n.binding == "threadIdx.x" for s in body for n in walk(s)):
        raise PassError(NAME, f"rows='core': the body of loop '{core.var}' has no loop to spread over the block",
                        _at(core, func), "XP4002")

    # the grid, then where each buffer lives
    from .binding import trip_count_expr
    trip = trip_count_expr(program, func, core)
    tconst = _const_int(N.Var(trip), table) if isinstance(trip, str) and trip.isidentifier() else None
    if tconst is None and isinstance(trip, str):
        try:
            tconst = int(trip)
        except ValueError:
            tconst = None
    grid = tconst if tconst is not None else DEFAULT_GRID
    if grid_cap:
        grid = min(grid, grid_cap)
    trees_bytes = sum(t.type.dims[0].value * itemsize(t.type.elem.dtype) for t in trees)   # B, or B / 32 slots
    shared, slices, used = [], [], 0
    for a in arrays:
        if used + sizes[a.name] <= SHARED_BYTES:
            shared.append(a)
            used += sizes[a.name]
        else:
            slices.append(a)
    if used + trees_bytes > SHARED_LIMIT:
        raise PassError(NAME, f"rows='core': {used + trees_bytes} bytes of shared memory per block (limit "
                              f"{SHARED_LIMIT})", _at(core, func))
    per_block = sum(sizes[a.name] for a in slices)
    if per_block:
        grid = max(1, min(grid, MAX_GLOBAL_BYTES // per_block))
    globals_, names = [], {}
    taken = {n.name for n in walk(func.body) if isinstance(n, (N.Decl, N.Var))} | \
        {getattr(i, "name", None) for i in program.items}
    for a in slices:
        g = f"xp_core_{a.name}"
        while g in taken:
            g += "_"
        taken.add(g)
        globals_.append(N.Decl(name=g, type=N.Array(a.type.elem, (N.Const(grid),) + tuple(a.type.dims)),
                               scope="global", attrs=a.attrs, loc=a.loc))
        names[a.name] = N.Index(N.Var(g), N.Builtin("blockIdx.x"))
    new_body = tuple(substitute(tuple(body), names)) if names else tuple(body)
    if trees or any(isinstance(n, N.Barrier) for s in new_body for n in walk(s)):
        new_body = new_body + (N.Barrier("block"),)     # the next task of this block reuses the buffers
    bound = core.with_(body=core.body.with_(stmts=new_body), binding="blockIdx.x",
                       pragmas=tuple(p for p in core.pragmas if not p.startswith(("omp", "xpiler "))))
    tops = tuple(a.with_(scope="shared") for a in shared) + tuple(trees)
    stmts = tops + tuple(bound if s is core else s for s in func.body.stmts)
    return {"body": func.body.with_(stmts=stmts), "launch": {"grid": [grid, 1, 1], "block": [block, 1, 1]},
            "globals": tuple(globals_)}


def _breaks(n, depth: int) -> bool:
    """A ``break`` that leaves the loop whose body ``n`` is (``depth`` loops inside it)."""
    if isinstance(n, N.Break) and depth == 0:
        return True
    inner = isinstance(n, (N.For, N.CFor, N.While))
    return any(_breaks(c, depth + (1 if inner else 0)) for c in n.children() if isinstance(c, N.Stmt))


def _stmts(s) -> tuple:
    return s.stmts if isinstance(s, N.Block) else (s,)
