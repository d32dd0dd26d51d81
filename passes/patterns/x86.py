"""AVX-512 descriptions for tensorize on the ``c`` dialect.

Lane-wise float32 translation table: an IR operator over 16 lanes is the ``_mm512_*`` op whose
registry semantics (``REGISTRY[name].semantics``, 64-byte lanes) computes it lane by lane:

    a + b -> _mm512_add_ps     a - b -> _mm512_sub_ps     a * b -> _mm512_mul_ps
    a / b -> _mm512_div_ps     fmaxf/max, (a > b ? a : b) -> _mm512_max_ps
    fminf/min, (a < b ? a : b) -> _mm512_min_ps            constant / invariant scalar -> _mm512_set1_ps
    (float)(a > b) -> _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), set1(1))

``a > b ? a : b`` keeps C's NaN behaviour under ``_mm512_max_ps`` (which returns its second
operand when either is NaN, exactly what the conditional does).  Functions without an
AVX-512 instruction (expf, erff, tanhf) make the loop unmatched: no SVML is assumed.

A matched loop ``for (i = 0; i < n; i++) dst[i] = E(src[i], ...)`` becomes a 16-lane main
loop plus one masked tail (``_mm512_maskz_loadu_ps`` / ``_mm512_mask_storeu_ps``), so no
element outside [0, n) is touched.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from . import common as U

LANES = 16
BIN = {"+": "_mm512_add_ps", "-": "_mm512_sub_ps", "*": "_mm512_mul_ps", "/": "_mm512_div_ps"}
CALL2 = {"fmaxf": "_mm512_max_ps", "max": "_mm512_max_ps", "fmax": "_mm512_max_ps",
         "fminf": "_mm512_min_ps", "min": "_mm512_min_ps", "fmin": "_mm512_min_ps"}
CMP = {">": "_CMP_GT_OQ", "<": "_CMP_LT_OQ", ">=": "_CMP_GE_OQ", "<=": "_CMP_LE_OQ", "==": "_CMP_EQ_OQ",
       "!=": "_CMP_NEQ_UQ"}


class NoMatch(Exception):
    pass


def _I(name, *args):
    return N.Intrinsic(name, tuple(args))


def lanes(e, var, loads: set, invariant_ok, mask=None):
    """The 16-lane vector expression computing ``e`` for lanes var..var+15."""
    e0 = e
    if isinstance(e, N.Index) and isinstance(e.base, N.Var) and U.is_var(e.index, var):
        loads.add(e.base.name)
        ptr = N.BinOp("+", e.base, N.Var(var))
        return _I("_mm512_maskz_loadu_ps", mask, ptr) if mask is not None else _I("_mm512_loadu_ps", ptr)
    if isinstance(e, N.Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return _I("_mm512_set1_ps", N.Const(float(e.value), "float32", ""))
    if isinstance(e, N.Var):
        if e.name == var or not invariant_ok(e.name):
            raise NoMatch(e.name)
        return _I("_mm512_set1_ps", N.Cast(N.Scalar("float32", "float"), e))
    if isinstance(e, N.BinOp) and e.op in BIN:
        return _I(BIN[e.op], lanes(e.lhs, var, loads, invariant_ok, mask), lanes(e.rhs, var, loads, invariant_ok, mask))
    if isinstance(e, N.UnOp) and e.op == "-":
        return _I("_mm512_sub_ps", _I("_mm512_setzero_ps"), lanes(e.operand, var, loads, invariant_ok, mask))
    if isinstance(e, N.UnOp) and e.op == "+":
        return lanes(e.operand, var, loads, invariant_ok, mask)
    if isinstance(e, (N.Intrinsic, N.Call)):
        name = e.name if isinstance(e, N.Intrinsic) else e.func
        if name in CALL2 and len(e.args) == 2:
            return _I(CALL2[name], *(lanes(a, var, loads, invariant_ok, mask) for a in e.args))
        raise NoMatch(str(name))
    if isinstance(e, N.Cond) and isinstance(e.cond, N.BinOp) and e.cond.op in (">", ">=", "<", "<="):
        a, b = e.cond.lhs, e.cond.rhs
        if e.then == a and e.else_ == b:
            op = "_mm512_max_ps" if e.cond.op in (">", ">=") else "_mm512_min_ps"
        elif e.then == b and e.else_ == a:
            op = "_mm512_min_ps" if e.cond.op in (">", ">=") else "_mm512_max_ps"
        else:
            raise NoMatch("conditional")
        if e.cond.op in (">=", "<="):
            raise NoMatch("non-strict conditional (signed zero / NaN order)")
        return _I(op, lanes(a, var, loads, invariant_ok, mask), lanes(b, var, loads, invariant_ok, mask))
    if isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype == "float32" \
            and isinstance(e.expr, N.BinOp) and e.expr.op in CMP:
        m = _I("_mm512_cmp_ps_mask", lanes(e.expr.lhs, var, loads, invariant_ok, mask),
               lanes(e.expr.rhs, var, loads, invariant_ok, mask), N.Var(CMP[e.expr.op]))
        return _I("_mm512_maskz_mov_ps", m, _I("_mm512_set1_ps", N.Const(1.0, "float32", "1.0f")))
    if isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype == "float32":
        return lanes(e.expr, var, loads, invariant_ok, mask)
    raise NoMatch(type(e0).__name__)


def sites(program, func, ops=None):
    ptrs = U.pointer_params(func)
    assigned = U.assigned_names(func)
    out = []
    for loop in [n for n in walk(func.body) if isinstance(n, N.For)]:
        if loop.binding not in (None, "omp") or not _c(loop.lo, 0) or not _c(loop.step, 1):
            continue
        if any(isinstance(n, (N.For, N.CFor, N.While, N.If, N.Barrier)) for n in walk(loop.body)):
            continue
        stmts = [s for s in U.inline_lets(loop.body.stmts) if not isinstance(s, N.Comment)]
        if len(stmts) != 1 or not isinstance(stmts[0], N.Assign) or stmts[0].op != "=":
            continue
        st = stmts[0]
        t = st.target
        if not (isinstance(t, N.Index) and isinstance(t.base, N.Var) and t.base.name in ptrs
                and U.is_var(t.index, loop.var) and ptrs[t.base.name] == "float32"):
            continue
        loads: set = set()
        ok = lambda name: name not in assigned and name not in ptrs   # noqa: E731
        try:
            full = lanes(st.value, loop.var, loads, ok)
            mvar = N.Var(U.fresh(func, "tail_mask"))
            tail = lanes(st.value, loop.var, set(), ok, mvar)
        except NoMatch:
            continue
        if any(ptrs.get(b) != "float32" for b in loads) or not loads:
            continue
        if t.base.name in loads and any(U.is_var(x.index, loop.var) is False for x in walk(st.value)
                                        if isinstance(x, N.Index)):
            continue
        names = {n.name for n in walk(full) if isinstance(n, N.Intrinsic)}
        if ops and not (names & set(ops)):
            continue
        out.append((loop, _vector_loop(loop, t.base, full, tail, mvar)))
    return out


def _c(e, v):
    return isinstance(e, N.Const) and e.value == v


def _vector_loop(loop, dst, full, tail, mvar):
    i = loop.var
    n = loop.hi
    decl = N.Decl(i, N.Scalar("int32", "int"), U.C(0), loc=loop.loc)
    main = N.For(i, U.C(0), N.BinOp("-", n, U.C(LANES - 1)), U.C(LANES),
                 N.Block((N.ExprStmt(_I("_mm512_storeu_ps", N.BinOp("+", dst, N.Var(i)), full)),)),
                 var_type=None, pragmas=loop.pragmas, binding=loop.binding, loc=loop.loc)
    mask_t = N.Named("__mmask16")
    mexpr = N.Cast(mask_t, N.BinOp("-", N.BinOp("<<", N.Const(1, "uint32", "1u"), N.BinOp("-", n, N.Var(i))),
                                   N.Const(1, "uint32", "1u")))
    tail_blk = N.Block((N.Decl(mvar.name, mask_t, mexpr),
                        N.ExprStmt(_I("_mm512_mask_storeu_ps", N.BinOp("+", dst, N.Var(i)), mvar, tail))))
    # the main loop leaves i at the first unprocessed element: i = max(0, n - n % 16) rounded
    after = N.Assign(N.Var(i), "=", N.Cond(N.BinOp(">", n, U.C(0)),
                                           N.BinOp("-", n, N.BinOp("%", n, U.C(LANES))), U.C(0)))
    head = [decl] if loop.var_type is not None else []
    return head + [main, after, N.If(N.BinOp("<", N.Var(i), n), tail_blk)]
