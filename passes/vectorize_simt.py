"""Vector loads and stores for a grid-stride elementwise loop (cuda / hip): ``vectorize_simt``.

A memory-bound elementwise kernel bound one element per loop iteration moves each element with
its own 4-byte load and store. The GPU reaches more of its DRAM bandwidth with 16-byte accesses
(one ``float4`` per thread per buffer, still coalesced across the warp). This step rewrites

    <pure scalar declarations>
    for (i = 0; i < E; i++)  [bound to global.x]        (or, as parsed from a SIMT source:
        BODY                                              for (i = gidx; i < E; i += stride))

into (``W = 4``, ``x`` read, ``y`` written, ``a`` the aligned test)::

    if ((((size_t)x | (size_t)y) & 15) == 0) {
        for (v = 0; v < E / 4; v++) {                    [global.x]
            float4 x4 = ((const float4 *)x)[v];
            float4 y4;
            { BODY with x[i] -> x4.x, y[i] -> y4.x, i -> v * 4 + 0 }
            { ... .y, v * 4 + 1 }  { ... .z }  { ... .w }
            ((float4 *)y)[v] = y4;
        }
        for (i = E / 4 * 4; i < E; i++) BODY            [global.x]: the last E % 4 elements
    } else {
        for (i = 0; i < E; i++) BODY                     [global.x]: the loop as it was
    }

and sizes the launch from the problem as ``binding(mode="retarget", regrid=True)`` does
(``grid = max(min(cdiv(E / 4, block), grid_cap), 1)``): the loops are grid-stride, so any grid
runs each iteration once, and at least one block exists for the tail.

Alignment is tested at run time (docs/decisions.md, 2026-12-04): a kernel can be called on a
pointer into the middle of an allocation (``relu(x + 1, y + 1, n - 1)``), and a misaligned
``float4`` access faults on the GPU. The test costs one branch per thread; the fallback is the
original loop, unchanged.

Legality (:func:`check`; refusals are ``PassError`` XP4001 naming the statement, XP4002 when
there is no such loop):

* the entry is pure scalar declarations and one loop over all ``E`` elements, bound to
  ``global.x`` (``lo = 0``, ``step = 1``) or in the parsed grid-stride form that
  ``passes/regrid.py`` checks (no other use of a parallel builtin, no barrier, shared memory,
  warp collective or fragment); in the bound form other statements may follow the loop (the
  ``once`` tail of the AVX-512 lane route) when none of their accesses can meet an element of
  ``[0, E)`` the loop writes, or write one it reads (:func:`_check_after`, a Z3 proof per pair);
* in the body every use of a pointer parameter is ``p[i]`` with ``i`` the loop variable itself
  (unit stride, no offset), the parameter a ``float`` buffer; ``&p[i]``, pointer arithmetic and
  local arrays are refused;
* no ``break``, ``continue``, ``return``, ``goto`` or verbatim text in the body (the lanes are
  inlined one after the other); ``i`` is not assigned;
* no scalar declared outside the loop is assigned inside it, and the dependence test
  (``passes/dependence.py``) finds no dependence carried by the loop in its plain form
  ``for (i = 0; i < E; i++)``;
* no buffer is read after a *different* buffer was written in the same iteration: the vector
  form loads every buffer before the lanes run, so if the caller passed the same array twice
  (``relu(x, x, n)``) such a read would see the old value.

Why the rewrite keeps the meaning: iteration ``i`` touches element ``i`` of each buffer and
nothing else in memory, and no iteration reads what another writes, so the iterations of one
group of four may run in any order and their loads may be done first. A buffer that is read, or
not written unconditionally at the top of the body, is loaded before the lanes and stored whole
after them (a lane that does not write stores the value it loaded: no other iteration touches
that element). The lanes run the body in iteration order, each in its own block.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError
from . import dependence as D
from .regrid import check_independent_thread

NAME = "vectorize_simt"
SIMT = ("cuda", "hip")
WIDTHS = (4,)
LANES = "xyzw"
BLOCK_SIZES = (256, 512)
GRID_CAPS = (None, 1024, 4096)
#: element types and their 4-lane vector type
VECTOR_OF = {"float32": ("float4", 16)}
_PARALLEL = ("threadIdx.", "blockIdx.", "blockDim.", "gridDim.", "warpSize")


def _int(v) -> N.Const:
    return N.Const(int(v), "int32", str(int(v)))


# ============================================================================ legality
def check(program: N.Program, *, entry: str, width: int = 4, block: int = 256, grid_cap=None, **_) -> dict:
    """The plan ``apply`` follows, or a PassError."""
    if program.dialect not in SIMT:
        raise PassError(NAME, f"vector loads are written for cuda/hip kernels, not {program.dialect}", code="XP4002")
    try:
        func = program.func(entry)
    except KeyError:
        raise PassError(NAME, f"entry function '{entry}' not found") from None
    if width not in WIDTHS:
        raise PassError(NAME, f"vector width {width} is not one of {WIDTHS}", func)
    if block not in BLOCK_SIZES:
        raise PassError(NAME, f"block size {block} is not one of {BLOCK_SIZES}", func)
    if grid_cap not in GRID_CAPS:
        raise PassError(NAME, f"grid cap {grid_cap} is not one of {GRID_CAPS}", func)
    if func.body is None:
        raise PassError(NAME, "the kernel has no body", func, "XP4002")
    loop, form = _the_loop(program, func, block)
    body_checks = _check_body(program, func, loop)
    if form == "bound":
        _check_after(program, func, loop, body_checks["reads"], body_checks["writes"])
    from .binding import trip_count_expr
    trip = trip_count_expr(program, func, N.For(loop.var, _int(0), loop.hi, _int(1), N.Block(())))
    if trip is None:
        raise PassError(NAME, "the loop's bound is not an expression over the kernel's integer parameters "
                              "(the launch is sized from it)", loop)
    return {"func": func, "loop": loop, "form": form, "trip": trip, "width": width, "block": block,
            "grid_cap": grid_cap, **body_checks}


def _stmts(body):
    out = []
    for s in body.stmts:
        if isinstance(s, N.Block):
            out += _stmts(s)
        elif not isinstance(s, (N.Comment, N.Pragma)):
            out.append(s)
    return out


def _the_loop(program, func, block=None):
    """The entry's one loop and its form: ``"bound"`` (binding ``global.x``) or ``"stride"``
    (a parsed grid-stride loop, checked by passes/regrid.py)."""
    stmts = _stmts(func.body)
    loops = [s for s in stmts if isinstance(s, (N.For, N.CFor, N.While))]
    bound = [s for s in stmts if isinstance(s, N.For) and s.binding == "global.x" and _zero_one(s)]
    if bound:
        loop = bound[0]
    elif len(loops) != 1 or not isinstance(loops[0], N.For):
        raise PassError(NAME, f"needs one top-level elementwise loop, found {len(loops)} loops and none bound "
                              f"to global.x from 0 by 1 (vectorized already, or no grid-stride loop)", func, "XP4002")
    else:
        loop = loops[0]
    if loop.binding is None:
        from . import regrid
        try:
            regrid.check(program, func, block)
        except PassError as e:
            raise PassError(NAME, f"the loop is not a grid-stride loop over global.x ({e.why})", loop,
                            "XP4002") from None
        return loop, "stride"
    if loop.binding != "global.x":
        raise PassError(NAME, f"loop '{loop.var}' is bound to {loop.binding}, not global.x", loop, "XP4002")
    if not _zero_one(loop):
        raise PassError(NAME, f"loop '{loop.var}' does not run 0, 1, ..., E - 1 (its vectors would not start "
                              f"at element 0)", loop)
    assigned = D.assigned_names(func.body)
    after = False
    for s in stmts:
        if s is loop:
            after = True
            continue
        if after:
            continue                 # statements after the loop: _check_after
        if not (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None
                and s.name not in assigned and not any(
                    isinstance(n, (N.Index, N.Call, N.Intrinsic, N.AssignExpr)) or
                    isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--") for n in walk(s.init))):
            what = f"'{s.name}'" if isinstance(s, N.Decl) else f"a {type(s).__name__.lower()}"
            raise PassError(NAME, f"{what} outside the loop is not a pure, never-assigned scalar declaration "
                                  "(it would run in every thread whatever the launch)", s)
    for n in walk(func.body):
        if isinstance(n, N.Builtin) and n.name.startswith(_PARALLEL):
            raise PassError(NAME, f"'{n.name}' is used in a kernel whose loop is bound to global.x", n)
        check_independent_thread(n, pass_name=NAME)
    return loop, "bound"


def _zero_one(loop) -> bool:
    return (isinstance(loop.lo, N.Const) and loop.lo.value == 0 and isinstance(loop.step, N.Const)
            and loop.step.value == 1 and loop.cmp == "<")


def _check_after(program, func, loop, reads: set, writes: set) -> None:
    """Statements after the loop (a bound ``once`` tail, another bound loop) run in threads that
    now own other iterations of the loop. They keep their meaning when none of their accesses can
    meet an element of ``[0, E)`` that the loop writes, and none of their writes an element it
    reads: proven with the dependence module's solver, each pair on its own."""
    from .binding import _never_same
    stmts = func.body.stmts
    at = next((k for k, s in enumerate(stmts) if s is loop), None)
    if at is None:
        raise PassError(NAME, "the loop sits in a nested block: its neighbours cannot be checked", loop)
    rest = [s for s in stmts[at + 1:] if not _inert(s)]
    if not rest:
        return
    view = D.analysis_view(func)
    vloop = D._same_position(func, view, loop)
    mine = [a for a in D.collect(vloop.body, view, program) if a.buffer in reads | writes]
    top_assigned = D.assigned_names(view.body)
    k = next(k for k, s in enumerate(view.body.stmts) if s is vloop)
    for s in view.body.stmts[k + 1:]:
        if _inert(s):
            continue
        for a in D.collect(s, view, program):
            for w in mine:
                if a.buffer != w.buffer or a.mode == "r" and w.mode == "r":
                    continue
                if a.index is None or w.index is None or not _never_same(program, view, s, vloop, a, w, top_assigned):
                    raise PassError(NAME, f"a statement after loop '{loop.var}' may touch an element of "
                                          f"'{a.buffer}' that the loop {'writes' if w.mode != 'r' else 'reads'} "
                                          f"(its threads own other elements once the loop is vectorized)",
                                    s if getattr(s, "loc", None) is not None else loop)


def _inert(s) -> bool:
    """A comment, or a scalar declaration whose value reads no memory."""
    return isinstance(s, (N.Comment, N.Pragma)) or isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and (
        s.init is None or not any(isinstance(n, (N.Index, N.Call, N.Intrinsic)) or isinstance(n, N.UnOp) and n.op == "*"
                                  for n in walk(s.init)))


def _elem(p: N.Param):
    t = p.type
    return t.elem if isinstance(t, (N.Pointer, N.Array)) else None


def _check_body(program, func, loop) -> dict:
    """Every memory access of the body is ``p[i]`` of a float pointer parameter; returns the
    buffers read, written, and written unconditionally at the top of the body."""
    var = loop.var
    ptrs = {p.name: p for p in func.params if isinstance(p.type, (N.Pointer, N.Array))}
    where = lambda n: n if getattr(n, "loc", None) is not None else loop   # noqa: E731
    for n in walk(loop.body):
        if isinstance(n, (N.Break, N.Continue, N.Return, N.Raw)) or type(n).__name__ in ("Goto", "Label"):
            raise PassError(NAME, f"a {type(n).__name__.lower()} in the loop's body (the four lanes are inlined "
                                  f"one after another)", where(n))
        if isinstance(n, (N.Barrier, N.Launch)):
            raise PassError(NAME, "a barrier or launch in the loop's body", where(n))
        if isinstance(n, N.Decl) and not isinstance(n.type, (N.Scalar, N.Vector)):
            raise PassError(NAME, f"'{n.name}' in the loop's body is not a scalar (only scalars and p[{var}] "
                                  f"accesses can be split into lanes)", where(n))
    if var in D.assigned_names(loop.body):
        raise PassError(NAME, f"the loop variable '{var}' is assigned in the loop", loop)
    reads, writes, order = set(), set(), []      # order: ("r"|"w", buffer) in program order

    def visit(n, parent, mode):
        """mode: how the value of ``n`` is used: "r" read, "w" written, "rw" both."""
        if isinstance(n, N.Var) and n.name in ptrs:
            if not (isinstance(parent, N.Index) and parent.base is n):
                raise PassError(NAME, f"'{n.name}' is used as a pointer, not as {n.name}[{var}] (pointer "
                                      f"arithmetic, an address or a call)", where(parent or n))
            return
        if isinstance(n, N.Index):
            base = n.base
            if isinstance(base, N.Var) and base.name in ptrs:
                if not (isinstance(n.index, N.Var) and n.index.name == var):
                    raise PassError(NAME, f"'{base.name}' is accessed at [{_text(n.index, program)}], not "
                                          f"[{var}] (only unit-stride p[{var}] accesses become vectors)", where(n))
                el = _elem(ptrs[base.name])
                if not (isinstance(el, N.Scalar) and el.dtype in VECTOR_OF):
                    what = el.dtype if isinstance(el, N.Scalar) else type(el).__name__
                    raise PassError(NAME, f"'{base.name}' holds {what}: only float32 buffers get a vector "
                                          f"type (float4)", where(n))
                if isinstance(parent, N.UnOp) and parent.op == "&":
                    raise PassError(NAME, f"the address of {base.name}[{var}] is taken", where(parent))
                if "r" in mode:
                    reads.add(base.name)
                    order.append(("r", base.name))
                if "w" in mode:
                    writes.add(base.name)
                    order.append(("w", base.name))
                return
            raise PassError(NAME, f"'{_text(n, program)}' indexes something other than a pointer parameter",
                            where(n))
        if isinstance(n, N.Assign):
            visit(n.value, n, "r")
            visit(n.target, n, "w" if n.op == "=" else "rw")
            return
        if isinstance(n, N.AssignExpr):
            visit(n.value, n, "r")
            visit(n.target, n, "w" if n.op == "=" else "rw")
            return
        if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
            visit(n.operand, n, "rw")
            return
        # an inner loop's body runs again after itself: its reads may follow its writes
        for _ in range(2 if isinstance(n, (N.For, N.CFor, N.While)) else 1):
            for c in n.children():
                visit(c, n, "r")
    for s in loop.body.stmts:
        visit(s, None, "r")
    if not writes:
        raise PassError(NAME, f"the loop's body writes no buffer through p[{var}]", loop, "XP4002")
    written = set()
    for mode, buf in order:
        if mode == "w":
            written.add(buf)
        elif written - {buf}:
            raise PassError(NAME, f"'{buf}' is read after '{sorted(written - {buf})[0]}' was written in the same "
                                  f"iteration: if the caller passes one array for both, the vector form (all "
                                  f"loads first) would read the old value", loop)
    # scalars carried between iterations, and the dependence test on the plain loop
    plain = N.For(var, _int(0), loop.hi, _int(1), loop.body, var_type=loop.var_type or N.Scalar("int32", "int"))
    pfunc = func.with_(body=N.Block(tuple(plain if s is loop else s for s in func.body.stmts)))
    if not any(s is plain for s in pfunc.body.stmts):          # the loop sits in a nested block
        pfunc = func.with_(body=N.Block(tuple(s for s in _stmts(func.body) if s is not loop) + (plain,)))
    dep = D.check_parallel(program, pfunc, plain)
    if dep is not None:
        raise PassError(NAME, f"loop '{var}' carries a dependence: {dep}", loop)
    full = set()
    for s in loop.body.stmts:        # written in every iteration, before anything could skip it
        if isinstance(s, N.Assign) and s.op == "=" and isinstance(s.target, N.Index) and \
                isinstance(s.target.base, N.Var) and s.target.base.name in writes:
            full.add(s.target.base.name)
    # stores in the order of each buffer's last write, so that two written buffers that are one
    # array (an unusual call) end with the value the scalar loop's last write leaves
    last = {b: k for k, (mode, b) in enumerate(order) if mode == "w"}
    return {"reads": reads, "writes": writes, "full": full, "stores": sorted(writes, key=last.get)}


def _text(e, program):
    from xpiler.printers import printer_for
    try:
        return printer_for(program.dialect).expr(e)
    except Exception:
        return type(e).__name__


# ============================================================================ rewrite
def apply(program: N.Program, *, entry: str, width: int = 4, block: int = 256, grid_cap=None, **_):
    """The program with the loop as vectors of ``width``, its tail and its unaligned fallback;
    its launch (``Program.launch_of(entry)``) sized from the vector count (see the module's
    text)."""
    plan = check(program, entry=entry, width=width, block=block, grid_cap=grid_cap)
    func, loop, W = plan["func"], plan["loop"], plan["width"]
    from .binding import _fresh_name
    taken = set()

    def fresh(base):
        name = _fresh_name(func, base)
        k = 0
        while name in taken:
            k += 1
            name = _fresh_name(func, f"{base}_{k}")
        taken.add(name)
        return name
    def suffixed(name):          # x -> x4, v_l1 -> v_l1_4
        return f"{name}_{W}" if name[-1].isdigit() else f"{name}{W}"
    bufs = sorted(plan["reads"] | plan["writes"])
    vname = {b: fresh(suffixed(b)) for b in bufs}
    vvar = fresh(suffixed(loop.var))
    vt = {b: N.Vector(N.Scalar("float32", "float"), W, VECTOR_OF["float32"][0]) for b in bufs}
    itype = loop.var_type or N.Scalar("int32", "int")
    E = loop.hi
    nvec = N.BinOp("/", E, _int(W))

    def lane_body(k):
        at = N.BinOp("+", N.BinOp("*", N.Var(vvar), _int(W)), _int(k))

        def fn(n):
            if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in vname and \
                    isinstance(n.index, N.Var) and n.index.name == loop.var:
                return N.Member(N.Var(vname[n.base.name]), LANES[k])
            return n
        body = rewrite(loop.body, fn)
        body = rewrite(body, lambda n: at if isinstance(n, N.Var) and n.name == loop.var else n)
        return N.Block(tuple(body.stmts))

    head = []
    for b in bufs:
        if b in plan["reads"] or b not in plan["full"]:
            src = N.Index(N.Cast(N.Pointer(vt[b].with_(const=True)), N.Var(b)), N.Var(vvar))
            head.append(N.Decl(vname[b], vt[b], src))
        else:
            head.append(N.Decl(vname[b], vt[b]))
    tail_stores = [N.Assign(N.Index(N.Cast(N.Pointer(vt[b]), N.Var(b)), N.Var(vvar)), "=", N.Var(vname[b]))
                   for b in plan["stores"]]
    vbody = N.Block(tuple(head) + tuple(lane_body(k) for k in range(W)) + tuple(tail_stores))
    if plan["form"] == "bound":
        vloop = N.For(vvar, _int(0), nvec, _int(1), vbody, binding="global.x", var_type=itype, loc=loop.loc)
        tail = loop.with_(lo=N.BinOp("*", nvec, _int(W)))
    else:
        vloop = N.For(vvar, loop.lo, nvec, loop.step, vbody, var_type=itype, loc=loop.loc)
        tail = loop.with_(lo=N.BinOp("+", N.BinOp("*", nvec, _int(W)), loop.lo))
    size_t = N.Scalar("uint64", "size_t")
    addr = None
    for b in bufs:
        a = N.Cast(size_t, N.Var(b))
        addr = a if addr is None else N.BinOp("|", addr, a)
    cond = N.BinOp("==", N.BinOp("&", addr, _int(VECTOR_OF["float32"][1] - 1)), _int(0))
    guarded = N.If(cond, N.Block((vloop, tail)), N.Block((loop,)), loc=loop.loc)
    new_body = D.replace_node(func.body, loop, guarded)
    new_func = func.with_(body=new_body)
    prog = program.with_(items=tuple(new_func if it is func else it for it in program.items))
    return prog.with_launch(entry, launch(plan))


def launch(plan: dict) -> dict:
    """``grid = max(min(cdiv(E / W, block), cap), 1)`` blocks of ``block`` threads."""
    block, W = plan["block"], plan["width"]
    g = f"(({plan['trip']}) / {W} + {block - 1}) / {block}"
    if plan["grid_cap"]:
        g = f"min({g}, {int(plan['grid_cap'])})"
    return {"grid": [f"max({g}, 1)", 1, 1], "block": [int(block), 1, 1]}


def candidates(program: N.Program, target: str) -> list:
    """``width=4`` x block size x grid cap for the one elementwise loop of a cuda/hip kernel."""
    if target not in SIMT or program.dialect != target:
        return []
    from .base import checked_kernels
    return [{"entry": name, "width": 4, "block": b, "grid_cap": cap}
            for name in checked_kernels(program, check) for b in BLOCK_SIZES for cap in GRID_CAPS]
