"""Padded row staging on BANG (cache): rows of a norm-like row loop go to NRAM at a row stride
rounded up to the 128-byte vector granule, so that tensorize can run one vector op per row.

A row loop (see :mod:`passes.patterns.rows`) is *norm-like* when every row buffer has the same
row stride ``S`` and every inner loop is a single loop (no nest) that runs over ``[lo, S)`` with
``lo`` a small constant: softmax, layernorm and rmsnorm rows.  For such a loop the staged
layout is::

    int r_pad = (S + 31) / 32 * 32;                      // 32 floats = 128 bytes
    if (r_pad <= CAP && ...) {
        int r_rows = max(1, min(CAP / r_pad, share));
        __memcpy(g_nram, g, S * sizeof(float), GDRAM2NRAM);          // row-independent: once
        for (int r_r = taskId * r_rows; ...) {
            int r_n = min(r_rows, rows - r_r);
            __memcpy(x_nram, x + r_r * S, S * 4, GDRAM2NRAM, r_pad * 4, S * 4, r_n - 1);   // strided
            for (int r = 0; r < r_n; ++r) { ... x_nram[r * r_pad + c] ... }
            __memcpy(y + r_r * S, y_nram, S * 4, NRAM2GDRAM, S * 4, r_pad * 4, r_n - 1);
        }
    } else { original loop }

Row ``r`` of a staged buffer occupies ``[r * r_pad, (r + 1) * r_pad)``: lanes ``[S, r_pad)`` are
padding that is never copied back.  All buffers stay in NRAM (the vector unit reads NRAM
only; WRAM is for matrix weights).  Constant-offset reads of a row (``x[r * S + 0]``) are
allowed and guarded by ``S > offset``.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from ..base import PassError
from . import common as U

NAME = "cache"
#: per-row slack a norm-like loop may read beyond ``lo`` (``for c = 1 .. S``)
MAX_LO = 1
#: temporaries tensorize adds per kernel (row-sized NRAM scratch), reserved in the budget
TEMPS = 2


def _row_inner_loops(body):
    return [n for n in walk(N.Block(tuple(body))) if isinstance(n, N.For)]


def stride_of(plan):
    """The common row stride S of a norm-like row plan, else None."""
    strides = list(plan.row.values())
    if not strides:
        return None
    S = U.strip_casts(strides[0])
    if any(U.strip_casts(s) != S for s in strides[1:]):
        return None
    if isinstance(S, N.Const):
        return None                      # fixed small rows (e.g. 16-wide vectors): nothing to gain
    loops = _row_inner_loops(plan.body)
    if not loops:
        return None
    for l in loops:
        if l.binding is not None or any(isinstance(n, N.For) for n in walk(l.body)):
            return None
        if not (isinstance(l.lo, N.Const) and isinstance(l.lo.value, int) and 0 <= l.lo.value <= MAX_LO):
            return None
        if not (isinstance(l.step, N.Const) and l.step.value == 1) or U.strip_casts(l.hi) != S:
            return None
    if any(d not in ("float32", "float16") for d in plan.dtypes.values()):
        return None
    return S


def _const_offsets(plan, S):
    """Constant in-row offsets k read as P[r*S + k] (need S > k)."""
    from .rows import linear
    out = set()
    for n in walk(N.Block(tuple(plan.body))):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in plan.row:
            try:
                _, r = linear(n.index, plan.loop.var)
            except ValueError:
                continue
            r = U.strip_casts(r) if r is not None else U.C(0)
            if isinstance(r, N.Const) and isinstance(r.value, int):
                out.add(r.value)
    return out


def pick_caps(program, func, plan) -> int:
    have = U.static_bytes(program, func, "nram")
    nbuf = len(plan.dtypes) + TEMPS
    widest = max(U.ELEM_BYTES[d] for d in plan.dtypes.values())
    budget = (U.NRAM_BYTES * 3 // 4 - have) // nbuf // widest
    cap = 1
    while cap * 2 <= budget:
        cap *= 2
    if cap < 128:
        raise PassError(NAME, f"row staging buffers for loop '{plan.loop.var}' do not fit NRAM", plan.loop)
    return cap


def stage(program, func, plan, S, cap) -> N.Func:
    """The padded staging rewrite of ``plan.loop`` (see the module docstring)."""
    from .rows import linear
    loop = plan.loop
    i = loop.var
    unit = max(U.VECTOR_RULE_BYTES // U.ELEM_BYTES[d] for d in plan.dtypes.values())
    pad = U.fresh(func, f"{i}_pad")
    r0, rn, rb = U.fresh(func, f"{i}_r"), U.fresh(func, f"{i}_n"), U.fresh(func, f"{i}_rows")
    names = {b: U.fresh(func, f"{b}_nram") for b in plan.dtypes}
    decls = [N.Decl(names[b], N.Array(N.Scalar(plan.dtypes[b]), (U.C(cap),)), scope="nram") for b in plan.dtypes]
    P = N.Var(pad)

    def restage(n):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in names:
            idx = n.index
            if n.base.name in plan.row:
                _, rest = linear(n.index, i)
                row = N.BinOp("*", N.Var(i), P)
                idx = row if rest is None else N.BinOp("+", row, U.strip_casts(rest))
            return N.Index(N.Var(names[n.base.name]), idx, loc=n.loc)
        return n
    body = [rewrite(s, restage) for s in plan.body]
    from .rows import _subst_outside_staged
    staged_body = _subst_outside_staged(N.Block(tuple(body)), i, N.BinOp("+", N.Var(r0), N.Var(i)),
                                        set(names.values()))
    inner = N.For(i, U.C(0), N.Var(rn), U.C(1), staged_body, var_type=N.Scalar("int32", "int"), loc=loop.loc)

    def nbytes(b, count):
        return N.BinOp("*", count, U.sizeof(plan.dtypes[b]))
    segs = N.BinOp("-", N.Var(rn), U.C(1))
    per_block = [U.int_decl(rn, N.Intrinsic("min", (N.Var(rb), N.BinOp("-", loop.hi, N.Var(r0)))))]
    for b in plan.row:
        per_block.append(U.call("__memcpy", N.Var(names[b]), N.BinOp("+", N.Var(b), U.mul(N.Var(r0), S)),
                                nbytes(b, S), N.Var("GDRAM2NRAM"), nbytes(b, P), nbytes(b, S), segs))
    per_block.append(inner)
    for b in plan.row:
        if b in plan.written:
            per_block.append(U.call("__memcpy", N.BinOp("+", N.Var(b), U.mul(N.Var(r0), S)), N.Var(names[b]),
                                    nbytes(b, S), N.Var("NRAM2GDRAM"), nbytes(b, S), nbytes(b, P), segs))
    rows_expr = N.BinOp("/", U.C(cap), P)
    if loop.binding == "taskId":
        share = N.BinOp("/", N.BinOp("+", N.BinOp("-", loop.hi, loop.lo), N.BinOp("-", N.Builtin("taskDim"), U.C(1))),
                        N.Builtin("taskDim"))
        rows_expr = N.Intrinsic("min", (rows_expr, share))
    rows_expr = N.Intrinsic("max", (U.C(1), rows_expr))
    block_loop = N.For(r0, loop.lo, loop.hi, N.Var(rb), N.Block(tuple(per_block)), binding=loop.binding,
                       var_type=N.Scalar("int32", "int"), loc=loop.loc)
    staged = [U.int_decl(rb, rows_expr)]
    for b, ext in plan.inv.items():
        staged.append(U.call("__memcpy", N.Var(names[b]), N.Var(b), nbytes(b, ext), N.Var("GDRAM2NRAM")))
    staged.append(block_loop)
    cond = N.BinOp("<=", P, U.C(cap))
    for b, ext in plan.inv.items():
        cond = N.BinOp("&&", cond, N.BinOp("<=", ext, U.C(cap)))
    for k in sorted(_const_offsets(plan, S)):
        if k >= 0:
            cond = N.BinOp("&&", cond, N.BinOp(">", S, U.C(k)))
    guard = N.If(cond, N.Block(tuple(staged)), N.Block((loop,)), loc=loop.loc)
    new_body = U.replace_stmt(func.body, loop, [U.int_decl(pad, U.round_up(S, unit)), guard])
    return func.with_(body=new_body.with_(stmts=tuple(decls) + new_body.stmts))
