"""Loop recovery: a SIMT kernel (cuda / hip) or a BANG task kernel becomes sequential C.

The implicit parallel indices become explicit loops: ``blockIdx`` / ``threadIdx`` (or
``clusterId`` / ``coreId`` / ``taskId``) are loop variables, ``gridDim`` / ``blockDim`` /
``taskDim`` are the launch expressions, written over the kernel's parameters.  A barrier
splits the thread loops (loop fission); a barrier nested in block-uniform control moves that
control outside the thread loops (deep fission).  What a thread keeps across a barrier is
kept by one of four means, chosen per variable:

* recomputed where it is used (a pure, write-once value such as ``row = by * 16 + ty``);
* hoisted out of the thread loops (a block-uniform value: the same for every thread);
* expanded into a per-thread array indexed by the linear thread id (``passes/expansion``);
* a per-block local array, for ``__shared__`` / ``__mlu_shared__`` buffers.

Before (launch grid = [cdiv(n,256)], block = [256])::

    __global__ void scale(const float *x, float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        y[i] = 2.0f * x[i];
    }

After::

    void scale(const float *x, float *y, int n) {
        for (int bx = 0; bx < (n + 256 - 1) / 256; ++bx) {
            for (int tx = 0; tx < 256; ++tx) {
                int i = bx * 256 + tx;
                if (i >= n) continue;
                y[i] = 2.0f * x[i];
            }
        }
    }

Normalization (``normalize=True``, the default; ``False`` keeps the loops above): when the
partition loops (block/thread, task, cluster/core) hold, as their only work, a loop strided by
the partition size that starts at the partition index, or one bounds-guarded element per
partition index, they are collapsed into loops over the full range. With the grid-stride form
of the example above (``for (i = bx * 256 + tx; i < n; i += 256 * G)``) and with the example
itself (``cdiv(n, 256)`` blocks cover ``n``), the result is::

    void scale(const float *x, float *y, int n) {
        for (int i = 0; i < n; ++i) {
            y[i] = 2.0f * x[i];
        }
    }

Private buffers of a partition move into the collapsed body; partition-invariant set-up runs
once before it. With ``unstage`` (default), element-wise work staged through private
buffers (BANG NRAM chunks) is first un-staged (``passes/decache.py``), and contiguous per-task
slices (``start = task * share + ...``) that the strided/guarded forms do not cover collapse
when Z3 proves they tile one range exactly once (``passes/task_slices.py``). Anything it
cannot prove (barriers, reductions across partitions, state kept across a partition's
iterations, non-bounds early exits) leaves the plain recovery; see :func:`explain_normalization`
and docs/passes/loop_recovery.md. Each of these ways is also a value of ``normalize`` on its own
(:data:`NORMALIZE`: ``"partition"``, ``"task_slices"``, ``"staged"``, ``"loops"``), refused with
``AlternativeRefused`` (XP4002) where it does not apply; the plans propose them in that order as
steps of their own, so the provenance log names the one taken and why the others were refused.
With ``staged_conv=True`` (only the bang → cuda / hip plans pass it), un-staging lifts banded
tasks only as staged 2-D convolutions (``passes/unband_conv.py``), and the pass is refused
(``AlternativeRefused``) where none is lifted.

Legality (:func:`check`): the program is cuda/hip/bang with the entry defined; every launch
dimension is an expression over kernel parameters; no warp collective, WMMA/MFMA fragment op,
``__bang_*`` vector op or ``__memcpy`` is left (detensorize lowers those first); every barrier
sits under block-uniform control (refused with the barrier's location otherwise); an atomic
is only used as a statement (its old value is not read).
"""
from __future__ import annotations

from dataclasses import dataclass

from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import outside_loops, rewrite, substitute, walk
from xpiler.mappings.vector_types import struct_typedef

from .base import AlternativeRefused, PassError
from .expansion import _map_stmts, expand_vars, expanded_decl, init_as_stores
from .lowering.common import TypeEnv

NAME = "loop_recovery"

#: the ways to normalize (parameter ``normalize``), in the order the plans try them; the first
#: that applies wins (docs/passes/loop_recovery.md). ``True`` is the four tried in this order
#: inside the pass (logs written before 2026-12-05), ``False`` the plain recovery.
NORMALIZE = ("partition", "task_slices", "staged", "loops")

SYNC_KINDS = ("block", "warp", "cluster", "all")     # barriers that order threads: fission points
NOOP_KINDS = ("copy", "fence", "fence_block")        # no effect once the program is sequential
REFUSED_CATEGORIES = {"warp": "a warp collective", "wmma": "a WMMA fragment operation",
                      "mfma": "an MFMA matrix instruction", "vector": "a BANG vector operation",
                      "copy": "a BANG __memcpy", "x86": "an x86 intrinsic"}
INT = N.Scalar("int32", "int")


# ============================================================================ small IR helpers
def _c(v) -> N.Const:
    return N.Const(v, "int32", str(v))


def _is_const(e, v=None) -> bool:
    return isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) and (
        v is None or e.value == v)


def _fold(e):
    """Fold integer constant arithmetic (+ - * / %) bottom-up; C semantics for / and %."""
    def fn(n):
        if isinstance(n, N.BinOp) and _is_const(n.lhs) and _is_const(n.rhs):
            a, b = n.lhs.value, n.rhs.value
            if n.op == "+":
                return _c(a + b)
            if n.op == "-":
                return _c(a - b)
            if n.op == "*":
                return _c(a * b)
            if n.op in ("/", "%") and b != 0:
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                return _c(q if n.op == "/" else a - q * b)
        if isinstance(n, N.BinOp) and n.op == "*":
            if _is_const(n.lhs, 1):
                return n.rhs
            if _is_const(n.rhs, 1):
                return n.lhs
        if isinstance(n, N.BinOp) and n.op == "+":
            if _is_const(n.lhs, 0):
                return n.rhs
            if _is_const(n.rhs, 0):
                return n.lhs
        if isinstance(n, N.Cond) and _is_const(n.cond):
            return n.then if n.cond.value else n.else_
        return n
    return rewrite(e, fn)


def _mul(a, b):
    return _fold(N.BinOp("*", a, b))


def _loop(var, extent, body, loc=None) -> N.For:
    return N.For(var, _c(0), extent, _c(1), N.Block(tuple(body)), None, INT, loc=loc)


def _block(stmts) -> N.Block:
    return N.Block(tuple(stmts))


def _as_block(s) -> N.Block:
    return s if isinstance(s, N.Block) else N.Block((s,))


def _assigned_name(target):
    """The variable a store through ``target`` modifies when it is a local (x, x[i], x.f)."""
    while isinstance(target, (N.Index, N.Member)):
        if isinstance(target, N.Member) and target.arrow:
            return None
        target = target.base
    return target.name if isinstance(target, N.Var) else None


def _modified_vars(node) -> set:
    """Variables written anywhere below ``node`` (assignments, ++/--, address taken)."""
    out = set()
    for n in walk(node):
        if isinstance(n, (N.Assign, N.AssignExpr)):
            v = _assigned_name(n.target)
            if v:
                out.add(v)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&"):
            v = _assigned_name(n.operand)
            if v:
                out.add(v)
    return out


def _whole(target):
    """The variable a store writes itself (x, x.f), not through a pointer or an index."""
    while isinstance(target, N.Member) and not target.arrow:
        target = target.base
    return target.name if isinstance(target, N.Var) else None


def _scalar_writes(node) -> set:
    """Variables written as a whole (x = .., x.f = .., x++, &x), not through an index."""
    out = set()
    for n in walk(node):
        if isinstance(n, (N.Assign, N.AssignExpr)) and _whole(n.target):
            out.add(_whole(n.target))
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and _whole(n.operand):
            out.add(_whole(n.operand))
    return out


def _has_sync(node) -> bool:
    return any(isinstance(n, N.Barrier) and n.kind in SYNC_KINDS for n in walk(node))


def _drop_noop_barriers(n):
    """``rewrite`` callback: copy barriers and fences (NOOP_KINDS) leave every statement list,
    however deeply nested (a ``__sync()`` after two ``__memcpy_async`` in a task loop). Exact:
    ``check`` admits no BANG copy, so every copy a barrier could wait for is already an ordinary
    (synchronous) loop, and a fence orders nothing in one sequential thread."""
    def noop(s):
        return isinstance(s, N.Barrier) and s.kind in NOOP_KINDS
    if isinstance(n, N.Block) and any(noop(s) for s in n.stmts):
        return n.with_(stmts=tuple(s for s in n.stmts if not noop(s)))
    bare = [f for f in ("then", "else_", "body") if isinstance(n, N.Stmt) and noop(getattr(n, f, None))]
    if bare:          # `if (c) __sync();`, a loop whose body is only a fence
        return n.with_(**{f: N.Block(()) for f in bare})
    return n


def _first_sync(node):
    for n in walk(node):
        if isinstance(n, N.Barrier) and n.kind in SYNC_KINDS:
            return n
    return None


def _pure(e) -> bool:
    """No memory read, no side effect: only variables, constants, arithmetic, casts, math."""
    for n in walk(e):
        if isinstance(n, (N.Index, N.Member, N.Call, N.AssignExpr, N.Comma)):
            if isinstance(n, N.Member) and not n.arrow and isinstance(n.base, N.Var):
                return False
            return False
        if isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--"):
            return False
        if isinstance(n, N.Intrinsic) and (REGISTRY.get(n.name) is None or REGISTRY[n.name].category != "math"):
            return False
    return True


def _vars(node) -> set:
    return {n.name for n in walk(node) if isinstance(n, N.Var)}


def _names_text(nodes, name: str) -> bool:
    """``name`` is used in ``nodes``: as a variable, or inside verbatim text (a word of it)."""
    import re
    if name in _vars(tuple(nodes)):
        return True
    pat = re.compile(r"\b" + re.escape(name) + r"\b")
    return any(isinstance(n, N.Raw) and pat.search(n.text) for n in walk(tuple(nodes)))


def _loc_of(node):
    return getattr(node, "loc", None)


# ============================================================================ launch configuration
@dataclass
class _Level:
    var: str            # loop variable
    extent: N.Expr      # trip count
    axis: str           # 'x' / 'y' / 'z' / 'task' / 'cluster' / 'core'


@dataclass
class _Config:
    block_levels: list      # outermost first
    thread_levels: list     # outermost first
    builtins: dict          # builtin name -> Expr (over loop variables / parameters)
    index_builtins: dict    # builtin name -> level var hint, for index builtins that are a loop
    shared_bytes: object
    sync_all_ok: bool


def _parse_launch_expr(text, what: str, params: set):
    if isinstance(text, bool):
        raise PassError(NAME, f"launch {what} is not an expression: {text!r}", None)
    if isinstance(text, int):
        return _c(text)
    if not isinstance(text, str):
        raise PassError(NAME, f"launch {what} is not an expression: {text!r}", None)
    from xpiler.frontend import parse_text
    from xpiler.diagnostics import XPError
    try:
        prog = parse_text(f"int xp_launch_expr(void) {{ return {text}; }}\n", "c", "<launch>")
        e = prog.func("xp_launch_expr").body.stmts[-1].value
    except (XPError, KeyError, IndexError, AttributeError) as ex:
        raise PassError(NAME, f"launch {what} = '{text}' is not a C expression ({ex})", None) from None
    unknown = sorted(_vars(e) - params)
    if unknown:
        # the driver has already replaced each spec size by the scalar parameter that carries it
        # (an [[args]] scalar with value = "<size>", or a product of carried sizes); what is left
        # is a size no parameter carries
        names = ", ".join(repr(u) for u in unknown)
        raise PassError(NAME, f"launch {what} = '{text}' uses {names}, which is not a kernel parameter and which "
                              f"no kernel parameter carries "
                              f"(no scalar argument has value = {unknown[0]!r}, nor a product of it with "
                              f"carried sizes), so gridDim/blockDim/taskDim cannot be written as loop bounds "
                              f"of a kernel without a grid", None, "XP4060")
    return _fold(rewrite(e, lambda n: n.with_(loc=None) if hasattr(n, "loc") and n.loc is not None else n))


def _config(dialect: str, launch: dict, params: set, names) -> _Config:
    if not isinstance(launch, dict):
        raise PassError(NAME, "no launch configuration given (parameter 'launch')", None)
    fresh = names
    if dialect in ("cuda", "hip"):
        grid, block = launch.get("grid"), launch.get("block")
        if not (isinstance(grid, (list, tuple)) and isinstance(block, (list, tuple))):
            raise PassError(NAME, "the launch needs 'grid' and 'block' (3 entries each)", None)
        grid = list(grid) + [1] * (3 - len(grid))
        block = list(block) + [1] * (3 - len(block))
        g = [_parse_launch_expr(grid[i], f"grid[{i}]", params) for i in range(3)]
        b = [_parse_launch_expr(block[i], f"block[{i}]", params) for i in range(3)]
        builtins = {}
        bl, tl, idx = [], [], {}
        for i, a in reversed(list(enumerate("xyz"))):
            builtins[f"gridDim.{a}"] = g[i]
            builtins[f"blockDim.{a}"] = b[i]
            if _is_const(g[i], 1):
                builtins[f"blockIdx.{a}"] = _c(0)
            else:
                bl.append(_Level(f"b{a}", g[i], a))
                idx[f"blockIdx.{a}"] = bl[-1]
            if _is_const(b[i], 1):
                builtins[f"threadIdx.{a}"] = _c(0)
            else:
                tl.append(_Level(f"t{a}", b[i], a))
                idx[f"threadIdx.{a}"] = tl[-1]
        builtins["warpSize"] = _c(64 if dialect == "hip" else 32)
        sb = launch.get("shared_bytes")
        shared = _parse_launch_expr(sb, "shared_bytes", params) if sb is not None else None
        return _Config(bl, tl, builtins, idx, shared, False)
    if dialect == "bang":
        dim = launch.get("dim")
        if not isinstance(dim, (list, tuple)):
            raise PassError(NAME, "the launch needs 'dim' (3 task dimensions) and 'func_type'", None)
        dim = list(dim) + [1] * (3 - len(dim))
        d = [_parse_launch_expr(dim[i], f"dim[{i}]", params) for i in range(3)]
        ft = str(launch.get("func_type", "block"))
        task_dim = _mul(_mul(d[0], d[1]), d[2])
        if ft == "block":
            core_dim = _c(1)
        elif ft.startswith("union") and ft[5:].isdigit():
            core_dim = _c(4)
        else:
            raise PassError(NAME, f"unknown BANG function type '{ft}'", None)
        builtins = {"taskDimX": d[0], "taskDimY": d[1], "taskDimZ": d[2], "taskDim": task_dim, "coreDim": core_dim}
        idx = {}
        return _Config([], [], builtins, idx, None, True), (d, task_dim, core_dim, ft)
    raise PassError(NAME, f"loop recovery starts from cuda, hip or bang, not '{dialect}'", None, "XP4002")


def _bang_levels(cfg_extra, clustered: bool):
    """BANG: one loop over taskId, or (when cluster memory / cluster barriers need it) a loop over
    clusters around a loop over the cores of a cluster."""
    d, task_dim, core_dim, ft = cfg_extra
    b = {}
    if clustered and not _is_const(core_dim, 1):
        cluster_dim = _fold(N.BinOp("/", task_dim, core_dim))
        bl = [_Level("cluster", cluster_dim, "cluster")]
        tl = [_Level("core", core_dim, "core")]
        task = _fold(N.BinOp("+", _mul(N.Var("cluster"), core_dim), N.Var("core")))
        b.update(clusterId=N.Var("cluster"), coreId=N.Var("core"), clusterDim=cluster_dim)
        idx = {"clusterId": bl[0], "coreId": tl[0]}
    else:
        bl = [_Level("task", task_dim, "task")]
        tl = []
        task = N.Var("task")
        idx = {"taskId": bl[0]}
        if _is_const(core_dim, 1):
            b.update(clusterId=task, coreId=_c(0), clusterDim=task_dim)
        else:
            b.update(clusterId=N.BinOp("/", task, core_dim), coreId=N.BinOp("%", task, core_dim),
                     clusterDim=_fold(N.BinOp("/", task_dim, core_dim)))
    b["taskId"] = task
    b["taskIdX"] = _fold(N.BinOp("%", task, d[0]))
    b["taskIdY"] = _fold(N.BinOp("%", N.BinOp("/", task, d[0]), d[1]))
    b["taskIdZ"] = _fold(N.BinOp("/", task, _mul(d[0], d[1])))
    if _is_const(d[1], 1) and _is_const(d[2], 1):
        b["taskIdX"] = task
        b["taskIdY"] = _c(0)
        b["taskIdZ"] = _c(0)
    return bl, tl, b, idx


# ============================================================================ renaming
def _fresh(base: str, taken: set, suffix_only: bool = True) -> str:
    if not suffix_only and base not in taken:
        taken.add(base)
        return base
    k = 1
    while f"{base}_{k}" in taken:
        k += 1
    name = f"{base}_{k}"
    taken.add(name)
    return name


def _uniquify(stmts, env: dict, taken: set):
    """Give every local declaration of the function a unique name (shadowing and sibling
    scopes renamed ``name_1``...), so later analyses can key variables by name."""
    def ren(e):
        if e is None:
            return None
        return rewrite(e, lambda n: N.Var(env[n.name], loc=n.loc) if isinstance(n, N.Var) and n.name in env
                       and env[n.name] != n.name else n)

    def declare(name):
        if name in taken:
            new = _fresh(name, taken)
        else:
            taken.add(name)
            new = name
        env[name] = new
        return new

    out = []
    for s in stmts:
        if isinstance(s, N.Decl):
            ty = s.type
            if isinstance(ty, N.Array):
                ty = ty.with_(dims=tuple(ren(dd) for dd in ty.dims))
            init = ren(s.init)
            out.append(s.with_(name=declare(s.name), type=ty, init=init))
        elif isinstance(s, N.Block):
            out.append(s.with_(stmts=_uniquify(s.stmts, dict(env), taken)))
        elif isinstance(s, N.For):
            lo, hi, step = ren(s.lo), ren(s.hi), ren(s.step)
            inner = dict(env)
            var = s.var
            if s.var_type is not None:
                if var in taken:
                    var = _fresh(var, taken)
                else:
                    taken.add(var)
                inner[s.var] = var
            else:
                var = env.get(var, var)
            body = N.Block(_uniquify(s.body.stmts, inner, taken), loc=s.body.loc)
            out.append(s.with_(var=var, lo=lo, hi=hi, step=step, body=body))
        elif isinstance(s, N.CFor):
            inner = dict(env)
            init = s.init
            if isinstance(init, (N.Decl, N.Block, N.ExprStmt)):
                r = _uniquify((init,), inner, taken)
                init = r[0]
            body = N.Block(_uniquify(_as_block(s.body).stmts, dict(inner), taken))
            cond = rewrite(s.cond, lambda n: N.Var(inner[n.name]) if isinstance(n, N.Var) and n.name in inner
                           else n) if s.cond is not None else None
            nxt = rewrite(s.next, lambda n: N.Var(inner[n.name]) if isinstance(n, N.Var) and n.name in inner
                          else n) if s.next is not None else None
            out.append(s.with_(init=init, cond=cond, next=nxt, body=body))
        elif isinstance(s, N.While):
            out.append(s.with_(cond=ren(s.cond), body=N.Block(_uniquify(_as_block(s.body).stmts, dict(env), taken))))
        elif isinstance(s, N.If):
            then = N.Block(_uniquify(_as_block(s.then).stmts, dict(env), taken))
            els = None if s.else_ is None else (
                _uniquify((s.else_,), dict(env), taken)[0] if isinstance(s.else_, N.If)
                else N.Block(_uniquify(_as_block(s.else_).stmts, dict(env), taken)))
            out.append(s.with_(cond=ren(s.cond), then=then, else_=els))
        else:
            out.append(ren(s))
    return tuple(out)


def _param_updates_as_locals(stmts, params, taken: set):
    """A SIMT thread (a BANG task) owns a private copy of every parameter, so a top-level
    ``A += blockIdx.z * strideA;`` moves only that thread's ``A``.  Recovered as loops, the
    parameter is one variable for every thread and block: the update would be applied once per
    thread, cumulatively.  Each top-level (straight-line) write of a scalar or pointer parameter
    ``P op= e`` becomes the declaration of a fresh local ``T P_1 = P op e;`` and later statements
    read ``P_1``; being write-once, a pure block-uniform one is computed once per block before
    the thread loops (``hoist_pure``).  Writes nested in loops or branches then modify the
    local, which the rest of the pass keeps per thread as it does any local."""
    ptypes = {p.name: p.type for p in params if isinstance(p.type, (N.Scalar, N.Pointer))}
    cur = {}

    def sub(x):
        if not cur:
            return x
        return rewrite(x, lambda n: N.Var(cur[n.name], loc=n.loc) if isinstance(n, N.Var) and n.name in cur else n)

    def update(s):
        """(param, new value over the current names) for a top-level write of a parameter."""
        if isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name in ptypes:
            p = s.target.name
            old = N.Var(cur.get(p, p))
            if s.op == "=":
                return p, sub(s.value)
            if s.op in ("+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="):
                return p, N.BinOp(s.op[:-1], old, sub(s.value))
            return None
        if isinstance(s, N.ExprStmt) and isinstance(s.expr, N.UnOp) and s.expr.op in ("++", "--", "p++", "p--") \
                and isinstance(s.expr.operand, N.Var) and s.expr.operand.name in ptypes:
            p = s.expr.operand.name
            return p, N.BinOp("+" if "++" in s.expr.op else "-", N.Var(cur.get(p, p)), _c(1))
        return None

    out = []
    for s in stmts:
        u = update(s)
        if u is None:
            out.append(sub(s))
            continue
        p, value = u
        name = _fresh(p, taken)
        ty = ptypes[p]
        ty = ty.with_(const=False) if isinstance(ty, N.Pointer) else _unconst(ty)
        out.append(N.Decl(name, ty, value, "local", loc=s.loc))
        cur[p] = name
    return tuple(out)


# ============================================================================ intrinsics → C
# CUDA/HIP bit casts: C has none, so the C program gets a small helper (a byte copy, exact in C
# and C++) for each one it uses: name -> (helper, result type, argument type)
_BITCASTS = {"__float_as_int": ("xp_float_as_int", "int", "float"),
             "__int_as_float": ("xp_int_as_float", "float", "int"),
             "__float_as_uint": ("xp_float_as_uint", "unsigned int", "float"),
             "__uint_as_float": ("xp_uint_as_float", "float", "unsigned int")}
_RENAME = {"__expf": "expf", "__logf": "logf", "__powf": "powf", "__fsqrt_rn": "sqrtf"}
_ATOMIC_OPS = {"atomicAdd": "+=", "atomicSub": "-=", "atomicAnd": "&=", "atomicOr": "|=", "atomicExch": "="}


def _is_float_const(e):
    return isinstance(e, N.Const) and isinstance(e.value, float)


# the CUDA/HIP __half2 helpers, as expressions over the two halves (lane 0 = .x, lane 1 = .y);
# each entry: number of arguments, and per lane the scalar expression of the arguments' lanes
# (``h(k, j)``: lane j of argument k, ``s(k)``: argument k itself, a scalar)
def _h2_table():
    H = N.Scalar("float16", "_Float16")
    F = N.Scalar("float32", "float")

    def binop(op):
        return 2, lambda h, s, j: N.BinOp(op, h(0, j), h(1, j))

    def sel(op):
        return 2, lambda h, s, j: N.Cond(N.BinOp(op, h(0, j), h(1, j)), h(0, j), h(1, j))

    return {
        "__hadd2": binop("+"), "__hsub2": binop("-"), "__hmul2": binop("*"), "__h2div": binop("/"),
        "__hmax2": sel(">"), "__hmin2": sel("<"),
        "__hfma2": (3, lambda h, s, j: N.BinOp("+", N.BinOp("*", h(0, j), h(1, j)), h(2, j))),
        "__hneg2": (1, lambda h, s, j: N.UnOp("-", h(0, j))),
        "__halves2half2": (2, lambda h, s, j: s(j)),
        "make_half2": (2, lambda h, s, j: s(j)),
        "__half2half2": (1, lambda h, s, j: s(0)),
        "__floats2half2_rn": (2, lambda h, s, j: N.Cast(H, s(j))),
        "__float2half2_rn": (1, lambda h, s, j: N.Cast(H, s(0))),
        "__lows2half2": (2, lambda h, s, j: h(j, 0)),
        "__highs2half2": (2, lambda h, s, j: h(j, 1)),
    }, {   # half2 -> one scalar
        "__low2half": lambda h: h(0, 0), "__high2half": lambda h: h(0, 1),
        "__low2float": lambda h: N.Cast(F, h(0, 0)), "__high2float": lambda h: N.Cast(F, h(0, 1)),
    }


_H2_VECTOR, _H2_SCALAR = _h2_table()
_H2_LANES = ("x", "y")
_H1_COMPARE = {"__hgt": ">", "__hlt": "<", "__hge": ">=", "__hle": "<=", "__heq": "==", "__hne": "!="}


def _lane_safe(e) -> bool:
    """No side effect and no call: safe to evaluate once per lane."""
    return not any(isinstance(n, (N.Call, N.AssignExpr, N.Comma)) or
                   (isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--")) or
                   (isinstance(n, N.Intrinsic) and REGISTRY.get(n.name) is not None and
                    REGISTRY[n.name].category == "atomic")
                   for n in walk(e))


def _half2_type(scope) -> N.Vector:
    """The program's own spelling of the two-half vector (``__half2`` or ``half2``)."""
    for n in walk(scope):
        if isinstance(n, N.Vector) and n.n == 2 and n.elem.dtype == "float16":
            return n.with_(const=False)
    return N.Vector(N.Scalar("float16", "_Float16"), 2, "__half2")


def _half_from_bits(n):
    """``__ushort_as_half(0xfc00)``: the half with those bits, as a constant (C has no portable
    bit cast expression); a value only known at run time is refused."""
    import math
    import numpy as np
    x = n.args[0]
    while isinstance(x, N.Cast) and isinstance(x.type, N.Scalar) and x.type.dtype.startswith(("int", "uint")):
        x = x.expr
    if not (isinstance(x, N.Const) and isinstance(x.value, int) and not isinstance(x.value, bool)):
        raise PassError(NAME, f"'{n.func}' of a value known only at run time has no C form here "
                              "(only constant bit patterns are folded)", n)
    v = float(np.array([x.value & 0xFFFF], dtype=np.uint16).view(np.float16)[0])
    H = N.Scalar("float16", "_Float16")
    if math.isnan(v):
        val = N.Var("NAN")
    elif math.isinf(v):
        val = N.Var("INFINITY") if v > 0 else N.UnOp("-", N.Var("INFINITY"))
    else:
        val = N.Const(v, "float32", repr(v) + "f")
    return N.Cast(H, val, loc=n.loc)


def _lower_half2(n, vec: N.Vector):
    """``__hadd2(a, b)`` -> ``(__half2){a.x + b.x, a.y + b.y}`` (and the other __half2 helpers):
    a half2 is two halves, each lane computed by the scalar half arithmetic.  None when ``n``
    is no such helper."""
    name = n.func if isinstance(n, N.Call) and isinstance(n.func, str) else None
    if name in _H1_COMPARE and len(n.args) == 2:       # scalar half comparisons
        return N.BinOp(_H1_COMPARE[name], n.args[0], n.args[1], loc=n.loc)
    if name == "__hneg" and len(n.args) == 1:
        return N.UnOp("-", n.args[0], loc=n.loc)
    if name in ("__ushort_as_half", "__short_as_half") and len(n.args) == 1:
        return _half_from_bits(n)
    if name not in _H2_VECTOR and name not in _H2_SCALAR:
        return None
    a = n.args
    want = _H2_VECTOR[name][0] if name in _H2_VECTOR else 1
    if len(a) != want:
        raise PassError(NAME, f"'{name}' takes {want} argument(s), not {len(a)}", n)
    for x in a:
        if not _lane_safe(x):
            raise PassError(NAME, f"an argument of '{name}' has a side effect or calls a function; "
                                  "each half reads it, so assign it to a variable first", n)

    def h(k, j):
        x = a[k]
        if isinstance(x, N.CompoundLit) and len(x.init.items) == 2:
            return x.init.items[j]
        return N.Member(x, _H2_LANES[j], loc=n.loc)

    def s(k):
        return a[k]

    if name in _H2_SCALAR:
        return _H2_SCALAR[name](h)
    f = _H2_VECTOR[name][1]
    return N.CompoundLit(vec, N.InitList(tuple(f(h, s, j) for j in range(2))), loc=n.loc)


def _float_overload(n, env):
    """C++ picks the float overload of ``exp``/``sqrt``/``abs``/... when every argument is a float;
    C has one (double, or int for ``abs``) function per name, so the C spelling of such a call
    is ``expf``/``sqrtf``/``fabsf``.  None when the call is not of that kind or a type is unknown."""
    if env is None or not n.args:
        return None
    key = "fabsf" if n.name == "abs" else n.name + "f"
    if key not in REGISTRY or REGISTRY[key].category != "math" or n.name.endswith("f"):
        return None

    def is_float(e):
        if isinstance(e, N.Intrinsic):
            d = REGISTRY.get(e.name)
            return d is not None and d.category == "math" and e.name.endswith("f") and not e.name.startswith("__")
        t = env.type_of(e)
        return isinstance(t, N.Scalar) and t.dtype == "float32"

    if all(is_float(a) for a in n.args):
        return N.Intrinsic(key, n.args, loc=n.loc)
    return None


def _lower_intrinsics(stmts, owner: str, vec2: N.Vector | None = None, env=None):
    """C spellings of the CUDA/HIP math helpers; atomics as plain read-modify-write statements;
    refusal for what detensorize must lower first.  ``vec2``: the half2 type of the function
    (the __half2 helpers become per-lane expressions of it); ``env`` (a TypeEnv): the declared
    types, to pick the float spelling of overloaded math calls."""
    vec2 = vec2 or _half2_type(N.Block(tuple(stmts)))
    for n in walk(stmts):
        if isinstance(n, N.Intrinsic):
            d = REGISTRY.get(n.name)
            cat = d.category if d else None
            if cat in REFUSED_CATEGORIES:
                raise PassError(NAME, f"'{n.name}' in '{owner}' is {REFUSED_CATEGORIES[cat]}; run detensorize "
                                      "first (loop recovery needs scalar code)", n)

    def stmt_fn(s):
        if isinstance(s, N.ExprStmt) and isinstance(s.expr, N.Intrinsic) and s.expr.name in REGISTRY and \
                REGISTRY[s.expr.name].category == "atomic":
            a = s.expr
            if a.name == "__bang_atomic_add":
                raise PassError(NAME, "'__bang_atomic_add' is a vector atomic; run detensorize first", a)
            target = N.UnOp("*", a.args[0])
            if a.name in _ATOMIC_OPS:
                return N.Assign(target, _ATOMIC_OPS[a.name], a.args[1], loc=s.loc)
            if a.name in ("atomicMax", "atomicMin"):
                op = ">" if a.name == "atomicMax" else "<"
                return N.If(N.BinOp(op, a.args[1], target), N.Assign(target, "=", a.args[1]), loc=s.loc)
            if a.name == "atomicCAS":
                return N.If(N.BinOp("==", target, a.args[1]), N.Assign(target, "=", a.args[2]), loc=s.loc)
        return s

    def fn(n):
        if isinstance(n, N.Call) and n.func in _BITCASTS and len(n.args) == 1:
            return n.with_(func=_BITCASTS[n.func][0])
        if isinstance(n, N.Call):
            h2 = _lower_half2(n, vec2)
            return n if h2 is None else h2
        if not isinstance(n, N.Intrinsic):
            return n
        d = REGISTRY.get(n.name)
        if d is not None and d.category == "atomic":
            raise PassError(NAME, f"the old value returned by '{n.name}' is used; only atomics used as "
                                  "statements are recovered", n)
        a = n.args
        if n.name in ("min", "max", "__hmin", "__hmax") and len(a) == 2:
            op = "<" if n.name in ("min", "__hmin") else ">"
            return N.Cond(N.BinOp(op, a[0], a[1]), a[0], a[1], loc=n.loc)
        if n.name == "rsqrtf":
            return N.BinOp("/", N.Const(1.0, "float32", "1.0f"), N.Intrinsic("sqrtf", a), loc=n.loc)
        if n.name == "__frcp_rn":
            return N.BinOp("/", N.Const(1.0, "float32", "1.0f"), a[0], loc=n.loc)
        if n.name == "__fdividef":
            return N.BinOp("/", a[0], a[1], loc=n.loc)
        if n.name == "__ldg":
            return N.UnOp("*", a[0], loc=n.loc)
        if n.name in _RENAME:
            return N.Intrinsic(_RENAME[n.name], a, loc=n.loc)
        fo = _float_overload(n, env)
        if fo is not None:
            return fo
        if n.name in ("__float2half", "__float2half_rn"):
            return N.Cast(N.Scalar("float16", "_Float16"), a[0], loc=n.loc)
        if n.name in ("__float2bfloat16", "__float2bfloat16_rn"):
            return N.Cast(N.Scalar("bfloat16", "__bf16"), a[0], loc=n.loc)
        if n.name in ("__half2float", "__int2float_rn", "__bfloat162float"):
            return N.Cast(N.Scalar("float32", "float"), a[0], loc=n.loc)
        if n.name == "__float2int_rz":
            return N.Cast(INT, a[0], loc=n.loc)
        if n.name == "__float2int_rn":
            return N.Cast(INT, N.Intrinsic("rintf", a), loc=n.loc)
        hop = {"__hadd": "+", "__hsub": "-", "__hmul": "*", "__hdiv": "/"}.get(n.name)
        if hop:
            return N.BinOp(hop, a[0], a[1], loc=n.loc)
        if n.name == "__hfma":
            return N.BinOp("+", N.BinOp("*", a[0], a[1]), a[2], loc=n.loc)
        return n

    return _map_stmts(tuple(stmts), stmt_fn, fn)


# ============================================================================ thread dependence
def _taint(stmts, sources: set) -> set:
    """Variables whose value may differ between the threads of one block (data and control
    dependence on a thread index), to a fixpoint."""
    tainted = set(sources)
    private_arrays = {n.name for n in walk(tuple(stmts)) if isinstance(n, N.Decl) and n.scope == "local"
                      and not isinstance(n.type, N.Pointer)}     # stores into them change the local itself

    def dep(e) -> bool:
        return e is not None and bool(_vars(e) & tainted)

    def exits_divergently(body, ctl) -> bool:
        # a break/continue of this loop under thread-dependent control
        def scan(s, c):
            if isinstance(s, (N.Break, N.Continue)):
                return c
            if isinstance(s, N.Block):
                return any(scan(x, c) for x in s.stmts)
            if isinstance(s, N.If):
                c2 = c or dep(s.cond)
                return scan(s.then, c2) or (s.else_ is not None and scan(s.else_, c2))
            return False
        return scan(body, ctl)

    def visit(s, ctl) -> bool:
        ch = False

        def mark(name):
            nonlocal ch
            if name and name not in tainted:
                tainted.add(name)
                ch = True

        if isinstance(s, N.Block):
            for x in s.stmts:
                ch |= visit(x, ctl)
            return ch
        # side effects inside expressions (x++ in an index, a = b = c)
        for n in walk(s if not isinstance(s, (N.For, N.CFor, N.While, N.If)) else ()):
            if isinstance(n, N.AssignExpr) and (ctl or dep(n.value)):
                mark(_assigned_name(n.target))
            if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") and ctl:
                mark(_assigned_name(n.operand))
        if isinstance(s, N.Decl):
            if ctl or dep(s.init) or (isinstance(s.type, N.Array) and any(dep(d) for d in s.type.dims if d)):
                mark(s.name)
        elif isinstance(s, N.Assign):
            # a store taints the variable it writes: a scalar, or a thread-private array;
            # stores through pointers and into block-shared arrays do not (other threads read
            # them only after a barrier, at indices that decide their own dependence)
            name = s.target.name if isinstance(s.target, N.Var) else _assigned_name(s.target)
            if not isinstance(s.target, N.Var) and name not in private_arrays:
                name = None
            if ctl or dep(s.value) or dep(s.target):
                mark(name)
        elif isinstance(s, N.ExprStmt):
            pass
        elif isinstance(s, N.If):
            c2 = ctl or dep(s.cond)
            ch |= visit(_as_block(s.then), c2)
            if s.else_ is not None:
                ch |= visit(_as_block(s.else_), c2)
        elif isinstance(s, N.For):
            c2 = ctl or dep(s.lo) or dep(s.hi) or dep(s.step) or exits_divergently(s.body, False)
            if c2:
                mark(s.var)
            ch |= visit(s.body, c2)
        elif isinstance(s, N.CFor):
            init_dep = False
            if s.init is not None:
                ch |= visit(s.init if not isinstance(s.init, N.ExprStmt) else s.init, ctl)
                init_dep = bool(_vars(s.init) & tainted) if not isinstance(s.init, N.Decl) else dep(s.init.init)
            c2 = ctl or init_dep or dep(s.cond) or dep(s.next) or exits_divergently(_as_block(s.body), False)
            if c2 and s.next is not None:
                for v in _modified_vars(s.next):
                    mark(v)
            ch |= visit(_as_block(s.body), c2)
        elif isinstance(s, N.While):
            c2 = ctl or dep(s.cond) or exits_divergently(_as_block(s.body), False)
            ch |= visit(_as_block(s.body), c2)
        return ch

    while visit(N.Block(tuple(stmts)), False):
        pass
    return tainted


# ============================================================================ warp-uniform branches
def _warp_uniform(e, tl, warp: int, tainted: set, defs: dict, depth: int = 0) -> bool:
    """``e`` has one value for all lanes of any warp: the lanes of a warp are ``warp``
    consecutive linear thread ids (``t = (tz * BY + ty) * BX + tx``).  A thread level whose
    stride (the product of the inner extents) is a multiple of the warp size is warp-uniform;
    below that, ``v / k`` (``v >> b``) and ``v < c`` (``<=``, ``>``, ``>=``) are, when they
    cut ``v`` at multiples of ``warp / stride`` (``tid < 32``, ``tid / 32 == 0`` with 256
    threads).  Anything else that reads a thread index is not."""
    if depth > 20:
        return False
    stride, info = 1, {}
    for lv in reversed(tl):
        if not _is_const(lv.extent):
            return False
        info[lv.var] = (stride, lv.extent.value, lv is tl[0])
        stride *= lv.extent.value

    def cut_ok(v, k):       # v / k takes one value per warp
        s, x, outermost = info[v]
        return k > 0 and (s * k) % warp == 0 and (outermost or x % k == 0)

    def const(x):
        x = _fold(x)
        return x.value if _is_const(x) and isinstance(x.value, int) and not isinstance(x.value, bool) else None

    def level_var(x):
        while isinstance(x, N.Cast):
            x = x.expr
        if isinstance(x, N.Var) and x.name in defs and x.name not in info:
            return level_var(defs[x.name])
        return x.name if isinstance(x, N.Var) and x.name in info else None

    def uni(x) -> bool:
        if x is None or isinstance(x, (N.Const, N.SizeOf)):
            return True
        if isinstance(x, N.Var):
            if x.name in info:
                return info[x.name][0] % warp == 0
            if x.name in defs:
                return _warp_uniform(defs[x.name], tl, warp, tainted, defs, depth + 1)
            return x.name not in tainted
        if isinstance(x, N.BinOp):
            v = level_var(x.lhs)
            if v is not None and info[v][0] % warp != 0:
                c = const(x.rhs)
                if c is None:
                    return False
                if x.op == "/":
                    return cut_ok(v, c)
                if x.op == ">>":
                    return 0 <= c < 31 and cut_ok(v, 1 << c)
                k = warp // info[v][0] if warp % info[v][0] == 0 else None
                if k is None:
                    return False
                if x.op in ("<", ">="):
                    return c % k == 0 and cut_ok(v, k)
                if x.op in ("<=", ">"):
                    return (c + 1) % k == 0 and cut_ok(v, k)
                return False
            v = level_var(x.rhs)
            if v is not None and info[v][0] % warp != 0 and x.op in ("<", ">=", "<=", ">"):
                flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}[x.op]
                return uni(N.BinOp(flip, x.rhs, x.lhs))
            return uni(x.lhs) and uni(x.rhs)
        if isinstance(x, N.UnOp) and x.op in ("-", "+", "!", "~"):
            return uni(x.operand)
        if isinstance(x, N.Cast):
            return uni(x.expr)
        if isinstance(x, N.Cond):
            return uni(x.cond) and uni(x.then) and uni(x.else_)
        return False

    return uni(e)


def _distribute_warp_branches(stmts, tl, warp: int, tainted: set):
    """``if (tid < 32) { A; __syncwarp(); B; }`` (the warp-synchronous tail of a reduction):
    the condition is thread-dependent, but every lane of a warp takes the same branch, so each
    warp either runs the whole body, barriers included, or none of it.  Such an ``if`` is
    distributed over its warp barriers, ``if (c) {A} __syncwarp(); if (c) {B}``, and over the
    block-uniform loops that hold them, after which the barriers stand under uniform control and
    cut phases as usual.  Exact when ``c`` reads nothing the body writes (every piece sees the
    value the ``if`` saw) and has no side effect; a run where all warps pass every barrier is one
    of the schedules the source allows.  Declarations in the body are split into a declaration
    before the pieces and an assignment in its piece (names are unique by now).  Anything else
    (a block barrier, a thread-dependent loop around a barrier, a return) is left as it was, to
    be refused as before."""
    defs = {}
    mod = _modified_vars(N.Block(tuple(stmts)))
    for n in walk(tuple(stmts)):
        if isinstance(n, N.Decl) and n.init is not None and not isinstance(n.type, N.Array) and \
                n.name not in mod and _pure(n.init):
            defs[n.name] = n.init

    def only_warp_barriers(node):
        return all(n.kind in ("warp",) + NOOP_KINDS for n in walk(node) if isinstance(n, N.Barrier))

    local_taint = [tainted]

    def pure_header(*xs):
        return all(x is None or (_pure(x) and not (_vars(x) & local_taint[0])) for x in xs)

    def next_ok(x):     # k >>= 1, ++k, k = k + s: a counter update with a pure uniform value
        if x is None or isinstance(x, N.UnOp) and x.op in ("++", "--", "p++", "p--") and \
                isinstance(x.operand, N.Var):
            return True
        if isinstance(x, N.ExprStmt):
            return next_ok(x.expr)
        if isinstance(x, (N.Assign, N.AssignExpr)) and isinstance(x.target, N.Var):
            return pure_header(x.value)
        return False

    class _No(Exception):
        pass

    def dist(cond, body, cvars):
        """The statements of ``body`` with ``cond`` pushed down to the barrier-free runs."""
        out, run = [], []

        def flush():
            if any(not isinstance(x, N.Comment) for x in run):
                out.append(N.If(cond, N.Block(tuple(run))))
            else:
                out.extend(run)
            run.clear()

        for s in body:
            if isinstance(s, N.Comment):
                run.append(s)
            elif isinstance(s, N.Decl):
                if isinstance(s.type, N.Array) and s.init is not None or "static" in s.storage:
                    raise _No
                if s.init is None:
                    out.append(s)
                else:
                    out.append(s.with_(type=_unconst(s.type) if not isinstance(s.type, N.Pointer)
                                       else s.type.with_(const=False), init=None))
                    run.append(N.Assign(N.Var(s.name), "=", s.init, loc=s.loc))
            elif not _has_sync(s):
                if any(isinstance(n, (N.Return, N.Break, N.Continue)) for n in walk(s)):
                    raise _No
                run.append(s)
            elif isinstance(s, N.Barrier):
                flush()
                out.append(s)
            elif isinstance(s, N.Block):
                flush()
                out.extend(dist(cond, s.stmts, cvars))
            elif isinstance(s, N.For) and pure_header(s.lo, s.hi, s.step) and s.var not in cvars and \
                    s.var not in _modified_vars(s.body):
                flush()
                out.append(s.with_(body=N.Block(tuple(dist(cond, _as_block(s.body).stmts, cvars)))))
            elif isinstance(s, N.CFor) and pure_header(s.cond) and next_ok(s.next) and (
                    s.init is None or isinstance(s.init, N.Decl) and pure_header(s.init.init)) and \
                    not ((_modified_vars(s.next) if s.next is not None else set()) & (
                        cvars | _modified_vars(_as_block(s.body)))):
                flush()
                out.append(s.with_(body=N.Block(tuple(dist(cond, _as_block(s.body).stmts, cvars)))))
            elif isinstance(s, N.If) and s.else_ is None and _pure(s.cond) and \
                    _warp_uniform(s.cond, tl, warp, local_taint[0], defs) and not (_vars(s.cond) & _modified_vars(s.then)):
                flush()
                both = N.BinOp("&&", cond, s.cond)
                out.extend(dist(both, _as_block(s.then).stmts, cvars | _vars(s.cond)))
            else:
                raise _No
        flush()
        return out

    def visit(seq):
        res = []
        for s in seq:
            if isinstance(s, N.If) and _has_sync(s.then) and bool(_vars(s.cond) & tainted) and \
                    (s.else_ is None or not _has_sync(s.else_)) and only_warp_barriers(s.then) and \
                    _pure(s.cond) and _warp_uniform(s.cond, tl, warp, tainted, defs) and \
                    not (_vars(s.cond) & _modified_vars(s.then)):
                # thread dependence inside the branch, apart from the branch's own control
                inner = {n.name for n in walk(s.then) if isinstance(n, N.Decl)} | {
                    n.var for n in walk(s.then) if isinstance(n, N.For)}
                local_taint[0] = _taint(_as_block(s.then).stmts, tainted - inner)
                try:
                    pieces = dist(s.cond, _as_block(s.then).stmts, _vars(s.cond))
                except _No:
                    res.append(s)
                    continue
                if s.else_ is not None:     # the other warps' branch runs with the first piece
                    pieces.insert(0, N.If(N.UnOp("!", s.cond), s.else_, loc=s.loc))
                res.append(N.Block(tuple(pieces), loc=s.loc))
            elif isinstance(s, N.Block):
                res.append(s.with_(stmts=tuple(visit(s.stmts))))
            elif isinstance(s, N.If):
                res.append(s.with_(then=N.Block(tuple(visit(_as_block(s.then).stmts))),
                                   else_=None if s.else_ is None else N.Block(tuple(visit(_as_block(s.else_).stmts)))))
            elif isinstance(s, (N.For, N.CFor, N.While)):
                res.append(s.with_(body=N.Block(tuple(visit(_as_block(s.body).stmts)))))
            else:
                res.append(s)
        return res

    if not tl or not any(isinstance(n, N.Barrier) and n.kind == "warp" for n in walk(tuple(stmts))):
        return tuple(stmts)
    return tuple(visit(stmts))


# ============================================================================ fission structure
@dataclass(frozen=True)
class _Seg(N.Stmt):
    """A run of barrier-free statements executed by every thread of the block (a phase)."""
    id: int
    stmts: tuple
    in_loop: bool = False       # inside a block-uniform loop (a later phase may run again before it)


@dataclass(frozen=True)
class _UniformExit(N.Stmt):
    """``if (cond) return;`` with a block-uniform ``cond`` at the kernel's top level."""
    cond: N.Expr
    loc: object = None


class _Builder:
    def __init__(self, tainted: set, thread_vars: set, allow_sync_all: bool):
        self.tainted = tainted
        self.thread_vars = thread_vars
        self.allow_sync_all = allow_sync_all
        self.nseg = 0

    def dep(self, e) -> bool:
        return e is not None and bool(_vars(e) & self.tainted)

    def seg(self, stmts, in_loop):
        s = _Seg(self.nseg, tuple(stmts), in_loop)
        self.nseg += 1
        return s

    def build(self, stmts, top: bool, in_loop: bool) -> tuple:
        out, cur = [], []

        def close():
            if cur:
                out.append(self.seg(cur, in_loop))
                cur.clear()

        after_barrier = False
        for s in stmts:
            if isinstance(s, N.Comment) and s.trailing and after_barrier:
                continue        # the comment of a barrier that is now a phase boundary
            after_barrier = isinstance(s, N.Barrier)
            if isinstance(s, N.Barrier):
                if s.kind in NOOP_KINDS:
                    continue
                if s.kind == "all" and not self.allow_sync_all:
                    raise PassError(NAME, "__sync_all orders every task of the launch; recovered only when the "
                                          "launch has one cluster", s)
                close()
                continue
            if isinstance(s, N.Comment) and not cur and out and not isinstance(out[-1], _Seg):
                out.append(s)
                continue
            if top and isinstance(s, N.If) and s.else_ is None and not self.dep(s.cond) and \
                    _single_return(s.then):
                close()
                out.append(_UniformExit(s.cond, loc=s.loc))
                continue
            if top and isinstance(s, N.Return) and s.value is None:
                close()
                out.append(_UniformExit(_c(1), loc=s.loc))
                continue
            if not _has_sync(s):
                cur.append(s)
                continue
            close()
            out.append(self.structure(s, top, in_loop))
        close()
        return tuple(out)

    def refuse_divergent(self, s, why):
        b = _first_sync(s)
        raise PassError(NAME, f"barrier under thread-dependent control ({why}); threads of a block would not "
                              "all reach it, so the thread loops cannot be split there", b)

    def structure(self, s, top, in_loop):
        if isinstance(s, N.Block):
            return N.Block(self.build(s.stmts, False, in_loop), loc=s.loc)
        if isinstance(s, N.If):
            if self.dep(s.cond):
                self.refuse_divergent(s, "an if on a thread index")
            return s.with_(then=N.Block(self.build(_as_block(s.then).stmts, False, in_loop)),
                           else_=None if s.else_ is None else N.Block(
                               self.build(_as_block(s.else_).stmts, False, in_loop)))
        if isinstance(s, N.For):
            if self.dep(s.lo) or self.dep(s.hi) or self.dep(s.step) or s.var in self.tainted:
                self.refuse_divergent(s, f"loop '{s.var}' has a thread-dependent trip count")
            if s.var in _modified_vars(s.body):
                self.refuse_divergent(s, f"loop '{s.var}' is modified in its body")
            _refuse_exits(s.body)
            return s.with_(body=N.Block(self.build(s.body.stmts, False, True)))
        if isinstance(s, N.CFor):
            hdr = [s.cond, s.next] + ([s.init] if s.init is not None else [])
            if any(self.dep(h) for h in hdr if h is not None) or (
                    isinstance(s.init, N.Decl) and s.init.name in self.tainted):
                self.refuse_divergent(s, "a loop with a thread-dependent condition")
            hv = _modified_vars(s.next) if s.next is not None else set()
            if isinstance(s.init, N.Decl):
                hv.add(s.init.name)
            if hv & _modified_vars(s.body):
                self.refuse_divergent(s, "a loop whose counter is modified in its body")
            _refuse_exits(_as_block(s.body))
            return s.with_(body=N.Block(self.build(_as_block(s.body).stmts, False, True)))
        if isinstance(s, N.While):
            if self.dep(s.cond):
                self.refuse_divergent(s, "a while loop with a thread-dependent condition")
            _refuse_exits(_as_block(s.body))
            return s.with_(body=N.Block(self.build(_as_block(s.body).stmts, False, True)))
        b = _first_sync(s)
        raise PassError(NAME, f"barrier inside a {type(s).__name__} statement cannot be split", b or s)


def _single_return(s) -> bool:
    if isinstance(s, N.Return) and s.value is None:
        return True
    return isinstance(s, N.Block) and len([x for x in s.stmts if not isinstance(x, N.Comment)]) == 1 and \
        _single_return([x for x in s.stmts if not isinstance(x, N.Comment)][0])


def _refuse_exits(body):
    """break / continue of a loop that holds a barrier: its phases are separate thread loops, so
    the exit cannot be taken by one thread; refuse unless it sits in a nested loop."""
    def scan(s):
        if isinstance(s, (N.Break, N.Continue)):
            raise PassError(NAME, f"'{type(s).__name__.lower()}' in a loop that holds a barrier", s)
        if isinstance(s, N.Block):
            for x in s.stmts:
                scan(x)
        elif isinstance(s, N.If):
            scan(s.then)
            if s.else_ is not None:
                scan(s.else_)
    scan(body)


def _segments(node) -> list:
    return [n for n in walk(node) if isinstance(n, _Seg)]


# ============================================================================ the recovery
class _Recovery:
    def __init__(self, program: N.Program, entry: str, launch, normalize=True, unstage: bool = True,
                 assume: tuple = (), staged_conv: bool = False):
        if not (isinstance(normalize, bool) or normalize in NORMALIZE):
            raise PassError(NAME, f"normalize={normalize!r} is none of True, False, "
                                  f"{', '.join(repr(a) for a in NORMALIZE)}", None)
        self.normalize = normalize
        self.unstage = bool(unstage)
        self.program = program
        self.entry = entry
        self.launch = launch
        self.assume = tuple(assume or ())
        self.staged_conv = bool(staged_conv)
        if self.staged_conv and (normalize in (False, "staged") or not self.unstage):
            raise AlternativeRefused(NAME, f"staged_conv: normalize={normalize!r}, unstage={unstage!r} do not "
                                           "un-stage (the lift is a step of un-staging)")

    # -------------------------------------------------------------- device helpers
    def _callees(self, fn) -> list:
        defs = {f.name: f for f in self.program.funcs if f.body is not None}
        seen, order, stack = set(), [], [fn]
        while stack:
            f = stack.pop()
            for n in walk(f.body):
                if isinstance(n, N.Call) and isinstance(n.func, str) and n.func in defs and n.func not in seen \
                        and n.func != fn.name:
                    seen.add(n.func)
                    order.append(defs[n.func])
                    stack.append(defs[n.func])
        return order

    def run(self):
        prog = self.program
        if prog.dialect not in ("cuda", "hip", "bang"):
            raise PassError(NAME, f"the program is already sequential ({prog.dialect})", None, "XP4002")
        try:
            fn = prog.func(self.entry)
        except KeyError:
            raise PassError(NAME, f"no kernel '{self.entry}' with a body", None) from None
        params = [p.name for p in fn.params]
        launch = dict(self.launch or {})
        cfg = _config(prog.dialect, launch, set(params), None)
        bang_extra = None
        if isinstance(cfg, tuple):
            cfg, bang_extra = cfg
        fn = self._inline_barrier_helpers(fn)
        helpers = self._callees(fn)
        for h in helpers:
            b = _first_sync(h.body)
            if b is not None:
                raise PassError(NAME, f"helper '{h.name}' holds a barrier; inline it first (its phases belong "
                                      "to the caller's thread loops)", b)
        # NRAM / WRAM buffers and other on-chip locals are private to the task: plain locals
        def to_local(n):
            if isinstance(n, N.Decl) and n.scope in ("nram", "wram", "local", "constant"):
                return n if n.scope == "local" else n.with_(scope="local")
            return _drop_noop_barriers(n)
        fn = fn.with_(body=rewrite(fn.body, to_local))
        body = _lower_intrinsics(fn.body.stmts, fn.name, _half2_type(fn), TypeEnv.of(prog, fn))
        helpers = [h.with_(body=N.Block(_lower_intrinsics(rewrite(h.body, to_local).stmts, h.name, _half2_type(h),
                                                          TypeEnv.of(prog, h)), loc=h.body.loc))
                   for h in helpers]

        # BANG: a cluster/core split only when cluster memory or cluster barriers need it
        if bang_extra is not None:
            clustered = any(isinstance(n, N.Decl) and n.scope == "sram" for n in walk(body)) or _has_sync(
                N.Block(body))
            bl, tl, extra_b, idx = _bang_levels(bang_extra, clustered)
            cfg.block_levels, cfg.thread_levels, cfg.index_builtins = bl, tl, idx
            cfg.builtins.update(extra_b)
            one_cluster = _is_const(bl[0].extent, 1) if bl else True
            cfg.sync_all_ok = one_cluster

        # unique local names; builtin aliases (int tid = threadIdx.x) name their loops
        taken = set(params) | {f.name for f in prog.funcs} | {m.name for m in prog.macros}
        taken |= {it.name for it in prog.items if isinstance(it, N.Decl)}
        body = _uniquify(body, {p: p for p in params}, taken)
        levels = cfg.block_levels + cfg.thread_levels
        names_in_use = taken | _vars(N.Block(body))
        body = self._alias_loops(body, cfg, names_in_use)
        for lv in levels:
            if lv.var in names_in_use and not getattr(lv, "_aliased", False):
                lv.var = _fresh(lv.var, names_in_use)
        for bname, lv in cfg.index_builtins.items():
            cfg.builtins[bname] = N.Var(lv.var)
        if bang_extra is not None:   # BANG task expressions were built over the default names
            ren = {"task": None, "cluster": None, "core": None}
            for lv in levels:
                ren[lv.axis] = lv.var
            cfg.builtins = {k: rewrite(v, lambda n: N.Var(ren[n.name]) if isinstance(n, N.Var) and n.name in ren
                                       and ren[n.name] else n) for k, v in cfg.builtins.items()}

        # helpers that read builtins get them as extra parameters
        helpers, body = self._thread_helpers(helpers, body, cfg)
        body = self._replace_builtins(body, cfg, fn.name)
        body = _param_updates_as_locals(body, fn.params, names_in_use)

        thread_vars = {lv.var for lv in cfg.thread_levels}
        self.has_block_loops = bool(cfg.block_levels)
        tainted = _taint(body, thread_vars)
        warp = cfg.builtins.get("warpSize")
        if _is_const(warp) and cfg.thread_levels:
            body = _distribute_warp_branches(body, cfg.thread_levels, warp.value, tainted)
            tainted = _taint(body, thread_vars)

        # BANG: file-scope SRAM (__mlu_shared__) is one buffer per cluster, like SRAM declared in
        # the kernel: unless a helper the kernel still calls names it, it joins the kernel's body
        if bang_extra is not None and cfg.block_levels:
            still_named = set()
            for h in helpers:
                still_named |= _vars(h.body)
            in_body = _vars(N.Block(tuple(body)))
            moved = tuple(it for it in prog.items if isinstance(it, N.Decl) and it.scope == "sram"
                          and it.init is None and it.name in in_body and it.name not in still_named)
            body = moved + tuple(body)
        # shared / cluster memory → one array per block, declared in the block loop
        body, shared_decls = self._shared(body, cfg)

        builder = _Builder(tainted, thread_vars, cfg.sync_all_ok)
        structure = builder.build(body, True, False)
        new_body = self._materialize(structure, cfg, tainted, params, shared_decls, fn)

        if bang_extra is not None and cfg.block_levels:
            new_body = _mark_source_partition(new_body, cfg.block_levels[0].var)
        new_fn = fn.with_(body=N.Block(tuple(new_body), loc=fn.body.loc), attrs=tuple(
            a for a in fn.attrs if a in ("static", "inline")))
        if levels:
            new_fn = _privatize_core_memories(prog, new_fn, levels[-1].var)
        self.normalized, self.why_not_normalized = False, "normalize=False"
        if self.staged_conv and not levels:
            raise AlternativeRefused(NAME, "staged_conv: no partition loops")
        if self.normalize is True:
            new_fn, why = _normalize(new_fn, levels, prog, self.unstage, self.assume, self.staged_conv)
            self.normalized, self.why_not_normalized = why is None, why
        elif self.normalize:
            new_fn = _normalize_as(self.normalize, new_fn, levels, prog, self.assume, self.staged_conv)
            self.normalized = self.normalize != "loops"
            self.why_not_normalized = None if self.normalized else "normalize='loops'"
        new_helpers = {h.name: h.with_(kind="host", attrs=tuple(a for a in h.attrs if a in ("static", "inline")))
                       for h in helpers}
        return self._program(new_fn, new_helpers)

    # -------------------------------------------------------------- helpers with barriers
    def _inline_barrier_helpers(self, fn):
        """A helper that holds a barrier belongs to the caller's phases (and a BANG helper on
        file-scope on-chip buffers to the caller's core): it must be inlined (its parameters
        become locals of a block, its final ``return v`` an assignment of the call's result).
        Helpers that take pointers or compute indices are inlined too where they can be, so that
        the passes after loop recovery see their accesses (passes/inline_helpers.py)."""
        from .inline_helpers import inline_calls, pointer_or_index_helper
        # BANG: a helper working on file-scope NRAM/WRAM/SRAM buffers is inlined too, so that the
        # per-core privatization of those buffers (``_privatize_core_memories``) sees every use
        onchip = {it.name for it in self.program.items if isinstance(it, N.Decl) and it.scope in ("nram", "wram", "sram")}

        def must(f):
            return _has_sync(f.body) or (bool(onchip) and any(isinstance(v, N.Var) and v.name in onchip
                                                              for v in walk(f.body)))
        fn, _ = inline_calls(self.program, fn, pointer_or_index_helper, must, pass_name=NAME)
        return fn

    # -------------------------------------------------------------- aliases
    def _alias_loops(self, body, cfg: _Config, names_in_use: set):
        modified = _modified_vars(N.Block(body))
        out = []
        used = set()
        for s in body:
            if isinstance(s, N.Decl) and isinstance(s.init, N.Builtin) and s.init.name in cfg.index_builtins and \
                    s.name not in modified and s.init.name not in used and isinstance(s.type, N.Scalar) and \
                    s.type.dtype in ("int32", "int64") and s.scope == "local":
                lv = cfg.index_builtins[s.init.name]
                lv.var = s.name
                lv._aliased = True
                used.add(s.init.name)
                continue
            out.append(s)
        return tuple(out)

    def _thread_helpers(self, helpers, body, cfg):
        direct = {h.name: {n.name for n in walk(h.body) if isinstance(n, N.Builtin)} for h in helpers}
        calls = {h.name: {n.func for n in walk(h.body) if isinstance(n, N.Call) and isinstance(n.func, str)}
                 for h in helpers}
        need = {k: set(v) for k, v in direct.items()}
        changed = True
        while changed:
            changed = False
            for h in need:
                for c in calls[h]:
                    if c in need and not need[c] <= need[h]:
                        need[h] |= need[c]
                        changed = True
        for h, bs in need.items():
            unknown = [b for b in bs if b not in cfg.builtins]
            if unknown:
                raise PassError(NAME, f"helper '{h}' uses '{unknown[0]}', which this launch cannot express", None)
        pname = {b: b.replace(".", "_") for bs in need.values() for b in bs}

        def add_args(n, in_helper):
            if isinstance(n, N.Call) and isinstance(n.func, str) and need.get(n.func):
                extra = tuple((N.Var(pname[b]) if in_helper else N.Builtin(b)) for b in sorted(need[n.func]))
                return n.with_(args=tuple(n.args) + extra)
            return n

        new_helpers = []
        for h in helpers:
            hb = rewrite(h.body, lambda n: add_args(n, True))
            hb = rewrite(hb, lambda n: N.Var(pname[n.name]) if isinstance(n, N.Builtin) and n.name in pname else n)
            ps = tuple(h.params) + tuple(N.Param(pname[b], INT) for b in sorted(need[h.name]))
            new_helpers.append(h.with_(body=hb, params=ps))
        body = rewrite(tuple(body), lambda n: add_args(n, False))
        return new_helpers, body

    def _replace_builtins(self, body, cfg, owner):
        def fn(n):
            if isinstance(n, N.Builtin):
                if n.name not in cfg.builtins:
                    raise PassError(NAME, f"builtin '{n.name}' has no meaning for this launch", n)
                return cfg.builtins[n.name]
            return n
        return rewrite(tuple(body), fn)

    # -------------------------------------------------------------- shared memory
    def _shared(self, body, cfg):
        decls = []

        def take(stmts):
            out = []
            for s in stmts:
                if isinstance(s, N.Decl) and s.scope in ("shared", "sram"):
                    decls.append(self._shared_decl(s, cfg))
                    continue
                out.append(_descend(s))
            return tuple(out)

        def _descend(s):
            if isinstance(s, N.Block):
                return s.with_(stmts=take(s.stmts))
            if isinstance(s, (N.For, N.While, N.CFor)):
                b = _as_block(s.body)
                nb = N.Block(take(b.stmts), loc=b.loc)
                return s.with_(body=nb)
            if isinstance(s, N.If):
                return s.with_(then=N.Block(take(_as_block(s.then).stmts)),
                               else_=None if s.else_ is None else N.Block(take(_as_block(s.else_).stmts)))
            return s

        return take(body), decls

    def _shared_decl(self, d: N.Decl, cfg):
        ty = d.type
        if isinstance(ty, N.Array) and ty.dims and ty.dims[0] is None:
            if cfg.shared_bytes is None:
                raise PassError(NAME, f"'extern __shared__ {d.name}[]' needs launch['shared_bytes'] for its size", d)
            n = N.BinOp("/", N.BinOp("+", cfg.shared_bytes, N.BinOp("-", N.SizeOf(ty.elem), _c(1))),
                        N.SizeOf(ty.elem))
            ty = ty.with_(dims=(n,) + tuple(ty.dims[1:]))
        if isinstance(ty, N.Array):
            ty = ty.with_(elem=_unvolatile(ty.elem))
        return N.Decl(d.name, ty, d.init, "local", tuple(s for s in d.storage if s not in ("extern", "static")),
                      (), loc=d.loc)

    # -------------------------------------------------------------- materialization
    def _materialize(self, structure, cfg, tainted, params, shared_decls, fn):
        tl = cfg.thread_levels
        segs = _segments(N.Block(structure))
        nt = _c(1)
        for lv in tl:
            nt = _mul(nt, lv.extent)
        tlin = None
        for lv in tl:       # outermost first: ((tz) * BY + ty) * BX + tx
            tlin = N.Var(lv.var) if tlin is None else _fold(N.BinOp("+", N.BinOp("*", tlin, lv.extent),
                                                                     N.Var(lv.var)))
        if tlin is None:
            tlin = _c(0)

        # ---- where each local variable is declared and referenced
        decl_of, decl_seg, top_decl = {}, {}, set()
        for sg in segs:
            for s in sg.stmts:
                if isinstance(s, N.Decl):
                    top_decl.add(s.name)
            for n in walk(sg.stmts):
                if isinstance(n, N.Decl):
                    decl_of[n.name] = n
                    decl_seg[n.name] = sg.id
        refs = {}
        for sg in segs:
            for v in _vars(sg.stmts):
                refs.setdefault(v, set()).add(sg.id)
        outer = _vars(_strip_segs(N.Block(structure)))
        for v in outer:
            refs.setdefault(v, set()).add("outer")
        outer_decl = {n.name for n in walk(_strip_segs(N.Block(structure))) if isinstance(n, N.Decl)}
        outer_decl |= {n.var for n in walk(_strip_segs(N.Block(structure))) if isinstance(n, N.For)}
        for sg in segs:     # a header variable of a uniform loop must not be changed by one thread
            bad = _scalar_writes(sg.stmts) & outer_decl
            if bad:
                v = sorted(bad)[0]
                raise PassError(NAME, f"'{v}' controls a loop that holds a barrier but is modified per thread", None)

        all_mod = _scalar_writes(N.Block(structure)) | {
            n for n in _modified_vars(N.Block(structure)) if isinstance(getattr(decl_of.get(n), "type", None), N.Array)}
        level_vars = {lv.var for lv in cfg.block_levels + cfg.thread_levels}
        consts = {m.name for m in self.program.macros if m.params is None} | {
            it.name for it in self.program.items if isinstance(it, N.Decl) and (
                "constexpr" in it.storage or getattr(it.type, "const", False))}
        stable = (set(params) - all_mod) | level_vars | outer_decl | (consts - all_mod) | {
            d.name for d in shared_decls}
        # write-once pure values (recomputed wherever needed), in declaration order
        remat = {}
        for sg in segs:
            for n in walk(sg.stmts):
                if isinstance(n, N.Decl) and n.init is not None and not isinstance(n.type, N.Array) and \
                        n.name not in all_mod and _pure(n.init) and _vars(n.init) <= (stable | set(remat)) and \
                        not isinstance(n.init, N.InitList) and "static" not in n.storage:
                    remat[n.name] = n
        order = {name: i for i, name in enumerate(decl_of)}

        hoist_pure, recompute, hoist_var, expand = {}, {}, {}, {}
        for v, d in decl_of.items():
            ctx = refs.get(v, set()) | {decl_seg[v]}
            uniform = v not in tainted
            if v in remat and uniform and v in top_decl:
                hoist_pure[v] = d            # computed once per block, before the thread loops
                continue
            if len(ctx) <= 1:
                continue
            if v in remat:
                recompute[v] = d
            elif uniform and isinstance(d.type, (N.Scalar, N.Pointer)) and self._idempotent(v, structure):
                hoist_var[v] = d
            elif _is_const(nt, 1):
                hoist_var[v] = d             # one thread per block: the block keeps the value
            else:
                expand[v] = d

        # ---- early exits (return inside a thread)
        has_ret = any(isinstance(n, N.Return) for sg in segs for n in walk(sg.stmts))
        multi = len(segs) > 1
        done = None
        if has_ret and multi:
            done = _fresh("done", set(decl_of) | set(params) | level_vars | outer_decl | _vars(N.Block(structure)),
                          False)
        first_ret = min((sg.id for sg in segs if any(isinstance(n, N.Return) for n in walk(sg.stmts))),
                        default=None)
        guard_all = first_ret is not None and any(sg.in_loop for sg in segs if sg.id == first_ret)

        def seg_body(sg: _Seg):
            stmts = list(sg.stmts)
            kept_last_moved = False
            pre = []
            # values recomputed here: every recomputable variable this phase reads but does not declare
            needed = set()
            frontier = [v for v in _vars(sg.stmts) if v in recompute and decl_seg[v] != sg.id]
            while frontier:
                v = frontier.pop()
                if v in needed:
                    continue
                needed.add(v)
                init_vars = _vars((recompute.get(v) or remat[v]).init)
                frontier.extend(w for w in init_vars if w in remat and w not in hoist_pure and w not in needed
                                and decl_seg[w] != sg.id)
            for v in sorted(needed, key=lambda x: order[x]):
                d = recompute.get(v) or remat[v]
                pre.append(d)
            # uniform pure values of the phase, and the block-uniform values the phase starts
            # by storing (v = shared[0]: every thread would store the same), move before its
            # thread loops
            hoisted, kept = [], []
            for s0 in stmts:      # a trailing comment follows its statement
                moving = isinstance(s0, N.Decl) and s0.name in hoist_pure
                if isinstance(s0, N.Comment) and s0.trailing:
                    (hoisted if kept_last_moved else kept).append(s0)
                    continue
                kept_last_moved = moving
                (hoisted if moving else kept).append(s0)
            stmts = kept
            kept_last_moved = False
            while stmts and (isinstance(stmts[0], N.Comment) and not stmts[0].trailing or (
                    isinstance(stmts[0], N.Assign) and isinstance(stmts[0].target, N.Var) and
                    stmts[0].target.name in hoist_var and stmts[0].op == "=") or (
                    isinstance(stmts[0], N.Decl) and stmts[0].name in hoist_var and stmts[0].init is not None)):
                s0 = stmts.pop(0)
                if isinstance(s0, N.Decl):
                    s0 = N.Assign(N.Var(s0.name), "=", s0.init, loc=s0.loc)
                hoisted.append(s0)
                if stmts and isinstance(stmts[0], N.Comment) and stmts[0].trailing:
                    hoisted.append(stmts.pop(0))
            # a moved store is block-uniform (its target is not thread-dependent, so neither is
            # its value): an expanded variable it reads (``block_sum_result = total`` after an
            # inlined block reduction, ``total`` accumulated by every thread alike) holds the same
            # value in every thread's slot, and the previous phase has filled them all: thread 0's
            hoisted = [self._outer_expr(s0, expand) if isinstance(s0, N.Assign) else s0 for s0 in hoisted]
            stmts = pre + stmts
            # a recomputable value this phase no longer reads (its readers are elsewhere) is dropped
            changed = True
            while changed:
                changed = False
                for i, s0 in enumerate(stmts):
                    if isinstance(s0, N.Decl) and s0.name in remat and s0.name not in hoist_pure:
                        rest = tuple(stmts[:i] + stmts[i + 1:])
                        if s0.name not in _vars(rest):
                            del stmts[i]
                            changed = True
                            break
            # variables kept across phases
            if hoist_var:
                stmts = list(_map_stmts(tuple(stmts), lambda s: (init_as_stores(s) if s.init is not None else None)
                                        if isinstance(s, N.Decl) and s.name in hoist_var else s, lambda n: n))
            if expand:
                stmts = list(expand_vars(tuple(stmts), expand, tlin))
            # early exits
            label = None
            if any(isinstance(n, N.Return) for n in walk(tuple(stmts))):
                stmts, label = self._returns(stmts, sg, done, tlin, bool(tl), tl)
            if done is not None and (sg.id > first_ret or guard_all):
                flag = N.Index(N.Var(done), tlin) if tl else N.Var(done)
                stmts = [N.If(N.UnOp("!", flag), N.Block(tuple(stmts)))]
            if label:
                stmts.append(N.Raw(f"{label}: ;"))
            inner = list(stmts)
            if not any(not isinstance(x, N.Comment) for x in inner):
                return hoisted, []
            for lv in reversed(tl):
                inner = [_loop(lv.var, lv.extent, inner)]
            return hoisted, inner

        def mat(items, top):
            out = []
            for it in items:
                if isinstance(it, _Seg):
                    hoisted, loops = seg_body(it)
                    out.extend(hoisted)
                    out.extend(loops)
                elif isinstance(it, _UniformExit):
                    cond = self._outer_expr(it.cond, expand)
                    exit_ = N.Continue() if cfg.block_levels else N.Return()
                    if _is_const(cond) and cond.value:
                        out.append(exit_)
                    else:
                        out.append(N.If(cond, exit_, loc=it.loc))
                elif isinstance(it, N.Block):
                    out.append(it.with_(stmts=tuple(mat(it.stmts, False))))
                elif isinstance(it, N.If):
                    out.append(it.with_(cond=self._outer_expr(it.cond, expand),
                                        then=N.Block(tuple(mat(it.then.stmts, False))),
                                        else_=None if it.else_ is None else N.Block(tuple(mat(it.else_.stmts,
                                                                                               False)))))
                elif isinstance(it, N.For):
                    out.append(it.with_(lo=self._outer_expr(it.lo, expand), hi=self._outer_expr(it.hi, expand),
                                        step=self._outer_expr(it.step, expand),
                                        body=N.Block(tuple(mat(it.body.stmts, False)))))
                elif isinstance(it, N.CFor):
                    out.append(it.with_(cond=self._outer_expr(it.cond, expand) if it.cond is not None else None,
                                        body=N.Block(tuple(mat(it.body.stmts, False)))))
                elif isinstance(it, N.While):
                    out.append(it.with_(cond=self._outer_expr(it.cond, expand),
                                        body=N.Block(tuple(mat(it.body.stmts, False)))))
                else:
                    out.append(it)
            return out

        block_body = list(shared_decls)
        for v, d in sorted(hoist_var.items(), key=lambda kv: order[kv[0]]):
            block_body.append(N.Decl(v, _unconst(d.type), None, "local", loc=d.loc))
        for v, d in sorted(expand.items(), key=lambda kv: order[kv[0]]):
            block_body.append(expanded_decl(d, nt))
        if done is not None:
            if tl:
                block_body.append(N.Decl(done, N.Array(N.Scalar("uint8", "unsigned char"), (nt,)), None, "local"))
                t = _fresh("t", {done} | set(decl_of) | set(params) | level_vars | _vars(N.Block(structure)), False)
                block_body.append(_loop(t, nt, [N.Assign(N.Index(N.Var(done), N.Var(t)), "=", _c(0))]))
            else:
                block_body.append(N.Decl(done, INT, _c(0), "local"))
        block_body.extend(mat(structure, True))
        out = block_body
        for lv in reversed(cfg.block_levels):
            out = [_loop(lv.var, lv.extent, out)]
        return out

    def _outer_expr(self, e, expand):
        """A block-level expression: an expanded variable read there is block-uniform, so thread
        0's copy stands for all."""
        if e is None or not expand:
            return e
        return rewrite(e, lambda n: N.Index(n, _c(0)) if isinstance(n, N.Var) and n.name in expand else n)

    def _idempotent(self, v, structure) -> bool:
        """Every write of ``v`` is a plain ``v = expr`` not reading ``v``: executing it once per
        thread leaves the value one thread would leave."""
        for n in walk(tuple(structure)):
            if isinstance(n, N.Assign) and _whole(n.target) == v:
                if not isinstance(n.target, N.Var) or n.op != "=" or v in _vars(n.value):
                    return False
            elif isinstance(n, N.AssignExpr) and _whole(n.target) == v:
                return False
            elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and \
                    _whole(n.operand) == v:
                return False
            elif isinstance(n, N.Decl) and n.name == v and n.init is not None and v in _vars(n.init):
                return False
        return True

    def _returns(self, stmts, sg, done, tlin, has_tl, tl):
        """Replace ``return`` in a phase: the thread skips the rest of this phase (continue, or a
        goto to the end of the thread-loop body when inside a loop) and, when later phases exist,
        records that it is finished."""
        label = f"xp_skip_{sg.id}"
        need_label = [False]

        def conv(s, in_loop):
            if isinstance(s, N.Return):
                if not in_loop and (has_tl or (self.has_block_loops and not sg.in_loop)):
                    jump = N.Continue(loc=s.loc)
                else:
                    need_label[0] = True
                    jump = N.Raw(f"goto {label};", loc=s.loc)
                if done is None:
                    return jump
                flag = N.Index(N.Var(done), tlin) if has_tl else N.Var(done)
                return N.Block((N.Assign(flag, "=", _c(1)), jump), loc=s.loc)
            if isinstance(s, N.Block):
                out = []
                for x in s.stmts:
                    r = conv(x, in_loop)
                    out.extend(r.stmts if isinstance(x, N.Return) and isinstance(r, N.Block) else (r,))
                return s.with_(stmts=tuple(out))
            if isinstance(s, N.If):
                return s.with_(then=conv(s.then, in_loop), else_=None if s.else_ is None else conv(s.else_, in_loop))
            if isinstance(s, (N.For, N.CFor, N.While)):
                return s.with_(body=conv(s.body, True))
            return s

        out = [conv(s, False) for s in stmts]
        return out, (label if need_label[0] else None)

    # -------------------------------------------------------------- the C program
    def _program(self, new_fn, helpers: dict):
        prog = self.program
        items = []
        have = set()
        for it in prog.items:
            if isinstance(it, N.Directive) and it.kind == "include":
                continue
            if isinstance(it, N.Using):
                continue
            if isinstance(it, N.Func):
                if it.name == new_fn.name and it.body is not None:
                    items.append(new_fn)
                elif it.name in helpers and it.body is not None:
                    items.append(helpers[it.name])
                elif it.name in helpers and it.body is None:
                    continue
                continue
            if isinstance(it, N.Decl):
                if it.scope in ("nram", "wram", "sram") and any(
                        isinstance(n, N.Decl) and n.name == it.name for n in walk(new_fn.body)):
                    continue  # privatized into the task loop
                if it.scope in ("nram", "wram", "sram") and not _names_text(
                        (new_fn,) + tuple(helpers.values()) + tuple(N.Raw(m.body) for m in prog.macros), it.name):
                    continue  # un-staged (passes/decache.py): nothing names it any more
                items.append(it.with_(scope="local"))
                continue
            if isinstance(it, N.Comment) and not isinstance(it, N.Func):
                items.append(it)
                continue
            items.append(it)
        # drop comments left dangling before a removed function (the host launcher)
        while items and isinstance(items[-1], N.Comment):
            items.pop()
        heads = ["#include <math.h>", "#include <stdint.h>"]
        if any(isinstance(n, N.Scalar) and n.dtype == "bool" for n in walk(tuple(items))) or any(
                isinstance(n, N.Const) and n.dtype == "bool" for n in walk(tuple(items))):
            heads.append("#include <stdbool.h>")
        vec = {}
        for n in walk(tuple(items)):
            if isinstance(n, N.Vector):
                vec[n.spelling] = n
        pre = [N.Directive(h, "include") for h in heads]
        if prog.dialect == "bang":
            items, predef = _bang_predefines(items)
            pre += predef
        called = {n.func for n in walk(tuple(items)) if isinstance(n, N.Call)}
        for helper, rt, at in _BITCASTS.values():
            if helper in called:
                pre.append(N.Directive(f"static inline {rt} {helper}({at} v) {{ {rt} r; "
                                       f"__builtin_memcpy(&r, &v, sizeof r); return r; }}", "other"))
        for sp, v in sorted(vec.items()):
            if any(isinstance(t, N.Typedef) and t.name == sp for t in items):
                continue
            # a struct of the lanes, aligned like the builtin: printed back for cuda/hip, the
            # builtin is used instead (xpiler/mappings/vector_types.py)
            td = struct_typedef(v)
            if td is None:
                raise PassError(NAME, f"vector type '{sp}' has no C equivalent here", None)
            pre.append(td)
        # clang's ext_vector_type is gcc's vector_size (subscripts and brace initializers work alike)
        import re as _re
        fixed = []
        for it in items:
            if isinstance(it, N.Typedef) and any("ext_vector_type" in a for a in it.attrs):
                attrs = tuple(_re.sub(r"ext_vector_type\((\d+)\)",
                                      lambda m: f"vector_size({m.group(1)} * sizeof({_elem_c(it.type)}))", a)
                              for a in it.attrs)
                it = it.with_(attrs=attrs)
            fixed.append(it)
        items = fixed
        # keep the file's leading comment block first
        lead = []
        while items and isinstance(items[0], N.Comment):
            lead.append(items.pop(0))
        return prog.with_(dialect="c", items=tuple(lead + pre + items))


# what the BANG compiler predefines (the values our BANG emulator models, xp_bang.h): kept as
# macros in a program that leaves BANG, so a source's `#define SEG (__MLU_NRAM_SIZE__ * 1024 / 4)`
# still means what it meant
_BANG_PREDEFINED = {"__MLU_NRAM_SIZE__": 512, "__MLU_WRAM_SIZE__": 1024, "__MLU_SRAM_SIZE__": 2048}
# core-kind queries: the emulated (and migrated) program runs on compute cores only
_BANG_CORE_KIND = {"__is_mpu": 0, "__is_ipu": 1}


def _bang_predefines(items):
    """``items`` with ``__is_mpu()``/``__is_ipu()`` folded to constants, and the ``#define``s of the
    BANG compiler's predefined sizes the program still names."""
    def fold(n):
        if isinstance(n, N.Call) and n.func in _BANG_CORE_KIND and not n.args:
            return _c(_BANG_CORE_KIND[n.func])
        return n
    items = [rewrite(it, fold) for it in items]
    # a macro body is text, not IR: BANG's `half` there is C's _Float16 (as the IR types become)
    import re as _re
    items = [it.with_(text=_re.sub(r"\bhalf\b", "_Float16", it.text))
             if isinstance(it, N.Directive) and it.kind == "define" else it for it in items]
    text = " ".join(it.text for it in items if isinstance(it, N.Directive)) + " " + " ".join(
        getattr(n, "name", "") for n in walk(tuple(items)) if isinstance(n, N.Var))
    defs = [N.Directive(f"#define {k} {v}", "define") for k, v in _BANG_PREDEFINED.items()
            if k in text]
    return items, defs


def _elem_c(t) -> str:
    e = t.elem if isinstance(t, N.Vector) else t
    return {"float32": "float", "float16": "_Float16", "int32": "int", "float64": "double"}.get(
        getattr(e, "dtype", ""), "float")


def _unconst(t):
    if isinstance(t, (N.Scalar, N.Named, N.Vector)) and getattr(t, "const", False):
        return t.with_(const=False)
    return t


def _unvolatile(t):
    if isinstance(t, N.Scalar) and t.volatile:
        return t.with_(volatile=False)
    return t


def _strip_segs(node):
    """The structure without its phases (what runs outside the thread loops)."""
    return rewrite(node, lambda n: N.Comment("") if isinstance(n, _Seg) else n)


# ============================================================================ normalization
# A partition loop nest (task / cluster·core / block·thread loops) whose only work is a loop
# strided by the partition size, or one guarded element per partition index, is collapsed into
# loops over the full iteration range (see docs/passes/loop_recovery.md, "Normalization").
class _NoNorm(Exception):
    """This nest is not collapsed (the plain recovery is kept); the message says why."""


_INT_DTYPES = ("int32", "int64", "uint32", "uint64", "int16", "uint16", "int8", "uint8", "char")


class _Poly(P.Reader):
    """Reads index expressions into the polynomial model (``xpiler/ir/poly.py``) over opaque atom
    keys, to compare them: a variable is its name, another binary operator ``(lhs)op(rhs)`` over
    the keys of its operands, anything else its repr without source locations; integer casts are
    read through. ``atoms`` maps each key to (the node it was read from, its variables)."""

    def __init__(self):
        self.atoms = {}     # key -> (node, vars)

    def strip(self, e):
        while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in _INT_DTYPES:
            e = e.expr
        return e

    def leaf(self, e):
        if isinstance(e, N.Var):
            key = e.name
        elif isinstance(e, N.BinOp):
            key = f"({self.text(e.lhs)}){e.op}({self.text(e.rhs)})"
        else:
            key = repr(rewrite(e, lambda n: n.with_(loc=None) if getattr(n, "loc", None) is not None else n))
        self.atoms.setdefault(key, (e, _vars(e)))
        return {(key,): 1}

    def of(self, e) -> dict:
        return self.read(e)

    def text(self, e) -> str:
        """The key text of an operand: its polynomial, sorted (``key`` is the model's atom order)."""
        return repr(sorted(self.read(e).items()))

    def expr(self, mono):
        """The expression of a monomial (coefficient, atom keys)."""
        k, keys = mono[0], mono[1]
        if len(mono) > 2:
            return mono[2]      # the expression as the kernel wrote it
        out = None
        for a in keys:
            node = self.atoms[a][0]
            out = node if out is None else N.BinOp("*", out, node)
        if out is None:
            return _c(k)
        return out if k == 1 else _mul(_c(k), out)


def _simplify_div_mod(e):
    """(x / c) * c + x % c  ->  x (the task number rebuilt from cluster and core ids)."""
    def fn(n):
        if isinstance(n, N.BinOp) and n.op == "+":
            for a, b in ((n.lhs, n.rhs), (n.rhs, n.lhs)):
                if isinstance(a, N.BinOp) and a.op == "*" and isinstance(b, N.BinOp) and b.op == "%":
                    for q, c in ((a.lhs, a.rhs), (a.rhs, a.lhs)):
                        if isinstance(q, N.BinOp) and q.op == "/" and q.lhs == b.lhs and q.rhs == c == b.rhs \
                                and _is_const(c) and c.value > 0:
                            return b.lhs
        return n
    return rewrite(e, fn)


def _stores(node):
    """Store targets below ``node`` (assignments, ++/--)."""
    for n in walk(node):
        if isinstance(n, (N.Assign, N.AssignExpr)):
            yield n.target
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
            yield n.operand


def _store_base(tgt):
    base = tgt
    while isinstance(base, (N.Index, N.Member)) and not (isinstance(base, N.Member) and base.arrow):
        base = base.base
    if isinstance(base, N.Member):
        base = base.base
    if isinstance(base, N.UnOp) and base.op == "*":
        base = base.operand
    return base


class _Normalizer:
    def __init__(self, levels, program, params):
        self.levels = levels                       # [_Level], outermost first
        self.pvars = [lv.var for lv in levels]
        self.extent = {lv.var: lv.extent for lv in levels}
        self.program = program
        self.params = {p.name: p for p in params}
        self.poly = _Poly()

    # ---------------------------------------------------------------- nest structure
    def run(self, stmts):
        stmts = list(stmts)
        pos = [i for i, s in enumerate(stmts) if isinstance(s, N.For) and s.var == self.pvars[0]]
        if len(pos) != 1:
            raise _NoNorm("no single outermost partition loop")
        i0 = pos[0]
        if any(not isinstance(s, N.Comment) for s in stmts[i0 + 1:]):
            raise _NoNorm("statements follow the partition loops")
        if any(isinstance(n, N.For) and n.var in self.pvars for n in walk(tuple(stmts[:i0]))):
            raise _NoNorm("partition loops in sequence")
        levels_body = []        # (level index, statements before the next level)
        cur = stmts[i0]
        for j, v in enumerate(self.pvars):
            if not (isinstance(cur, N.For) and cur.var == v and _is_const(cur.lo, 0) and _is_const(cur.step, 1)):
                raise _NoNorm(f"partition loop '{v}' is not where expected (a barrier splits the partitions?)")
            body = list(cur.body.stmts)
            if j + 1 < len(self.pvars):
                nxt = [k for k, s in enumerate(body) if isinstance(s, N.For) and s.var == self.pvars[j + 1]]
                if len(nxt) != 1:
                    raise _NoNorm(f"the '{v}' loop holds {len(nxt)} '{self.pvars[j + 1]}' loops (phases)")
                k = nxt[0]
                if any(not isinstance(s, N.Comment) for s in body[k + 1:]):
                    raise _NoNorm(f"statements after the '{self.pvars[j + 1]}' loop")
                levels_body.append(body[:k])
                cur = body[k]
            else:
                levels_body.append(body)
        self.taken = _vars(tuple(stmts)) | {n.name for n in walk(tuple(stmts)) if isinstance(n, N.Decl)} | \
            set(self.params)
        new = self.collapse(levels_body)
        return tuple(stmts[:i0]) + tuple(new) + tuple(stmts[i0 + 1:])

    # ---------------------------------------------------------------- analysis
    def collapse(self, levels_body):
        allst = tuple(s for lb in levels_body for s in lb)
        if any(isinstance(n, (N.Raw, N.Return, N.Barrier)) for n in walk(allst)):
            raise _NoNorm("an early exit or a label in the partition body")
        taken = set(self.taken) | _vars(allst) | {n.name for n in walk(allst) if isinstance(n, N.Decl)}
        levels_body = [self._chain_updates(lb, allst, taken) for lb in levels_body]
        allst = tuple(s for lb in levels_body for s in lb)
        pset = set(self.pvars)
        self._arrays0 = {s.name for lb in levels_body for s in lb if isinstance(s, N.Decl)
                         and isinstance(s.type, N.Array)}
        # partition-dependent variables (data and control dependence): a forward pass, so
        # that what the work later stores into a buffer does not taint its initialization
        dep = set(pset)
        self.dep = dep
        decl_level = {}
        for j, lb in enumerate(levels_body):
            for s in lb:
                if isinstance(s, N.Decl):
                    decl_level[s.name] = j
        inner = len(levels_body) - 1
        pdecls = {}             # pure partition-dependent declarations (indices and derived values)
        pure_inv = {}           # pure invariant declarations never modified
        modified = self._writes(allst)
        prologue, items = [], []
        for j, lb in enumerate(levels_body):
            k = 0
            while k < len(lb):
                s = lb[k]
                self._taint_stmt(s, dep)
                if isinstance(s, N.Comment):
                    (items[-1]["stmts"] if items and j == inner else prologue).append(s)
                    k += 1
                    continue
                if isinstance(s, N.Decl) and isinstance(s.type, N.Array) and s.init is None and not (
                        set().union(*[_vars(x) for x in s.type.dims if x is not None]) & dep) and not items:
                    prologue.append(s)          # a private buffer
                    k += 1
                    continue
                if isinstance(s, N.Decl) and s.init is not None and _vars(s.init) & dep:
                    if s.init is None or not _pure(s.init) or s.name in modified or \
                            not isinstance(s.type, (N.Scalar, N.Pointer)):
                        raise _NoNorm(f"'{s.name}' depends on the partition index and is not a pure value")
                    pdecls[s.name] = s
                    k += 1
                    continue
                refs_dep = bool(self._reads(s) & dep)
                if not refs_dep:
                    if isinstance(s, N.Decl) and s.init is not None and _pure(s.init) and s.name not in modified \
                            and isinstance(s.type, (N.Scalar, N.Pointer)):
                        pure_inv[s.name] = s
                    elif items:
                        raise _NoNorm("a partition-invariant statement after the work")
                    prologue.append(s)
                    k += 1
                    continue
                if j != inner:
                    raise _NoNorm("work outside the innermost partition loop")
                if isinstance(s, N.For) and s.var_type is not None:
                    items.append({"kind": "strided", "stmt": s, "stmts": []})
                elif isinstance(s, N.If) and s.else_ is None and self._is_continue(s.then):
                    items.append({"kind": "exit", "stmt": s, "rest": tuple(lb[k + 1:]), "stmts": []})
                    k = len(lb)
                    continue
                elif isinstance(s, N.If) and s.else_ is None:
                    items.append({"kind": "guard", "stmt": s, "stmts": []})
                else:
                    raise _NoNorm(f"a {type(s).__name__} statement depends on the partition index")
                k += 1
        if not items:
            raise _NoNorm("no work depending on the partition index")
        self.pdecls, self.pure_inv = pdecls, pure_inv
        local_arrays = {s.name: j for j, lb in enumerate(levels_body) for s in lb
                        if isinstance(s, N.Decl) and isinstance(s.type, N.Array)}
        self.local_arrays = local_arrays
        self.local_ptrs = {s.name for lb in levels_body for s in lb if isinstance(s, N.Decl)
                           and isinstance(s.type, N.Pointer)}
        self.globals_ = {it.name: it for it in self.program.items if isinstance(it, N.Decl)}
        self.all_decls = [n for n in walk(allst) if isinstance(n, N.Decl)]
        locals_ = {x.name for x in prologue if isinstance(x, N.Decl)} | set(pdecls)
        # what the work writes: only private arrays of the innermost partition, and memory
        item_nodes = [self._item_body(it) for it in items]
        carried = {}
        for idx, (it, body) in enumerate(zip(items, item_nodes)):
            wr = self._writes(body)
            for v in wr & locals_:
                if v in local_arrays and local_arrays[v] == inner and "static" not in \
                        next(s for s in prologue if isinstance(s, N.Decl) and s.name == v).storage:
                    carried.setdefault(v, set()).add(idx)
                else:
                    raise _NoNorm(f"the work writes '{v}', which the partition keeps across its iterations")
            if it["kind"] == "strided":
                if it["stmt"].var in _scalar_writes(it["stmt"].body):
                    raise _NoNorm(f"the counter '{it['stmt'].var}' is modified in its loop")
            if it["kind"] != "strided" and idx < len(items) - 1 and self._exits(body):
                raise _NoNorm("a continue skips later work of the partition")
            if any(isinstance(n, N.Break) for n in self._top_level(body)):
                raise _NoNorm("a break leaves the partition")
        for v, users in carried.items():
            readers = {i for i, b in enumerate(item_nodes) if v in _vars(b)}
            if len(readers | users) > 1:
                raise _NoNorm(f"private buffer '{v}' passes values between two parts of the work")
        self.carried = carried
        # the prologue: computed once, before the collapsed loops; what initializes a private
        # buffer that the work writes is repeated at the start of each iteration instead
        # only pure declarations are computed once before the collapsed loops (binding accepts
        # declarations outside the nest it binds); the rest of the set-up (buffer fills, chains
        # of updates) is repeated at the start of each iteration of the work that needs it:
        # it writes only the partition's own locals, so every iteration sees what every
        # partition saw after its set-up
        hoisted, rest, rest_defs = [], [], set()
        last = hoisted
        for s in prologue:
            if isinstance(s, N.Comment):
                (last if s.trailing else hoisted).append(s)     # a trailing comment follows its line
                continue
            w = self._writes(s)
            mem_stores = [t for t in _stores(s) if not (_vars(_store_base(t)) & self._arrays0) and
                          not isinstance(t, N.Var)]
            if mem_stores:
                raise _NoNorm("the partition prologue stores to memory (shared state)")
            for n in walk(s):
                if (isinstance(n, N.Call) and not self._scalar_helper(n)) or isinstance(n, N.AssignExpr) or (
                        isinstance(n, N.Intrinsic) and (
                        REGISTRY.get(n.name) is None or REGISTRY[n.name].category != "math")):
                    raise _NoNorm("a call or an embedded assignment in the partition prologue")
            if w - locals_:
                raise _NoNorm(f"the partition prologue writes '{sorted(w - locals_)[0]}' (shared state)")
            self._check_reads(s, carried, locals_, local_arrays)
            if isinstance(s, N.Decl) and s.name in pure_inv and not (_vars(s.init) & rest_defs):
                hoisted.append(s)
                last = hoisted
            else:
                rest.append(s)
                last = rest
                rest_defs |= w | ({s.name} if isinstance(s, N.Decl) else set())
        self.rest_defs = rest_defs
        out = list(hoisted)
        for idx, it in enumerate(items):
            pre = self._slice(rest, self._item_refs(it))
            if it["kind"] == "strided":
                nest = self._strided(it["stmt"], pre)
            else:
                nest = self._guarded(it, pre)
            out.extend(nest)
            out.extend(it["stmts"])
        return self._drop_dead(out)

    def _item_refs(self, it) -> set:
        base = _vars(it["stmt"]) | (_vars(tuple(it["rest"])) if it["kind"] == "exit" else set())
        for d in self._needed(base):
            base |= _vars(self.pdecls[d].init)
        return base

    def _slice(self, rest, refs) -> list:
        """The set-up statements ``refs`` needs (a backward slice over straight-line code)."""
        need, keep = set(refs), []
        pending = []        # trailing comments of the statement before them
        for s in reversed(rest):
            if isinstance(s, N.Comment):
                pending.append(s)
                continue
            defs = self._writes(s) | ({s.name} if isinstance(s, N.Decl) else set())
            if defs & need:
                keep.extend(pending)
                keep.append(s)
                need |= _vars(s)
            pending = []
        return list(reversed(keep))

    def _header_uses_setup(self, exprs, what):
        names = set()
        for e in exprs:
            if e is not None:
                names |= _vars(e)
        for d in self._needed(names):
            names |= _vars(self.pdecls[d].init)
        bad = names & self.rest_defs
        if bad:
            raise _NoNorm(f"the {what} depends on '{sorted(bad)[0]}', which the partition set-up computes "
                          "with more than a declaration")

    def _chain_updates(self, lb, allst, taken):
        """``int v = a; if (c1) v = e1; if (c2) v = e2;`` at one level, with every write of ``v``
        there, becomes the pure declarations ``v_1 = a; v_2 = c1 ? e1 : v_1; v = c2' ? e2' : v_2``."""
        decls = {s.name: s for s in lb if isinstance(s, N.Decl) and isinstance(s.type, N.Scalar)
                 and s.init is not None and _pure(s.init) and not s.type.const}
        upd = {}
        for s in lb:
            a = self._update_of(s)
            if a and a[0] in decls and _pure(a[1]) and _pure(a[2]):
                upd.setdefault(a[0], []).append(id(s))
        for v in list(upd):
            writes = sum(1 for n in walk(allst) if (isinstance(n, (N.Assign, N.AssignExpr)) and _whole(n.target) == v)
                         or (isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and
                             _whole(n.operand) == v))
            if writes != len(upd[v]):
                del upd[v]
        if not upd:
            return list(lb)
        left = {v: len(ids) for v, ids in upd.items()}
        cur = {}

        def sub(x):
            return rewrite(x, lambda n: N.Var(cur[n.name], loc=n.loc) if isinstance(n, N.Var) and n.name in cur
                           and cur[n.name] != n.name else n)
        out = []
        for s in lb:
            if isinstance(s, N.Decl) and s.name in upd:
                first = _fresh(s.name, taken)
                cur[s.name] = first
                out.append(s.with_(name=first))
                continue
            a = self._update_of(s)
            if a and a[0] in upd and id(s) in upd[a[0]]:
                v, c, e = a
                left[v] -= 1
                name = v if left[v] == 0 else _fresh(v, taken)
                out.append(N.Decl(name, decls[v].type, N.Cond(sub(c), sub(e), N.Var(cur[v])), "local", loc=s.loc))
                cur[v] = name
                continue
            out.append(sub(s))
        return out

    @staticmethod
    def _update_of(s):
        """(v, cond, value) for ``if (cond) v = value;``."""
        if not (isinstance(s, N.If) and s.else_ is None):
            return None
        real = [x for x in _as_block(s.then).stmts if not isinstance(x, N.Comment)]
        if len(real) == 1 and isinstance(real[0], N.Assign) and real[0].op == "=" and \
                isinstance(real[0].target, N.Var):
            return real[0].target.name, s.cond, real[0].value
        return None

    def _writes(self, node) -> set:
        """Variables ``node`` changes: whole variables, and the partition's arrays stored into
        through any address expression (``(buf + k)[j] = v`` writes ``buf``)."""
        out = set(_scalar_writes(node))
        for tgt in _stores(node):
            if not (isinstance(tgt, N.Var) or (isinstance(tgt, N.Member) and not tgt.arrow)):
                out |= _vars(_store_base(tgt)) & self._arrays0
        return out

    def _touches_file_state(self, call):
        """A helper (or what it calls) reads or writes a file-scope variable that is not const."""
        defs = {f.name: f for f in self.program.funcs if f.body is not None}
        shared = {g for g, d in self.globals_.items() if not (
            d.scope == "constant" or getattr(getattr(d.type, "elem", d.type), "const", False))}
        seen, todo = set(), [call.func]
        while todo:
            f = todo.pop()
            if f in seen or f not in defs:
                continue
            seen.add(f)
            if _vars(defs[f].body) & shared:
                return True
            todo.extend(n.func for n in walk(defs[f].body) if isinstance(n, N.Call) and isinstance(n.func, str))
        return False

    def _scalar_helper(self, call):
        """A call of a helper of this program whose parameters are all scalars: it cannot
        write memory it is given (file-scope state aside, which kernels here do not keep)."""
        f = next((f for f in self.program.funcs if f.name == call.func and f.body is not None), None)
        return f is not None and all(isinstance(p.type, N.Scalar) for p in f.params) and not any(
            isinstance(n, (N.Assign, N.AssignExpr)) and _assigned_name(n.target) not in
            {d.name for d in walk(f.body) if isinstance(d, N.Decl)} | {p.name for p in f.params}
            for n in walk(f.body))

    def _taint_stmt(self, s, dep):
        """Add what ``s`` makes partition-dependent to ``dep`` (a fixpoint over its loops)."""
        while True:
            new = self._dep_writes(s, dep, False) - dep
            if not new:
                return
            dep |= new

    def _reads(self, s):
        """Variables ``s`` reads (a buffer only stored into by element is not read)."""
        stored = set()
        for n in walk(s):
            if isinstance(n, N.Assign) and n.op == "=" and isinstance(n.target, N.Index) and \
                    isinstance(n.target.base, N.Var):
                stored.add(id(n.target.base))
        return {n.name for n in walk(s) if isinstance(n, N.Var) and id(n) not in stored}

    def _dep_writes(self, s, dep, ctl):
        """Variables ``s`` writes with a value (or under control) depending on ``dep``."""
        out = set()
        d = lambda e: e is not None and bool(_vars(e) & dep)
        if isinstance(s, N.Block):
            for x in s.stmts:
                out |= self._dep_writes(x, dep, ctl)
            return out
        if isinstance(s, N.If):
            c = ctl or d(s.cond)
            out |= self._dep_writes(s.then, dep, c)
            if s.else_ is not None:
                out |= self._dep_writes(s.else_, dep, c)
            return out
        if isinstance(s, N.For):
            c = ctl or d(s.lo) or d(s.hi) or d(s.step)
            if c:
                out.add(s.var)
            return out | self._dep_writes(s.body, dep, c)
        if isinstance(s, (N.While, N.CFor)):
            c = True if ctl else any(d(x) for x in (getattr(s, "cond", None), getattr(s, "next", None)))
            if isinstance(s, N.CFor) and s.init is not None:
                out |= self._dep_writes(s.init, dep, c)
            return out | self._dep_writes(_as_block(s.body), dep, c)
        if isinstance(s, N.Decl):
            if ctl or d(s.init) or (isinstance(s.type, N.Array) and any(d(x) for x in s.type.dims if x)):
                out.add(s.name)
            return out
        for n in walk(s):
            if isinstance(n, (N.Assign, N.AssignExpr)):
                v = self._tracked(n.target)
                if v and (ctl or d(n.value) or d(n.target)):
                    out.add(v)
            elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") and ctl:
                v = self._tracked(n.operand)
                if v:
                    out.add(v)
        return out

    def _tracked(self, target):
        """The local a store changes: a whole variable, or an element of a partition array
        (stores through pointers change memory, not a variable)."""
        w = _whole(target)
        if w is not None:
            return w
        v = _assigned_name(target)
        return v if v in self._arrays0 else None

    @staticmethod
    def _is_continue(s):
        b = _as_block(s)
        real = [x for x in b.stmts if not isinstance(x, N.Comment)]
        return len(real) == 1 and isinstance(real[0], N.Continue)

    def _item_body(self, it):
        if it["kind"] == "strided":
            return it["stmt"].body
        if it["kind"] == "guard":
            return _as_block(it["stmt"].then)
        return N.Block(it["rest"])

    @staticmethod
    def _top_level(body):
        """Statements of ``body`` outside nested loops (where break/continue leave the partition)."""
        return outside_loops(body)

    def _exits(self, body):
        return any(isinstance(n, (N.Continue, N.Break)) for n in self._top_level(body))

    def _bases(self, e, seen=()):
        """The pointer / array variables an address expression is based on."""
        out = set()
        for v in _vars(e):
            if v in self.pure_inv and isinstance(self.pure_inv[v].type, N.Pointer) and v not in seen:
                out |= self._bases(self.pure_inv[v].init, seen + (v,))
            elif v in self.params:
                if isinstance(self.params[v].type, (N.Pointer, N.Array)):
                    out.add(v)
            elif v in self.local_arrays or v in self.globals_:
                out.add(v)
            elif v in self.local_ptrs:
                out.add(v)          # a pointer the partition computes: unknown target
        return out

    def _check_reads(self, s, carried, locals_, local_arrays):
        """Memory the prologue reads must be unchanged by the work: inputs behind a pointer to
        const, or private buffers the work does not write."""
        for n in walk(s):
            if isinstance(n, N.Index):
                base = n.base
            elif isinstance(n, N.UnOp) and n.op == "*":
                base = n.operand
            elif isinstance(n, N.Member) and n.arrow:
                base = n.base
            else:
                continue
            for r in self._bases(base):
                if r in local_arrays:
                    continue        # a carried buffer is replicated with its initialization
                p = self.params.get(r)
                if p is not None and isinstance(p.type, N.Pointer) and getattr(p.type.elem, "const", False):
                    continue
                g = self.globals_.get(r)
                if g is not None and (g.scope == "constant" or getattr(getattr(g.type, "elem", g.type), "const", False)):
                    continue
                raise _NoNorm(f"the partition prologue reads memory the work may write ('{r}')")

    # ---------------------------------------------------------------- index expressions
    def _subst(self, e, with_invariants=True):
        table = dict((k, d.init) for k, d in self.pdecls.items())
        if with_invariants:     # integer constants behind object-like macros (#define BX 16)
            table.update((m.name, m.expr) for m in self.program.macros
                         if m.params is None and m.expr is not None and _is_const(_fold(m.expr)))
        if with_invariants:
            table.update((k, d.init) for k, d in self.pure_inv.items())
        for _ in range(16):
            names = _vars(e) & set(table)
            if not names:
                break
            e = rewrite(e, lambda n: table[n.name] if isinstance(n, N.Var) and n.name in table else n)
        return _simplify_div_mod(e)

    def _linear(self, e):
        """``e`` (over the partition variables) as offset + sum of coef_v * v, each coef one
        monomial; the variables must form a mixed-radix numbering: returns (vars in chain order
        from the fastest, unit monomial, span polynomial, offset expression)."""
        full = self._subst(e)
        p = self.poly.of(full)
        pset = set(self.pvars)
        coefs = {}
        for mono, c in p.items():
            pv = [a for a in mono if a in pset]
            other = [a for a in mono if a not in pset]
            if any(self.poly.atoms[a][1] & pset for a in other):
                raise _NoNorm("a partition index inside a non-linear term")
            if len(pv) > 1:
                raise _NoNorm("a product of partition indices")
            if pv:
                if pv[0] in coefs:
                    raise _NoNorm(f"the coefficient of '{pv[0]}' is not one term")
                coefs[pv[0]] = (c, tuple(other))
        if not coefs:
            raise _NoNorm("the index does not depend on the partition")
        chain = None
        for start in coefs:
            seq, rest = [start], set(coefs) - {start}
            while rest:
                want = P.mul(self._mono_poly(coefs[seq[-1]]), self.poly.of(self.extent[seq[-1]]))
                nxt = [v for v in rest if self._mono_poly(coefs[v]) == want]
                if len(nxt) != 1:
                    break
                seq.append(nxt[0])
                rest.discard(nxt[0])
            if not rest:
                chain = seq
                break
        if chain is None:
            raise _NoNorm("the partition indices do not number the partitions one by one")
        unit = coefs[chain[0]]
        if unit[0] <= 0:
            raise _NoNorm("a negative index coefficient")
        # the unit over the kernel's own names (declarations and macros kept) when it is one term
        own = self.poly.of(_simplify_div_mod(self._subst(e, False)))
        mine = [(c, tuple(a for a in mono if a != chain[0])) for mono, c in own.items() if chain[0] in mono]
        if len(mine) == 1 and not any(self.poly.atoms[a][1] & pset for a in mine[0][1]):
            unit = unit + (self.poly.expr(mine[0]),)
        span = P.mul(self._mono_poly(coefs[chain[-1]]), self.poly.of(self.extent[chain[-1]]))
        # the offset, over the kernel's own names (only partition-dependent values substituted)
        off = _fold(rewrite(rewrite(_simplify_div_mod(self._subst(e, False)),
                                    lambda n: _c(0) if isinstance(n, N.Var) and n.name in pset else n),
                            lambda n: _c(0) if (isinstance(n, N.BinOp) and n.op == "*" and (
                                _is_const(n.lhs, 0) or _is_const(n.rhs, 0))) or (
                                isinstance(n, N.Cast) and _is_const(n.expr, 0)) else n))
        if _vars(off) & self.dep:
            raise _NoNorm("the index offset depends on the partition")
        return chain, unit, span, off

    @staticmethod
    def _mono_poly(m):
        return {tuple(sorted(m[1])): m[0]}

    def _span_expr(self, chain, unit):
        e = self.poly.expr(unit)
        for v in chain:
            e = _mul(e, self.extent[v])
        return e

    # ---------------------------------------------------------------- strided work
    def _strided(self, s, pre):
        self._header_uses_setup((s.lo, s.hi, s.step), f"header of '{s.var}'")
        chain, unit, span, off = self._linear(s.lo)
        if set(chain) != set(self.pvars):
            raise _NoNorm(f"the start of '{s.var}' does not use every partition index")
        if self.poly.of(self._subst(s.step)) != span:
            raise _NoNorm(f"the step of '{s.var}' is not the partition size")
        if _vars(s.hi) & self.dep:
            raise _NoNorm(f"the bound of '{s.var}' depends on the partition")
        if _vars(s.hi) & (_scalar_writes(s.body) | {s.var}):
            raise _NoNorm(f"the bound of '{s.var}' changes in the loop")
        own = {n.name for n in walk(s.body) if isinstance(n, N.Decl)} | {
            n.var for n in walk(s.body) if isinstance(n, N.For)}
        if (_vars(s.body) - {s.var} - own - set(self.carried)) & self.dep:
            raise _NoNorm(f"the body of '{s.var}' reads a partition index other than '{s.var}'")
        self._check_stores(s.body, {s.var})
        body = N.Block(tuple(pre) + tuple(s.body.stmts), loc=s.body.loc)
        return [s.with_(lo=off, step=self.poly.expr(unit), body=body)]

    def _check_stores(self, body, idx: set):
        """Every store to memory outside the iteration goes to an address that depends on the
        collapsed index (no reduction across partitions into one location)."""
        tainted = set(idx)
        types = {p.name: p.type for p in self.params.values()}
        types.update((g.name, g.type) for g in self.globals_.values())
        types.update((d.name, d.type) for d in self.all_decls)
        types.update((n.name, n.type) for n in walk(body) if isinstance(n, N.Decl))
        own = {n.name for n in walk(body) if isinstance(n, N.Decl)} | set(self.carried) | {
            n.var for n in walk(body) if isinstance(n, N.For)}
        changed = True
        while changed:
            changed = False
            for n in walk(body):
                if isinstance(n, N.Decl) and n.name not in tainted and n.init is not None and _vars(n.init) & tainted:
                    tainted.add(n.name)
                    changed = True
                if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var) and \
                        n.target.name not in tainted and _vars(n.value) & tainted:
                    tainted.add(n.target.name)
                    changed = True
                if isinstance(n, N.For) and n.var not in tainted and (_vars(n.lo) | _vars(n.hi)) & tainted:
                    tainted.add(n.var)
                    changed = True
        for n in walk(body):
            tgt = None
            if isinstance(n, (N.Assign, N.AssignExpr)):
                tgt = n.target
            elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
                tgt = n.operand
            elif isinstance(n, N.Call) and self._touches_file_state(n):
                raise _NoNorm(f"'{n.func}' uses file-scope memory shared by the partitions")
            elif isinstance(n, N.Call) and not self._scalar_helper(n) and not (
                    set().union(*[_vars(a) for a in n.args]) & tainted if n.args else False):
                raise _NoNorm(f"call of '{n.func}' with no argument depending on the index")
            if tgt is None:
                continue
            base = _store_base(tgt)
            mem = {v for v in _vars(base) if isinstance(types.get(v), (N.Pointer, N.Array))}
            if mem and all(v in self.carried or (v in own and isinstance(types.get(v), N.Array)) for v in mem):
                continue            # a buffer of this iteration
            name = _assigned_name(tgt)
            if name is not None and (name in own or name in tainted):
                continue
            if name is not None and name not in self.params and name not in self.carried and not (
                    name in self.pure_inv and isinstance(self.pure_inv[name].type, N.Pointer)):
                raise _NoNorm(f"the work writes '{name}', declared outside the partition")
            if not (_vars(tgt) & tainted):
                raise _NoNorm(f"a store to {_vars(tgt)} whose address does not depend on the index (a reduction across "
                              "partitions?)")

    # ---------------------------------------------------------------- guarded elements
    def _guarded(self, it, pre):
        s = it["stmt"]
        exit_form = it["kind"] == "exit"
        terms = self._split(s.cond, "||" if exit_form else "&&")
        bounds, residual = {}, []
        for t in terms:
            m = self._bound_term(t, exit_form)
            if m is not None and m[0] not in bounds:
                bounds[m[0]] = m[1]
            else:
                residual.append(t)
        body = N.Block(it["rest"]) if exit_form else _as_block(s.then)
        for t in residual:
            if any(isinstance(n, (N.AssignExpr, N.Call)) or (isinstance(n, N.UnOp) and n.op in (
                    "++", "--", "p++", "p--")) for n in walk(t)):
                raise _NoNorm("a guard with a side effect")
        # indices: guarded variables, then partition indices the work reads directly
        indices = {}
        covered = {}
        for v, b in bounds.items():
            if v in self.pvars:
                chain, unit, span, off = [v], (1, ()), self.poly.of(self.extent[v]), _c(0)
            else:
                chain, unit, span, off = self._linear(N.Var(v))
            for pv in chain:
                if pv in covered:
                    raise _NoNorm(f"'{v}' and '{covered[pv]}' both use partition index '{pv}'")
                covered[pv] = v
            indices[v] = (chain, unit, span, off, b)
        used = _vars(body) | set().union(*[_vars(t) for t in residual]) if residual else _vars(body)
        for pv in self.pvars:
            if pv not in covered:
                if pv not in used and not any(pv in _vars(self.pdecls[d].init) for d in self._needed(used)):
                    raise _NoNorm(f"partition index '{pv}' is not used: the work would repeat")
                covered[pv] = pv
                indices[pv] = ([pv], (1, ()), self.poly.of(self.extent[pv]), _c(0), None)
        self._header_uses_setup([b for (_, _, _, _, b) in indices.values()] + [N.Var(v) for v in indices],
                                "bound of the collapsed loops")
        changed_in_work = _scalar_writes(body)
        for v, (_, _, _, _, b) in indices.items():
            if b is not None and _vars(b) & changed_in_work:
                raise _NoNorm(f"the bound of '{v}' changes in the work")
        if all(v in self.pvars for v in indices):
            raise _NoNorm("no index combines partition loops: they already are the iteration space")
        # derived values: functions of the indices only
        needed = self._needed(used - set(indices))
        derived = []
        for d in self.pdecls:
            if d in needed and d not in indices:
                init_dep = _vars(self.pdecls[d].init) & self.dep
                if init_dep - set(indices) - needed:
                    raise _NoNorm(f"'{d}' needs a partition index that the collapsed loops do not have")
                if init_dep & set(self.pvars) - set(indices):
                    raise _NoNorm(f"'{d}' reads a partition index that the collapsed loops do not have")
                derived.append(self.pdecls[d])
        if (used & set(self.pvars)) - set(indices):
            raise _NoNorm("the work reads a partition index directly")
        self._check_stores(body, set(indices) | {d.name for d in derived})
        stmts = list(pre)
        if residual:
            cond = residual[0]
            for t in residual[1:]:
                cond = N.BinOp("||" if exit_form else "&&", cond, t)
            if exit_form:
                stmts.append(N.If(cond, N.Continue(), loc=s.loc))
                stmts.extend(body.stmts)
            else:
                stmts.append(N.If(cond, body, loc=s.loc))
        else:
            stmts.extend(body.stmts)
        order = sorted(indices, key=lambda v: min(self.pvars.index(pv) for pv in indices[v][0]))
        # a derived value goes right inside the loop of the last index it needs
        derived_names = {d.name for d in derived}
        need_idx = {}
        for d in derived:
            ix = _vars(d.init) & set(indices)
            for w in _vars(d.init) & derived_names:
                ix |= need_idx[w]
            need_idx[d.name] = ix
        at_level = {v: [] for v in order}
        late = []       # derived values reading the repeated set-up: after it
        for d in derived:
            if _vars(d.init) & self.rest_defs or any(x.name in need_idx and x in late for x in derived
                                                     if x.name in _vars(d.init)):
                late.append(d)
                continue
            lvl = max((order.index(v) for v in need_idx[d.name]), default=len(order) - 1)
            at_level[order[lvl]].append(d)
        stmts = stmts[:len(pre)] + late + stmts[len(pre):]
        nest = None
        for v in reversed(order):
            nest = (at_level[v] + stmts) if nest is None else (at_level[v] + nest)
            chain, unit, span, off, b = indices[v]
            full = _fold(N.BinOp("+", off, self._span_expr(chain, unit)))
            if b is None:
                hi = full
            elif self._covers(span, off, b):
                hi = b
            else:
                hi = N.Cond(N.BinOp("<", b, full), b, full)
            ty = INT
            if v in self.pdecls:
                ty = _unconst(self.pdecls[v].type)
                if not (isinstance(ty, N.Scalar) and ty.dtype in _INT_DTYPES):
                    raise _NoNorm(f"index '{v}' is not an integer")
            nest = [N.For(v, off, hi, self.poly.expr(unit), N.Block(tuple(nest)), None, ty, loc=s.loc)]
        return nest

    def _needed(self, names):
        out, todo = set(), [n for n in names if n in self.pdecls]
        while todo:
            d = todo.pop()
            if d in out:
                continue
            out.add(d)
            todo.extend(w for w in _vars(self.pdecls[d].init) if w in self.pdecls)
        return out

    @staticmethod
    def _split(e, op):
        if isinstance(e, N.BinOp) and e.op == op:
            return _Normalizer._split(e.lhs, op) + _Normalizer._split(e.rhs, op)
        return [e]

    def _bound_term(self, t, exit_form):
        """``idx < b`` (guard) or ``idx >= b`` (exit): (idx, b) when idx is a partition index or
        a pure value of the partition indices and b does not depend on the partition."""
        if isinstance(t, N.UnOp) and t.op == "!" and exit_form:
            return self._bound_term(t.operand, False)
        if not isinstance(t, N.BinOp):
            return None
        lt, ge = ("<", ">") if not exit_form else (">=", "<=")
        if t.op == lt:
            v, b = t.lhs, t.rhs
        elif t.op == ge:
            v, b = t.rhs, t.lhs
        else:
            return None
        if not isinstance(v, N.Var) or not (v.name in self.pvars or v.name in self.pdecls):
            return None
        if _vars(b) & self.dep or not _pure(b):
            return None
        return v.name, b

    def _covers(self, span, off, b):
        """off + span >= b whenever b > off (so the bound alone decides the trip count)."""
        want = P.add(self.poly.of(self._subst(b)), self.poly.of(self._subst(off)), -1)
        if span == want:
            return True
        if len(span) != 1:
            return False
        (mono, k), = span.items()
        if len(mono) != 1:
            return False
        node = self.poly.atoms[mono[0]][0]
        if not (isinstance(node, N.BinOp) and node.op == "/" and _is_const(node.rhs) and node.rhs.value > 0):
            return False
        bdiv = node.rhs.value
        return k % bdiv == 0 and k >= bdiv and self.poly.of(node.lhs) == P.add(want, {(): bdiv - 1}, 1)

    # ---------------------------------------------------------------- clean-up
    def _drop_dead(self, stmts):
        stmts = list(stmts)
        changed = True
        while changed:
            changed = False
            for i, s in enumerate(stmts):
                if isinstance(s, N.Decl) and s.name in self.pure_inv and s.init is not None and _pure(s.init):
                    rest = tuple(stmts[:i] + stmts[i + 1:])
                    if s.name not in _vars(rest):
                        del stmts[i]
                        if i < len(stmts) and isinstance(stmts[i], N.Comment) and stmts[i].trailing:
                            del stmts[i]
                        changed = True
                        break
        return stmts


def _unstage_all(fn, program, assume: tuple = (), conv: bool = False):
    """Un-staging before a collapse: shared-memory staging phases of read-only global slices
    (``passes/unshare.py``, its proofs under the spec's preconditions ``assume``), then the
    thread phases of a block that carry per-thread accumulators merged into one
    (``passes/merge_phases.py``), then banded row work summed from NRAM-staged rows
    (``passes/unband.py``), then element-wise work staged through private buffers
    (``passes/decache.py``). (new function, the notes of decache and unband).

    With ``conv`` (loop recovery's ``staged_conv``), band loops are un-banded only as staged 2-D
    convolutions (``passes/unband_conv.py``), and a function where none is lifted is refused
    (:class:`~xpiler.passes.base.AlternativeRefused`, XP4002) with the lift's reason."""
    from .decache import unstage as _unstage
    from .merge_phases import merge_phases
    from .unband import unband as _unband
    from .unshare import unshare as _unshare
    fn, notes = _unshare(fn, program, assume)
    if any(arrays for arrays, _ in notes):
        fn = merge_phases(fn, program)[0]
    before = fn
    fn, band_note = _unband(fn, program, assume, conv)
    if conv and fn is before:
        raise AlternativeRefused(NAME, f"staged_conv: {band_note or 'no band loop'}")
    fn, notes = _unstage(fn, program)
    return fn, list(notes) + ([band_note] if band_note else [])


def _normalize(fn, levels, program, unstage: bool = True, assume: tuple = (), conv: bool = False):
    """Collapse the partition loops of ``fn`` when legal; (new function, None) or (fn, why).

    With ``unstage``, element-wise work staged through private buffers is first un-staged
    (``passes/decache.py``), and partitions the strided/guarded forms do not cover are tried as
    contiguous task slices (``passes/task_slices.py``)."""
    if not levels:
        return fn, "no partition loops"
    staged, notes = fn, []
    if unstage:
        fn, notes = _unstage_all(fn, program, assume, conv)
    try:
        body = _Normalizer(levels, program, fn.params).run(fn.body.stmts)
    except _NoNorm as e:
        why = str(e)
        if not unstage:
            return fn, why
        from .task_slices import Refused, collapse
        try:
            return collapse(fn, levels, program), None
        except Refused as e2:
            why = f"{why}; as task slices: {e2}"
            kept = [n for n in notes if n is not None]
            if kept:
                why += f"; un-staging refused: {kept[-1]}"
        if fn is not staged and not conv:        # the staged form may still normalize the old way
            try:
                body = _Normalizer(levels, program, staged.params).run(staged.body.stmts)
                return staged.with_(body=N.Block(tuple(body), loc=staged.body.loc)), None
            except _NoNorm:
                pass
        return fn, why
    return fn.with_(body=N.Block(tuple(body), loc=fn.body.loc)), None


def _normalize_as(how: str, fn, levels, program, assume: tuple = (), conv: bool = False):
    """One normalization alternative (:data:`NORMALIZE`): the new function, or
    :class:`~xpiler.passes.base.AlternativeRefused` (XP4002) saying why it does not apply.

    ``partition``: un-stage, then collapse the strided / bounds-guarded partition loops;
    ``task_slices``: un-stage, then collapse contiguous per-task slices (Z3-proved);
    ``staged``: collapse the strided / guarded loops of the function as recovered (no un-staging);
    ``loops``: no collapse, element-wise staged work un-staged (always applies). In this order
    they give what ``normalize=True`` gives (:func:`_normalize`)."""
    def _unstage(f, p):
        return _unstage_all(f, p, assume, conv)
    if how == "loops":
        return _unstage(fn, program)[0] if levels else fn

    def refuse(why):
        return AlternativeRefused(NAME, f"normalize={how!r}: {why}")
    if not levels:
        raise refuse("no partition loops")
    def normalized(f, why):
        try:
            body = _Normalizer(levels, program, f.params).run(f.body.stmts)
        except _NoNorm as e:
            raise refuse(why(e)) from None
        return f.with_(body=N.Block(tuple(body), loc=f.body.loc))
    if how == "staged":
        return normalized(fn, lambda e: f"the staged function does not normalize: {e}")
    fn, notes = _unstage(fn, program)
    kept = [n for n in notes if n is not None]
    unstaging = f"; un-staging refused: {kept[-1]}" if kept else ""
    if how == "partition":
        return normalized(fn, lambda e: f"{e}{unstaging}")
    from .task_slices import Refused, collapse
    try:
        return collapse(fn, levels, program)
    except Refused as e:
        raise refuse(f"{e}{unstaging}") from None


# ============================================================================ protocol
def check(program, *, entry: str, launch=None, normalize=True, **params) -> None:
    _Recovery(program, entry, launch, normalize, params.get("unstage", True), params.get("assume", ()),
              params.get("staged_conv", False)).run()


#: pragma on a loop recovered from the parallel tasks of a BANG launch (see passes/binding.py)
SOURCE_PARTITION_PRAGMA = "xpiler independent(source tasks)"


def _mark_source_partition(stmts, var: str) -> list:
    """Tag the top-level loop over ``var`` (the BANG task or cluster loop) as recovered from
    tasks that the source ran in parallel. A BANG launch gives no order between its tasks, so a
    correct (race-free) source never has two tasks touch one global element where one of them
    writes; binding may rely on that for the kernel's pointer parameters (global memory), and
    still checks everything else (per-core memories made file-scope or shared by recovery)."""
    out = []
    for st in stmts:
        if isinstance(st, N.For) and st.var == var and SOURCE_PARTITION_PRAGMA not in st.pragmas:
            st = st.with_(pragmas=tuple(st.pragmas) + (SOURCE_PARTITION_PRAGMA,))
        out.append(st)
    return out


def _privatize_core_memories(prog, fn, loop_var: str):
    """BANG NRAM/WRAM declared at file scope are per-core memories: every task sees its own
    (fresh) copy. In the sequential program they become arrays local to the task (or core)
    loop, so no state leaks between tasks and later binding sees independent iterations."""
    # an array that a helper the kernel still calls names directly stays at file scope (the
    # helper sees it there); helpers inlined into the kernel no longer count
    defs = {f.name: f for f in prog.funcs if f.body is not None and f.name != fn.name}
    called, stack = set(), [fn]
    while stack:
        for n in walk(stack.pop().body):
            if isinstance(n, N.Call) and isinstance(n.func, str) and n.func in defs and n.func not in called:
                called.add(n.func)
                stack.append(defs[n.func])
    used_elsewhere = set()
    for name in called:
        used_elsewhere |= _vars(defs[name].body)
    per_core = [it for it in prog.items if isinstance(it, N.Decl) and it.scope in ("nram", "wram")
                and it.name not in used_elsewhere]
    if not per_core or fn.body is None:
        return fn
    phases = [n for n in walk(fn.body) if isinstance(n, N.For) and n.var == loop_var]
    if not phases:
        return fn
    decls = tuple(d.with_(scope="local", storage=tuple(x for x in d.storage if x != "static")) for d in per_core)
    if len(phases) == 1:
        target = phases[0]
        new_loop = target.with_(body=target.body.with_(stmts=decls + tuple(target.body.stmts)))
        body = rewrite(fn.body, lambda n: new_loop if n is target else n)
        return fn.with_(body=body)
    return _privatize_across_phases(fn, decls, phases, loop_var)


def _privatize_across_phases(fn, decls, phases, loop_var: str):
    """The core loop was fissioned at cluster barriers into several phase loops (each core runs
    phase 1, all wait, each runs phase 2 ...). A core's NRAM keeps its contents across the
    barrier, so a buffer that several phases use is one array per core, declared once before
    the phases (``T buf_c[cores][...]``, every use ``buf_c[core]``); a buffer only one phase uses
    is declared in that phase's loop. Refused (PassError) when a buffer is used outside the
    phases, the phases do not all run over the same constant core range, or the phases do not
    share the enclosing block-level loops."""
    used = {d.name: [k for k, lp in enumerate(phases) if d.name in _vars(lp.body)] for d in decls}
    outside = _vars(rewrite(fn.body, lambda n: N.Block(()) if any(n is lp for lp in phases) else n))
    for d in decls:
        if d.name in outside:
            raise PassError(NAME, f"per-core buffer '{d.name}' is used between the phases of a cluster barrier",
                            d)
    own = {k: [d for d in decls if used[d.name] == [k]] for k in range(len(phases))}
    own[0] = [d for d in decls if not used[d.name]] + own[0]
    shared = [d for d in decls if len(used[d.name]) > 1]
    taken = _vars(fn.body) | {n.name for n in walk(fn.body) if isinstance(n, N.Decl)}
    mapping, expanded = {}, []
    if shared:
        ranges = {(lp.lo, lp.hi, lp.step) for lp in phases}
        lo, hi, step = phases[0].lo, phases[0].hi, phases[0].step
        if len(ranges) != 1 or not _is_const(lo, 0) or not _is_const(step, 1) or \
                not (isinstance(hi, N.Const) and isinstance(hi.value, int) and hi.value > 0):
            raise PassError(NAME, f"per-core buffer '{shared[0].name}' lives across a cluster barrier, but the "
                                  "core loops of the phases differ or have no constant extent", shared[0])
        for d in shared:
            g = _fresh(d.name + "_core", taken)
            expanded.append(d.with_(name=g, type=N.Array(d.type.elem, (hi,) + tuple(d.type.dims))))
            mapping[d.name] = N.Index(N.Var(g), N.Var(loop_var))
    # the block that holds every phase (the lowest common ancestor) receives the per-core arrays
    paths = []

    def find(node, path):
        if any(node is lp for lp in phases):
            paths.append(path)
            return
        for f in ("stmts", "body", "then", "else_"):
            v = getattr(node, f, None)
            if isinstance(v, tuple):
                for x in v:
                    find(x, path + [node] if isinstance(node, N.Block) else path)
            elif isinstance(v, N.Node):
                find(v, path + [node] if isinstance(node, N.Block) else path)
    find(fn.body, [])
    if len(paths) != len(phases):
        raise PassError(NAME, "the phases of a cluster barrier could not be located", phases[0])
    common = []
    for blocks in zip(*paths):
        if all(b is blocks[0] for b in blocks):
            common.append(blocks[0])
        else:
            break
    if not common:
        raise PassError(NAME, "the phases of a cluster barrier share no enclosing block", phases[0])
    host = common[-1]       # loops between it and a phase only repeat phases: NRAM persists through them
    new_phases = {}
    for k, lp in enumerate(phases):
        body = lp.body
        if mapping:
            body = substitute(body, {n: e for n, e in mapping.items() if k in used[n]})
        new_phases[id(lp)] = lp.with_(body=body.with_(stmts=tuple(own.get(k, ())) + tuple(body.stmts)))

    def swap(n):
        if isinstance(n, N.For) and id(n) in new_phases and any(n is lp for lp in phases):
            return new_phases[id(n)]
        return n
    with_decls = rewrite(fn.body, lambda n: n.with_(stmts=tuple(expanded) + tuple(n.stmts)) if n is host else n) \
        if expanded else fn.body
    return fn.with_(body=rewrite(with_decls, swap))


def apply(program, *, entry: str, launch=None, normalize=True, **params):
    """Recover loops; with ``normalize`` (default) collapse partition loops (see the module doc):
    ``True`` tries the alternatives of :data:`NORMALIZE` in order, one of them takes that one
    alone (refused with XP4002 where it does not apply), ``False`` keeps the partition loops."""
    new = _Recovery(program, entry, launch, normalize, params.get("unstage", True), params.get("assume", ()),
                    params.get("staged_conv", False)).run()
    return new, {}


def explain_normalization(program, *, entry: str, launch=None, assume: tuple = ()) -> tuple:
    """(normalized: bool, reason it was not or None): for reports and tests (``assume``: the
    spec's preconditions, as for :func:`apply`)."""
    r = _Recovery(program, entry, launch, True, True, assume)
    r.run()
    return r.normalized, r.why_not_normalized


def candidates(program, target: str) -> list[dict]:
    """The normalization alternatives (:data:`NORMALIZE`, in order) that apply to the program's
    kernels with the launches the program carries, each checked by :func:`check`. Where that
    cannot be told here (a kernel without a launch in the program, or one whose recovery refuses
    it: a migration's step takes the launch over the kernel's parameters from its StepContext),
    one candidate without parameters (``normalize=True``: the alternatives in order, in the pass)."""
    if program.dialect not in ("cuda", "hip", "bang") or not program.kernels:
        return []
    out = []
    for k in program.kernels:
        launch = program.launch_dict(k.name)
        if not launch:
            return [{}]
        for how in NORMALIZE:
            try:
                check(program, entry=k.name, launch=launch, normalize=how)
            except AlternativeRefused:
                continue
            except PassError:
                return [{}]
            out.append({"entry": k.name, "normalize": how})
    return out
