"""Integer row contractions on BANG -> the fixed-point ``__bang_matmul``, exact for every input.

The staged row loop (what :mod:`passes.patterns.rows` leaves for an int8 x int8 -> int32 gemm)::

    for (i = 0; i < rn; ++i)
        for (j = 0; j < N; ++j) {
            T acc = 0;                                   // T: int32 or uint32
            for (k = 0; k < K; ++k) acc += (T)((int32)A[i*K + k] * (int32)B[k*N + j]);
            C[i*N + j] = (int32)acc;                     // C: int32 or uint32
        }

with A (uint8 or int8) and C in NRAM and B (int8) in WRAM.  ``__bang_matmul(float*, int8*, int8*,
M, K, N, pos)`` sums int8 x int8 products and writes ``(float)sum * 2^pos``: exact only while the
sum is an integer float can hold, ``|sum| <= 2^24``.  The form below needs no precondition:

* A goes in as ``a - s`` with ``s = 128`` for uint8 (``[0, 255] -> [-128, 127]``) and ``s = 0`` for
  int8, so every product is ``|(a - s) * b| <= 128 * 128 = 2^14``;
* K is cut into chunks of at most :data:`KC` = 1024, so each chunk's sum is ``<= 2^24`` (exact in
  float, and exact in the instruction's own int32 sum); the float is converted back to int32
  exactly;
* ``s * colsum(B)`` is restored per chunk from one more product, a row of ones times the same
  chunk of B (``|sum| <= 2^17``);
* all chunk results are added in uint32, i.e. modulo 2^32, which is what a uint32 accumulator
  does and what an int32 accumulator does whenever it does not overflow (an overflow is undefined
  behaviour in the source, so any result is its result).

So ``C[i][j] == sum_k a*b (mod 2^32)`` for every a, b the element types allow (docs/decisions.md,
2026-12-05 "int8 contractions to the fixed-point __bang_matmul").  The conversions and additions
are O(rn*K + rn*N) scalar loops per row block; the O(rn*N*K) contraction is the instruction.

Scratch (NRAM, declared by the replacement, hoisted to the kernel top): an int8 copy of A's rows
as large as A's buffer, two float results as large as C's buffer, and KC int8 ones; refused
(XP4001) when they do not fit beside the buffers already there.  The cache pass leaves room for
them when it sees such a contraction (:func:`scratch_buffers`).
"""
from __future__ import annotations

from xpiler.ir import nodes as N

from ..base import PassError
from . import common as U

NAME = "tensorize"
#: the longest K chunk whose sum of |product| <= 2^14 terms stays <= 2^24 (exact in float)
KC = 1024
PRODUCT_MAX = 128 * 128
#: staged buffers of such a contraction need three more of their size in NRAM (A's int8 copy,
#: the chunk result, the column sums): the cache pass divides its NRAM budget accordingly
SCRATCH_BUFFERS = 3

_INT = ("int32", "uint32")
_LHS = ("uint8", "int8")


def _cast_dtype(e):
    return e.type.dtype if isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) else None


def _load(e, dtypes: dict):
    """``X[idx]`` or ``(int32 / uint32)X[idx]`` with X an 8-bit buffer -> (X, idx)."""
    if isinstance(e, N.Cast):
        if _cast_dtype(e) not in _INT:
            return None
        e = e.expr
    if isinstance(e, N.Index) and isinstance(e.base, N.Var) and dtypes.get(e.base.name) in _LHS:
        return e.base.name, e.index
    return None


def int_product(e, dtypes: dict):
    """``P * Q`` (optionally cast to int32 / uint32 as a whole) with P, Q 8-bit loads, each
    optionally widened to int32 / uint32 -> ((X, idx), (Y, idx)); else None.  The product of two
    8-bit values is at most 2^15 in magnitude, exact in int32 whichever way it is converted."""
    if isinstance(e, N.Cast):
        if _cast_dtype(e) not in _INT:
            return None
        e = e.expr
    if not (isinstance(e, N.BinOp) and e.op == "*"):
        return None
    p, q = _load(e.lhs, dtypes), _load(e.rhs, dtypes)
    if p is None or q is None:
        return None
    return p, q


def _acc_step(s, acc: str):
    """``acc += E`` or ``acc = acc + E`` -> E."""
    if isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name == acc:
        if s.op == "+=":
            return s.value
        if s.op == "=" and isinstance(s.value, N.BinOp) and s.value.op == "+" and U.is_var(s.value.lhs, acc):
            return s.value.rhs
    return None


def accumulated_int8_operands(block, dtypes: dict) -> set:
    """Buffers read as int8 operands of an integer product accumulated in a scalar
    (``acc += (T)(A[..] * B[..])``): the candidates for WRAM (the rhs) in the cache pass."""
    from xpiler.ir.visit import walk
    out = set()
    for n in walk(block):
        if isinstance(n, N.Assign) and isinstance(n.target, N.Var):
            v = _acc_step(n, n.target.name)
            pr = int_product(v, dtypes) if v is not None else None
            if pr is not None:
                out |= {b for b, _ in pr if dtypes.get(b) == "int8"}
    return out


def _stmts(b):
    return [s for s in U.inline_lets(b.stmts) if not isinstance(s, N.Comment)]


def _plain(loop) -> bool:
    return isinstance(loop, N.For) and loop.binding is None and _c(loop.lo, 0) and _c(loop.step, 1)


def _c(e, v):
    e = U.strip_casts(e)
    return isinstance(e, N.Const) and e.value == v


def match(loop: N.For, bufs: dict):
    """The staged int8 contraction over ``loop`` -> dict(C, A, B, K, N, shift) or None."""
    from .rows import _lin2, _eq
    if not _plain(loop):
        return None
    i = loop.var
    body = _stmts(loop.body)
    if len(body) != 1 or not _plain(body[0]):
        return None
    jl = body[0]
    jb = _stmts(jl.body)
    if len(jb) != 3 or not isinstance(jb[0], N.Decl) or not _plain(jb[1]) or not isinstance(jb[2], N.Assign):
        return None
    dec, kl, st = jb
    acc = dec.name
    if U.scalar_dtype(dec.type) not in _INT or dec.init is None or not _c(dec.init, 0):
        return None
    kb = _stmts(kl.body)
    if len(kb) != 1:
        return None
    step = _acc_step(kb[0], acc)
    dtypes = {b: U.scalar_dtype(d.type.elem) for b, d in bufs.items()}
    pr = int_product(step, dtypes) if step is not None else None
    if pr is None:
        return None
    if st.op != "=" or not isinstance(st.target, N.Index) or not isinstance(st.target.base, N.Var):
        return None
    val = st.value
    if isinstance(val, N.Cast):
        if _cast_dtype(val) not in _INT:
            return None
        val = val.expr
    if not (isinstance(val, N.Var) and val.name == acc):
        return None
    cb = st.target.base.name
    if cb not in bufs or dtypes.get(cb) not in _INT or bufs[cb].scope != "nram":
        return None
    k, j, K, N_ = kl.var, jl.var, kl.hi, jl.hi
    cc = _lin2(st.target.index, i, j)
    if cc is None or not _eq(cc[0], N_) or not _c(cc[1], 1):
        return None
    for (ab, ai), (bb, bi) in (pr, pr[::-1]):
        if bufs[ab].scope != "nram" or bufs[bb].scope != "wram" or dtypes[bb] != "int8":
            continue
        ca, cbb = _lin2(ai, i, k), _lin2(bi, k, j)
        if ca is None or cbb is None:
            continue
        if _eq(ca[0], K) and _c(ca[1], 1) and _eq(cbb[0], N_) and _c(cbb[1], 1):
            return dict(C=cb, A=ab, B=bb, K=K, N=N_, rows=loop.hi,
                        shift=128 if dtypes[ab] == "uint8" else 0, ctype=bufs[cb].type.elem)
    return None


def _for(var, hi, body, lo=None, step=None):
    return N.For(var, lo if lo is not None else U.C(0), hi, step if step is not None else U.C(1),
                 N.Block(tuple(body)), var_type=N.Scalar("int32", "int"))


def _ix(buf, e):
    return N.Index(N.Var(buf), e)


def replacement(program, func, loop: N.For, m: dict):
    """The chunked fixed-point form of the matched loop (statements, scratch declarations first)."""
    from xpiler.ir.visit import walk
    bufs = U.buffer_decls(func, program)
    macros = program.macro_table()
    cap_a, cap_c = U.const_size(bufs[m["A"]], macros), U.const_size(bufs[m["C"]], macros)
    if cap_a is None or cap_c is None:
        raise PassError(NAME, "int8 matmul: the staged A / C buffers have no fixed size", loop, "XP4001")
    s = m["shift"]
    extra = cap_a + 4 * cap_c + ((4 * cap_c + KC) if s else 0)
    have = U.static_bytes(program, func, "nram")
    if have + extra > U.NRAM_BYTES:
        raise PassError(NAME, f"int8 matmul: its scratch ({extra} bytes) does not fit in NRAM beside the "
                              f"{have} bytes already declared ({U.NRAM_BYTES})", loop, "XP4001")
    used = {n.name for n in walk(func) if isinstance(n, (N.Var, N.Decl))} | \
        {n.var for n in walk(func) if isinstance(n, N.For)}

    def fresh(base):
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}{n}"
        used.add(name)
        return name
    a8, pf, sf, ones = fresh(f"{m['A']}_i8"), fresh(f"{m['C']}_f"), fresh(f"{m['B']}_colsum"), fresh("xp_ones")
    k0, kc, i, j, k, t = (fresh(x) for x in ("xp_k0", "xp_kc", "xp_i", "xp_j", "xp_k", "xp_t"))
    i8, f32, u32, i32 = N.Scalar("int8", "int8_t"), N.Scalar("float32"), N.Scalar("uint32", "uint32_t"), \
        N.Scalar("int32", "int32_t")
    decls = [N.Decl(a8, N.Array(i8, (U.C(cap_a),)), scope="nram"),
             N.Decl(pf, N.Array(f32, (U.C(cap_c),)), scope="nram")]
    if s:
        decls += [N.Decl(sf, N.Array(f32, (U.C(cap_c),)), scope="nram"),
                  N.Decl(ones, N.Array(i8, (U.C(KC),)), scope="nram")]
    K, N_, rows = m["K"], m["N"], m["rows"]
    V = N.Var
    # A's chunk as int8: a - s in [-128, 127]
    a_val = N.BinOp("-", N.Cast(i32, _ix(m["A"], U.add(U.mul(V(i), K), N.BinOp("+", V(k0), V(k))))), U.C(s)) \
        if s else N.Cast(i32, _ix(m["A"], U.add(U.mul(V(i), K), N.BinOp("+", V(k0), V(k)))))
    to_i8 = _for(i, rows, [_for(k, V(kc), [N.Assign(_ix(a8, U.add(U.mul(V(i), V(kc)), V(k))), "=",
                                                     N.Cast(i8, a_val))])])
    rhs = N.BinOp("+", V(m["B"]), U.mul(V(k0), N_))
    chunk = [U.int_decl(kc, N.Intrinsic("min", (U.C(KC), N.BinOp("-", K, V(k0))))), to_i8,
             U.call("__bang_matmul", V(pf), V(a8), rhs, rows, V(kc), N_, U.C(0))]
    # C += (int32)chunk (+ s * (int32)colsum), modulo 2^32
    cix = U.add(U.mul(V(i), N_), V(j))
    add = N.BinOp("+", N.Cast(u32, _ix(m["C"], cix)), N.Cast(u32, N.Cast(i32, _ix(pf, cix))))
    if s:
        chunk.append(U.call("__bang_matmul", V(sf), V(ones), rhs, U.C(1), V(kc), N_, U.C(0)))
        add = N.BinOp("+", add, N.BinOp("*", N.Const(s, "uint32", f"{s}u"), N.Cast(u32, N.Cast(i32, _ix(sf, V(j))))))
    chunk.append(_for(i, rows, [_for(j, N_, [N.Assign(_ix(m["C"], cix), "=", N.Cast(m["ctype"], add))])]))
    work = [_for(t, U.mul(rows, N_), [N.Assign(_ix(m["C"], V(t)), "=", U.C(0))])]
    if s:
        work.append(_for(t, U.C(KC), [N.Assign(_ix(ones, V(t)), "=", U.C(1))]))
    work.append(_for(k0, K, chunk, step=U.C(KC)))
    cond = N.BinOp("&&", N.BinOp(">", rows, U.C(0)), N.BinOp(">", N_, U.C(0)))
    return decls + [N.Comment(f"/* int8 contraction on the matrix unit: K in chunks of {KC}, A as a - {s}, "
                              f"|chunk sum| <= 2^24 (exact in float), sums modulo 2^32 */"),
                    N.If(cond, N.Block(tuple(work)), None)]


def sites(program, func, ops=None):
    """[(loop, replacement statements)] for every staged int8 contraction of ``func``."""
    from xpiler.ir.visit import walk
    if ops and "__bang_matmul" not in ops:
        return []
    bufs = U.buffer_decls(func, program)
    out = []
    for loop in [n for n in walk(func.body) if isinstance(n, N.For)]:
        if any(any(loop is x for x in walk(s[0])) for s in out):
            continue
        m = match(loop, bufs)
        if m is not None:
            out.append((loop, replacement(program, func, loop, m)))
    return out
