"""Matmul-like loop nests on cuda/hip: recognition (a *contraction*) and the tiled kernels
the cache / pipeline / tensorize passes write for it.

A contraction is what a bound loop nest computes, independent of how it was written::

    for b < BATCH, i < M, j < N:   C[c(b,i,j)] = sum_{k < K} opA(A[a(b,i,k)]) * opB(B[g(b,k,j)])

with ``a``, ``g``, ``c`` affine in the loop variables (coefficients: expressions over kernel
parameters), the sum taken in increasing ``k`` starting from zero.  Recognised spellings
(after let-inlining and ``(P + off)[j] -> P[off + j]``):

* i-k-j (what ``binding`` makes of examples/gemm/gemm.c): ``for i (bound) { for j: C[..] = 0;
  for k: for j: C[..] += x * y; }``;
* i-j with a scalar accumulator: ``for i { for j { acc = 0; for k: acc += x * y; C[..] = acc; } }``
  (i and j bound to global.y/global.x, or only i bound, j sequential);
* a flattened batch loop ``for t < X * E`` whose body uses only ``t / E`` and ``t % E``
  (examples/bmm/bmm.c): ``b = t / E`` ranges over X, ``i = t % E`` over E.

Emitted kernels (all guard every global access; padding is zero, so the sums are unchanged):

* :func:`tiled_body`  — TxT threads per block, one output element per thread, A and B tiles
  staged in ``__shared__`` (LDS on hip) with zero fill, ``__syncthreads`` around the inner
  product; ``double=True`` keeps two buffers and loads tile t+1 while computing tile t;
* :func:`mfma_body`   — hip, float32: one wave64 per 16x16 output tile,
  ``__builtin_amdgcn_mfma_f32_16x16x4f32`` with lane l supplying A[i][g] / B[g][i]
  (i = l % 16, g = l / 16) and holding D[4g+e][i] in element e (half, int8 and bfloat16 operands:
  the 16x16x16 forms); under ``#if XP_USE_MFMA``, with
  per-lane sums from the shared tiles for the architectures without MFMA (:mod:`.mfma_variant`);
* :func:`wmma_body`   — cuda, half inputs / float accumulate: one warp per 16x16 output tile,
  16x16x16 fragments over zero-padded shared tiles, the accumulator stored through shared
  memory so that only in-range elements of C are written.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from . import common as U
from . import mfma_variant as MV
from . import simt_orient as SO

SIMT_BOUND = ("global.x", "global.y", "global.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
              "threadIdx.x", "threadIdx.y", "threadIdx.z")
PREFIX = "xp_"


class NotMatmul(Exception):
    """The nest is not a contraction (``node`` is where it stopped matching)."""

    def __init__(self, why, node=None, illegal=False):
        super().__init__(why)
        self.why, self.node, self.illegal = why, node, illegal


@dataclass
class Contraction:
    func: N.Func
    root: N.Stmt                     # the statement (outer bound loop) the kernel computes
    prelude: list                    # uniform statements before it (kept)
    M: N.Expr
    N_: N.Expr
    K: N.Expr
    batch: Optional[N.Expr]          # extent of the batch dimension, or None
    C: str
    c_idx: N.Expr                    # over the placeholder vars xp_b, xp_i, xp_j
    A: str
    a_idx: N.Expr                    # over xp_b, xp_i, xp_k
    B: str
    b_idx: N.Expr                    # over xp_b, xp_k, xp_j
    op_a: N.Expr                     # the operand expression with the load replaced by Var(xp_ALOAD)
    op_b: N.Expr
    dtypes: dict = field(default_factory=dict)   # {"A":..., "B":..., "C":...}
    acc_dtype: str = "float32"
    per_row: bool = False            # C[b,i,j] = sum_k A[b,i,k] * B[b,i,k,j] (B also uses i): rowvec_body

    @property
    def elem(self) -> str:
        return self.dtypes["A"]


# ------------------------------------------------------------------------------ affine analysis
def degree(e, loopvars: set) -> int:
    """Polynomial degree of an integer index expression in ``loopvars``; 99 = not polynomial
    (a loop variable under / or %, in a call, a load...)."""
    e = U.strip_casts(e)
    if isinstance(e, N.Var):
        return 1 if e.name in loopvars else 0
    if isinstance(e, (N.Const, N.SizeOf)):
        return 0
    if isinstance(e, N.BinOp):
        a, b = degree(e.lhs, loopvars), degree(e.rhs, loopvars)
        if e.op in ("+", "-"):
            return max(a, b)
        if e.op == "*":
            return a + b
        if e.op in ("/", "%", "<<", ">>") and a == 0 and b == 0:
            return 0
        return 99
    if isinstance(e, N.UnOp) and e.op in ("-", "+"):
        return degree(e.operand, loopvars)
    if any(isinstance(n, N.Var) and n.name in loopvars for n in walk(e)):
        return 99
    return 0


def uses(e, names) -> set:
    return {n.name for n in walk(e) if isinstance(n, N.Var) and n.name in names}


# ------------------------------------------------------------------------------ recognition
def _strip_block(stmts):
    return [s for s in stmts if not isinstance(s, (N.Comment, N.Pragma))]


def _body(loop) -> list:
    return _strip_block(U.inline_lets(loop.body.stmts))


def _product(e, kvar):
    """(x, y) when e is x * y (possibly parenthesised / cast to the accumulator type)."""
    while isinstance(e, N.Cast):
        e = e.expr
    if isinstance(e, N.BinOp) and e.op == "*":
        return e.lhs, e.rhs
    raise NotMatmul("the accumulated value is not a product")


def _load_of(e, ptrs):
    """The one global load inside an operand expression (casts / conversions around it)."""
    loads = [n for n in walk(e) if isinstance(n, N.Index)]
    if len(loads) != 1 or not isinstance(loads[0].base, N.Var) or loads[0].base.name not in ptrs:
        raise NotMatmul("a product operand is not one global load")
    return loads[0]


def _accumulate(st, target_ok):
    """The product of ``t += x*y`` / ``t = t + x*y``; None if st is not such an update."""
    if not isinstance(st, N.Assign):
        return None
    if st.op == "+=" and target_ok(st.target):
        return st.value
    if st.op == "=" and target_ok(st.target) and isinstance(st.value, N.BinOp) and st.value.op == "+" \
            and st.value.lhs == st.target:
        return st.value.rhs
    return None


def _wrapped_store(e, acc, acc_dtype):
    """``(int32_t)acc`` with a ``uint32_t`` accumulator: an integer sum kept unsigned so that its
    wrap-around is defined (``lowering/x86_dot_sum.py``), stored into int32. The kernels store
    ``acc`` itself into the int32 element, the same conversion (modulo 2^32)."""
    return isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype == "int32" \
        and isinstance(e.expr, N.Var) and e.expr.name == acc and acc_dtype == "uint32"


def _is_zero(e):
    while isinstance(e, N.Cast):
        e = e.expr
    return isinstance(e, N.Const) and e.value == 0


def _single_for(stmts):
    if len(stmts) == 1 and isinstance(stmts[0], N.For):
        return stmts[0]
    return None


def _unit_loop(loop):
    return isinstance(loop, N.For) and _is_zero(loop.lo) and isinstance(loop.step, N.Const) and loop.step.value == 1


def analyse(program: N.Program, func: N.Func, wider: bool = False) -> Contraction:
    """The contraction the kernel's bound loop nest computes (NotMatmul when it is none).

    ``wider`` (the cache pass): also the row-split form (leading column loops that only the row
    operand and the result use join the rows: NHWC convolutions) and the per-row form
    (``per_row``: the row operand has no column index, the other one uses the row: depthwise)."""
    ptrs = U.pointer_params(func)
    stmts = _strip_block(func.body.stmts)
    roots = [s for s in stmts if isinstance(s, N.For) and s.binding in SIMT_BOUND]
    if len(roots) != 1:
        raise NotMatmul("no single bound loop nest", func)
    root = roots[0]
    k = stmts.index(root)
    prelude, after = stmts[:k], stmts[k + 1:]
    if after and not all(isinstance(s, N.Return) and s.value is None for s in after):
        raise NotMatmul("statements after the bound loop", after[0])
    for s in prelude:
        if not (isinstance(s, N.Decl) and (isinstance(s.type, N.Scalar) or s.scope == "shared")):
            raise NotMatmul("a non-scalar statement before the bound loop", s)
    if not _unit_loop(root):
        raise NotMatmul("the bound loop does not start at 0 with step 1", root)
    outer = root
    # ---- batch flattening: t < X * E with b = t / E, i = t % E
    body = _body(outer)
    sub, batch, flat_rows = {}, None, False
    divs = [n for n in walk(N.Block(tuple(body))) if isinstance(n, N.BinOp) and n.op in ("/", "%")
            and U.is_var(n.lhs, outer.var)]
    if divs:
        hi = U.strip_casts(outer.hi)
        if wider and isinstance(hi, N.Var):
            # the extent is a local of the prelude (``long total = N * Ho * Wo * Cout;``) never assigned
            d = next((d for d in prelude if isinstance(d, N.Decl) and d.name == hi.name and d.init is not None), None)
            if d is not None and not any(isinstance(n, N.Assign) and U.is_var(n.target, hi.name) for n in walk(func)):
                hi = U.strip_casts(d.init)
        E = divs[0].rhs
        if not (isinstance(hi, N.BinOp) and hi.op == "*" and U.strip_casts(hi.rhs) == U.strip_casts(E)) \
                or any(U.strip_casts(d.rhs) != U.strip_casts(E) for d in divs):
            if not wider:
                raise NotMatmul(f"loop '{outer.var}' is split by / and % in a way that is not a batch x rows "
                                f"product", outer, illegal=True)
            # flat rows (wider): the loop index itself is the row, taken apart by / and % inside the
            # operand / result indices (one output pixel per row of a flat n*Ho*Wo loop)
            divs, flat_rows = [], True
        else:
            batch, M = hi.lhs, E
    if divs:

        def split(n):
            if isinstance(n, N.BinOp) and n.op in ("/", "%") and U.is_var(n.lhs, outer.var):
                return N.Var(PREFIX + ("b" if n.op == "/" else "i"))
            return n
        body = [rewrite(s, split) for s in body]
        # any other use of t is t itself: t == (t / E) * E + t % E for t >= 0
        whole = N.BinOp("+", N.BinOp("*", N.Var(PREFIX + "b"), E), N.Var(PREFIX + "i"))
        body = [substitute(s, {outer.var: whole}) for s in body]
    else:
        M = outer.hi
        body = [substitute(s, {outer.var: N.Var(PREFIX + "i")}) for s in body]
    iv = {PREFIX + "b", PREFIX + "i"}
    cols, red = [], []          # flattened column / reduction loop nests (placeholder, extent)
    # ---- the j / k structure
    inner = _single_for(body)
    col_loops = None            # the source's column loops (i-j form), checked parallel by the wider forms
    flat_ij = wider and batch is not None and inner is None and 2 <= len(body) <= 3 and \
        isinstance(body[-1], N.Assign) and any(isinstance(s_, N.For) for s_ in body)
    if flat_ij:
        # one flat loop over rows x columns (one thread per output element: t < X * E with the row
        # t / E and the column t % E): the "batch" is the row, the "row" the column
        body = [substitute(s_, {PREFIX + "b": N.Var(PREFIX + "i"), PREFIX + "i": N.Var(PREFIX + "j")}) for s_ in body]
        M, batch, flat_rows = batch, None, True
    if (inner is not None and _unit_loop(inner)) or flat_ij:
        # i-j form with a scalar accumulator
        jloop = inner or outer
        cols, jb = _chain(jloop, "J") if inner is not None else ([], body)
        col_loops = _chain_vars(jloop) if inner is not None else []
        N_ = _extent(cols) or (jloop.hi if inner is not None else E)
        if len(jb) != 3 and not (len(jb) == 2 and isinstance(jb[0], N.Decl)):
            raise NotMatmul("the column loop is not 'acc = 0; for k: acc += x*y; C = acc'", jloop)
        first = jb[0]
        if isinstance(first, N.Decl) and isinstance(first.type, N.Scalar) and first.init is not None \
                and _is_zero(first.init):
            acc = first.name
            acc_dtype = first.type.dtype
        elif isinstance(first, N.Assign) and first.op == "=" and isinstance(first.target, N.Var) \
                and _is_zero(first.value):
            acc = first.target.name
            acc_dtype = next((d.type.dtype for d in walk(func) if isinstance(d, N.Decl) and d.name == acc
                              and isinstance(d.type, N.Scalar)), "float32")
        else:
            raise NotMatmul("the accumulator is not set to zero first", jloop)
        kloop, store = jb[1], jb[2] if len(jb) > 2 else None
        if not _unit_loop(kloop) or store is None:
            raise NotMatmul("no k loop followed by the store", jloop)
        red, kb = _chain(kloop, "R")
        prod = _accumulate(kb[0], lambda t: isinstance(t, N.Var) and t.name == acc) if len(kb) == 1 else None
        if prod is None:
            raise NotMatmul("the k loop is not 'acc += x * y'", kloop)
        if isinstance(store, N.Assign) and _wrapped_store(store.value, acc, acc_dtype):
            store = store.with_(value=store.value.expr)
        if not (isinstance(store, N.Assign) and store.op == "=" and isinstance(store.target, N.Index)
                and isinstance(store.value, N.Var) and store.value.name == acc):
            raise NotMatmul("the result is not stored as C[...] = acc", store)
        ctgt = store.target
        K = _extent(red) or kloop.hi
    else:
        # i-k-j form: for j: C = 0;  for k: for j: C += x*y
        if len(body) != 2 or not all(isinstance(s, N.For) and _unit_loop(s) for s in body):
            raise NotMatmul("the row loop body is neither 'for j' nor 'zero C row; for k for j'", outer)
        z, kloop = body
        zb = [substitute(s, {z.var: N.Var(PREFIX + "j")}) for s in _body(z)]
        if not (len(zb) == 1 and isinstance(zb[0], N.Assign) and zb[0].op == "=" and _is_zero(zb[0].value)
                and isinstance(zb[0].target, N.Index)):
            raise NotMatmul("the first column loop does not zero C", z)
        kb = [substitute(s, {kloop.var: N.Var(PREFIX + "k")}) for s in _body(kloop)]
        jl = _single_for(kb)
        if jl is None or not _unit_loop(jl) or U.strip_casts(jl.hi) != U.strip_casts(z.hi):
            raise NotMatmul("the k loop is not one column loop over the same columns", kloop)
        jb = [substitute(s, {jl.var: N.Var(PREFIX + "j")}) for s in _body(jl)]
        ctgt = zb[0].target
        prod = _accumulate(jb[0], lambda t: t == ctgt) if len(jb) == 1 else None
        if prod is None:
            raise NotMatmul("the column loop is not 'C[..] += x * y' on the zeroed element", jl)
        N_, K = z.hi, kloop.hi
        acc_dtype = ptrs.get(ctgt.base.name if isinstance(ctgt.base, N.Var) else "", "float32")
    if not (isinstance(ctgt, N.Index) and isinstance(ctgt.base, N.Var) and ctgt.base.name in ptrs):
        raise NotMatmul("the result is not stored into a global buffer", root)
    x, y = _product(prod, PREFIX + "k")
    lx, ly = _load_of(x, ptrs), _load_of(y, ptrs)
    chains = cols + red
    ph = {v for v, _ in chains}
    allv = {PREFIX + v for v in ("b", "i", "j", "k")} | ph
    for v, hi in chains:
        if uses(hi, allv):
            raise NotMatmul(f"the trip count of loop '{v}' depends on another loop of the nest", root)
    # flat rows: the row index enters through / and % (a pure function of the row, evaluated as
    # written by the tiled kernel); the other loop indices stay affine
    affine = allv - {PREFIX + "i"} if flat_rows else allv
    for ld, what in ((lx, "operand"), (ly, "operand"), (ctgt, "result")):
        if degree(ld.index, affine) > 1:
            raise NotMatmul(f"buffer '{ld.base.name}' is indexed by '{_txt(ld.index)}', not affine in the "
                            f"tiled loop indices", ld if ld.loc else root, illegal=True)
    kset = {PREFIX + "k"} | {v for v, _ in red}
    ux, uy, uc = uses(lx.index, allv), uses(ly.index, allv), uses(ctgt.index, allv)
    order, split, per_row = None, 0, False
    # p = 0: rows are the bound loop, columns every column loop (the plain i / j split); with
    # ``wider``, p > 0 moves the first p column loops to the rows (NHWC: the output pixel (n, ho, wo)
    # is the row, the output channel the column)
    for p in range(max(len(cols), 1) if wider else 1):
        iset = {PREFIX + "i"} | {v for v, _ in cols[:p]}
        jset = {PREFIX + "j"} | {v for v, _ in cols[p:]}
        if ux & iset and not ux & jset and uy & jset and not uy & iset:
            order, split = ((lx, x), (ly, y)), p
        elif uy & iset and not uy & jset and ux & jset and not ux & iset:
            order, split = ((ly, y), (lx, x)), p
        if order:
            break
    if order is None and wider:
        # per row (depthwise): a row operand A(i, k) without j times B(i, k, j); each row's A slice
        # is shared by all the row's columns
        iset, jset = {PREFIX + "i"}, {PREFIX + "j"} | {v for v, _ in cols}
        if ux & iset and not ux & jset and uy & jset:
            order, per_row = ((lx, x), (ly, y)), True
        elif uy & iset and not uy & jset and ux & jset:
            order, per_row = ((ly, y), (lx, x)), True
    if order is None:
        raise NotMatmul("the product is not row(i, k) x column(k, j)", root)
    if (split or per_row) and not {PREFIX + "i"} | ({v for v, _ in cols} or {PREFIX + "j"}) <= uc:
        raise NotMatmul("the result index does not use every row and column loop", root, illegal=True)
    if split or per_row:
        if col_loops is None:
            raise NotMatmul("the row-split / per-row forms are read from the i-j form only", root)
        _columns_parallel(program, func, root, [v for v, _ in col_loops])
    (la, oa), (lb, ob) = order
    if wider and not per_row:
        # the reduction loops in the order that makes an operand stride 1 along k, when the source's
        # makes none so (simt_orient: reassociates a float sum)
        red2 = SO.reduction_order(red, [la.index, lb.index], allv)
        if red2 != red:
            red, K = red2, _extent(red2)
    # innermost row / column loop variables of the result (before the renaming below): the
    # transposed reading when only the row is stride 1 in C (simt_orient)
    inner_row = cols[split - 1][0] if split else (None if flat_rows else PREFIX + "i")
    inner_col = cols[-1][0] if len(cols) > split else (PREFIX + "j" if not cols else None)
    swap = wider and not per_row and SO.transposed(ctgt.index, inner_row, inner_col, allv)
    # flattened row / column / reduction loops: the placeholders become / and % of xp_i / xp_j / xp_k
    flat, ren = {}, {}
    if split:
        rows = [(PREFIX + "iR", M)] + cols[:split]
        cols = cols[split:]
        M, N_ = _extent(rows), _extent(cols)
        ren = {PREFIX + "i": N.Var(PREFIX + "iR")}
        flat.update(_flatten(rows, N.Var(PREFIX + "i")))
    for tag, chain in (("j", cols), ("k", red)):
        flat.update(_flatten(chain, N.Var(PREFIX + tag)))
    if uses(ctgt.index, allv) & kset or not (uses(la.index, allv) | uses(lb.index, allv)) & kset:
        raise NotMatmul("the result index depends on k or the operands do not", root)
    names = {la.base.name, lb.base.name, ctgt.base.name}
    if len(names) != 3:
        raise NotMatmul("the result buffer is also an operand", root, illegal=True)
    # every other use of the loop variables is gone: nothing but the three accesses remains
    placeholder = N.Var(PREFIX + "LOAD")
    op_a = rewrite(oa, lambda n: placeholder if n is la else n)
    op_b = rewrite(ob, lambda n: placeholder if n is lb else n)
    for e in (op_a, op_b):
        if uses(e, allv):
            raise NotMatmul("a product operand uses a loop index outside its load", root)
    dts = {"A": ptrs[la.base.name], "B": ptrs[lb.base.name], "C": ptrs[ctgt.base.name]}

    def idx(e):
        return substitute(substitute(e, ren), flat)
    if swap:
        # C^T = B^T A^T: B's columns are the rows, A's rows the columns (each C element is the same sum)
        ij = {PREFIX + "i": N.Var(PREFIX + "j"), PREFIX + "j": N.Var(PREFIX + "i")}

        def tdx(e):
            return substitute(idx(e), ij)
        return Contraction(func, root, prelude, N_, M, K, batch, ctgt.base.name, tdx(ctgt.index),
                           lb.base.name, tdx(lb.index), la.base.name, tdx(la.index), op_b, op_a,
                           {"A": dts["B"], "B": dts["A"], "C": dts["C"]}, acc_dtype, per_row)
    return Contraction(func, root, prelude, M, N_, K, batch, ctgt.base.name, idx(ctgt.index),
                       la.base.name, idx(la.index), lb.base.name, idx(lb.index),
                       op_a, op_b, dts, acc_dtype, per_row)


def _chain(loop, tag):
    """The perfectly nested unit-stride loops starting at ``loop`` (each body a single loop, after
    let-inlining), for columns (``tag`` J) or the reduction (R): ([(placeholder, extent)], the
    innermost body with every loop variable replaced by its placeholder).  One loop is the plain
    ``xp_j`` / ``xp_k`` of the 2-D forms."""
    chain, cur = [], loop
    while True:
        chain.append(cur)
        body = _body(cur)
        nxt = _single_for(body)
        if nxt is None or not _unit_loop(nxt):
            break
        cur = nxt
    if len(chain) == 1:
        name = PREFIX + ("j" if tag == "J" else "k")
        return [], [substitute(s, {loop.var: N.Var(name)}) for s in _body(loop)]
    names = {lp.var: N.Var(f"{PREFIX}{tag}{n}") for n, lp in enumerate(chain)}
    out = [(f"{PREFIX}{tag}{n}", substitute(lp.hi, names)) for n, lp in enumerate(chain)]
    return out, [substitute(s, names) for s in _body(chain[-1])]


def _chain_vars(loop):
    """[(source loop variable, loop)] of the perfect unit-stride nest :func:`_chain` reads."""
    out, cur = [], loop
    while True:
        out.append((cur.var, cur))
        nxt = _single_for(_body(cur))
        if nxt is None or not _unit_loop(nxt):
            return out
        cur = nxt


def _columns_parallel(program, func, root, names):
    """The column loops become parallel threads in the wider forms: each of them (found by its
    variable below the bound loop) must carry no dependence in the source (passes/dependence.py),
    else NotMatmul (illegal)."""
    from .. import dependence as D
    for name in names:
        loop = next((n for n in walk(root) if isinstance(n, N.For) and n.var == name), None)
        dep = D.check_parallel(program, func, loop) if loop is not None else "not found"
        if dep is not None:
            raise NotMatmul(f"column loop '{name}' is not parallel in the source "
                            f"({getattr(dep, 'kind', dep)} dependence on '{getattr(dep, 'buffer', '?')}')", root, illegal=True)


def _extent(chain):
    """Trip count of the flattened chain (None for an empty chain)."""
    e = None
    for _, hi in chain:
        e = hi if e is None else N.BinOp("*", e, hi)
    return e


def _flatten(chain, flat: N.Var) -> dict:
    """placeholder -> its value from the flat index: x0 = f / (E1*...), x_n = f / (E_{n+1}*...) % E_n."""
    out = {}
    for n, (v, hi) in enumerate(chain):
        inner = _extent(chain[n + 1:])
        e = flat if inner is None else N.BinOp("/", flat, inner)
        out[v] = e if n == 0 else N.BinOp("%", e, hi)
    return out


def _txt(e) -> str:
    try:
        from xpiler.printers import printer_for
        return printer_for("c").expr(e)
    except Exception:     # pragma: no cover - diagnostics only
        return type(e).__name__


# ------------------------------------------------------------------------------ text emission
CTYPE = {"float32": "float", "float16": "half", "bfloat16": "__nv_bfloat16", "int32": "int", "int8": "int8_t",
         "uint8": "uint8_t", "int16": "short", "float64": "double", "uint32": "unsigned int"}


class Emit:
    def __init__(self, ct: Contraction, dialect: str):
        from xpiler.printers import printer_for
        self.ct, self.p = ct, printer_for(dialect)

    def e(self, expr, **vars_) -> str:
        m = {PREFIX + k: (N.Var(v if v.isidentifier() else f"({v})") if isinstance(v, str) else v)
             for k, v in vars_.items()}
        return self.p.expr(substitute(expr, m))

    def load(self, which, b, r, c, col=None) -> str:
        """The global element of A (r = row, c = k) or B (r = k, c = column; per-row form:
        r = row, c = k, col = column)."""
        ct = self.ct
        if which == "A":
            return f"{ct.A}[{self.e(ct.a_idx, b=b, i=r, k=c)}]"
        if col is not None:
            return f"{ct.B}[{self.e(ct.b_idx, b=b, i=r, k=c, j=col)}]"
        return f"{ct.B}[{self.e(ct.b_idx, b=b, k=r, j=c)}]"

    def op(self, which, value_text) -> str:
        op = self.ct.op_a if which == "A" else self.ct.op_b
        return self.p.expr(substitute(op, {PREFIX + "LOAD": N.Var(f"({value_text})")}))

    def ext(self, which) -> str:
        return self.p.expr({"M": self.ct.M, "N": self.ct.N_, "K": self.ct.K}[which], 11)


def _zero(dtype):
    return "__float2half(0.0f)" if dtype == "float16" else f"({CTYPE.get(dtype, dtype)})0"


def tiled_body(ct: Contraction, dialect: str, T: int, double: bool = False, dp4a: bool = False) -> str:
    """Shared-memory tiled kernel body (see module doc); threadIdx.x walks columns. ``dp4a``
    (cuda, 8-bit A x int8 B -> int32, T a multiple of 4): the inner product takes four k at a time
    with ``__dp4a`` on the bytes packed from the tiles (signed x signed, int32 sum); a uint8 A is
    staged as ``a - 128`` and ``128 * sum_k B[k][j]`` (the thread's column of the B tiles) is added
    back when storing, as in the hip MFMA form: exact modulo 2^32."""
    E = Emit(ct, dialect)
    ta, tb = CTYPE[ct.dtypes["A"]], CTYPE[ct.dtypes["B"]]
    acc_t = CTYPE[ct.acc_dtype]
    unsigned_a = dp4a and ct.dtypes["A"] == "uint8"
    if dp4a:
        ta = tb = "int8_t"
        acc_t = "int"
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    b = "xp_b" if ct.batch is not None else N.Const(0, "int32", "0")
    nbuf = 2 if double else 1
    L = [f"__shared__ {ta} xp_As[{nbuf * T * T}];", f"__shared__ {tb} xp_Bs[{nbuf * T * T}];",
         "const int xp_tx = threadIdx.x;", "const int xp_ty = threadIdx.y;"]
    head = len(L)
    L += [f"const int xp_i = blockIdx.y * {T} + xp_ty;", f"const int xp_j = blockIdx.x * {T} + xp_tx;",
          f"{acc_t} xp_acc = 0;"] + (["unsigned xp_cs = 0u;"] if unsigned_a else [])

    def stage(k0, buf):
        off = f"{buf} * {T * T} + " if double else ""
        la = E.load('A', b, 'xp_i', f'{k0} + xp_tx')
        if unsigned_a:
            la = f"(int8_t)((int){la} - 128)"
        return [f"xp_As[{off}xp_ty * {T} + xp_tx] = (xp_i < {Mx} && {k0} + xp_tx < {Kx}) ? "
                f"{la} : {'(int8_t)0' if dp4a else _zero(ct.dtypes['A'])};",
                f"xp_Bs[{off}xp_ty * {T} + xp_tx] = ({k0} + xp_ty < {Kx} && xp_j < {Nx}) ? "
                f"{E.load('B', b, f'{k0} + xp_ty', 'xp_j')} : {_zero(ct.dtypes['B'])};"]

    def product(buf):
        off = f"{buf} * {T * T} + " if double else ""
        if dp4a:
            out = [f"for (int xp_kk = 0; xp_kk < {T}; xp_kk += 4) {{",
                   "    unsigned xp_a = 0u;",
                   "    unsigned xp_bv = 0u;",
                   "    for (int xp_e = 0; xp_e < 4; ++xp_e) {",
                   f"        xp_a |= (unsigned)(uint8_t)xp_As[{off}xp_ty * {T} + xp_kk + xp_e] << (8 * xp_e);",
                   f"        xp_bv |= (unsigned)(uint8_t)xp_Bs[{off}(xp_kk + xp_e) * {T} + xp_tx] << (8 * xp_e);",
                   "    }",
                   "    xp_acc = __dp4a((int)xp_a, (int)xp_bv, xp_acc);",
                   "}"]
            if unsigned_a:
                out += [f"for (int xp_kk = 0; xp_kk < {T}; ++xp_kk) {{",
                        f"    xp_cs += (unsigned)xp_Bs[{off}xp_kk * {T} + xp_tx];", "}"]
            return out
        a = E.op("A", f"xp_As[{off}xp_ty * {T} + xp_kk]")
        bb = E.op("B", f"xp_Bs[{off}xp_kk * {T} + xp_tx]")
        return [f"for (int xp_kk = 0; xp_kk < {T}; ++xp_kk) {{", f"    xp_acc += {a} * {bb};", "}"]
    if not double:
        L.append(f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {T}) {{")
        L += ["    " + s for s in stage("xp_k0", 0)]
        L.append("    __syncthreads();")
        L += ["    " + s for s in product(0)]
        L.append("    __syncthreads();")
        L.append("}")
    else:
        # tile t lives in buffer t % 2: load tile t+1 into the other buffer before computing t
        L += stage("0", 0)
        L.append("__syncthreads();")
        L.append("int xp_pp = 0;")
        L.append(f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {T}) {{")
        L.append(f"    if (xp_k0 + {T} < {Kx}) {{")
        L += ["        " + s for s in stage(f"(xp_k0 + {T})", "(1 - xp_pp)")]
        L.append("    }")
        L += ["    " + s for s in product("xp_pp")]
        L.append("    __syncthreads();")
        L.append("    xp_pp = 1 - xp_pp;")
        L.append("}")
    L.append(f"if (xp_i < {Mx} && xp_j < {Nx}) {{")
    val = "(int)((unsigned)xp_acc + 128u * xp_cs)" if unsigned_a else "xp_acc"
    L.append(f"    {ct.C}[{E.e(ct.c_idx, b=b, i='xp_i', j='xp_j')}] = {val};")
    L.append("}")
    return _batched(ct, E, L, head)


def rowvec_body(ct: Contraction, dialect: str, T: int, cols: int | None = None) -> str:
    """The per-row form (``ct.per_row``, depthwise): a block of TxT threads computes T*T columns
    of one row; the row's A slice (the filter) is staged T*T elements at a time in ``xp_Ws``
    (shared memory / LDS) between barriers and read by every thread, B is read from global memory.
    Rows run over blockIdx.y (stride gridDim.y), the batch over blockIdx.z; each thread sums k in
    the source's increasing order with no padding term. On cuda, when B's index is proven
    separable (:func:`rowvec_split`), the split form :func:`rowvec_split_body` is used instead."""
    if rowvec_split(ct, dialect) is not None:
        return rowvec_split_body(ct, dialect, T, ROWVEC_COLS if cols is None else cols)
    E = Emit(ct, dialect)
    ta, acc_t = CTYPE[ct.dtypes["A"]], CTYPE[ct.acc_dtype]
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    TT = T * T
    b = "xp_b" if ct.batch is not None else N.Const(0, "int32", "0")
    L = [f"__shared__ {ta} xp_Ws[{TT}];", f"const int xp_t = threadIdx.y * {T} + threadIdx.x;"]
    head = len(L)
    a = E.op("A", "xp_Ws[xp_kk]")
    bb = E.op("B", E.load("B", b, "xp_i", "xp_k0 + xp_kk", "xp_j"))
    L += [f"for (int xp_i = blockIdx.y; xp_i < {Mx}; xp_i += gridDim.y) {{",
          f"    const int xp_j = blockIdx.x * {TT} + xp_t;",
          f"    {acc_t} xp_acc = 0;",
          f"    for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {TT}) {{",
          f"        xp_Ws[xp_t] = xp_k0 + xp_t < {Kx} ? {E.load('A', b, 'xp_i', 'xp_k0 + xp_t')} : "
          f"{_zero(ct.dtypes['A'])};",
          "        __syncthreads();",
          f"        const int xp_kn = {Kx} - xp_k0 < {TT} ? {Kx} - xp_k0 : {TT};",
          f"        if (xp_j < {Nx}) {{",
          "            for (int xp_kk = 0; xp_kk < xp_kn; ++xp_kk) {",
          f"                xp_acc += {a} * {bb};",
          "            }",
          "        }",
          "        __syncthreads();",
          "    }",
          f"    if (xp_j < {Nx}) {{",
          f"        {ct.C}[{E.e(ct.c_idx, b=b, i='xp_i', j='xp_j')}] = xp_acc;",
          "    }",
          "}"]
    return _batched(ct, E, L, head)


#: columns per thread of the split per-row form (register blocking along the output row)
ROWVEC_COLS = 2


def rowvec_split(ct: Contraction, dialect: str):
    """The split of B's index in the per-row form (passes/patterns/simt_kparts.py, proven with
    Z3): ``f(b, i, j, k) == f(b, i, j, 0) + g(k)``, g the same for every (b, i, j) in range
    (depthwise: ``g(k) = (k / KW) * W + k % KW``). None: not proven, or not a SIMT dialect (cuda
    and hip both take it: docs/decisions.md, 2026-12-06 eighteenth session)."""
    if dialect not in ("cuda", "hip") or not ct.per_row:
        return None
    from . import simt_kparts as KP
    return KP.split(ct, "B")


def rowvec_split_bytes(ct: Contraction, dialect: str, T: int) -> int:
    """Shared memory the split per-row form adds: the k-offset table (64-bit entries)."""
    s = rowvec_split(ct, dialect)
    return 8 * T * T if s is not None and s.kind == "table" else 0


def rowvec_split_body(ct: Contraction, dialect: str, T: int, cols: int) -> str:
    """The per-row form with B's index split (:func:`rowvec_split`): each thread owns ``cols``
    columns ``j + q * T*T`` of its row and keeps their row parts ``f(b, i, j, 0)`` in registers
    (computed once per row, only for columns inside the row); per slice of T*T taps the block
    stages the filter and, for a table split, the k offsets ``g(k)`` (``long``, computed at column
    0 of the row, valid since g does not depend on the column), so the tap loop does no division:
    ``acc[q] += w[kk] * B[row[q] + g[kk]]``. Every column sums k in increasing order from zero
    with the source's products: the result of :func:`rowvec_body`'s loop."""
    from . import simt_kparts as KP
    sp = rowvec_split(ct, dialect)
    E = Emit(ct, dialect)
    ta, acc_t = CTYPE[ct.dtypes["A"]], CTYPE[ct.acc_dtype]
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    TT = T * T
    b = "xp_b" if ct.batch is not None else N.Const(0, "int32", "0")
    table = sp.kind == "table"
    L = [f"__shared__ {ta} xp_Ws[{TT}];"] + ([f"__shared__ long xp_Kt[{TT}];"] if table else []) + \
        [f"const int xp_t = threadIdx.y * {T} + threadIdx.x;"]
    head = len(L)
    a = E.op("A", "xp_Ws[xp_kk]")
    off = "xp_Kt[xp_kk]" if table else "(xp_k0 + xp_kk)"
    bb = E.op("B", f"{ct.B}[xp_rp[xp_q] + {off}]")
    L += [f"for (int xp_i = blockIdx.y; xp_i < {Mx}; xp_i += gridDim.y) {{",
          f"    const int xp_j = blockIdx.x * {TT * cols} + xp_t;",
          f"    long xp_rp[{cols}];",
          f"    {acc_t} xp_acc[{cols}];",
          "    #pragma unroll",
          f"    for (int xp_q = 0; xp_q < {cols}; ++xp_q) {{",
          f"        xp_rp[xp_q] = (xp_j + xp_q * {TT} < {Nx} && 0 < {Kx}) ? "
          f"{KP.row_part(E, ct, 'B', b, f'xp_j + xp_q * {TT}', i='xp_i')} : 0;",
          "        xp_acc[xp_q] = 0;",
          "    }",
          f"    for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += {TT}) {{",
          f"        xp_Ws[xp_t] = xp_k0 + xp_t < {Kx} ? {E.load('A', b, 'xp_i', 'xp_k0 + xp_t')} : "
          f"{_zero(ct.dtypes['A'])};"]
    if table:
        zero = N.Const(0, "int32", "0")
        L += [f"        xp_Kt[xp_t] = (xp_k0 + xp_t < {Kx} && 0 < {Nx}) ? "
              f"{KP.k_part(E, ct, 'B', b, zero, 'xp_k0 + xp_t', i='xp_i')} : 0;"]
    L += ["        __syncthreads();",
          f"        const int xp_kn = {Kx} - xp_k0 < {TT} ? {Kx} - xp_k0 : {TT};",
          "        for (int xp_kk = 0; xp_kk < xp_kn; ++xp_kk) {",
          "            #pragma unroll",
          f"            for (int xp_q = 0; xp_q < {cols}; ++xp_q) {{",
          f"                if (xp_j + xp_q * {TT} < {Nx}) {{",
          f"                    xp_acc[xp_q] += {a} * {bb};",
          "                }",
          "            }",
          "        }",
          "        __syncthreads();",
          "    }",
          "    #pragma unroll",
          f"    for (int xp_q = 0; xp_q < {cols}; ++xp_q) {{",
          f"        if (xp_j + xp_q * {TT} < {Nx}) {{",
          f"            {ct.C}[{E.e(ct.c_idx, b=b, i='xp_i', j=f'xp_j + xp_q * {TT}')}] = xp_acc[xp_q];",
          "        }",
          "    }",
          "}"]
    return _batched(ct, E, L, head)


def launch_rowvec(ct: Contraction, dialect: str, T: int, cols: int | None = None) -> dict:
    """Grid of :func:`rowvec_body`: T*T columns per block in x (times the columns per thread of
    the split form), one row per block in y."""
    from xpiler.printers import printer_for
    if rowvec_split(ct, dialect) is None:
        cols = 1
    out = launch(ct, dialect, T, T, T, T * T * (ROWVEC_COLS if cols is None else cols))
    out["grid"][1] = printer_for(dialect).expr(_over_params(ct, ct.M))
    return out


def _mfma_head(tile: str) -> list[str]:
    """The MFMA bodies' first lines: the two 16x16 LDS tiles of ``tile`` and the lane's place."""
    return [f"__shared__ {tile} xp_As[256];", f"__shared__ {tile} xp_Bs[256];",
            "const int xp_l = threadIdx.x;", "const int xp_li = xp_l % 16;", "const int xp_g = xp_l / 16;",
            "const int xp_row0 = blockIdx.y * 16;", "const int xp_col0 = blockIdx.x * 16;"]


def _mfma_stage(Mx, Nx, Kx, la: str, lb: str, zero: str) -> list[str]:
    """The k-slice loop's head: the wave stages A's and B's 16x16 slices (``zero`` outside the
    problem), then a barrier; the MFMA step and :func:`_mfma_store` follow."""
    return [f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += 16) {{",
            "    for (int xp_t = xp_l; xp_t < 256; xp_t += 64) {",
            "        const int xp_r = xp_t / 16;",
            "        const int xp_c = xp_t % 16;",
            f"        xp_As[xp_t] = (xp_row0 + xp_r < {Mx} && xp_k0 + xp_c < {Kx}) ? {la} : {zero};",
            f"        xp_Bs[xp_t] = (xp_k0 + xp_r < {Kx} && xp_col0 + xp_c < {Nx}) ? {lb} : {zero};",
            "    }",
            "    __syncthreads();"]


def _mfma_store(ct: Contraction, E: Emit, b, Mx, Nx, val: str = "xp_acc[xp_e]") -> list[str]:
    """The k-slice loop's end (a barrier) and the store of lane l's four elements D[4g+e][i]."""
    return ["    __syncthreads();",
            "}",
            "for (int xp_e = 0; xp_e < 4; ++xp_e) {",
            "    const int xp_r = xp_row0 + 4 * xp_g + xp_e;",
            "    const int xp_c = xp_col0 + xp_li;",
            f"    if (xp_r < {Mx} && xp_c < {Nx}) {{",
            f"        {ct.C}[{E.e(ct.c_idx, b=b, i='xp_r', j='xp_c')}] = {val};",
            "    }",
            "}"]


def mfma_body(ct: Contraction, half: bool = False, via: str = "", int8: bool = False, bf16: bool = False) -> str:
    """hip: one wave64 per 16x16 tile of C, K in LDS slices of 16. float32: four 16x16x4 steps
    per slice, lane l (i = l % 16, g = l / 16) supplying A[i][kk+g] / B[kk+g][i]. ``half`` (half x
    half -> float): one ``__builtin_amdgcn_mfma_f32_16x16x16f16`` per slice, lane l supplying
    a[e] = A[i][4g+e] and b[e] = B[4g+e][i] (the layout detensorize lowers); the slice's 16
    products are added to the running float sum in ascending k, as the loop did. ``via`` is put
    between ``(_Float16)`` and a half load (``(float)`` for hip's ``half``). Lane l holds
    D[4g+e][i] in both. ``int8`` (8-bit A, int8 B, int32 C): one
    ``__builtin_amdgcn_mfma_i32_16x16x16i8`` per slice with the f16 layout, four bytes packed in an
    int; the instruction multiplies signed bytes, so a uint8 A is staged as ``a - 128`` and
    ``128 * sum_k B[k][i]`` (each lane sums its column of the staged B slices) is added back when
    storing: ``sum (a - 128) b + 128 sum b = sum a b``, exactly, in int32 sums modulo 2^32.
    ``bf16`` (bfloat16 x bfloat16 -> float): the tiles hold the operands' bit patterns (``unsigned
    short``, read off the float each widens to exactly: its upper half), and one
    ``__builtin_amdgcn_mfma_f32_16x16x16bf16_1k`` per slice takes them four to a ``shortx4`` in the
    f16 layout; the plain path widens each back (``__uint_as_float(bits << 16)``). Products of two
    bfloat16 values have at most 16 significant bits, so both paths and the source add the same
    float products in the same order (see :func:`.mfma_variant.plain_bf16`).
    Every form's MFMA step stands under ``#if XP_USE_MFMA``, with the same sums taken per lane from
    the shared tiles under ``#else`` (:mod:`.mfma_variant`: RDNA3, host passes, hip_on_cuda.h)."""
    if int8:
        return _mfma_i8_body(ct)
    if bf16:
        return _mfma_bf16_body(ct)
    E = Emit(ct, "hip")
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    b = "xp_b" if ct.batch is not None else N.Const(0, "int32", "0")
    L = _mfma_head("_Float16" if half else "float")
    head = len(L)
    if half:
        la = f"(_Float16){via}{E.load('A', b, 'xp_row0 + xp_r', 'xp_k0 + xp_c')}"
        lb = f"(_Float16){via}{E.load('B', b, 'xp_k0 + xp_r', 'xp_col0 + xp_c')}"
        zero = "(_Float16)0.0f"
        step = MV.wrap(["    halfx4 xp_a;",
                        "    halfx4 xp_bv;",
                        "    for (int xp_e = 0; xp_e < 4; ++xp_e) {",
                        "        xp_a[xp_e] = xp_As[xp_li * 16 + 4 * xp_g + xp_e];",
                        "        xp_bv[xp_e] = xp_Bs[(4 * xp_g + xp_e) * 16 + xp_li];",
                        "    }",
                        "    xp_acc = __builtin_amdgcn_mfma_f32_16x16x16f16(xp_a, xp_bv, xp_acc, 0, 0, 0);"],
                       MV.plain_f16())
    else:
        la = E.op('A', E.load('A', b, 'xp_row0 + xp_r', 'xp_k0 + xp_c'))
        lb = E.op('B', E.load('B', b, 'xp_k0 + xp_r', 'xp_col0 + xp_c'))
        zero = "0.0f"
        step = MV.wrap(["    for (int xp_kk = 0; xp_kk < 16; xp_kk += 4) {",
                        "        const float xp_a = xp_As[xp_li * 16 + xp_kk + xp_g];",
                        "        const float xp_bv = xp_Bs[(xp_kk + xp_g) * 16 + xp_li];",
                        "        xp_acc = __builtin_amdgcn_mfma_f32_16x16x4f32(xp_a, xp_bv, xp_acc, 0, 0, 0);",
                        "    }"],
                       MV.plain_f32())
    L += (["floatx4 xp_acc = {0.0f, 0.0f, 0.0f, 0.0f};"] + _mfma_stage(Mx, Nx, Kx, la, lb, zero) + step
          + _mfma_store(ct, E, b, Mx, Nx))
    return _batched(ct, E, L, head)


def _mfma_bf16_body(ct: Contraction) -> str:
    E = Emit(ct, "hip")
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    b = "xp_b" if ct.batch is not None else N.Const(0, "int32", "0")
    L = _mfma_head("unsigned short")
    head = len(L)

    def bits(load):         # bfloat16 -> float is exact; the value's bits are the float's upper half
        return f"(unsigned short)(__float_as_uint((float){load}) >> 16)"
    la = bits(E.load('A', b, 'xp_row0 + xp_r', 'xp_k0 + xp_c'))
    lb = bits(E.load('B', b, 'xp_k0 + xp_r', 'xp_col0 + xp_c'))
    L += ["floatx4 xp_acc = {0.0f, 0.0f, 0.0f, 0.0f};"] + _mfma_stage(Mx, Nx, Kx, la, lb, "(unsigned short)0") + MV.wrap([
          "    shortx4 xp_a;",
          "    shortx4 xp_bv;",
          "    for (int xp_e = 0; xp_e < 4; ++xp_e) {",
          "        xp_a[xp_e] = (short)xp_As[xp_li * 16 + 4 * xp_g + xp_e];",
          "        xp_bv[xp_e] = (short)xp_Bs[(4 * xp_g + xp_e) * 16 + xp_li];",
          "    }",
          "    xp_acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(xp_a, xp_bv, xp_acc, 0, 0, 0);"],
          MV.plain_bf16()) + _mfma_store(ct, E, b, Mx, Nx)
    return _batched(ct, E, L, head)


def _mfma_i8_body(ct: Contraction) -> str:
    E = Emit(ct, "hip")
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    b = "xp_b" if ct.batch is not None else N.Const(0, "int32", "0")
    unsigned_a = ct.dtypes["A"] == "uint8"
    L = _mfma_head("int8_t")
    head = len(L)
    la = E.load('A', b, 'xp_row0 + xp_r', 'xp_k0 + xp_c')
    la = f"(int8_t)((int){la} - 128)" if unsigned_a else la
    lb = E.load('B', b, 'xp_k0 + xp_r', 'xp_col0 + xp_c')
    L += (["intx4 xp_acc = {0, 0, 0, 0};"] + (["unsigned xp_cs = 0u;"] if unsigned_a else [])
          + _mfma_stage(Mx, Nx, Kx, la, lb, "(int8_t)0")) + MV.wrap([
          "    unsigned xp_a = 0u;",
          "    unsigned xp_bv = 0u;",
          "    for (int xp_e = 0; xp_e < 4; ++xp_e) {",
          "        xp_a |= (unsigned)(uint8_t)xp_As[xp_li * 16 + 4 * xp_g + xp_e] << (8 * xp_e);",
          "        xp_bv |= (unsigned)(uint8_t)xp_Bs[(4 * xp_g + xp_e) * 16 + xp_li] << (8 * xp_e);",
          "    }",
          "    xp_acc = __builtin_amdgcn_mfma_i32_16x16x16i8((int)xp_a, (int)xp_bv, xp_acc, 0, 0, 0);"],
          MV.plain_i8())
    if unsigned_a:
        L += ["    for (int xp_kk = 0; xp_kk < 16; ++xp_kk) {",
              "        xp_cs += (unsigned)xp_Bs[xp_kk * 16 + xp_li];",
              "    }"]
    val = "(int)((unsigned)xp_acc[xp_e] + 128u * xp_cs)" if unsigned_a else "xp_acc[xp_e]"
    L += _mfma_store(ct, E, b, Mx, Nx, val)
    return _batched(ct, E, L, head)


def wmma_body(ct: Contraction) -> str:
    """cuda half x half -> float: one warp per 16x16 tile of C, 16x16x16 fragments."""
    E = Emit(ct, "cuda")
    Mx, Nx, Kx = E.ext("M"), E.ext("N"), E.ext("K")
    b = "xp_b" if ct.batch is not None else N.Const(0, "int32", "0")
    L = ["__shared__ __align__(32) half xp_As[256];", "__shared__ __align__(32) half xp_Bs[256];",
         "__shared__ __align__(32) float xp_Cs[256];",
         "const int xp_l = threadIdx.x;", "const int xp_row0 = blockIdx.y * 16;",
         "const int xp_col0 = blockIdx.x * 16;"]
    head = len(L)
    L += ["wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> xp_fa;",
          "wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> xp_fb;",
          "wmma::fragment<wmma::accumulator, 16, 16, 16, float> xp_fc;",
          "wmma::fill_fragment(xp_fc, 0.0f);",
          f"for (int xp_k0 = 0; xp_k0 < {Kx}; xp_k0 += 16) {{",
          "    for (int xp_t = xp_l; xp_t < 256; xp_t += 32) {",
          "        const int xp_r = xp_t / 16;",
          "        const int xp_c = xp_t % 16;",
          f"        xp_As[xp_t] = (xp_row0 + xp_r < {Mx} && xp_k0 + xp_c < {Kx}) ? "
          f"{E.load('A', b, 'xp_row0 + xp_r', 'xp_k0 + xp_c')} : __float2half(0.0f);",
          f"        xp_Bs[xp_t] = (xp_k0 + xp_r < {Kx} && xp_col0 + xp_c < {Nx}) ? "
          f"{E.load('B', b, 'xp_k0 + xp_r', 'xp_col0 + xp_c')} : __float2half(0.0f);",
          "    }",
          "    __syncthreads();",
          "    wmma::load_matrix_sync(xp_fa, xp_As, 16);",
          "    wmma::load_matrix_sync(xp_fb, xp_Bs, 16);",
          "    wmma::mma_sync(xp_fc, xp_fa, xp_fb, xp_fc);",
          "    __syncthreads();",
          "}",
          "wmma::store_matrix_sync(xp_Cs, xp_fc, 16, wmma::mem_row_major);",
          "__syncthreads();",
          "for (int xp_t = xp_l; xp_t < 256; xp_t += 32) {",
          "    const int xp_r = xp_row0 + xp_t / 16;",
          "    const int xp_c = xp_col0 + xp_t % 16;",
          f"    if (xp_r < {Mx} && xp_c < {Nx}) {{",
          f"        {ct.C}[{E.e(ct.c_idx, b=b, i='xp_r', j='xp_c')}] = xp_Cs[xp_t];",
          "    }",
          "}"]
    return _batched(ct, E, L, head)


def _batched(ct, E, L, head) -> str:
    """Lines L[head:] run once per batch index (a blockIdx.z-stride loop, so any grid.z works)."""
    if ct.batch is None:
        return "\n".join(L)
    inner = ["    " + ln for ln in L[head:]]
    return "\n".join(L[:head] + [f"for (int xp_b = blockIdx.z; xp_b < {E.p.expr(ct.batch, 11)}; "
                                  f"xp_b += gridDim.z) {{"] + inner + ["}"])


def _over_params(ct: Contraction, e):
    """``e`` over kernel parameters: the sizes the prelude computes (``Ho``, ``Lo``) inlined."""
    lets = {d.name: d.init for d in ct.prelude if isinstance(d, N.Decl) and d.init is not None
            and isinstance(d.type, N.Scalar)}
    for _ in range(len(lets) + 1):
        e = substitute(e, lets)
    return e


def launch(ct: Contraction, dialect: str, bx: int, by: int, tile_m: int, tile_n: int) -> dict:
    from xpiler.printers import printer_for
    p = printer_for(dialect)

    def outer(e):
        return _over_params(ct, e)
    Mx, Nx = p.expr(outer(ct.M), 3), p.expr(outer(ct.N_), 3)
    grid = [f"({Nx} + {tile_n - 1}) / {tile_n}", f"({Mx} + {tile_m - 1}) / {tile_m}",
            p.expr(outer(ct.batch)) if ct.batch is not None else 1]
    return {"grid": grid, "block": [bx, by, 1]}


def rebuild(program: N.Program, ct: Contraction, body_text: str, extra_items=()) -> N.Program:
    """The program with the kernel's body replaced by prelude + ``body_text`` (parsed back, so
    the result is ordinary IR); ``extra_items``: top-level text (typedefs, includes) to add."""
    from xpiler.frontend import parse_text
    from xpiler.printers import print_program
    func = ct.func
    marker = N.Raw("/*XP_BODY*/")
    nf = func.with_(body=N.Block(tuple(ct.prelude) + (marker,)))
    items = []
    for it in program.items:
        if it is func:
            items.extend(N.Raw(t) for t in extra_items)
            items.append(nf)
        else:
            items.append(it)
    text = print_program(program.with_(items=tuple(items)), program.dialect)
    text = text.replace("/*XP_BODY*/", body_text.replace("\n", "\n    "), 1)
    return parse_text(text, program.dialect, program.file).with_(launches=program.launches)


# ------------------------------------------------------------------------------ the tiled form back
def from_tiled(program: N.Program, func: N.Func):
    """(Contraction, tile) of a kernel that is exactly what :func:`tiled_body` writes (single
    buffer); NotMatmul otherwise.  Recognition = read the accesses off the tiled kernel, write
    the tiled kernel for them again and require the same IR: nothing else can slip through."""
    stmts = list(func.body.stmts)
    k = next((n for n, s in enumerate(stmts) if isinstance(s, N.Decl) and s.name == PREFIX + "As"
              and s.scope == "shared"), None)
    if k is None:
        raise NotMatmul("no shared-memory tile written by the cache pass", func)
    T2 = U.const_size(stmts[k])
    T = int(round((T2 or 0) ** 0.5))
    loops = {n.var: n for n in walk(func.body) if isinstance(n, N.For)}
    k0, kk = loops.get(PREFIX + "k0"), loops.get(PREFIX + "kk")
    if k0 is None or kk is None or T * T != T2:
        raise NotMatmul("not the cache pass's tiled kernel", func)
    try:
        sa, sb = k0.body.stmts[0], k0.body.stmts[1]
        upd = kk.body.stmts[0]
        la, lb = sa.value.then, sb.value.then
        M, K = sa.value.cond.lhs.rhs, sa.value.cond.rhs.rhs
        Nx = sb.value.cond.rhs.rhs
        ifs = [s for s in walk(func.body) if isinstance(s, N.If) and isinstance(s.then, N.Block)
               and len(s.then.stmts) == 1 and isinstance(s.then.stmts[0], N.Assign)
               and s.then.stmts[0].value == N.Var(PREFIX + "acc")]
        store = ifs[-1].then.stmts[0]
        x, y = upd.value.lhs, upd.value.rhs
    except (AttributeError, IndexError, TypeError):
        raise NotMatmul("not the cache pass's tiled kernel", func)
    ka = N.BinOp("+", N.Var(PREFIX + "k0"), N.Var(PREFIX + "tx"))
    kb = N.BinOp("+", N.Var(PREFIX + "k0"), N.Var(PREFIX + "ty"))
    kvar = N.Var(PREFIX + "k")
    a_idx = rewrite(la.index, lambda n: kvar if n == ka else n)
    b_idx = rewrite(lb.index, lambda n: kvar if n == kb else n)
    ph = N.Var(PREFIX + "LOAD")
    op_a = rewrite(x, lambda n: ph if isinstance(n, N.Index) and n.base == N.Var(PREFIX + "As") else n)
    op_b = rewrite(y, lambda n: ph if isinstance(n, N.Index) and n.base == N.Var(PREFIX + "Bs") else n)
    bl = loops.get(PREFIX + "b")
    ptrs = U.pointer_params(func)
    acc = next(d for d in walk(func.body) if isinstance(d, N.Decl) and d.name == PREFIX + "acc")
    try:
        ct = Contraction(func, k0, stmts[:k], M, Nx, K, bl.hi if bl is not None else None, store.target.base.name,
                         store.target.index, la.base.name, a_idx, lb.base.name, b_idx, op_a, op_b,
                         {"A": ptrs[la.base.name], "B": ptrs[lb.base.name], "C": ptrs[store.target.base.name]},
                         acc.type.dtype)
        again = rebuild(program, ct, tiled_body(ct, program.dialect, T)).func(func.name)
    except Exception as e:   # anything unexpected means: not our form
        raise NotMatmul(f"not the cache pass's tiled kernel ({type(e).__name__})", func)
    if again.body != func.body:
        raise NotMatmul("the tiled kernel was changed after the cache pass", func)
    return ct, T
