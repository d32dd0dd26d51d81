"""detensorize: lower every intrinsic / vendor instruction to plain loops with the same
semantics, staying in the SAME dialect.

The result runs on the same substrate as the input (a cuda program stays cuda and runs on the
SIMT emulator, a bang program on the BANG emulator, a c program natively), so each step is
verified against the original, and the later passes (loop recovery, binding) never meet an
intrinsic.  Families (lowering tables in ``passes/lowering/``):

* BANG ``__bang_*`` ops and ``__memcpy`` (all directions, strided form) -> loops over the same
  NRAM/WRAM/GDRAM buffers (float accumulation where the contract says so);
* CUDA WMMA: every fragment becomes a per-thread array holding the WHOLE tile; fill / load /
  store / mma_sync become loops that every lane runs in full (exact and simple);
* CUDA ``__dp4a`` (both 32-bit overloads): one scalar expression, bytes taken by shifts and
  ``int8_t`` conversions, the 32-bit sum wrapping as the instruction's (``lowering/dp4a.py``);
* HIP MFMA builtins: the lanes of a wavefront exchange operands through a ``__shared__`` buffer
  indexed by thread, a barrier, each lane computes its 4 outputs from the gfx90a layouts,
  barrier again;
* warp/wave collectives (``__shfl*``, ``__ballot``/``__any``/``__all``): the same exchange
  through ``__shared__`` memory, honouring ``width`` and out-of-range source lanes;
* x86 AVX-512 / VNNI: ``__m512``/``__m512i`` values become ``float[16]`` / ``int32_t[16]``
  arrays (byte and int16 views through ``uint8_t`` accesses), every intrinsic a lane loop with
  the exact integer semantics (wraparound or saturation, u8 x s8);
* C / C++ library range calls of c sources (``memcpy``/``memset``, ``std::copy``/``fill``,
  ``std::max_element``/``min_element``/``distance``): the element loops they perform
  (``lowering/libc.py``), so binding sees which elements they touch.

Parameters: ``target`` (the migration's destination).  When ``target`` equals the program's
dialect and ``keep_native`` is true (the default), nothing is lowered (the target has every
intrinsic): the pass raises XP4002.  Otherwise every non-portable intrinsic is lowered.

Example (bang)::

    __bang_add(c_acc, c_acc, c_part, mb * nbp);

becomes::

    for (int xpd_i1 = 0; xpd_i1 < mb * nbp; xpd_i1 += 1) {
        c_acc[xpd_i1] = (float)c_acc[xpd_i1] + (float)c_part[xpd_i1];
    }

Collectives assume uniform control flow: the exchange uses block barriers, so a collective
must not sit under thread-dependent control flow (refused with XP4001), except an ``if`` whose
body can be predicated (if-conversion: the exchange runs for every thread, the rest under the
condition).  Threads that returned early are fine (an exited thread no longer takes part in
``__syncthreads``).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import walk
from xpiler.passes.base import PassError

from .lowering import bang as L_bang, dp4a as L_dp4a
from .lowering.common import Names, TypeEnv, block
from .lowering.common import call_name as _call_name

NAME = "detensorize"
DIALECTS = ("cuda", "hip", "bang", "c")


# ------------------------------------------------------------------------------ discovery


def _family_of(name: str, dialect: str):
    from .lowering import mfma as L_mfma, warp as L_warp, wmma as L_wmma, x86 as L_x86
    if dialect == "bang" and name in L_bang.NAMES:
        return "bang"
    if dialect == "cuda" and (name in L_wmma.NAMES or name.startswith("wmma::")):
        return "wmma"
    if dialect == "cuda" and name in L_dp4a.NAMES:
        return "dp4a"
    if dialect == "hip" and name in L_mfma.NAMES:
        return "mfma"
    if dialect in ("cuda", "hip") and name in L_warp.NAMES:
        return "warp"
    if dialect == "c" and L_x86.is_x86(name):
        return "x86"
    return None


def _is_amx_tile(name: str) -> bool:
    from .lowering.x86 import is_amx_tile
    return is_amx_tile(name)


def intrinsic_sites(program: N.Program) -> list:
    """(family, name, node) of every intrinsic detensorize would lower."""
    out = []
    if program.dialect == "c":
        from .lowering import libc as L_libc
        out += [("libc", _call_name(n), n) for n in L_libc.sites(program)]
    for n in walk(program):
        name = _call_name(n)
        if name is None:
            continue
        fam = _family_of(name, program.dialect)
        if fam is not None:
            out.append((fam, name, n))
        elif isinstance(n, N.Intrinsic) and REGISTRY.get(name) is not None \
                and REGISTRY[name].category not in ("math", "atomic", "sync"):
            out.append((None, name, n))
        elif program.dialect == "c" and _is_amx_tile(name):
            out.append((None, name, n))     # a plain call to the parser, but an intrinsic all the same
    for n in walk(program):
        if isinstance(n, N.Decl) and isinstance(n.type, N.Fragment):
            out.append(("wmma", "fragment", n))
    return out


# ------------------------------------------------------------------------------ context
class Ctx:
    """What a family lowering may ask for while it rewrites one function."""

    def __init__(self, program: N.Program, func: N.Func, names: Names):
        self.program = program
        self.func = func
        self.names = names
        self.env = TypeEnv.of(program, func)
        self.dialect = program.dialect
        self.node = None          # the statement being lowered (for error locations)
        self.func_top: list = []  # declarations to add at the top of the function

    def fresh(self, hint: str) -> str:
        return self.names.fresh(hint)

    def math(self, name: str, *args):
        from .lowering.common import as_expr
        args = tuple(as_expr(a) for a in args)
        if name in REGISTRY and REGISTRY[name].category == "math":
            return N.Intrinsic(name, args)
        return N.Call(name, args)

    def is_pointer(self, e) -> bool:
        return isinstance(self.env.type_of(e), (N.Pointer, N.Array))

    def refuse(self, why: str, node=None):
        raise PassError(NAME, why, node if node is not None else self.node, "XP4001")

    def require_distinct(self, name, dst, *srcs):
        from .lowering.common import base_name
        d = base_name(dst)
        for s in srcs:
            if d is not None and base_name(s) == d:
                self.refuse(f"{name}: destination '{d}' overlaps an operand; the loop form would read "
                            "elements it already overwrote")


# ------------------------------------------------------------------------------ statement driver
def _lower_block_stmts(ctx: Ctx, stmts) -> tuple:
    out = []
    for s in stmts:
        r = _lower_stmt(ctx, s)
        out.extend(r)
    return tuple(out)


def _sub(ctx, s):
    """Lower a nested statement; a multi-statement result becomes a Block."""
    if s is None:
        return None
    r = _lower_stmt(ctx, s)
    if len(r) == 1:
        return r[0]
    return N.Block(tuple(r), loc=getattr(s, "loc", None))


def _lower_stmt(ctx: Ctx, s) -> list:
    if isinstance(s, N.Block):
        return [s.with_(stmts=_lower_block_stmts(ctx, s.stmts))]
    if isinstance(s, N.For):
        return ctx.hooks.around_loop(ctx, s, lambda: s.with_(body=N.Block(_lower_block_stmts(ctx, s.body.stmts),
                                                                          loc=s.body.loc)))
    if isinstance(s, N.CFor):
        return ctx.hooks.around_loop(ctx, s, lambda: s.with_(body=_sub(ctx, s.body)))
    if isinstance(s, N.While):
        return ctx.hooks.around_loop(ctx, s, lambda: s.with_(body=_sub(ctx, s.body)))
    if isinstance(s, N.If):
        return ctx.hooks.around_if(ctx, s, lambda: s.with_(then=_sub(ctx, s.then), else_=_sub(ctx, s.else_)))
    ctx.node = s
    # whole-statement intrinsics (void calls)
    if isinstance(s, N.ExprStmt):
        name = _call_name(s.expr)
        fam = _family_of(name, ctx.dialect) if name else None
        if fam == "bang":
            stmts = L_bang.STATEMENTS[name](ctx, name, list(s.expr.args))
            return [N.Block(tuple(stmts), loc=s.loc)]
    return ctx.hooks.stmt(ctx, s)


class _Hooks:
    """Per-dialect hooks (SIMT collectives need control-flow context; x86 needs value lowering)."""

    def around_loop(self, ctx, s, rebuild):
        return [rebuild()]

    def around_if(self, ctx, s, rebuild):
        return [rebuild()]

    def stmt(self, ctx, s):
        return [s]


def _hooks_for(dialect: str):
    if dialect in ("cuda", "hip"):
        from .lowering.simt import SimtHooks
        return SimtHooks()
    return _Hooks()


# ------------------------------------------------------------------------------ protocol
def _wants(program: N.Program, target, keep_native: bool) -> bool:
    return not (keep_native and target == program.dialect)


def check(program: N.Program, *, entry: str = None, target: str | None = None, keep_native: bool = True,
          **params) -> None:
    if target is not None and target not in DIALECTS:
        raise PassError(NAME, f"unknown target dialect {target!r}", None, "XP4001")
    sites = intrinsic_sites(program)
    if not sites:
        raise PassError(NAME, "the program uses no intrinsic this pass lowers", None, "XP4002")
    if not _wants(program, target, keep_native):
        raise PassError(NAME, f"the target {target} has every intrinsic the program uses (keep_native)", None,
                        "XP4002")
    for fam, name, node in sites:
        if fam is None and _is_amx_tile(name):
            raise PassError(NAME, f"no lowering for the AMX tile intrinsic {name}: a kernel written with AMX tiles is "
                                  f"not migrated (an xpiler output's XP_USE_AMX guard is read as its VNNI path)",
                            node, "XP4001")
        if fam is None:
            raise PassError(NAME, f"no lowering for intrinsic {name} in {program.dialect}", node, "XP4001")


def apply(program: N.Program, *, entry: str = None, target: str | None = None, keep_native: bool = True,
          **params) -> N.Program:
    check(program, entry=entry, target=target, keep_native=keep_native)
    names = Names(program)
    if program.dialect == "c":
        from .lowering import libc as L_libc
        from .lowering.x86 import lower_program
        program, changed = L_libc.lower_program(program, names)
        if not changed or any(fam == "x86" for fam, _, _ in intrinsic_sites(program)):
            return lower_program(program, names, Ctx)
        return program
    if program.dialect == "cuda" and any(fam == "dp4a" for fam, _, _ in intrinsic_sites(program)):
        program = _lower_dp4a(program)
    hooks = _hooks_for(program.dialect)
    if hasattr(hooks, "mfma_lift"):
        hooks.mfma_lift = params.get("mfma_lift", True)
    items = []
    for it in program.items:
        if isinstance(it, N.Func) and it.body is not None:
            ctx = Ctx(program, it, names)
            ctx.hooks = hooks
            hooks.begin(ctx) if hasattr(hooks, "begin") else None
            body = N.Block(_lower_block_stmts(ctx, it.body.stmts), loc=it.body.loc)
            if hasattr(hooks, "end"):
                body = hooks.end(ctx, body)
            if ctx.func_top:
                body = body.with_(stmts=tuple(ctx.func_top) + body.stmts)
            it = it.with_(body=body)
        items.append(it)
    out = program.with_(items=tuple(items))
    if program.dialect == "hip":
        from .lowering.vector_types import drop_unused_typedefs
        out = drop_unused_typedefs(out)
    left = [(f, n, node) for f, n, node in intrinsic_sites(out) if f is not None]
    if left:
        fam, name, node = left[0]
        raise PassError(NAME, f"{name} could not be lowered in this position", node, "XP4001")
    return out


def _lower_dp4a(program: N.Program) -> N.Program:
    """cuda ``__dp4a`` calls -> scalar byte arithmetic (``lowering/dp4a.py``), function by function."""
    items = []
    for it in program.items:
        if isinstance(it, N.Func) and it.body is not None:
            env = TypeEnv.of(program, it)

            def refuse(why, node=it):
                raise PassError(NAME, why, node, "XP4001")
            it = L_dp4a.lower_function(it, env, refuse)
        items.append(it)
    return program.with_(items=tuple(items))


def candidates(program: N.Program, target: str) -> list[dict]:
    if not intrinsic_sites(program):
        return []
    out = [{"target": target}]
    if target == program.dialect:
        out.append({"target": target, "keep_native": False})
    return [p for p in out if _wants(program, p["target"], p.get("keep_native", True))]
