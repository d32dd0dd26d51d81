"""Warp-shuffle block reductions: binding's ``reduce="shuffle"`` for cuda / hip.

The block forms of binding (``rows="block"``, ``passes/block_rows.py``; ``rows="core"``,
``passes/block_core.py``; the one-block phases of ``passes/phases.py``) give each thread a
partial of every reduction of a spread loop.  By default (``reduce="tree"``) the partials meet in
a shared-memory tree: ``B`` shared slots and ``log2 B`` halving steps, each ending in a
``__syncthreads()``.  Here (:func:`shuffle`) they meet in registers instead:

1. each warp folds its lanes' partials with an xor butterfly,
   ``p = p OP __shfl_xor_sync(0xffffffff, p, o)`` (cuda) / ``p = p OP __shfl_xor(p, o)`` (hip),
   ``o`` from ``warpSize / 2`` down to 1: afterwards every lane of the warp holds the warp's
   total;
2. lane 0 of each warp stores it in a ``__shared__`` slot (``tid / warpSize``), one
   ``__syncthreads()``;
3. every warp then folds the ``n = B / warpSize`` slots alike: lane ``l`` loads slot ``l % n``
   and an xor butterfly over offsets below ``n`` combines each aligned group of ``n`` lanes, which
   holds every slot exactly once, so every lane of every warp ends with the block's total (for
   every operator, without an identity element) and no second barrier or broadcast slot is
   needed (for a float max/min, whose combine is not symmetric for a NaN or for -0 / +0, lane
   0's result is then shuffled to every lane of its warp, so every thread agrees).  The
   accumulator gets it as with the tree (``acc = total`` for the idempotent
   ``max min & |``, whose partials started from ``acc``; ``acc = acc OP total`` for ``+ * ^``).

One barrier per reduction instead of ``log2 B + 1``; the slots are ``B / 32`` elements.  The
caller's barrier before the next write of the slots (the end of a row, ``block_rows``; after
every spread loop, ``block_core``) is the same one the tree needs.

The warp width: CUDA's ``warpSize`` is 32 on every NVIDIA GPU, so the cuda butterflies use the
offsets 16..1.  HIP's is 64 on CDNA (gfx9, wave64) and 32 on RDNA (wave32): the hip code reads
``warpSize`` and guards the steps that only a 64-lane wavefront needs (``if (32 < warpSize)`` in
step 1, ``if (o < B / warpSize)`` in step 3); the conditions are uniform, so every lane of a warp
takes the same branch and the shuffles run converged.  The SIMT emulator runs cuda with 32 lanes
and hip with 64 (``XPS_WAVE``); it checks that every lane of a warp reaches the same shuffle
(XP3003) and poisons a value read from a lane that does not exist.

Refused (:func:`check`, PassError XP4001): a block size that is not a power of two, not a
multiple of the widest warp of the target (32 cuda, 64 hip: a partial warp would shuffle with
lanes that do not exist) or above 1024 (more slots than one warp folds); a reduction whose type
has no shuffle (cuda: 32/64-bit integers and floats, half; hip: 32/64-bit integers and floats).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .base import PassError

NAME = "binding"
REDUCES = ("tree", "shuffle")
#: widest warp of each target (a block must be a whole number of them)
WARP_MAX = {"cuda": 32, "hip": 64}
#: narrowest warp of each target (the steps at or above it are guarded by warpSize on hip)
WARP_MIN = {"cuda": 32, "hip": 32}
MAX_BLOCK = 1024
SHUFFLE_DTYPES = {
    "cuda": {"int32", "uint32", "int64", "uint64", "float32", "float64", "float16"},
    "hip": {"int32", "uint32", "int64", "uint64", "float32", "float64"},
}


def check_reduce(reduce: str, target: str, block: int, node=None) -> None:
    """PassError unless ``reduce`` is a known form that applies to ``target`` and ``block``."""
    if reduce not in REDUCES:
        raise PassError(NAME, f"unknown reduce='{reduce}' (tree | shuffle)", node)
    if reduce == "tree":
        return
    if target not in WARP_MAX:
        raise PassError(NAME, f"reduce='shuffle' folds partials with cuda/hip warp shuffles, not on {target}", node)
    w = WARP_MAX[target]
    if block <= 0 or block & (block - 1) or block % w or block > MAX_BLOCK:
        raise PassError(NAME, f"reduce='shuffle': block size {block} must be a power of two, a multiple of "
                              f"{w} (the widest {target} warp: a partial warp would shuffle with lanes that do "
                              f"not exist) and at most {MAX_BLOCK}; use reduce='tree' or another block size", node)


def check_planned(plan: dict, reduce: str) -> None:
    """PassError when a binding plan with ``reduce`` other than "tree" folds no block reduction
    (a kernel without one, a grid-stride or retarget plan): the parameter would change nothing,
    and the search would list the same program twice."""
    body = plan.get("body")
    if body is None or not any(isinstance(n, N.Intrinsic) and n.name.startswith("__shfl") for n in walk(body)):
        raise PassError(NAME, f"reduce='{reduce}': this binding has no block reduction to fold (only the block "
                              f"forms rows='block' / 'core' and the phases plan reduce over a block)",
                        plan.get("func"))


def check_type(t, target: str, acc: str, node=None) -> None:
    dtype = getattr(t, "dtype", None)
    if dtype not in SHUFFLE_DTYPES.get(target, ()):
        raise PassError(NAME, f"reduce='shuffle': reduction into '{acc}' of type {getattr(t, 'spelling', dtype)} "
                              f"has no {target} warp shuffle; use reduce='tree'", node)


def _const(v: int) -> N.Const:
    return N.Const(v, "int32", str(v))


def _shfl(target: str, v: N.Expr, off: int) -> N.Intrinsic:
    if target == "cuda":
        return N.Intrinsic("__shfl_xor_sync", (N.Const(0xffffffff, "uint32", "0xffffffffu"), v, _const(off)))
    return N.Intrinsic("__shfl_xor", (v, _const(off)))


def _step(target, op, p: N.Var, tmp: N.Var, off: int) -> list:
    """``tmp = shfl_xor(p, off); p = p OP tmp;`` (the shuffle in its own statement: a max/min
    combine is a conditional, and a shuffle in one of its arms would run in some lanes only)."""
    from .phases import _combine
    return [N.Assign(tmp, "=", _shfl(target, p, off)), N.Assign(p, "=", _combine(op, p, tmp))]


def _warp_fold(target, op, part: N.Var, tmp: N.Var, t=None) -> list:
    """The xor butterfly over a warp: every lane ends with the warp's total in ``part``; the
    steps only a 64-lane wavefront needs are guarded by ``warpSize`` (hip)."""
    out, off = [], WARP_MAX[target] // 2
    while off >= 1:
        step = _step(target, op, part, tmp, off)
        if off >= WARP_MIN[target]:
            out.append(N.If(N.BinOp("<", _const(off), N.Builtin("warpSize")), N.Block(tuple(step))))
        else:
            out += step
        off //= 2
    return out + _uniform(target, op, part, t)


def _uniform(target, op, part: N.Var, t) -> list:
    """Lane 0's value to every lane after a float max/min butterfly. Its combine
    (``b > a ? b : a``) is not symmetric for a NaN or for -0 / +0, so the two lanes of a pair
    could end with different values and the accumulator would not be the same in every thread;
    + * & | ^ and integer max/min are symmetric and need no broadcast."""
    if op not in ("max", "min") or getattr(t, "dtype", "") not in ("float32", "float64", "float16"):
        return []
    src = N.Intrinsic("__shfl_sync", (N.Const(0xffffffff, "uint32", "0xffffffffu"), part, _const(0))) \
        if target == "cuda" else N.Intrinsic("__shfl", (part, _const(0)))
    return [N.Assign(part, "=", src)]


def butterfly(acc, part, t, op, target, fresh) -> list:
    """``rows="warp"`` (``passes/warp_rows.py``): the lanes' partials ``part`` of one warp folded
    into ``acc`` in every lane, with no shared memory or barrier."""
    from .phases import IDEMPOTENT, _combine
    tmp = N.Var(fresh(f"xp_w_{acc.name}"))
    final = part if op in IDEMPOTENT else _combine(op, acc, part)
    return [N.Decl(tmp.name, t)] + _warp_fold(target, op, part, tmp, t) + [N.Assign(acc, "=", final)]


def shuffle(acc, part, red, t, op, B, tid, fresh, target) -> list:
    """The shuffle form of ``phases._tree``: ``[shared slots declaration, statements...]``;
    every thread ends with the block's result of ``op`` in ``acc`` (``part``: the thread's
    partial, a Var the statements overwrite)."""
    from .phases import IDEMPOTENT, _combine
    check_reduce("shuffle", target, B)
    check_type(t, target, acc.name)
    tmp = N.Var(fresh(f"xp_w_{acc.name}"))
    warp = N.Builtin("warpSize")
    # 1. within each warp (no broadcast: only lane 0's value is used)
    stmts: list = [N.Decl(tmp.name, t)] + _warp_fold(target, op, part, tmp)
    # 2. one slot per warp
    slots = N.Var(red)
    stmts.append(N.If(N.BinOp("==", N.BinOp("%", tid, warp), _const(0)),
                      N.Block((N.Assign(N.Index(slots, N.BinOp("/", tid, warp)), "=", part),))))
    stmts.append(N.Barrier("block"))
    # 3. every warp folds the slots: lane l takes slot l % n, n = B / warpSize
    n_max, n_min = B // WARP_MIN[target], B // WARP_MAX[target]
    n = _const(n_max) if n_max == n_min else N.BinOp("/", _const(B), warp)
    first = N.Index(slots, _const(0)) if n_max == 1 else N.Index(slots, N.BinOp("%", tid, n))
    stmts.append(N.Assign(part, "=", first))
    off = n_max // 2
    while off >= 1:
        step = _step(target, op, part, tmp, off)
        if off >= n_min:
            stmts.append(N.If(N.BinOp("<", _const(off), n), N.Block(tuple(step))))
        else:
            stmts += step
        off //= 2
    stmts += _uniform(target, op, part, t)
    final = part if op in IDEMPOTENT else _combine(op, acc, part)
    stmts.append(N.Assign(acc, "=", final))
    decl = N.Decl(red, N.Array(t, (_const(n_max),)), scope="shared")
    return [decl] + stmts


def variants(program, entry: str, base: dict, form, reduce="shuffle") -> list:
    """The ``reduce="shuffle"`` parameter sets of a block form (``form``: ``block_rows`` or
    ``block_core``, whose BLOCK_SIZES x GRID_CAPS the search lists) that applies to ``base``
    (target, loop, rows): none when the form folds no block reduction there. ``reduce=None``:
    the form's own sets where it applies (``warp_rows``, whose reductions are always shuffles)."""
    from .binding import check
    out = []
    extra = {"reduce": reduce} if reduce else {}
    for b in form.BLOCK_SIZES:
        try:
            check(program, entry=entry, **base, block=b, **extra)
        except PassError:
            continue
        out += [dict(base, block=b, grid_cap=cap, **extra) for cap in form.GRID_CAPS]
    return out
