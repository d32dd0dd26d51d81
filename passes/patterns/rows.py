"""Row loops of matrix kernels on BANG: staging (cache) and the matmul / mlp descriptions
(tensorize).

A *row loop* is a task-bound loop ``for i`` whose every global access is ``P[i*S + r]`` (a row
of P, ``S`` free of loop variables, ``r`` free of ``i``) or ``Q[r]`` (independent of ``i``: the
same for every row).  gemm's ``C[i*N + j] += A[i*K + k] * B[k*N + j]`` and gemv's
``acc += A[i*K + k] * x[k]; y[i] = acc`` are row loops.

Staging (cache): blocks of ``rb`` rows of every row buffer go to NRAM (or WRAM for the weight
operand of a matrix-vector product), the row-independent operands go once per task to WRAM
(the rhs of a matrix product) or NRAM.  Buffer capacities are constants; the sizes are not, so
the staged loop runs under a guard and the original loop is kept as the fallback.

Descriptions (tensorize), over the staged buffers, ``i`` in [0, rb):

* matmul: ``for i { for j<N: C[i*N+j] = 0; for k<K: for j<N: C[i*N+j] += A[i*K+k] * B[k*N+j] }``
  or ``for i { for j<N { acc = 0; for k<K: acc += A[i*K+k] * B[k*N+j]; C[i*N+j] = acc } }``
  == ``__bang_matmul(C, A, B, rb, K, N)`` with A, C in NRAM, B in WRAM; A, B and C of one type
  (float or half), or half A and B each widened to float in the product (``(float)A[..] *
  (float)B[..]``) with a float accumulator and a float C: the documented (float dst, half, half)
  operand form (manuals/bang/bang_matmul.md), whose products of two halves are exact in float
  and whose sums are float, as in the loop;
* mlp: ``for i { acc = 0; for k<K: acc += W[i*K+k] * x[k]; y[i] = acc }``
  == ``__bang_mlp(y, x, W, K, rb)`` with x, y in NRAM, W in WRAM.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from ..base import PassError
from . import common as U

NAME = "cache"


# ------------------------------------------------------------------------------ linear forms
def linear(e, var: str):
    """e == var * coeff + rest with coeff, rest free of ``var``: (coeff Expr or None for 0, rest
    Expr or None for 0); raises ValueError when e is not linear in var."""
    e = U.strip_casts(e)
    if isinstance(e, N.Var) and e.name == var:
        return U.C(1), None
    if not _mentions(e, var):
        return None, e
    if isinstance(e, N.BinOp) and e.op in ("+", "-"):
        ca, ra = linear(e.lhs, var)
        cb, rb = linear(e.rhs, var)
        return _comb(ca, cb, e.op), _comb(ra, rb, e.op)
    if isinstance(e, N.BinOp) and e.op == "*":
        if not _mentions(e.rhs, var):
            c, r = linear(e.lhs, var)
            return _scale(c, e.rhs), _scale(r, e.rhs)
        if not _mentions(e.lhs, var):
            c, r = linear(e.rhs, var)
            return _scale(c, e.lhs), _scale(r, e.lhs)
    raise ValueError("not linear")


def _mentions(e, var):
    return any(isinstance(n, N.Var) and n.name == var for n in walk(e))


def _comb(a, b, op):
    if b is None:
        return a
    if a is None:
        return b if op == "+" else N.UnOp("-", b)
    return N.BinOp(op, a, b)


def _scale(a, s):
    if a is None:
        return None
    return U.mul(a, U.strip_casts(s))


def _is_c(e, v):
    e = U.strip_casts(e) if e is not None else None
    return isinstance(e, N.Const) and e.value == v


# ------------------------------------------------------------------------------ analysis
@dataclass
class RowPlan:
    loop: N.For
    body: list                                        # inlined body statements
    row: dict = field(default_factory=dict)           # buffer -> row stride S (Expr)
    inv: dict = field(default_factory=dict)           # buffer -> extent (Expr)
    written: set = field(default_factory=set)
    dtypes: dict = field(default_factory=dict)
    wram: set = field(default_factory=set)
    caps: dict = field(default_factory=dict)
    offsets: set = field(default_factory=set)        # constant in-row offsets read (need S > k)
    # batched contraction (``for t < X*Y { b = t / Y; i = t % Y; ... }``): the batch loop
    # (variable, extent X), each buffer's per-batch offset coefficient and the source loop
    batch: Optional[tuple] = None
    boff: dict = field(default_factory=dict)
    outer: Optional[N.For] = None
    scratch: int = 0            # NRAM buffers of a staged buffer's size a tensorize form will add
    # bfloat16 operands read only widened to float in an accumulated product: staged as float
    # (converted in NRAM after the copy), so that the float __bang_matmul form applies
    widen: set = field(default_factory=set)


def _loop_ranges(body_block) -> dict:
    return {l.var: l for l in walk(body_block) if isinstance(l, N.For)}


def _extent(r, loops: dict):
    """1 + max of r over the inner loops (r linear in inner loop vars with var-free coefficients,
    each loop [0, hi) step 1): 1 + sum (hi - 1) * coeff.  None when unknown."""
    if r is None:
        return U.C(1)
    terms = []
    rest = r
    for v, l in loops.items():
        try:
            c, rest2 = linear(rest, v)
        except ValueError:
            return None
        if c is not None:
            # lo in {0, 1}: [0, hi) covers the accesses (an upper bound of the extent)
            if not ((_is_c(l.lo, 0) or _is_c(l.lo, 1)) and _is_c(l.step, 1)):
                return None
            terms.append((l.hi, c))
            rest = rest2
    if rest is not None and not _is_c(rest, 0):
        return None
    if len(terms) == 1 and _is_c(terms[0][1], 1):
        return terms[0][0]
    # (hi_a - 1) * c_a + (hi_b - 1) * c_b + 1; for k*N + j (j < N): K * N
    if len(terms) == 2:
        (h1, c1), (h2, c2) = terms
        for (ha, ca), (hb, cb) in (((h1, c1), (h2, c2)), ((h2, c2), (h1, c1))):
            if _is_c(cb, 1) and _eq(ca, hb):
                return U.mul(ha, ca)
    terms = [U.mul(N.BinOp("-", h, U.C(1)), c) for h, c in terms]
    e = U.C(1)
    for t in terms:
        e = N.BinOp("+", t, e)
    return e


def analyse_rows(program, func, loop: N.For, batch: Optional[str] = None, body=None) -> RowPlan:
    ptrs = U.pointer_params(func)
    if not _is_c(loop.step, 1):
        raise PassError(NAME, f"loop '{loop.var}' has a non-unit step", loop, "XP4002")
    for n in walk(loop.body):
        if isinstance(n, (N.Barrier, N.Return, N.Break, N.Continue, N.CFor, N.While)):
            raise PassError(NAME, f"loop '{loop.var}' holds a {type(n).__name__}", loop, "XP4002")
    body = U.inline_lets(loop.body.stmts) if body is None else body
    plan = RowPlan(loop, body)
    if batch is not None:
        body = _strip_batch(plan, ptrs, batch, body)
        plan.body = body
    blk = N.Block(tuple(body))
    inner = _loop_ranges(blk)
    for n in walk(blk):
        if isinstance(n, N.Var) and n.name in ptrs:
            pass
    n_uses = sum(1 for n in walk(blk) if isinstance(n, N.Var) and n.name in ptrs)
    n_idx = sum(1 for n in walk(blk) if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in ptrs)
    if n_uses != n_idx:
        raise PassError(NAME, f"a buffer is used as a pointer in loop '{loop.var}'", loop, "XP4002")
    for n in walk(blk):
        if isinstance(n, (N.Assign,)) and isinstance(n.target, N.Index) and isinstance(n.target.base, N.Var):
            plan.written.add(n.target.base.name)
    for n in walk(blk):
        if not (isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in ptrs):
            continue
        b = n.base.name
        try:
            c, r = linear(n.index, loop.var)
        except ValueError:
            raise PassError(NAME, f"buffer '{b}' index is not linear in '{loop.var}'", loop, "XP4002")
        if c is None:
            if b in plan.written:
                raise PassError(NAME, f"buffer '{b}' is written at an index independent of '{loop.var}'", loop)
            ext = _extent(r, inner)
            if ext is None:
                raise PassError(NAME, f"extent of '{b}' in loop '{loop.var}' is unknown", loop, "XP4002")
            if b in plan.inv and plan.inv[b] != ext:
                raise PassError(NAME, f"buffer '{b}' is read over two different ranges", loop, "XP4002")
            plan.inv[b] = ext
        else:
            if b in plan.row and plan.row[b] != c:
                raise PassError(NAME, f"buffer '{b}' has two row strides", loop, "XP4002")
            # r must stay inside one row: r in [0, S)
            ext = _extent(r, inner)
            k = U.strip_casts(r) if r is not None else None
            if isinstance(k, N.Const) and isinstance(k.value, int) and k.value >= 0 and not _is_c(c, 1):
                plan.offsets.add(k.value)      # one fixed element of the row: staged under S > k
            elif ext is None or not (ext == c or (r is None and _is_c(c, 1)) or ext == U.strip_casts(c)):
                raise PassError(NAME, f"buffer '{b}' row access leaves the row of length {c}", loop, "XP4002")
            plan.row[b] = U.strip_casts(c)
    if set(plan.row) & set(plan.inv):
        raise PassError(NAME, "a buffer is both row-indexed and row-independent", loop, "XP4002")
    if not plan.row or not (plan.written & set(plan.row)):
        raise PassError(NAME, f"loop '{loop.var}' writes no row buffer", loop, "XP4002")
    plan.dtypes = {b: ptrs[b] for b in list(plan.row) + list(plan.inv)}
    # weights: a matrix-vector loop (one output element per row) keeps its row operand in WRAM;
    # a matrix-matrix loop keeps its row-independent operand in WRAM
    out_rows = [b for b in plan.written if b in plan.row]
    if all(_is_c(plan.row[b], 1) for b in out_rows):
        plan.wram = {b for b in plan.row if b not in plan.written}
        if len(plan.wram) != 1 or len(plan.inv) != 1:
            plan.wram = set()
    else:
        plan.wram = {b for b in plan.inv if _mult_operand(blk, b)
                     or (plan.dtypes[b] in ("float16", "bfloat16") and _widened_acc_operand(blk, b))}
        plan.widen = {b for b in plan.dtypes if plan.dtypes[b] == "bfloat16" and b not in plan.written
                      and _widened_acc_operand(blk, b) and _only_widened(blk, b)}
        # the int8 rhs of an integer contraction (patterns/bang_matmul_i8.py), whose fixed-point
        # __bang_matmul form needs NRAM scratch as large as the staged buffers
        from .bang_matmul_i8 import SCRATCH_BUFFERS, accumulated_int8_operands
        i8 = accumulated_int8_operands(blk, plan.dtypes) & set(plan.inv)
        if i8:
            plan.wram |= i8
            plan.scratch = SCRATCH_BUFFERS
    return plan


def _strip_batch(plan: RowPlan, ptrs: dict, bv: str, body: list) -> list:
    """Every global access ``P[bv*O + rest]`` (O free of every loop variable of the body and of
    the row variable) becomes ``P[rest]``; ``plan.boff[P] = O`` (None: the same matrix for every
    batch).  Raises PassError when an index is not linear in ``bv`` or the offsets differ."""
    loops = {plan.loop.var} | {l.var for s in body for l in walk(s) if isinstance(l, N.For)}
    seen = {}

    def strip(n):
        if not (isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in ptrs):
            return n
        b = n.base.name
        try:
            c, r = linear(n.index, bv)
        except ValueError:
            raise PassError(NAME, f"buffer '{b}' index is not linear in the batch '{bv}'", plan.loop, "XP4002")
        if c is not None and any(_mentions(c, v) for v in loops | {bv}):
            raise PassError(NAME, f"buffer '{b}' batch offset depends on a loop variable", plan.loop, "XP4002")
        key = repr(U.strip_casts(c)) if c is not None else None
        if b in seen and seen[b] != key:
            raise PassError(NAME, f"buffer '{b}' has two batch offsets", plan.loop, "XP4002")
        seen[b] = key
        plan.boff[b] = U.strip_casts(c) if c is not None else None
        return n.with_(index=r if r is not None else U.C(0))
    out = [rewrite(s, strip) for s in body]
    for s in out:
        for n in walk(s):
            if isinstance(n, N.Var) and n.name == bv:
                raise PassError(NAME, f"the batch '{bv}' is used outside a buffer offset", plan.loop, "XP4002")
    return out


def split_batched(func, loop: N.For):
    """``for t in [0, X*Y) { ... t / Y ... t % Y ... }`` (every use of t is ``t / Y`` or ``t % Y``)
    == ``for b in [0, X) { for i in [0, Y) { ...b ... i... } }`` when Y > 0 (then (t/Y, t%Y)
    enumerates [0, X) x [0, Y) in order; X <= 0 runs neither).  Returns (X, Y, b, inner loop with
    the body's lets inlined) or None."""
    if not (_is_c(loop.lo, 0) and _is_c(loop.step, 1)):
        return None
    hi = U.strip_casts(loop.hi)
    if not (isinstance(hi, N.BinOp) and hi.op == "*"):
        return None
    t = loop.var
    body = U.inline_lets(loop.body.stmts)
    assigned = U.assigned_names(N.Block(tuple(body)))
    for X, Y in ((hi.lhs, hi.rhs), (hi.rhs, hi.lhs)):
        Ys = U.strip_casts(Y)
        if not isinstance(Ys, (N.Var, N.Const)) or (isinstance(Ys, N.Var) and Ys.name in assigned):
            continue
        if any(isinstance(n, N.Var) and n.name in assigned for n in walk(X)):
            continue
        bv, iv = U.fresh(func, f"{t}_b"), U.fresh(func, f"{t}_i")

        def split(n):
            if isinstance(n, N.BinOp) and n.op in ("/", "%") and U.is_var(U.strip_casts(n.lhs), t) \
                    and U.strip_casts(n.rhs) == Ys:
                return N.Var(bv if n.op == "/" else iv)
            return n
        new = [rewrite(s, split) for s in body]
        if any(isinstance(n, N.Var) and n.name == t for s in new for n in walk(s)):
            continue
        if not any(isinstance(n, N.Var) and n.name == bv for s in new for n in walk(s)):
            continue
        inner = N.For(iv, U.C(0), Ys, U.C(1), N.Block(tuple(new)), binding=loop.binding,
                      var_type=N.Scalar("int32", "int"), loc=loop.loc)
        return X, Ys, bv, inner
    return None


def analyse_batched(program, func, loop: N.For) -> RowPlan:
    """Row plan of a batched contraction: per batch, a row loop over Y rows."""
    sp = split_batched(func, loop)
    if sp is None:
        raise PassError(NAME, f"loop '{loop.var}' is not a batch x rows loop", loop, "XP4002")
    X, Y, bv, inner = sp
    plan = analyse_rows(program, func, inner, batch=bv, body=list(inner.body.stmts))
    plan.batch = (bv, X)
    plan.outer = loop
    return plan


def _mult_operand(blk, b) -> bool:
    for n in walk(blk):
        if isinstance(n, N.BinOp) and n.op == "*":
            for s in (n.lhs, n.rhs):
                if isinstance(s, N.Index) and isinstance(s.base, N.Var) and s.base.name == b:
                    return True
    return False


def _widened(e):
    """``(float)X`` -> X (the operand of an exact widening to float), else None."""
    if isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype == "float32":
        return e.expr
    return None


def _widened_acc_operand(blk, b) -> bool:
    """``b`` (a half buffer) is read widened to float in an accumulated product
    (``acc += (float)A[..] * (float)b[..]``): the rhs of a half x half -> float contraction.
    Only accumulations count, so a half scale factor (``y = x * (float)g[j]``) stays in NRAM."""
    for n in walk(blk):
        a = _acc_of(n, None) if isinstance(n, N.Assign) else None
        if a is None:
            continue
        for s in (a[1], a[2]):
            w = _widened(s)
            if isinstance(w, N.Index) and isinstance(w.base, N.Var) and w.base.name == b:
                return True
    return False


def _only_widened(blk, b) -> bool:
    """Every read of ``b`` in ``blk`` is ``(float)b[..]``."""
    reads = [n for n in walk(blk) if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name == b]
    widened = [w for n in walk(blk) if (w := _widened(n)) is not None and isinstance(w, N.Index)
               and isinstance(w.base, N.Var) and w.base.name == b]
    return bool(reads) and len(reads) == len(widened)


def staged_dtype(plan: RowPlan, b: str) -> str:
    """The element type of ``b``'s staged buffer: float for a widened bfloat16 operand."""
    return "float32" if b in plan.widen else plan.dtypes[b]


def pick_caps(program, func, plan: RowPlan, rows="auto") -> dict:
    """Elements per staged buffer. A widened bfloat16 buffer takes one more NRAM share: the
    bfloat16 copy it is converted from (rows: as many elements as the buffer; the WRAM operand:
    ``caps["<b>@chunk"]`` elements of bfloat16 and of float, converted chunk by chunk)."""
    nram_have = U.static_bytes(program, func, "nram")
    wram_have = U.static_bytes(program, func, "wram")
    nb = [b for b in plan.dtypes if b not in plan.wram]
    wb = [b for b in plan.dtypes if b in plan.wram]
    caps = {}
    nbudget = (U.NRAM_BYTES * 3 // 4 - nram_have) // max(1, len(nb) + plan.scratch + len(plan.widen))
    wbudget = (U.WRAM_BYTES * 3 // 4 - wram_have) // max(1, len(wb))
    for b in nb:
        caps[b] = _pow2_floor(nbudget // U.ELEM_BYTES[staged_dtype(plan, b)])
    for b in wb:
        caps[b] = _pow2_floor(wbudget // U.ELEM_BYTES[staged_dtype(plan, b)])
        if b in plan.widen:
            caps[b + "@chunk"] = _pow2_floor(nbudget // (U.ELEM_BYTES["bfloat16"] + U.ELEM_BYTES["float32"]))
    for b, c in caps.items():
        if c < 32:
            raise PassError(NAME, f"staging buffer '{b}' does not fit on chip", plan.loop)
    if rows not in (None, "auto"):
        plan.rows_max = int(rows)
    return caps


def _pow2_floor(x: int) -> int:
    p = 1
    while p * 2 <= x:
        p *= 2
    return p


# ------------------------------------------------------------------------------ staging rewrite
def stage_rows(program, func, plan: RowPlan, caps: dict) -> N.Func:
    loop = plan.loop
    i = loop.var
    r0 = U.fresh(func, f"{i}_r")
    rn = U.fresh(func, f"{i}_n")
    rb = U.fresh(func, f"{i}_rows")
    names = {b: U.fresh(func, f"{b}_{'wram' if b in plan.wram else 'nram'}") for b in plan.dtypes}
    decls = [N.Decl(names[b], N.Array(N.Scalar(staged_dtype(plan, b)), (U.C(caps[b]),)),
                    scope="wram" if b in plan.wram else "nram") for b in plan.dtypes]
    # a widened bfloat16 operand: its bfloat16 copy in NRAM (the WRAM operand: a chunk of it and the
    # chunk widened, on its way to WRAM)
    raw = {b: U.fresh(func, f"{b}_bf16") for b in sorted(plan.widen)}
    wide = {b: U.fresh(func, f"{b}_f32") for b in sorted(plan.widen) if b in plan.wram}
    for b in sorted(plan.widen):
        n = caps[b + "@chunk"] if b in plan.wram else caps[b]
        decls.append(N.Decl(raw[b], N.Array(N.Scalar("bfloat16"), (U.C(n),)), scope="nram"))
        if b in wide:
            decls.append(N.Decl(wide[b], N.Array(N.Scalar("float32"), (U.C(n),)), scope="nram"))

    def widen_loop(dst, src, count):
        """for (t = 0; t < count; ++t) dst[t] = (float)src[t]; (exact: a bfloat16 is a float's upper half)"""
        t = U.fresh(func, "xw")
        return N.For(t, U.C(0), count, U.C(1), N.Block((N.Assign(N.Index(N.Var(dst), N.Var(t)), "=", N.Cast(
            N.Scalar("float32", "float"), N.Index(N.Var(src), N.Var(t)))),)), var_type=N.Scalar("int32", "int"))

    def restage(n):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in names:
            return N.Index(N.Var(names[n.base.name]), n.index, loc=n.loc)
        return n
    body = [rewrite(s, restage) for s in plan.body]
    from ..cache import _subst_index_value
    staged_body = N.Block(tuple(body))
    # i stays the row index inside the block for the staged accesses; its other uses (none in
    # a pure row loop) would need the global row: substitute them explicitly
    staged_body = _subst_outside_staged(staged_body, i, N.BinOp("+", N.Var(r0), N.Var(i)), set(names.values()))
    inner = N.For(i, U.C(0), N.Var(rn), U.C(1), staged_body, var_type=N.Scalar("int32", "int"), loc=loop.loc)

    def sz(b, count):
        return N.BinOp("*", count, U.sizeof(plan.dtypes[b]))
    dir_in = {b: ("GDRAM2WRAM" if b in plan.wram else "GDRAM2NRAM") for b in plan.dtypes}
    def base(b):
        # the batch's matrix of b (batched contractions), else b itself
        if plan.batch is None or plan.boff.get(b) is None:
            return N.Var(b)
        # the offset is formed in 64 bits like the source's pointer arithmetic may be
        return N.BinOp("+", N.Var(b), U.mul(N.Cast(N.Scalar("int64", "long"), N.Var(plan.batch[0])), plan.boff[b]))
    per_block = [U.int_decl(rn, N.Intrinsic("min", (N.Var(rb), N.BinOp("-", loop.hi, N.Var(r0)))))]
    for b, S in plan.row.items():
        per_block.append(U.call("__memcpy", N.Var(raw.get(b, names[b])), N.BinOp("+", base(b), U.mul(N.Var(r0), S)),
                                sz(b, U.mul(N.Var(rn), S)), N.Var(dir_in[b])))
        if b in plan.widen:
            per_block.append(widen_loop(names[b], raw[b], U.mul(N.Var(rn), S)))
    per_block.append(inner)
    for b, S in plan.row.items():
        if b in plan.written:
            per_block.append(U.call("__memcpy", N.BinOp("+", base(b), U.mul(N.Var(r0), S)), N.Var(names[b]),
                                    sz(b, U.mul(N.Var(rn), S)), N.Var("NRAM2GDRAM")))
    rows_expr = None
    for b, S in plan.row.items():
        q = N.BinOp("/", U.C(caps[b]), S) if not _is_c(S, 1) else U.C(caps[b])
        rows_expr = q if rows_expr is None else N.Intrinsic("min", (rows_expr, q))
    if loop.binding == "taskId":
        # spread the rows over the tasks before filling the buffers
        share = N.BinOp("/", N.BinOp("+", N.BinOp("-", loop.hi, loop.lo), N.BinOp("-", N.Builtin("taskDim"), U.C(1))),
                        N.Builtin("taskDim"))
        rows_expr = N.Intrinsic("max", (U.C(1), N.Intrinsic("min", (rows_expr, share))))
    if getattr(plan, "rows_max", None):
        rows_expr = N.Intrinsic("min", (rows_expr, U.C(plan.rows_max)))
    block_loop = N.For(r0, loop.lo, loop.hi, N.Var(rb), N.Block(tuple(per_block)), binding=loop.binding,
                       var_type=N.Scalar("int32", "int"), loc=loop.loc)
    staged = [U.int_decl(rb, rows_expr)]
    per_batch = []
    for b, ext in plan.inv.items():
        if b in wide:
            # GDRAM -> NRAM (bfloat16) -> NRAM (float) -> WRAM, one chunk at a time
            ch = caps[b + "@chunk"]
            x0, xn = U.fresh(func, f"{b}_c"), U.fresh(func, f"{b}_cn")
            body_c = [U.int_decl(xn, N.Intrinsic("min", (U.C(ch), N.BinOp("-", ext, N.Var(x0))))),
                      U.call("__memcpy", N.Var(raw[b]), N.BinOp("+", base(b), N.Var(x0)), sz(b, N.Var(xn)),
                             N.Var("GDRAM2NRAM")),
                      widen_loop(wide[b], raw[b], N.Var(xn)),
                      U.call("__memcpy", N.BinOp("+", N.Var(names[b]), N.Var(x0)), N.Var(wide[b]),
                             N.BinOp("*", N.Var(xn), U.sizeof("float32")), N.Var("NRAM2WRAM"))]
            per_batch.append(N.For(x0, U.C(0), ext, U.C(ch), N.Block(tuple(body_c)),
                                   var_type=N.Scalar("int32", "int"), loc=loop.loc))
        elif b in plan.widen:
            per_batch.append(U.call("__memcpy", N.Var(raw[b]), base(b), sz(b, ext), N.Var(dir_in[b])))
            per_batch.append(widen_loop(names[b], raw[b], ext))
        else:
            per_batch.append(U.call("__memcpy", N.Var(names[b]), base(b), sz(b, ext), N.Var(dir_in[b])))
    per_batch.append(block_loop)
    if plan.batch is None:
        staged += per_batch
    else:
        # one batch after the other; every task stages the batch's shared operand
        staged.append(N.For(plan.batch[0], U.C(0), plan.batch[1], U.C(1), N.Block(tuple(per_batch)),
                            var_type=N.Scalar("int32", "int"), loc=loop.loc))
    conds = []
    for b, S in plan.row.items():
        conds.append(N.BinOp("<=", S, U.C(caps[b])))
    for b, ext in plan.inv.items():
        conds.append(N.BinOp("<=", ext, U.C(caps[b])))
    for k in sorted(plan.offsets):
        for S in {repr(S): S for S in plan.row.values()}.values():
            conds.append(N.BinOp(">", S, U.C(k)))
    if plan.batch is not None:
        conds.append(N.BinOp(">", loop.hi, U.C(0)))     # (t / Y, t % Y) enumerates batch x rows
    cond = conds[0]
    for c in conds[1:]:
        cond = N.BinOp("&&", cond, c)
    orig = plan.outer if plan.outer is not None else loop
    guard = N.If(cond, N.Block(tuple(staged)), N.Block((orig,)), loc=loop.loc)
    new_body = U.replace_stmt(func.body, orig, [guard])
    return func.with_(body=new_body.with_(stmts=tuple(decls) + new_body.stmts))


def _subst_outside_staged(body, var, value, staged):
    """Uses of the row variable outside staged-buffer indices become the global row."""
    def inside(n, stack):
        return any(isinstance(x, N.Index) and isinstance(x.base, N.Var) and x.base.name in staged for x in stack)

    from dataclasses import fields, replace

    def rec(n, stack):
        if isinstance(n, N.Var) and n.name == var and not inside(n, stack):
            return value
        if not isinstance(n, N.Node):
            return n
        ch = {}
        for f in fields(n):
            if f.name == "loc":
                continue
            v = getattr(n, f.name)
            if isinstance(v, N.Node):
                nv = rec(v, stack + [n])
                if nv is not v:
                    ch[f.name] = nv
            elif isinstance(v, tuple):
                nv = tuple(rec(x, stack + [n]) if isinstance(x, N.Node) else x for x in v)
                if any(a is not b for a, b in zip(nv, v)):
                    ch[f.name] = nv
        return replace(n, **ch) if ch else n
    return rec(body, [])


# ------------------------------------------------------------------------------ tensorize: matmul / mlp
def _acc_of(s, var_idx):
    """``X[idx] += P * Q`` or ``acc += P * Q`` -> (target, P, Q) or None."""
    if isinstance(s, N.Assign) and s.op == "+=" and isinstance(s.value, N.BinOp) and s.value.op == "*":
        return s.target, s.value.lhs, s.value.rhs
    if isinstance(s, N.Assign) and s.op == "=" and isinstance(s.value, N.BinOp) and s.value.op == "+" \
            and s.value.lhs == s.target and isinstance(s.value.rhs, N.BinOp) and s.value.rhs.op == "*":
        return s.target, s.value.rhs.lhs, s.value.rhs.rhs
    return None


def _only(stmts):
    stmts = [s for s in stmts if not isinstance(s, N.Comment)]
    return stmts


def _idx(e, buf_scope: dict):
    e = U.strip_casts(e)
    if isinstance(e, N.Index) and isinstance(e.base, N.Var) and e.base.name in buf_scope:
        return e.base.name, e.index
    return None, None


def _lin2(e, v1, v2):
    """e == v1*c1 + v2*c2 exactly: (c1, c2) (None for 0)."""
    try:
        c1, r = linear(e, v1)
        if r is None:
            return c1, None
        c2, r2 = linear(r, v2)
    except ValueError:
        return None
    if r2 is not None and not _is_c(r2, 0):
        return None
    return c1, c2


def _eq(a, b):
    if a is None or b is None:
        return False
    return U.strip_casts(a) == U.strip_casts(b)


def _zero_loop(s, j, Cb, i, N_, scopes):
    """for j < N: C[i*N + j] = 0"""
    if not (isinstance(s, N.For) and s.binding is None and _is_c(s.lo, 0) and _is_c(s.step, 1) and _eq(s.hi, N_)):
        return False
    b = _only(s.body.stmts)
    if len(b) != 1 or not isinstance(b[0], N.Assign) or b[0].op != "=":
        return False
    if not (isinstance(b[0].value, N.Const) and b[0].value.value == 0):
        return False
    name, ix = _idx(b[0].target, scopes)
    if name != Cb:
        return False
    c = _lin2(ix, i, s.var)
    return c is not None and _eq(c[0], N_) and _is_c(c[1], 1)


def match_matmul(loop: N.For, scopes: dict, lets: dict):
    """The matmul / mlp description over ``loop`` (the row loop over staged buffers)."""
    if loop.binding is not None or not _is_c(loop.lo, 0) or not _is_c(loop.step, 1):
        return None
    i = loop.var
    stmts = _only(U.inline_lets(loop.body.stmts))
    # form (c) mlp: acc = 0; for k<K: acc += W[i*K+k] * x[k]; y[i] = acc
    if len(stmts) == 3 and isinstance(stmts[0], N.Decl) and isinstance(stmts[1], N.For) \
            and isinstance(stmts[2], N.Assign):
        acc = stmts[0].name
        if not (isinstance(stmts[0].init, N.Const) and stmts[0].init.value == 0):
            return None
        kl = stmts[1]
        kb = _only(kl.body.stmts)
        if len(kb) != 1 or not (_is_c(kl.lo, 0) and _is_c(kl.step, 1)) or kl.binding is not None:
            return None
        a = _acc_of(kb[0], None)
        if a is None or not (isinstance(a[0], N.Var) and a[0].name == acc):
            return None
        st = stmts[2]
        if not (st.op == "=" and isinstance(st.value, N.Var) and st.value.name == acc):
            return None
        yb, yi = _idx(st.target, scopes)
        if yb is None or not U.is_var(yi, i):
            return None
        k, K = kl.var, kl.hi
        for P, Q in ((a[1], a[2]), (a[2], a[1])):
            wb, wi = _idx(P, scopes)
            xb, xi = _idx(Q, scopes)
            if wb is None or xb is None:
                continue
            cw = _lin2(wi, i, k)
            if cw is None or not _eq(cw[0], K) or not _is_c(cw[1], 1) or not U.is_var(xi, k):
                continue
            if scopes[wb] == "wram" and scopes[xb] == "nram" and scopes[yb] == "nram":
                return ("__bang_mlp", (N.Var(yb), N.Var(xb), N.Var(wb), K, loop.hi), (yb, xb, wb))
        return None
    # form (a): for j<N: C[i*N+j] = 0; for k<K: for j<N: C[i*N+j] += A[i*K+k] * B[k*N+j]
    if len(stmts) == 2 and isinstance(stmts[0], N.For) and isinstance(stmts[1], N.For):
        kl = stmts[1]
        kb = _only(kl.body.stmts)
        if len(kb) != 1 or not isinstance(kb[0], N.For) or kl.binding is not None or not (
                _is_c(kl.lo, 0) and _is_c(kl.step, 1)):
            return None
        jl = kb[0]
        jb = _only(U.inline_lets(jl.body.stmts))
        if len(jb) != 1 or jl.binding is not None or not (_is_c(jl.lo, 0) and _is_c(jl.step, 1)):
            return None
        a = _acc_of(jb[0], None)
        if a is None:
            return None
        k, j, K, N_ = kl.var, jl.var, kl.hi, jl.hi
        cb, ci = _idx(a[0], scopes)
        if cb is None:
            return None
        cc = _lin2(ci, i, j)
        if cc is None or not _eq(cc[0], N_) or not _is_c(cc[1], 1):
            return None
        if not _zero_loop(stmts[0], stmts[0].var, cb, i, N_, scopes):
            return None
        return _mm_operands(a, i, k, j, K, N_, cb, scopes, loop)
    # form (b): for j<N { acc = 0; for k<K: acc += A[i*K+k]*B[k*N+j]; C[i*N+j] = acc }
    if len(stmts) == 1 and isinstance(stmts[0], N.For):
        jl = stmts[0]
        jb = _only(jl.body.stmts)
        if len(jb) != 3 or not isinstance(jb[0], N.Decl) or not isinstance(jb[1], N.For) or \
                not isinstance(jb[2], N.Assign) or jl.binding is not None:
            return None
        if not (isinstance(jb[0].init, N.Const) and jb[0].init.value == 0):
            return None
        kl = jb[1]
        kb = _only(kl.body.stmts)
        if len(kb) != 1 or kl.binding is not None or not (_is_c(kl.lo, 0) and _is_c(kl.step, 1)):
            return None
        a = _acc_of(kb[0], None)
        if a is None or not (isinstance(a[0], N.Var) and a[0].name == jb[0].name):
            return None
        st = jb[2]
        if not (st.op == "=" and isinstance(st.value, N.Var) and st.value.name == jb[0].name):
            return None
        k, j, K, N_ = kl.var, jl.var, kl.hi, jl.hi
        cb, ci = _idx(st.target, scopes)
        if cb is None:
            return None
        cc = _lin2(ci, i, j)
        if cc is None or not _eq(cc[0], N_) or not _is_c(cc[1], 1):
            return None
        return _mm_operands(a, i, k, j, K, N_, cb, scopes, loop, acc_dtype=U.scalar_dtype(jb[0].type))
    return None


def _mm_operands(a, i, k, j, K, N_, cb, scopes, loop, acc_dtype=None):
    """The matmul of the accumulated product ``a`` (target, P, Q); a fourth element says whether
    both operands are widened to float (``(float)A[..] * (float)B[..]``), with ``acc_dtype`` the
    scalar accumulator's type (None: the sum runs in C itself)."""
    for P, Q in ((a[1], a[2]), (a[2], a[1])):
        wp, wq = _widened(P), _widened(Q)
        widened = wp is not None and wq is not None
        if widened:
            P, Q = wp, wq
        ab, ai = _idx(P, scopes)
        bb, bi = _idx(Q, scopes)
        if ab is None or bb is None:
            continue
        ca, cbb = _lin2(ai, i, k), _lin2(bi, k, j)
        if ca is None or cbb is None:
            continue
        if _eq(ca[0], K) and _is_c(ca[1], 1) and _eq(cbb[0], N_) and _is_c(cbb[1], 1):
            if scopes[ab] == "nram" and scopes[bb] == "wram" and scopes[cb] == "nram":
                return ("__bang_matmul", (N.Var(cb), N.Var(ab), N.Var(bb), loop.hi, K, N_), (cb, ab, bb),
                        (widened, acc_dtype))
    return None


def matmul_sites(program, func, ops=None):
    bufs = U.buffer_decls(func, program)
    scopes = {b: d.scope for b, d in bufs.items()}
    lets = U.decl_lets(func)
    sites = []
    for loop in [n for n in walk(func.body) if isinstance(n, N.For)]:
        if any(loop is s[0] or any(loop is x for x in walk(s[0])) for s in sites):
            continue
        m = match_matmul(loop, scopes, lets)
        if m is None or (ops and m[0] not in ops):
            continue
        dts = [U.scalar_dtype(bufs[b].type.elem) for b in m[2]]      # C, A, B
        widened, acc = m[3] if len(m) > 3 else (False, None)
        if widened and dts == ["float32"] * 3:
            # float buffers read through (float): the cache pass's widened bfloat16 operands
            # (the cast of a float is the float): the float form, a float accumulator only
            if acc not in (None, "float32"):
                continue
        elif widened:
            # (float dst, half, half): half x half products are exact in float and the sums are
            # float, as in the loop; a float accumulator into a float C only
            if dts != ["float32", "float16", "float16"] or acc not in (None, "float32"):
                continue
        elif set(dts) != {"float32"} and set(dts) != {"float16"}:
            continue
        sites.append((loop, U.call(m[0], *m[1]).with_(loc=loop.loc)))
    return sites
