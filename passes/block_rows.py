"""One block per row: binding's ``rows="block"`` form for cuda / hip.

A row kernel (softmax, layer/RMS norm, gemv) is a parallel outer loop whose body is a short
sequence of phases over the row's columns: maps (``y[c] = ...``) and scalar reductions (the
row's maximum, sum, sum of squares, dot product), with scalar statements between them.  Binding
the row loop to threads (``rows="thread"``, the default) gives each thread a whole row: every
column loop runs sequentially and a warp's threads read addresses ``cols`` apart.  Here the row
loop is bound to the blocks (``For.binding = "blockIdx.x"``, block-stride when the grid is
capped) and each column loop is spread over the block's threads (``threadIdx.x``,
block-stride), the form experts write:

* a column loop with reductions gives each thread a partial (``passes/phases.py``: identity
  ``0`` / ``1``, or the accumulator's current value for max / min), and the partials meet in a
  shared-memory tree (``__shared__ T xp_red_acc[B]``, ``log2 B`` halving steps with
  ``__syncthreads``) whose result every thread reads, so the accumulator stays uniform;
* scalar statements (declarations, assignments, pure conditions) run in every thread;
* a statement that stores outside a loop (``y[i] = acc;``) runs in thread 0;
* ``__syncthreads()`` separates a phase that writes memory from the next phase of the row,
  precedes a writing phase when a statement run by every thread read memory since the last
  barrier, and ends a row whose last reduction was not followed by one (the next row reuses the
  shared arrays); the last phase's stores need none (rows touch disjoint elements).

With ``reduce="shuffle"`` the partials meet through warp shuffles instead of the tree: one
``__shared__`` slot per warp and one barrier per reduction (``passes/warp_reduce.py``).

Legality (:func:`plan`, every refusal a ``PassError`` XP4001 naming the statement):

* the row loop carries no dependence (``dependence.check_parallel``, no privatization), does
  not return, break or continue out of its body, and the statements of the entry outside it are
  uniform (``binding.check_uniform_prelude``) without local arrays, and read no element the row
  loop writes (``binding.check_prelude_reads``: no barrier orders them across blocks);
* every loop of the row body is one of its statements (not nested in an ``if`` or a block; a
  plain block holding a loop is first made statements of the row body where no name changes
  meaning, ``passes/row_blocks.py``, called by ``binding._plan_block_rows``) and
  carries no dependence through memory; the scalars declared outside it that it assigns are
  reductions of one operator each (``phases.reductions``: ``+ * & | ^ max min``); a recurrence
  (a running value that is not such a reduction, ``y[c] = y[c-1] + ...``) is refused: this form
  has no sequential phase;
* no local array in the row body; declarations have side-effect-free initialisers; a statement
  run by thread 0 assigns no scalar that the other threads use.

Launch ``{"grid": [rows, 1, 1], "block": [B, 1, 1]}`` (``min(rows, cap)`` with a grid cap).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from .base import PassError
from . import dependence as D
from . import phases
from . import purity
from . import row_blocks

NAME = "binding"
BLOCK_SIZES = (128, 256, 512)      # offered by binding.candidates()
GRID_CAPS = (None, 1024)


def _reads_memory(s) -> bool:
    return any(isinstance(n, (N.Index, N.Member)) or isinstance(n, N.UnOp) and n.op == "*" for n in walk(s))


def _has_loop(s) -> bool:
    return any(isinstance(n, (N.For, N.CFor, N.While)) for n in walk(s))


def plan(program, func: N.Func, row: N.For, target: str, block: int, reduce: str = "tree") -> dict:
    """The one-block-per-row plan of ``row`` (a top-level loop of ``func``); raises PassError."""
    if target not in ("cuda", "hip"):
        raise PassError(NAME, f"rows='block' binds rows to cuda/hip thread blocks, not {target}", row)
    if not any(s is row for s in func.body.stmts):
        raise PassError(NAME, f"loop '{row.var}' is not at the top level of {func.name}", _at(row, func))
    macros = purity.pure_macros(program)
    from .binding import check_prelude_reads, check_uniform_prelude
    arrays = check_uniform_prelude(func, row, macros)
    check_prelude_reads(program, func, row)
    if arrays:
        raise PassError(NAME, f"rows='block': local array '{arrays[0]}' outside loop '{row.var}' would be one "
                              f"copy per thread, not per row", _at(row, func))
    if phases._has_exit(row):
        raise PassError(NAME, f"rows='block': loop '{row.var}' returns or breaks out of its body (every row "
                              f"of a block must run to its end)", _at(row, func))
    dep = D.check_parallel(program, func, row)
    if dep is not None:
        raise PassError(NAME, f"loop '{row.var}' carries a dependence: {dep}", _at(row, func))
    inner_decls = {d.name for d in walk(row.body) if isinstance(d, N.Decl)}
    uniform = inner_decls | {p.name for p in func.params} | \
        {s.name for s in func.body.stmts if isinstance(s, N.Decl)}
    units = []
    for s in row.body.stmts:
        if isinstance(s, (N.Comment, N.Pragma)):
            units.append((s, "keep", None))
            continue
        if isinstance(s, N.Decl):
            if isinstance(s.type, N.Array) or not isinstance(s.type, (N.Scalar, N.Pointer, N.Named)):
                raise PassError(NAME, f"rows='block': local array '{s.name}' in the row body (each thread would "
                                      f"hold only its own part)", _at(s, row))
            if s.init is not None and not phases._pure(s.init, macros):
                raise PassError(NAME, f"rows='block': declaration of '{s.name}' has side effects", _at(s, row))
            units.append((s, "all", None))
            continue
        if isinstance(s, N.For):
            units.append((s, "par", _column_loop(program, func, s, row)))
            continue
        if _has_loop(s):
            kept = row_blocks.why_kept(func, s) if type(s) is N.Block else None
            raise PassError(NAME, f"rows='block': a loop inside a {type(s).__name__.lower()} of the row body "
                                  f"cannot be spread over the block (only the row body's own loops are"
                                  + (f"; {kept}, so it was not made statements of the row body" if kept else "")
                                  + ")", _at(s, row))
        if not phases.writes_memory(s, macros) and phases._pure_control(s, macros):
            units.append((s, "all", None))
            continue
        inside = {d.name for d in walk(s) if isinstance(d, N.Decl)}
        outer = (D.assigned_names(s) - inside) & uniform
        if outer:
            raise PassError(NAME, f"rows='block': statement run by thread 0 assigns '{sorted(outer)[0]}', which "
                                  f"the other threads also use", _at(s, row))
        units.append((s, "once", None))
    if not any(h == "par" for _, h, _ in units):
        raise PassError(NAME, f"rows='block': the body of loop '{row.var}' has no loop to spread over the block",
                        _at(row, func), "XP4002")
    return {"units": units, "block": block, "row": row, "reduce": reduce, "target": target}


def check_row_kernel(pl: dict) -> None:
    """The default plans' rule for a row kernel (the cuda/hip plans bind such a kernel one block
    per row, ``xpiler/migration/pipeline.py``: ``ROWS``); PassError XP4002 unless it holds.

    A row kernel reduces its row: at least one column loop holds a reduction, every column loop
    is a leaf loop (its body holds no loop) and none has a constant trip count below the block;
    the row index is not taken apart by ``/`` or ``%`` (a flat grid of outputs: the dot products of
    a matmul written one output per thread, whose matrix / staging plans reuse the operands).
    A column loop that nests loops walks a window (pooling, convolution, the sampling points of
    deformable attention): its extent is a window's, a few elements, and spreading it over a
    block would leave most threads idle; likewise a short constant row. Shapes are not known
    here, so the rule is on the program's form only; the tuner may still choose ``rows="block"``
    for any kernel the plan takes (``binding.candidates``)."""
    row = pl["row"]
    for n in walk(row.body):
        if isinstance(n, N.BinOp) and n.op in ("/", "%") and any(
                isinstance(v, N.Var) and v.name == row.var for v in walk(n.lhs)):
            raise PassError(NAME, f"not a row kernel: loop '{row.var}' is taken apart by '{n.op}' (a flat grid of "
                                  f"outputs, e.g. a matmul's, not rows)", _at(n, row), "XP4002")
    cols = [(s, reds) for s, how, reds in pl["units"] if how == "par"]
    if not any(reds for _, reds in cols):
        raise PassError(NAME, f"not a row kernel: no column loop of loop '{row.var}' reduces the row",
                        _at(row, row), "XP4002")
    for s, _ in cols:
        if any(_has_loop(x) for x in s.body.stmts):
            raise PassError(NAME, f"not a row kernel: column loop '{s.var}' nests a loop (a window, not a row)",
                            _at(s, row), "XP4002")
        if all(isinstance(e, N.Const) and isinstance(e.value, int) for e in (s.lo, s.hi, s.step)) and s.step.value > 0:
            trips = max(0, -(-(s.hi.value - s.lo.value) // s.step.value))
            if trips < pl["block"]:
                raise PassError(NAME, f"not a row kernel: column loop '{s.var}' runs {trips} times, fewer than the "
                                      f"block's {pl['block']} threads", _at(s, row), "XP4002")


def _column_loop(program, func, s: N.For, row: N.For) -> dict:
    """{acc: Red} when the column loop ``s`` can be spread over the block, else PassError."""
    if phases._has_exit(s):
        raise PassError(NAME, f"rows='block': loop '{s.var}' returns or breaks out of its body", _at(s, row))
    deps = D.carried(program, func, s)
    mem = [d for d in deps if d.kind != "scalar"]
    if mem:
        raise PassError(NAME, f"rows='block': loop '{s.var}' is a recurrence, not a map or reduction: {mem[0]}",
                        _at(s, row))
    try:
        reds = phases.reductions(s, [d.buffer for d in deps])
    except phases.NotPhases as e:
        raise PassError(NAME, f"rows='block': loop '{s.var}' is a recurrence, not a map or reduction: {e.why}",
                        _at(s, row)) from None
    types = {d.name: d.type for d in walk(func.body) if isinstance(d, N.Decl)}
    for acc in reds:
        if not isinstance(types.get(acc), N.Scalar):
            raise PassError(NAME, f"rows='block': reduction into '{acc}' of a non-scalar type", _at(s, row))
    return reds


def _at(node, outer):
    return node if getattr(node, "loc", None) is not None else outer


def spread_loop(s: N.For, reds: dict, types: dict, B: int, tid, fresh, shared: list, reduce: str = "tree",
                target: str = "cuda") -> N.Block:
    """The column loop ``s`` spread over the block's threads (``threadIdx.x``, block-stride); each
    reduction ``reds`` accumulates a per-thread partial, and the partials meet in a shared-memory
    tree (its ``__shared__ T xp_red_acc[B]`` appended to ``shared``, for the top of the kernel)
    whose result every thread reads back into the accumulator."""
    pre, post, mapping = [], [], {}
    for acc, r in reds.items():
        t = types[acc]
        t = N.Scalar(t.dtype, t.spelling)
        p, red = fresh(f"{acc}_part"), fresh(f"xp_red_{acc}")
        mapping[acc] = N.Var(p)
        init = N.Var(acc) if r.op in phases.IDEMPOTENT else \
            N.Const(phases.IDENTITY[r.op], "int32", str(phases.IDENTITY[r.op]))
        pre.append(N.Decl(p, t, init))
        tree = phases.block_reduce(N.Var(acc), N.Var(p), red, t, r.op, B, tid, fresh, reduce, target)
        shared.append(tree[0])
        post += tree[1:]
    loop = s.with_(body=substitute(s.body, mapping), binding="threadIdx.x")
    return N.Block(tuple(pre) + (loop,) + tuple(post), loc=s.loc)


def build(program, func: N.Func, pl: dict, trip, grid_cap, fresh):
    """(new body of ``func``, launch): the row loop bound to ``blockIdx.x``, its phases spread
    over the block's threads.  ``trip``: the row loop's trip count as text over the kernel's
    parameters, or None."""
    B, row = pl["block"], pl["row"]
    tid = N.Builtin("threadIdx.x")
    types = {d.name: d.type for d in walk(func.body) if isinstance(d, N.Decl)}
    shared, out = [], []
    pending = False          # a statement run by every thread read memory since the last barrier
    written = False          # a phase wrote memory since the last barrier
    tree_open = False        # a reduction's shared array was read since the last barrier

    def barrier():
        nonlocal pending, written, tree_open
        out.append(N.Barrier("block"))
        pending = written = tree_open = False
    for s, how, reds in pl["units"]:
        if how == "keep":
            out.append(s)
            continue
        if written:
            barrier()                            # the phase before stored what this one may read
        if how == "all":
            out.append(s)
            pending = pending or _reads_memory(s)
            continue
        if how == "once":
            if pending:
                barrier()
            out.append(N.If(N.BinOp("==", tid, N.Const(0)), s if isinstance(s, N.Block) else N.Block((s,)),
                            loc=s.loc))
            written = True
            continue
        if pending and phases.writes_memory(s):
            barrier()
        out.append(spread_loop(s, reds, types, B, tid, fresh, shared, pl.get("reduce", "tree"),
                               pl.get("target", "cuda")))
        if reds:
            pending, tree_open = False, True     # the tree's barriers ordered the loop's stores and reads
        else:
            written = phases.writes_memory(s)
    # the next row reuses the shared arrays; its other accesses touch only its own elements (the
    # row loop carries no dependence), so the last phase's stores need no barrier
    if tree_open:
        barrier()
    bound = row.with_(body=row.body.with_(stmts=tuple(out)), binding="blockIdx.x",
                      pragmas=tuple(p for p in row.pragmas if not p.startswith(("omp", "xpiler "))))
    stmts = tuple(shared) + tuple(bound if s is row else s for s in func.body.stmts)
    if trip is None:
        from .binding import FALLBACK_GRID
        grid = FALLBACK_GRID if grid_cap is None else min(FALLBACK_GRID, grid_cap)
    else:
        grid = f"min({trip}, {grid_cap})" if grid_cap else trip
    return func.body.with_(stmts=stmts), {"grid": [grid, 1, 1], "block": [B, 1, 1]}
