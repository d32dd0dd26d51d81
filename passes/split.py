"""Split (strip-mine) one canonical loop into an outer loop over chunks and an inner loop
over the iterations of a chunk.

``split(program, entry=..., loop="j", factor=4)``.  The inner loop keeps the original loop
variable, so the body is untouched; the outer loop gets a fresh variable ``<var>_o``.  When the
trip count is a constant multiple of ``factor`` the inner bound is exact, otherwise it is
clamped with a ternary (valid C, CUDA, HIP and BANG alike: no ``min`` needed).

Before::

    for (int j = 0; j < N; ++j)
        y[j] = x[j] * 2.0f;

After (``factor=4``)::

    for (int j_o = 0; j_o < N; j_o += 4)
        for (int j = j_o; j < (j_o + 4 < N ? j_o + 4 : N); ++j)
            y[j] = x[j] * 2.0f;

Legality (:func:`check_split`): ``factor`` is an integer >= 1 (1 is "nothing to do",
XP4002); the loop is canonical (a ``For`` whose step is a positive integer constant and whose
variable the body never assigns).  The iteration order is unchanged, so no dependence test is
needed.  A loop bound to threads, blocks or tasks (``binding`` set) is refused: each bound
index would start ``factor`` chunks further on (``gtid * factor``) under the launch sized for the
unsplit loop, so most threads would find no work, and the product overflows a 32-bit index at
sizes the source handles (an H100 run of such a candidate: ``(gtid * 128)`` past 2^31 at
n = 2^24). Giving each thread more elements is binding's parameter (its grid and block), not a split.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .base import PassError
from . import dependence as D

NAME = "split"
FACTORS = (2, 4, 8, 16, 32, 64, 128, 256)


def apply(program: N.Program, *, entry: str, loop=None, factor: int = 4, **_) -> N.Program:
    func, lp = check(program, entry=entry, loop=loop, factor=factor)
    return split(program, func, lp, int(factor))


def check(program: N.Program, *, entry: str, loop=None, factor: int = 4, **_):
    """Raise PassError unless ``loop`` of ``entry`` can be split by ``factor``; returns (func, loop)."""
    func = _func(program, entry)
    lp = _loop(func, loop)
    check_split(func, lp, factor)
    return func, lp


def check_split(func: N.Func, lp: N.For, factor) -> None:
    if isinstance(factor, bool) or not isinstance(factor, int):
        raise PassError(NAME, f"split factor {factor!r} is not an integer", lp)
    if factor < 1:
        raise PassError(NAME, f"split factor {factor} of loop '{lp.var}' must be >= 1", lp)
    if factor == 1:
        raise PassError(NAME, f"splitting loop '{lp.var}' by 1 changes nothing", lp, "XP4002")
    if not (isinstance(lp.step, N.Const) and isinstance(lp.step.value, int) and lp.step.value > 0):
        raise PassError(NAME, f"loop '{lp.var}' is not canonical: its step is not a positive constant", lp)
    if lp.var in D.assigned_names(lp.body):
        raise PassError(NAME, f"loop '{lp.var}' is not canonical: the body assigns its variable", lp)
    if lp.binding is not None:
        raise PassError(NAME, f"loop '{lp.var}' is bound to {lp.binding}: a split would start each bound index "
                        f"{factor} chunks apart under the launch sized for the unsplit loop (idle threads, and "
                        "an index product that can overflow 32 bits); size the launch with binding instead", lp)
    tc = _const_trip(lp)
    if tc is not None and tc <= factor:
        raise PassError(NAME, f"loop '{lp.var}' runs {tc} iterations: a split by {factor} leaves one chunk",
                        lp, "XP4002")


def split(program: N.Program, func: N.Func, lp: N.For, factor: int) -> N.Program:
    step = lp.step.value
    outer_var = _fresh(func, f"{lp.var}_o")
    chunk = factor * step
    vo = N.Var(outer_var)
    end = N.BinOp("+", vo, N.Const(chunk))
    tc = _const_trip(lp)
    hi = end if tc is not None and tc % factor == 0 else N.Cond(N.BinOp("<", end, lp.hi), end, lp.hi)
    inner_pr = tuple(p for p in lp.pragmas if p.startswith("unroll"))
    outer_pr = tuple(p for p in lp.pragmas if not p.startswith("unroll"))
    inner = N.For(lp.var, vo, hi, lp.step, lp.body, None, lp.var_type, inner_pr, "<", loc=lp.loc)
    outer = N.For(outer_var, lp.lo, lp.hi, N.Const(chunk), N.Block((inner,)), None,
                  lp.var_type or N.Scalar("int32", "int"), outer_pr, "<", loc=lp.loc)
    new_func = D.replace_node(func, lp, outer)
    return program.with_(items=tuple(new_func if it is func else it for it in program.items))


def candidates(program: N.Program, target: str) -> list:
    out = []
    for f in program.kernels or program.funcs:
        if f.body is None:
            continue
        for lp in (n for n in walk(f.body) if isinstance(n, N.For)):
            for k in FACTORS:
                try:
                    check_split(f, lp, k)
                except PassError:
                    continue
                out.append({"entry": f.name, "loop": D.loop_ref(f, lp), "factor": k})
    return out


# ----------------------------------------------------------------------------- helpers
def _func(program, entry):
    try:
        return program.func(entry)
    except KeyError:
        raise PassError(NAME, f"entry function '{entry}' not found") from None


def _loop(func, ref):
    if ref is None:
        raise PassError(NAME, "no loop given (loop='var', 'var#k' or 'line:N')", func)
    if D.is_ambiguous(func, ref):
        raise PassError(NAME, f"loop reference '{ref}' is ambiguous (use '{ref}#k' or 'line:N')", func)
    lp = D.find_loop(func, ref)
    if lp is None:
        raise PassError(NAME, f"no canonical loop '{ref}' in {func.name}", func)
    return lp


def _const_trip(lp):
    if all(isinstance(x, N.Const) and isinstance(x.value, int) for x in (lp.lo, lp.hi, lp.step)):
        return max(0, -(-(lp.hi.value - lp.lo.value) // lp.step.value))
    return None


def _fresh(func, base):
    used = {n.name for n in walk(func) if isinstance(n, (N.Var, N.Decl, N.Param))} | \
        {n.var for n in walk(func) if isinstance(n, N.For)}
    name, k = base, 1
    while name in used:
        k += 1
        name = f"{base}{k}"
    return name
