"""BANG C ``__bang_*`` operations and ``__memcpy`` as plain loops (the emulator contract's
exact semantics: operands widened to float, the result converted back to the destination
type; float accumulation for sums, pools, conv, matmul and mlp; int32 accumulation and a
2^pos scale for the int8 matmul/mlp).

Each lowering is ``fn(ctx, args) -> list[Stmt]`` for a call used as a statement.  The loops
read and write the same NRAM/WRAM/GDRAM buffers the call named, so the program stays BANG and
runs on the BANG emulator; the ``__nram__``/``__wram__`` declarations are untouched.
"""
from __future__ import annotations

from xpiler.ir import nodes as N

from .common import (FLOAT, INT, add, assign, b, block, c, cast, cf, cond, decl, ix, loop, mul,
                     ptr, scalar, sizeof_count, tofloat, base_name)

U8 = scalar("uint8")


def same_expr(x, y) -> bool:
    """The same pointer expression (source locations ignored): ``a`` and ``a``, ``buf + off``."""
    from xpiler.printers import printer_for
    pr = printer_for("c")
    return pr.expr(x) == pr.expr(y)


def _elementwise(ctx, n, body_of_i):
    i = ctx.fresh("i")
    return [loop(i, 0, n, body_of_i(N.Var(i)))]


# ------------------------------------------------------------------ elementwise families
BIN = {"__bang_add": "+", "__bang_sub": "-", "__bang_mul": "*", "__bang_div": "/"}
SCAL = {"__bang_add_scalar": "+", "__bang_sub_scalar": "-", "__bang_mul_scalar": "*",
        "__bang_div_scalar": "/", "__bang_add_const": "+", "__bang_mul_const": "*"}
CYCLE = {"__bang_cycle_add": "+", "__bang_cycle_sub": "-", "__bang_cycle_mul": "*"}
#: comparisons and logical ops: 1.0 where the relation holds, else 0.0 (vector and _scalar forms)
REL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
LOGIC = {"__bang_and": "&&", "__bang_or": "||"}


def _select(x, y, op):
    """The value of a binary BANG op on floats x, y (op: an arithmetic operator, a REL/LOGIC
    relation, or max/min with NaN kept from x)."""
    if op == "max":
        return cond(b("||", b(">", x, y), b("!=", x, x)), x, y)
    if op == "min":
        return cond(b("||", b("<", x, y), b("!=", x, x)), x, y)
    if op in ("&&", "||"):
        return cond(b(op, b("!=", x, cf(0.0)), b("!=", y, cf(0.0))), cf(1.0), cf(0.0))
    if op in REL.values():
        return cond(b(op, x, y), cf(1.0), cf(0.0))
    return b(op, x, y)


BINARY_OPS = dict(BIN, __bang_maxequal="max", __bang_minequal="min", __bang_maximum="max",
                  __bang_minimum="min", **{f"__bang_{k}": v for k, v in REL.items()}, **LOGIC)
SCALAR_OPS = dict(SCAL, __bang_maxeq_scalar="max", __bang_mineq_scalar="min",
                  **{f"__bang_{k}_scalar": v for k, v in REL.items()})
CYCLE_OPS = dict(CYCLE, __bang_cycle_maxequal="max", __bang_cycle_minequal="min")


def lower_binary(ctx, name, args):
    dst, a, bb = args[0], args[1], args[2]
    n = args[-1]
    if name == "__bang_div" and len(args) == 4 and not ctx.is_pointer(bb):
        return lower_scalar(ctx, "__bang_div_scalar", args)

    _elementwise_alias(ctx, name, dst, a, bb)

    def body(i):
        return assign(ix(dst, i), _select(tofloat(ix(a, i)), tofloat(ix(bb, i)), BINARY_OPS[name]))
    return _elementwise(ctx, n, body)


def lower_scalar(ctx, name, args):
    dst, src, s, n = args
    op = SCALAR_OPS[name]
    _elementwise_alias(ctx, name, dst, src)
    y = ctx.fresh("s")
    return [decl(y, FLOAT, tofloat(s), const=True)] + _elementwise(
        ctx, n, lambda i: assign(ix(dst, i), _select(tofloat(ix(src, i)), N.Var(y), op)))


def lower_cycle(ctx, name, args):
    dst, src, seg, n, seg_n = args
    op = CYCLE_OPS[name]
    _elementwise_alias(ctx, name, dst, src)
    ctx.require_distinct(name, dst, seg)
    return _elementwise(ctx, n, lambda i: assign(
        ix(dst, i), _select(tofloat(ix(src, i)), tofloat(ix(seg, b("%", i, seg_n))), op)))


def _elementwise_alias(ctx, name, dst, *srcs):
    """An elementwise op reads element i of each source and writes element i of dst, so a loop
    over i equals "read all, then write" when dst IS a source (same expression: the common
    in-place ``__bang_add(a, a, b, n)``) or a different buffer.  A destination inside the same
    buffer at another offset would read elements the loop already wrote: refused."""
    d = base_name(dst)
    for s in srcs:
        if d is not None and base_name(s) == d and not same_expr(s, dst):
            ctx.refuse(f"{name}: the destination overlaps an operand at a different offset of "
                       f"'{d}'; the element loop would read values it already overwrote")


def _gelu_exact(ctx, x):
    return mul(cf(0.5), x, b("+", cf(1.0), ctx.math("erff", b("*", x, cf(0.70710678118654752)))))


def _gelu_tanh(ctx, x):
    inner = b("*", cf(0.7978845608028654), b("+", x, mul(cf(0.044715), x, x, x)))
    return mul(cf(0.5), x, b("+", cf(1.0), ctx.math("tanhf", inner)))


UNARY = {
    "__bang_active_exp": lambda ctx, x: ctx.math("expf", x),
    "__bang_active_recip": lambda ctx, x: b("/", cf(1.0), x),
    "__bang_recip": lambda ctx, x: b("/", cf(1.0), x),
    "__bang_active_relu": lambda ctx, x: cond(b(">", x, cf(0.0)), x, cf(0.0)),
    "__bang_active_sign": lambda ctx, x: cond(b(">", x, cf(0.0)), cf(1.0), cond(b("<", x, cf(0.0)), cf(-1.0), cf(0.0))),
    "__bang_active_sigmoid": lambda ctx, x: b("/", cf(1.0), b("+", cf(1.0), ctx.math("expf", N.UnOp("-", x)))),
    "__bang_active_gelu": _gelu_exact,
    "__bang_active_gelup": _gelu_tanh,
    "__bang_active_tanh": lambda ctx, x: ctx.math("tanhf", x),
    "__bang_sqrt": lambda ctx, x: ctx.math("sqrtf", x),
    "__bang_rsqrt": lambda ctx, x: b("/", cf(1.0), ctx.math("sqrtf", x)),
    "__bang_square": lambda ctx, x: b("*", x, x),
    "__bang_abs": lambda ctx, x: ctx.math("fabsf", x),
    "__bang_sin": lambda ctx, x: ctx.math("sinf", x),
    # newer spellings and further ops of public BANG code (runtime/bang/xp_bang.h has each)
    "__bang_sigmoid": lambda ctx, x: b("/", cf(1.0), b("+", cf(1.0), ctx.math("expf", N.UnOp("-", x)))),
    "__bang_relu": lambda ctx, x: cond(b(">", x, cf(0.0)), x, cf(0.0)),
    "__bang_exp": lambda ctx, x: ctx.math("expf", x),
    "__bang_log": lambda ctx, x: ctx.math("logf", x),
    "__bang_active_log": lambda ctx, x: ctx.math("logf", x),
    "__bang_tanh": lambda ctx, x: ctx.math("tanhf", x),
    "__bang_gelu": _gelu_exact,
    "__bang_active_abs": lambda ctx, x: ctx.math("fabsf", x),
    "__bang_active_sqrt": lambda ctx, x: ctx.math("sqrtf", x),
    "__bang_active_rsqrt": lambda ctx, x: b("/", cf(1.0), ctx.math("sqrtf", x)),
    "__bang_cos": lambda ctx, x: ctx.math("cosf", x),
    "__bang_pow2": lambda ctx, x: ctx.math("exp2f", x),
    "__bang_not": lambda ctx, x: cond(b("==", x, cf(0.0)), cf(1.0), cf(0.0)),
}


def lower_unary(ctx, name, args):
    dst, src, n = args
    i, x = ctx.fresh("i"), ctx.fresh("x")
    body = [decl(x, FLOAT, tofloat(ix(src, N.Var(i))), const=True),
            assign(ix(dst, N.Var(i)), UNARY[name](ctx, N.Var(x)))]
    return [loop(i, 0, n, body)]


def lower_convert(ctx, name, args):
    dst, src, n = args   # float2half_rn: round to nearest even = the C conversion
    return _elementwise(ctx, n, lambda i: assign(ix(dst, i), ix(src, i)))


def lower_fill(ctx, name, args):
    if name == "__bang_write_zero":
        dst, n = args
        val = c(0)
    else:                 # __memset_nram(dst, n, value) / __bang_write_value(dst, n, value)
        dst, n, val = args
    el = ctx.env.elem_of(dst)
    if el is None:        # void* destination: elements of the value's type
        vt = ctx.env.type_of(val) or INT
        dst = cast(ptr(vt), dst)
        el = vt
    return _elementwise(ctx, n, lambda i: assign(ix(dst, i), cast(el, val)))


def lower_argext(ctx, name, args):
    dst, src, n = args
    best, bv, i, x = ctx.fresh("best"), ctx.fresh("bv"), ctx.fresh("i"), ctx.fresh("x")
    better = b(">" if name == "__bang_max" else "<", N.Var(x), N.Var(bv))
    return [decl(best, INT, 0), decl(bv, FLOAT, tofloat(ix(src, 0))),
            loop(i, 1, n, [decl(x, FLOAT, tofloat(ix(src, N.Var(i))), const=True),
                           N.If(better, block(assign(bv, N.Var(x)), assign(best, N.Var(i))))]),
            assign(ix(dst, 0), N.Var(bv)), assign(ix(dst, 1), tofloat(N.Var(best)))]


def lower_sum(ctx, name, args):
    dst, src, n = args
    acc, i = ctx.fresh("acc"), ctx.fresh("i")
    return [decl(acc, FLOAT, cf(0.0)), loop(i, 0, n, assign(acc, tofloat(ix(src, N.Var(i))), "+=")),
            assign(ix(dst, 0), N.Var(acc))]


def lower_reduce_sum(ctx, name, args):
    """dst[g] = sum of the g-th 128-byte group of src (L = 128 / sizeof(T) elements)."""
    dst, src, n = args
    el = ctx.env.elem_of(src)
    L = 64 if el is not None and el.dtype == "float16" else 32
    g, i, acc, G = ctx.fresh("g"), ctx.fresh("i"), ctx.fresh("acc"), ctx.fresh("G")
    if not same_expr(dst, src):
        ctx.require_distinct(name, dst, src)
    # in place (dst IS src): group g is written at index g after groups 0..g were read: g <= g*L
    return [decl(G, INT, b("/", n, c(L)), const=True),
            loop(g, 0, N.Var(G), [decl(acc, FLOAT, cf(0.0)),
                                  loop(i, 0, c(L), assign(acc, tofloat(ix(src, add(mul(N.Var(g), c(L)), N.Var(i)))), "+=")),
                                  assign(ix(dst, N.Var(g)), N.Var(acc))])]


def lower_argext_u32(ctx, name, args):
    """dst[0] = max (min) of src[0:n]; the 4 bytes after dst[0] = its first index as uint32."""
    dst, src, n = args
    best, bv, i, x = ctx.fresh("best"), ctx.fresh("bv"), ctx.fresh("i"), ctx.fresh("x")
    U32 = scalar("uint32")
    better = b(">" if name == "__bang_argmax" else "<", N.Var(x), N.Var(bv))
    el = ctx.env.elem_of(dst) or FLOAT
    slot = cast(ptr(U32), cast(ptr(U8), add(dst, c(1))))
    return [decl(best, U32, c(0)), decl(bv, FLOAT, tofloat(ix(src, 0))),
            loop(i, 1, n, [decl(x, FLOAT, tofloat(ix(src, N.Var(i))), const=True),
                           N.If(better, block(assign(bv, N.Var(x)), assign(best, cast(U32, N.Var(i)))))]),
            assign(ix(dst, 0), cast(el, N.Var(bv))), assign(ix(slot, 0), N.Var(best))]


POOLS = {"__bang_sumpool": "sum", "__bang_avgpool": "avg", "__bang_maxpool": "max", "__bang_minpool": "min"}


def lower_pool(ctx, name, args):
    dst, src, C, H, W, kh, kw, sh, sw = args
    kind = POOLS[name]
    ho, wo, ch, p, q = (ctx.fresh(h) for h in ("oh", "ow", "c", "p", "q"))
    acc, x, Ho, Wo = ctx.fresh("acc"), ctx.fresh("x"), ctx.fresh("Ho"), ctx.fresh("Wo")
    Vho, Vwo, Vc, Vp, Vq = (N.Var(n) for n in (ho, wo, ch, p, q))

    def at(i, j):   # src[((oh*sh + i) * W + (ow*sw + j)) * C + c]
        return tofloat(ix(src, add(mul(add(mul(add(mul(Vho, sh), i), W), add(mul(Vwo, sw), j)), C), Vc)))

    init = cf(0.0) if kind in ("sum", "avg") else at(c(0), c(0))
    if kind in ("sum", "avg"):
        upd = assign(acc, N.Var(x), "+=")
    else:
        upd = N.If(b(">" if kind == "max" else "<", N.Var(x), N.Var(acc)), assign(acc, N.Var(x)))
    inner = loop(p, 0, kh, loop(q, 0, kw, [decl(x, FLOAT, at(Vp, Vq), const=True), upd]))
    tail = [assign(acc, b("/", N.Var(acc), tofloat(mul(kh, kw))), "=")] if kind == "avg" else []
    out = assign(ix(dst, add(mul(add(mul(Vho, N.Var(Wo)), Vwo), C), Vc)), N.Var(acc))
    body = loop(ho, 0, N.Var(Ho), loop(wo, 0, N.Var(Wo), loop(ch, 0, C, [decl(acc, FLOAT, init), inner] + tail + [out])))
    if not same_expr(dst, src):
        ctx.require_distinct(name, dst, src)
    # dst IS src (mlu-ops' in-place sumpool, __bang_avgpool(buf, buf, ...)): output (oh, ow, c)
    # lands at ((oh*Wo + ow)*C + c) and is written after every input of its window is read; every
    # later output reads only indices >= ((oh'*sh*W + ow'*sw)*C + c') >= its own index > this
    # one (Wo <= W, sh, sw >= 1), so the loop reads nothing it already overwrote: exact.
    return [decl(Ho, INT, add(b("/", b("-", H, kh), sh), 1), const=True),
            decl(Wo, INT, add(b("/", b("-", W, kw), sw), 1), const=True), body]


def lower_conv(ctx, name, args):
    dst, src, flt, Cin, H, W, kh, kw, sw, sh, Cout = args
    ho, wo, co, p, q, ci = (ctx.fresh(h) for h in ("oh", "ow", "co", "p", "q", "ci"))
    acc, Ho, Wo = ctx.fresh("acc"), ctx.fresh("Ho"), ctx.fresh("Wo")
    Vho, Vwo, Vco, Vp, Vq, Vci = (N.Var(n) for n in (ho, wo, co, p, q, ci))
    s_idx = add(mul(add(mul(add(mul(Vho, sh), Vp), W), add(mul(Vwo, sw), Vq)), Cin), Vci)
    f_idx = add(mul(add(mul(add(mul(Vco, kh), Vp), kw), Vq), Cin), Vci)
    mac = assign(acc, b("*", tofloat(ix(src, s_idx)), tofloat(ix(flt, f_idx))), "+=")
    out = assign(ix(dst, add(mul(add(mul(Vho, N.Var(Wo)), Vwo), Cout), Vco)), N.Var(acc))
    body = loop(ho, 0, N.Var(Ho), loop(wo, 0, N.Var(Wo), loop(co, 0, Cout, [
        decl(acc, FLOAT, cf(0.0)), loop(p, 0, kh, loop(q, 0, kw, loop(ci, 0, Cin, mac))), out])))
    ctx.require_distinct(name, dst, flt)
    heads = [decl(Ho, INT, add(b("/", b("-", H, kh), sh), 1), const=True),
             decl(Wo, INT, add(b("/", b("-", W, kw), sw), 1), const=True)]
    return heads + _through_temp(ctx, name, dst, [src], body,
                                 mul(N.Var(Ho), N.Var(Wo), Cout))


def lower_matmul(ctx, name, args):
    dst, lhs, rhs, M, K, Nn = args[:6]
    m, n, k, acc = ctx.fresh("m"), ctx.fresh("n"), ctx.fresh("k"), ctx.fresh("acc")
    Vm, Vn, Vk = N.Var(m), N.Var(n), N.Var(k)
    ctx.require_distinct(name, dst, rhs)
    if len(args) == 7:   # int8 form: exact int32 sum, scaled by 2^pos
        I32 = scalar("int32")
        mac = assign(acc, b("*", cast(I32, ix(lhs, add(mul(Vm, K), Vk))), cast(I32, ix(rhs, add(mul(Vk, Nn), Vn)))), "+=")
        out = assign(ix(dst, add(mul(Vm, Nn), Vn)), ctx.math("ldexpf", tofloat(N.Var(acc)), args[6]))
        ctx.require_distinct(name, dst, lhs)
        return [loop(m, 0, M, loop(n, 0, Nn, [decl(acc, I32, c(0)), loop(k, 0, K, mac), out]))]
    mac = assign(acc, b("*", tofloat(ix(lhs, add(mul(Vm, K), Vk))), tofloat(ix(rhs, add(mul(Vk, Nn), Vn)))), "+=")
    out = assign(ix(dst, add(mul(Vm, Nn), Vn)), N.Var(acc))
    body = loop(m, 0, M, loop(n, 0, Nn, [decl(acc, FLOAT, cf(0.0)), loop(k, 0, K, mac), out]))
    return _through_temp(ctx, name, dst, [lhs], body, mul(M, Nn))


def lower_mlp(ctx, name, args):
    dst, src, w, K, Nn = args[:5]
    n, k, acc = ctx.fresh("n"), ctx.fresh("k"), ctx.fresh("acc")
    Vn, Vk = N.Var(n), N.Var(k)
    ctx.require_distinct(name, dst, w)
    el = ctx.env.elem_of(src)
    if len(args) == 6 and el is not None and el.dtype == "int8":
        ctx.require_distinct(name, dst, src)
        I32 = scalar("int32")
        mac = assign(acc, b("*", cast(I32, ix(src, Vk)), cast(I32, ix(w, add(mul(Vn, K), Vk)))), "+=")
        out = assign(ix(dst, Vn), ctx.math("ldexpf", tofloat(N.Var(acc)), args[5]))
        return [loop(n, 0, Nn, [decl(acc, I32, c(0)), loop(k, 0, K, mac), out])]
    mac = assign(acc, b("*", tofloat(ix(src, Vk)), tofloat(ix(w, add(mul(Vn, K), Vk)))), "+=")
    body = loop(n, 0, Nn, [decl(acc, FLOAT, cf(0.0)), loop(k, 0, K, mac), assign(ix(dst, Vn), N.Var(acc))])
    return _through_temp(ctx, name, dst, [src], body, Nn)


def _through_temp(ctx, name, dst, srcs, body, count):
    """``body`` (loops that write ``dst``) as the instruction's read-all-then-write semantics.

    When dst names the same buffer as a source (``__bang_mlp(v, v, w, K, N)``, an in-place conv or
    matmul), the loops write an NRAM temporary of ``count`` floats instead, then copy it to dst:
    every source element is read before dst changes, as the emulator (runtime/bang/xp_bang.h)
    and in-place calls in public BANG code assume.  Otherwise ``body`` as it is."""
    d = base_name(dst)
    if d is None or not any(base_name(s) == d for s in srcs):
        return [body]
    tmp, j = ctx.fresh("t"), ctx.fresh("j")
    from xpiler.ir.visit import rewrite

    def to_tmp(n):
        if isinstance(n, N.Assign) and isinstance(n.target, N.Index) and same_expr(n.target.base, dst):
            return n.with_(target=N.Index(N.Var(tmp), n.target.index))
        return n
    el = ctx.env.elem_of(dst) or FLOAT
    return [decl(tmp, N.Array(FLOAT, (count,)), scope="nram"), rewrite(body, to_tmp),
            loop(j, 0, count, assign(ix(dst, N.Var(j)), cast(el, ix(tmp, N.Var(j)))))]


def lower_transpose(ctx, name, args):
    dst, src, H, W = args
    h, w = ctx.fresh("h"), ctx.fresh("w")
    body = loop(h, 0, H, loop(w, 0, W, assign(ix(dst, add(mul(N.Var(w), H), N.Var(h))),
                                               tofloat(ix(src, add(mul(N.Var(h), W), N.Var(w)))))))
    if base_name(dst) != base_name(src):
        return [loop(h, 0, H, loop(w, 0, W, assign(ix(dst, add(mul(N.Var(w), H), N.Var(h))),
                                                    ix(src, add(mul(N.Var(h), W), N.Var(w))))))]
    return _through_temp(ctx, name, dst, [src], body, mul(H, W))


def lower_memcpy(ctx, name, args):
    """Typed element loops when both sides have the same element type and every byte count is
    ``X * sizeof(T)``; byte loops otherwise (exact for any type)."""
    dst, src, nbytes = args[0], args[1], args[2]
    strided = len(args) == 7
    ed, es = ctx.env.elem_of(dst), ctx.env.elem_of(src)
    counts = None
    if ed is not None and es is not None and ed.dtype == es.dtype:
        counts = [sizeof_count(nbytes, ed)]
        if strided:
            counts += [sizeof_count(args[4], ed), sizeof_count(args[5], ed)]
        if any(x is None for x in counts):
            counts = None
    if counts is None:   # byte view
        dst = cast(ptr(U8), dst)
        src = cast(ptr(U8, const=True), src)
        counts = [nbytes] + ([args[4], args[5]] if strided else [])
    j = ctx.fresh("j")
    if not strided:
        return [loop(j, 0, counts[0], assign(ix(dst, N.Var(j)), ix(src, N.Var(j))))]
    s = ctx.fresh("seg")
    Vs, Vj = N.Var(s), N.Var(j)
    return [loop(s, 0, add(args[6], 1), loop(j, 0, counts[0], assign(
        ix(dst, add(mul(Vs, counts[1]), Vj)), ix(src, add(mul(Vs, counts[2]), Vj)))))]


STATEMENTS = {}
for _n in BINARY_OPS:
    STATEMENTS[_n] = lower_binary
for _n in SCALAR_OPS:
    STATEMENTS[_n] = lower_scalar
for _n in CYCLE_OPS:
    STATEMENTS[_n] = lower_cycle
for _n in UNARY:
    STATEMENTS[_n] = lower_unary
for _n in ("__bang_float2half_rn", "__bang_half2float"):
    STATEMENTS[_n] = lower_convert
for _n in ("__bang_write_zero", "__memset_nram", "__bang_write_value"):
    STATEMENTS[_n] = lower_fill
for _n in ("__bang_max", "__bang_min"):
    STATEMENTS[_n] = lower_argext
STATEMENTS["__bang_sum"] = lower_sum
STATEMENTS["__bang_reduce_sum"] = lower_reduce_sum
STATEMENTS["__bang_argmax"] = lower_argext_u32
STATEMENTS["__bang_argmin"] = lower_argext_u32
for _n in POOLS:
    STATEMENTS[_n] = lower_pool
STATEMENTS["__bang_conv"] = lower_conv
STATEMENTS["__bang_matmul"] = lower_matmul
STATEMENTS["__bang_mlp"] = lower_mlp
STATEMENTS["__bang_transpose"] = lower_transpose
STATEMENTS["__memcpy"] = lower_memcpy
STATEMENTS["__memcpy_async"] = lower_memcpy

#: the BANG calls this family lowers (statement position only: they return void)
NAMES = frozenset(STATEMENTS)
