"""Warp / wavefront collectives as an exchange through ``__shared__`` memory.

Every thread stores its operand at its linear thread id, waits at a barrier, reads its source
lane (or its own value when the source lies outside its ``width`` segment, as CUDA and HIP
specify), and waits again.  Warp size: 32 for cuda, 64 for hip (gfx90a wave64), written as a
constant so the lowered program means the same on a machine with the other width.
Assumes uniform control flow (every thread of the block reaches the exchange) and the full
member mask; see docs/passes/detensorize.md.
"""
from __future__ import annotations

from xpiler.ir import nodes as N

from .common import INT, add, assign, b, c, cond, decl, ix, loop, scalar

SHFL = {"__shfl_sync": "idx", "__shfl_up_sync": "up", "__shfl_down_sync": "down", "__shfl_xor_sync": "xor",
        "__shfl": "idx", "__shfl_up": "up", "__shfl_down": "down", "__shfl_xor": "xor",
        # AMD: the value of the wave's first active lane; with every lane active (the uniform
        # control flow assumed here) that is lane 0: __shfl(v, 0, 64)
        "__builtin_amdgcn_readfirstlane": "first",
        # AMD: ds_bpermute(addr, v) gives each lane the v of lane (addr / 4) mod the wave size
        # (a byte address into the wave's registers, 4 bytes a lane): __shfl(v, (addr >> 2) & 63, 64)
        "__builtin_amdgcn_ds_bpermute": "bpermute"}
# AMD lane counts (no exchange): mbcnt_lo(m, acc) = acc + the set bits of m below the lane in
# lanes 0..31, mbcnt_hi(m, acc) the same over lanes 32..63; with m = ~0u these are the lane id
# clamped to each half (the idiom mbcnt_hi(~0u, mbcnt_lo(~0u, 0)) is the lane id in the wave)
MBCNT = {"__builtin_amdgcn_mbcnt_lo": "lo", "__builtin_amdgcn_mbcnt_hi": "hi"}
VOTE = {"__ballot_sync": "ballot", "__any_sync": "any", "__all_sync": "all",
        "__ballot": "ballot", "__any": "any", "__all": "all"}
NAMES = frozenset(SHFL) | frozenset(VOTE) | frozenset(MBCNT)


def warp_size(dialect: str) -> int:
    return 64 if dialect == "hip" else 32


def result_type(ctx, call):
    name = call.func if isinstance(call, N.Call) else call.name
    if name in MBCNT:
        return scalar("uint32", "unsigned int")
    if name in SHFL and SHFL[name] == "bpermute":      # int __builtin_amdgcn_ds_bpermute(int, int)
        return scalar("int32", "int")
    if name in SHFL:
        val = call.args[1] if name.endswith("_sync") else call.args[0]
        t = ctx.env.type_of(val)
        if not isinstance(t, N.Scalar):
            ctx.refuse(f"{name}: cannot tell the type of the shuffled value")
        return t.with_(const=False)
    if VOTE[name] == "ballot":
        return scalar("uint64", "unsigned long long") if ctx.dialect == "hip" else scalar("uint32", "unsigned int")
    return scalar("int32", "int")


def lower(ctx, call, result: str, barrier):
    """Statements that leave the collective's value in a new variable ``result``."""
    name = call.func if isinstance(call, N.Call) else call.name
    args = list(call.args)
    W = warp_size(ctx.dialect)
    tid = N.Var(ctx.hooks.tid(ctx))
    rt = result_type(ctx, call)
    if name in SHFL:
        kind = SHFL[name]
        if name.endswith("_sync"):
            args = args[1:]
        if kind == "first":
            kind, args = "idx", [args[0], c(0), c(W)]
        elif kind == "bpermute":
            kind, args = "idx", [args[1], b("&", b(">>", args[0], 2), W - 1), c(W)]
        val, arg = args[0], args[1]
        width = args[2] if len(args) > 2 else c(W)
        buf = ctx.hooks.buffer(ctx, "xch", rt, 1024)
        lane, sub, seg, s = ctx.fresh("lane"), ctx.fresh("sub"), ctx.fresh("seg"), ctx.fresh("src")
        out = [assign(ix(buf, tid), val), barrier(),
               decl(lane, INT, b("%", tid, W), const=True),
               decl(sub, INT, b("%", N.Var(lane), width), const=True),
               decl(seg, INT, b("-", tid, N.Var(sub)), const=True)]
        if kind == "idx":
            out.append(decl(s, INT, b("%", arg, width), const=True))
            ok = None
        elif kind == "up":
            out.append(decl(s, INT, b("-", N.Var(sub), arg), const=True))
            ok = b(">=", N.Var(s), 0)
        elif kind == "down":
            out.append(decl(s, INT, b("+", N.Var(sub), arg), const=True))
            ok = b("<", N.Var(s), width)
        else:
            out.append(decl(s, INT, b("^", N.Var(sub), arg), const=True))
            ok = b("<", N.Var(s), width)
        src = ix(buf, add(N.Var(seg), N.Var(s)))
        out.append(decl(result, rt, src if ok is None else cond(ok, src, ix(buf, tid))))
        out.append(barrier())
        return out
    kind = VOTE[name]
    pred = args[-1]
    buf = ctx.hooks.buffer(ctx, "vote", scalar("int32", "int"), 1024)
    base, l = ctx.fresh("wbase"), ctx.fresh("l")
    out = [assign(ix(buf, tid), cond(pred, 1, 0)), barrier(),
           decl(base, INT, b("-", tid, b("%", tid, W)), const=True)]
    got = b("!=", ix(buf, add(N.Var(base), N.Var(l))), 0)
    if kind == "ballot":
        out += [decl(result, rt, c(0)),
                loop(l, 0, W, N.If(got, assign(result, b("<<", N.Cast(rt, c(1)), N.Var(l)), "|=")))]
    elif kind == "any":
        out += [decl(result, rt, c(0)), loop(l, 0, W, N.If(got, assign(result, c(1))))]
    else:
        out += [decl(result, rt, c(1)), loop(l, 0, W, N.If(N.UnOp("!", got), assign(result, c(0))))]
    out.append(barrier())
    return out


def _full_mask(e) -> bool:
    """``~0u``, ``0xffffffff``, ``-1``: every lane of a 32-lane half."""
    if isinstance(e, N.Cast):
        return _full_mask(e.expr)
    if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value & 0xFFFFFFFF == 0xFFFFFFFF
    if isinstance(e, N.UnOp) and e.op == "~" and isinstance(e.operand, N.Const):
        return e.operand.value == 0
    if isinstance(e, N.UnOp) and e.op == "-" and isinstance(e.operand, N.Const):
        return e.operand.value == 1
    return False


def lower_mbcnt(ctx, call):
    """The value of ``__builtin_amdgcn_mbcnt_lo/hi(~0u, acc)`` as an expression over the lane id
    (``tid % 64``); another mask is refused (its bit count below the lane is not written here)."""
    name = call.func if isinstance(call, N.Call) else call.name
    m, acc = list(call.args)
    if not _full_mask(m):
        ctx.refuse(f"{name} with a mask other than ~0u")
    W = warp_size(ctx.dialect)
    lane = b("%", N.Var(ctx.hooks.tid(ctx)), W)
    half = W // 2
    if MBCNT[name] == "lo":
        below = cond(b("<", lane, half), lane, c(half))
    else:
        below = cond(b("<", lane, half), c(0), b("-", lane, half))
    return add(acc, N.Cast(scalar("uint32", "unsigned int"), below))
