"""pipeline: double-buffer a staged load so the copy of chunk c+1 overlaps the compute of chunk c.

BANG (the chunk loop the cache pass writes; depth 2)::

    __nram__ float x_nram[8192];
    for (int i_c = taskId * 8192; i_c < n; i_c += taskDim * 8192) {
        int i_len = min(8192, n - i_c);
        __memcpy(x_nram, x + i_c, i_len * sizeof(float), GDRAM2NRAM);
        __bang_active_relu(y_nram, x_nram, (i_len + 31) / 32 * 32);
        __memcpy(y + i_c, y_nram, i_len * sizeof(float), NRAM2GDRAM);
    }
  ->
    __nram__ float x_nram[2 * 8192];
    int i_pp = 0;
    if (taskId * 8192 < n) {                                 // prologue: first chunk
        __memcpy_async(x_nram, x + taskId * 8192, min(8192, n - taskId * 8192) * sizeof(float), GDRAM2NRAM);
    }
    for (int i_c = taskId * 8192; i_c < n; i_c += taskDim * 8192) {
        int i_len = min(8192, n - i_c);
        int i_next = i_c + taskDim * 8192;
        __sync();                                            // chunk i_c has landed
        if (i_next < n) {                                    // prefetch into the other half
            __memcpy_async(x_nram + (1 - i_pp) * 8192, x + i_next, min(8192, n - i_next) * sizeof(float), GDRAM2NRAM);
        }
        __bang_active_relu(y_nram, x_nram + i_pp * 8192, (i_len + 31) / 32 * 32);
        __memcpy(y + i_c, y_nram, i_len * sizeof(float), NRAM2GDRAM);
        i_pp = 1 - i_pp;
    }

The prefetch writes only the half the current iteration does not read, and the ``__sync()`` at
the top of the next iteration orders it before its use: the result equals the single-buffer
program.  ``depth=1`` means no pipelining (XP4002: nothing to do).

CUDA/HIP (the shared-memory tiled matmul the cache pass writes; depth 2): both tiles get two
buffers; tile 0 is loaded before the loop, and each iteration first loads tile t+1 into the
buffer not in use, then computes tile t, then ``__syncthreads()`` (one barrier per tile instead
of two): tile t+1's loads are issued before tile t's arithmetic, so their latency hides behind
it.  Buffer (1 - pp) was last read in iteration t-1, which ended with the barrier, so the loads
never overwrite data still being read.  The launch does not change.
Legality: XP4002 when no staged chunk loop exists; XP4001 when doubling the staged input
buffers overflows NRAM (naming the buffer).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError
from .patterns import common as U

NAME = "pipeline"
DEPTHS = (1, 2)


def _memcpy(s, direction):
    return (isinstance(s, N.ExprStmt) and isinstance(s.expr, N.Intrinsic) and s.expr.name == "__memcpy"
            and len(s.expr.args) == 4 and isinstance(s.expr.args[3], N.Var) and s.expr.args[3].name == direction)


def _find(program, func):
    """(loop, len decl, [copy-in stmts], staged buffer decls) of the staged chunk loop."""
    bufs = U.buffer_decls(func, program)
    for loop in walk(func.body):
        if not (isinstance(loop, N.For) and loop.binding == "taskId" and isinstance(loop.step, N.Const)):
            continue
        st = loop.body.stmts
        if len(st) < 3 or not isinstance(st[0], N.Decl):
            continue
        ins = [s for s in st if _memcpy(s, "GDRAM2NRAM")]
        if not ins:
            continue
        # copies in come right after the length, before anything reads them
        k = 1
        while k < len(st) and _memcpy(st[k], "GDRAM2NRAM"):
            k += 1
        if st[1:k] != tuple(ins) and list(st[1:k]) != ins:
            continue
        dsts = [s.expr.args[0] for s in ins]
        if not all(isinstance(d, N.Var) and d.name in bufs and bufs[d.name].scope == "nram" for d in dsts):
            continue
        return loop, st[0], ins, [bufs[d.name] for d in dsts]
    return None


def _plan(program, entry, target=None, depth=2, **_):
    if target is not None and target != program.dialect:
        raise PassError(NAME, f"program is {program.dialect}, not yet {target}", None, "XP4002")
    if depth in (None, "auto"):
        depth = 2
    if int(depth) not in DEPTHS:
        raise PassError(NAME, f"depth {depth} is not one of {DEPTHS}", None)
    func = U.kernel_func(program, entry)
    if int(depth) == 1:
        raise PassError(NAME, "depth 1: single buffering, nothing to do", func, "XP4002")
    if program.dialect in ("cuda", "hip"):
        return _simt_plan(program, func)
    if program.dialect != "bang":
        raise PassError(NAME, f"no pipelining rule for {program.dialect} yet", func, "XP4002")
    if any(isinstance(n, N.Intrinsic) and n.name == "__memcpy_async" for n in walk(func)):
        raise PassError(NAME, f"kernel '{entry}' is already pipelined", func, "XP4002")
    found = _find(program, func)
    if found is None:
        raise PassError(NAME, f"kernel '{entry}' has no staged chunk loop (run cache first)", func, "XP4002")
    loop, ln, ins, decls = found
    used = U.static_bytes(program, func, "nram")
    for d in decls:
        used += U.const_size(d, program.macro_table()) * U.ELEM_BYTES[U.scalar_dtype(d.type.elem)]
        if used > U.NRAM_BYTES:
            raise PassError(NAME, f"doubling staging buffer '{d.name}' overflows NRAM ({used} > {U.NRAM_BYTES} bytes)",
                            d if d.loc else loop)
    return func, loop, ln, ins, decls


def _simt_plan(program, func):
    from .patterns import simt_tile as ST
    try:
        ct, T = ST.from_tiled(program, func)
    except ST.NotMatmul as e:
        raise PassError(NAME, f"kernel '{func.name}' has no shared-memory tile loop of the cache pass "
                              f"(run cache first): {e.why}", func, "XP4002")
    others = U.static_bytes(program, func, "shared") - T * T * (U.ELEM_BYTES[ct.dtypes["A"]] +
                                                                U.ELEM_BYTES[ct.dtypes["B"]])
    need = 2 * T * T * (U.ELEM_BYTES[ct.dtypes["A"]] + U.ELEM_BYTES[ct.dtypes["B"]])
    if others + need > U.SHARED_BYTES:
        raise PassError(NAME, f"doubling tiles of '{ct.A}'/'{ct.B}' needs {others + need} bytes of shared memory "
                              f"(> {U.SHARED_BYTES})", ct.root)
    return ("simt", ct, T)


def check(program: N.Program, *, entry: str, **params) -> None:
    _plan(program, entry, **params)


def apply(program: N.Program, *, entry: str, **params) -> N.Program:
    plan = _plan(program, entry, **params)
    if plan[0] == "simt":
        from .patterns import simt_tile as ST
        _, ct, T = plan
        return ST.rebuild(program, ct, ST.tiled_body(ct, program.dialect, T, double=True))
    func, loop, ln, ins, decls = plan
    c = loop.var
    chunk = loop.step
    pp = U.fresh(func, f"{c}_pp")
    nx = U.fresh(func, f"{c}_next")
    start = U.add(loop.lo, N.BinOp("*", N.Builtin("taskId"), chunk))
    names = {d.name for d in decls}

    def retarget(copy, pos, half):
        """the copy-in ``copy`` for chunk start ``pos`` into buffer half ``half``."""
        a = copy.expr.args
        src = rewrite(a[1], lambda n: pos if isinstance(n, N.Var) and n.name == c else n)
        nbytes = rewrite(a[2], lambda n: N.Intrinsic("min", (chunk, N.BinOp("-", loop.hi, pos)))
                         if isinstance(n, N.Var) and n.name == ln.name else n)
        dst = a[0] if half is None else N.BinOp("+", a[0], N.BinOp("*", half, chunk))
        return U.call("__memcpy_async", dst, src, nbytes, a[3])

    prologue = N.If(N.BinOp("<", start, loop.hi), N.Block(tuple(retarget(s, start, None) for s in ins)))
    prefetch = N.If(N.BinOp("<", N.Var(nx), loop.hi),
                    N.Block(tuple(retarget(s, N.Var(nx), N.BinOp("-", U.C(1), N.Var(pp))) for s in ins)))
    rest = [s for s in loop.body.stmts[1:] if not any(s is x for x in ins)]
    cur = N.BinOp("+", N.Var("__BUF__"), N.BinOp("*", N.Var(pp), chunk))

    def use_half(n):
        if isinstance(n, N.Var) and n.name in names:
            return N.BinOp("+", N.Var(n.name + "\0"), N.BinOp("*", N.Var(pp), chunk))
        return n
    rest = [rewrite(s, use_half) for s in rest]
    rest = [rewrite(s, lambda n: N.Var(n.name[:-1]) if isinstance(n, N.Var) and n.name.endswith("\0") else n)
            for s in rest]
    del cur
    step = N.BinOp("*", N.Builtin("taskDim"), chunk)
    body = [ln, U.int_decl(nx, N.BinOp("+", N.Var(c), step)), N.Barrier("copy"), prefetch] + rest + [
        N.Assign(N.Var(pp), "=", N.BinOp("-", U.C(1), N.Var(pp)))]
    new_loop = loop.with_(body=N.Block(tuple(body)))
    fb = U.replace_stmt(func.body, loop, [U.int_decl(pp, U.C(0)), prologue, new_loop])
    dbl = {d.name: d.with_(type=d.type.with_(dims=(N.BinOp("*", U.C(2), d.type.dims[0]),) + d.type.dims[1:]))
           for d in decls}
    fb = fb.with_(stmts=tuple(dbl.get(s.name, s) if isinstance(s, N.Decl) else s for s in fb.stmts))
    return U.replace_func(program, func, func.with_(body=fb))


def candidates(program: N.Program, target: str) -> list[dict]:
    out = [{"target": target, "depth": 1}]
    for f in program.kernels:
        try:
            check(program, entry=f.name, target=target, depth=2)
            out.append({"target": target, "depth": 2})
        except PassError:
            pass
        break
    return out
