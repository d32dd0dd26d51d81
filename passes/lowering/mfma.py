"""AMD MFMA builtins (gfx90a layouts, wave64) as a shared-memory exchange plus per-lane loops.

Lane l (i = l % 16, g = l / 16) of a wavefront holds D[4g + e][i] in element e.  The lowering
stores every lane's A and B operands into ``__shared__`` buffers indexed by the linear thread
id, waits at a barrier, lets each lane compute its own 4 outputs from the exact layouts, and
waits again before the buffers can be reused:

  16x16x4f32:  lane supplies a = A[i][g], b = B[g][i]          (K = 4)
  16x16x16f16: lane supplies a[e] = A[i][4g+e], b[e] = B[4g+e][i]  (K = 16)
  16x16x16i8:  the f16 layout with the four signed bytes packed in one int (byte e = element e);
               the int32 sums are added in unsigned (they wrap modulo 2^32 as the instruction's)
"""
from __future__ import annotations

from xpiler.ir import nodes as N

from .common import FLOAT, add, assign, b, c, cast, decl, ix, loop, mul, tofloat, scalar

F32 = "__builtin_amdgcn_mfma_f32_16x16x4f32"
F16 = "__builtin_amdgcn_mfma_f32_16x16x16f16"
I8 = "__builtin_amdgcn_mfma_i32_16x16x16i8"
NAMES = frozenset({F32, F16, I8})
WAVE = 64


def lower(ctx, call: N.Intrinsic, result: str, barrier):
    """Statements computing the MFMA ``call`` into the float[4] (int[4] for I8) array ``result``."""
    if call.name == I8:
        return _lower_i8(ctx, call, result, barrier)
    a, bb, cc = call.args[0], call.args[1], call.args[2]
    half = call.name == F16
    per = 4 if half else 1
    elem = scalar("float16", "_Float16") if half else FLOAT
    bufa = ctx.hooks.buffer(ctx, "mfa", elem, 1024 * per)
    bufb = ctx.hooks.buffer(ctx, "mfb", elem, 1024 * per)
    tid = N.Var(ctx.hooks.tid(ctx))
    out = []
    if half:
        e = ctx.fresh("e")
        Ve = N.Var(e)
        out.append(loop(e, 0, 4, [assign(ix(bufa, add(mul(tid, 4), Ve)), ix(a, Ve)),
                                  assign(ix(bufb, add(mul(tid, 4), Ve)), ix(bb, Ve))]))
    else:
        out += [assign(ix(bufa, tid), a), assign(ix(bufb, tid), bb)]
    out.append(barrier())
    lane, wb, i, g = ctx.fresh("lane"), ctx.fresh("wbase"), ctx.fresh("li"), ctx.fresh("lg")
    out += [decl(lane, scalar("int32", "int"), b("%", tid, WAVE), const=True),
            decl(wb, scalar("int32", "int"), b("-", tid, N.Var(lane)), const=True),
            decl(i, scalar("int32", "int"), b("%", N.Var(lane), 16), const=True),
            decl(g, scalar("int32", "int"), b("/", N.Var(lane), 16), const=True),
            decl(result, N.Array(FLOAT, (c(4),)))]
    e, k, s = ctx.fresh("e"), ctx.fresh("k"), ctx.fresh("acc")
    Ve, Vk = N.Var(e), N.Var(k)
    row = add(mul(4, N.Var(g)), Ve)                       # output row 4g + e, column i
    if half:   # A[r][k] held by lane (k/4)*16 + r, element k%4; B[k][col] by lane (k/4)*16 + col
        av = ix(bufa, add(mul(add(N.Var(wb), mul(b("/", Vk, 4), 16), row), 4), b("%", Vk, 4)))
        bv = ix(bufb, add(mul(add(N.Var(wb), mul(b("/", Vk, 4), 16), N.Var(i)), 4), b("%", Vk, 4)))
        K = 16
    else:      # A[r][k] held by lane k*16 + r; B[k][col] by lane k*16 + col
        av = ix(bufa, add(N.Var(wb), mul(Vk, 16), row))
        bv = ix(bufb, add(N.Var(wb), mul(Vk, 16), N.Var(i)))
        K = 4
    out.append(loop(e, 0, 4, [decl(s, FLOAT, tofloat(ix(cc, Ve))),
                              loop(k, 0, K, assign(s, b("*", tofloat(av), tofloat(bv)), "+=")),
                              assign(ix(result, Ve), N.Var(s))]))
    out.append(barrier())
    return out


def _lower_i8(ctx, call: N.Intrinsic, result: str, barrier):
    """I8: each lane's packed int operands through ``__shared__`` int buffers; A[r][k] is byte
    k % 4 of lane 16(k/4) + r's int, sign-extended, B[k][col] byte k % 4 of lane 16(k/4) + col's."""
    INT, UINT = scalar("int32", "int"), N.Scalar("uint32", "unsigned")
    a, bb, cc = call.args[0], call.args[1], call.args[2]
    bufa = ctx.hooks.buffer(ctx, "mfa", INT, 1024)
    bufb = ctx.hooks.buffer(ctx, "mfb", INT, 1024)
    tid = N.Var(ctx.hooks.tid(ctx))
    def as_int(x):
        return x if isinstance(x, N.Cast) and isinstance(x.type, N.Scalar) and x.type.dtype == "int32" else cast(INT, x)

    out = [assign(ix(bufa, tid), as_int(a)), assign(ix(bufb, tid), as_int(bb)), barrier()]
    lane, wb, i, g = ctx.fresh("lane"), ctx.fresh("wbase"), ctx.fresh("li"), ctx.fresh("lg")
    out += [decl(lane, INT, b("%", tid, WAVE), const=True),
            decl(wb, INT, b("-", tid, N.Var(lane)), const=True),
            decl(i, INT, b("%", N.Var(lane), 16), const=True),
            decl(g, INT, b("/", N.Var(lane), 16), const=True),
            decl(result, N.Array(INT, (c(4),)))]
    e, k, s = ctx.fresh("e"), ctx.fresh("k"), ctx.fresh("acc")
    Ve, Vk = N.Var(e), N.Var(k)
    row = add(mul(4, N.Var(g)), Ve)

    def byte(buf, who):
        word = ix(buf, add(N.Var(wb), mul(b("/", Vk, 4), 16), who))
        return cast(INT, cast(scalar("int8"), b(">>", cast(UINT, word), mul(8, b("%", Vk, 4)))))

    prod = cast(UINT, b("*", byte(bufa, row), byte(bufb, N.Var(i))))
    out.append(loop(e, 0, 4, [decl(s, UINT, cast(UINT, ix(cc, Ve))),
                              loop(k, 0, 16, assign(s, prod, "+=")),
                              assign(ix(result, Ve), cast(INT, N.Var(s)))]))
    out.append(barrier())
    return out
