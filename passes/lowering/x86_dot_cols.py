"""A VNNI column block whose lanes are output columns, as a loop over the columns (c sources).

An int8 gemm written with VNNI (examples/gemm/gemm_vnni.c) keeps 16 output columns in the 16 int32
lanes of one accumulator; a broadcast word of four A bytes meets four packed B bytes per column,
and the last block of columns is masked::

    for (int j0 = 0; j0 < N; j0 += 16) {
        const int nj = (N - j0 < 16) ? N - j0 : 16;
        const __mmask16 m = (__mmask16)((1u << nj) - 1u);
        __m512i acc = _mm512_setzero_si512();
        for (int q = 0; q < Kq; ++q) {
            int32_t a4 = 0;
            const int kr = ...;
            memcpy(&a4, a + 4 * q, (size_t)kr);
            const __m512i va = _mm512_set1_epi32(a4);
            const __m512i vb = _mm512_maskz_loadu_epi32(m, Bp + ((long)q * N + j0) * 4);
            acc = _mm512_dpbusd_epi32(acc, va, vb);
        }
        _mm512_mask_storeu_epi32(C + (long)i * N + j0, m, acc);
    }

Each lane is a column of its own (lane l of the block at j0 is column ``j0 + l``): it is updated
only from its own four B bytes and the broadcast word, and stored to its own element. So the block
loop is the column loop, with the lane's dot product written out::

    for (int j0 = 0; j0 < N; ++j0) {
        uint32_t acc = 0u;
        for (int q = 0; q < Kq; ++q) {
            const int kr = ...;
            for (int r = 0; r < 4; ++r)
                acc += (uint32_t)((int32_t)(r < kr ? a[4 * q + r] : (uint8_t)0)
                                  * (int32_t)(int8_t)Bp[((long)q * N + j0) * 4 + r]);
        }
        C[(long)i * N + j0] = (int32_t)acc;
    }

Exact: ``vpdpbusd`` adds the four products of an unsigned A byte and a signed B byte (each fits an
int32) to the lane modulo 2^32 (the non-saturating form), which the ``uint32_t`` sum does; a masked
lane loads nothing and is not stored, and the columns ``j0 + l`` for ``l < nj`` of the blocks
``j0 = 0, 16, ...`` are each column below ``N`` once. The word filled by ``memcpy(&w, p, n)``
over ``w = 0`` holds byte ``r`` of ``p`` for ``r < n`` and 0 above (little-endian targets; a
source with ``n > 4`` writes past ``w``, undefined, so ``n <= 4`` in every defined run); without
``memcpy`` byte ``r`` of the word ``w`` is ``(uint8_t)((uint32_t)w >> 8r)``.

Conditions (else the block is left to the lane lowering of ``lowering/x86.py``), checked on the
IR; the arithmetic facts by Z3 (``xpiler/ir/z3term.py``):

* the block loop runs ``j0`` from 0 by 16 while ``j0 < X``, its body is (comments aside) the
  declarations of ``nj``, of the mask ``m = (1u << nj) - 1u`` and of ``acc = setzero``, one loop,
  and ``_mm512_mask_storeu_epi32(PC, m, acc)``; Z3 proves ``1 <= nj <= 16`` and
  ``j0 + nj == min(X, j0 + 16)`` for ``0 <= j0 < X``; ``nj``, ``m`` and ``acc`` have no other use,
  and nothing in the function assigns ``j0``, ``nj`` or a variable of ``X``;
* the inner loop's body is scalar declarations with pure initialisers (and at most one
  ``memcpy(&w, p, n)`` into a declared ``int32_t``/``uint32_t w = 0`` used nowhere else but the
  broadcast), then ``va = _mm512_set1_epi32(w)``, ``vb = _mm512_maskz_loadu_epi32(m, PB)`` and
  ``acc = _mm512_dpbusd_epi32(acc, va, vb)`` (the operands may also be written in place); nothing
  there but ``PB`` reads ``j0``;
* ``PB = B + off_b`` and ``PC = C + off_c`` with ``B`` a pointer to 8-bit integers and ``C`` to
  ``int32_t`` (distinct buffers, as everywhere in xpiler: the verification run checks it), and Z3
  proves ``off_b(j0 + l) == off_b(j0) + 4 l`` and ``off_c(j0 + l) == off_c(j0) + l`` for every l.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import z3term as T
from xpiler.ir.visit import substitute, walk

from ..radix_join import Terms as _Terms, const_int as _const, plain as _plain, proved as _proved, pure as _pure
from ..radix_join import strip_int_casts as _strip
from .chunk_tail import _assigned
from .common import b, c, cast, loop, scalar
from .common import call_name as _name

U32, I32, U8, I8 = scalar("uint32"), scalar("int32"), scalar("uint8"), scalar("int8")
ZERO = ("_mm512_setzero_si512", "_mm512_setzero_epi32")
BYTE_TYPES = ("int8", "uint8")


def _uses(node, name) -> int:
    return sum(1 for n in walk(node) if isinstance(n, N.Var) and n.name == name)


def _split_pointer(e, types):
    """(base name, offset Expr) of ``base + o1 + o2 ...`` with ``base`` a pointer variable."""
    offs = []
    while isinstance(e, N.BinOp) and e.op == "+":
        offs.append(e.rhs)
        e = e.lhs
    if not (isinstance(e, N.Var) and isinstance(types.get(e.name), N.Pointer)):
        return None
    off = c(0)
    for o in reversed(offs):
        off = b("+", off, o)
    return e.name, off


def _linear(off, var, stride) -> bool:
    """Z3: ``off(var + l) == off(var) + stride * l`` for every value of every variable."""
    tm = _Terms()
    try:
        a = tm.int(off)
        shifted = tm.int(substitute(off, {var: N.BinOp("+", N.Var(var), N.Var("xpd_lane_l"))}))
    except T.Untranslatable:
        return False
    return _proved([], shifted == a + stride * z3.Int("xpd_lane_l"))


def lift(func: N.Func, body: N.Block, names) -> N.Block:
    """``body`` with every column block of the form above written as its column loop."""
    types = {p.name: p.type for p in func.params}
    dup = set()
    for n in walk(body):
        if isinstance(n, N.Decl):
            if n.name in types:
                dup.add(n.name)             # declared twice, or shadowing a parameter: no type
            types[n.name] = n.type
    for d in dup:
        types.pop(d, None)
    assigned = _assigned(body)
    return _Lift(types, assigned, names).block(body)


class _Lift:
    def __init__(self, types, assigned, names):
        self.types, self.assigned, self.names = types, assigned, names

    def block(self, blk: N.Block) -> N.Block:
        out, changed = [], False
        for s in blk.stmts:
            t = self.stmt(s)
            changed |= t is not s
            out.append(t)
        return blk.with_(stmts=tuple(out)) if changed else blk

    def stmt(self, s):
        if isinstance(s, N.For):
            new = self.column_loop(s)
            if new is not None:
                return new
            body = self.block(s.body)
            return s if body is s.body else s.with_(body=body)
        if isinstance(s, N.Block):
            return self.block(s)
        if isinstance(s, N.If):
            th = self.stmt(s.then)
            el = self.stmt(s.else_) if s.else_ is not None else None
            return s if th is s.then and el is s.else_ else s.with_(then=th, else_=el)
        return s

    # ------------------------------------------------------------------ matching
    def column_loop(self, s: N.For):
        if not (s.binding is None and s.cmp == "<" and _const(s.lo) == 0 and _const(s.step) == 16
                and s.var_type is not None):
            return None
        j0, X = s.var, s.hi
        xvars = {n.name for n in walk(X) if isinstance(n, N.Var)}
        if not _pure(X) or (xvars | {j0}) & (self.assigned - {j0}) or _assigned(s.body) & ({j0} | xvars):
            return None
        body = _plain(s.body.stmts)
        if len(body) != 5:
            return None
        d_nj, d_m, d_acc, inner, store = body
        if not all(isinstance(d, N.Decl) and d.init is not None for d in (d_nj, d_m, d_acc)):
            return None
        nj, m, acc = d_nj.name, d_m.name, d_acc.name
        if not (_name(d_acc.init) in ZERO and not d_acc.init.args):
            return None
        if not (isinstance(store, N.ExprStmt) and _name(store.expr) == "_mm512_mask_storeu_epi32"
                and len(store.expr.args) == 3 and _is_var(store.expr.args[1], m) and _is_var(store.expr.args[2], acc)):
            return None
        if not self.lanes_ok(j0, X, d_nj, d_m):
            return None
        if not isinstance(inner, N.For) or inner.binding is not None:
            return None
        got = self.inner_parts(inner, j0, nj, m, acc)
        if got is None:
            return None
        prefix, word, pb = got
        # every use of nj, m, acc accounted for
        if _uses(s.body, nj) != 1 or _uses(s.body, m) != 2 or _uses(s.body, acc) != 3:
            return None
        if _uses((inner.lo, inner.hi, inner.step), j0):
            return None
        sb, sc = _split_pointer(pb, self.types), _split_pointer(store.expr.args[0], self.types)
        if sb is None or sc is None:
            return None
        (bname, boff), (cname, coff) = sb, sc
        bt, ct = self.types[bname].elem, self.types[cname].elem
        if not (isinstance(bt, N.Scalar) and bt.dtype in BYTE_TYPES and isinstance(ct, N.Scalar) and ct.dtype == "int32"):
            return None
        if bname == cname or cname in {n.name for n in walk(tuple(prefix)) if isinstance(n, N.Var)} \
                or cname in {n.name for n in walk(word) if isinstance(n, N.Var)}:
            return None
        if not (_linear(boff, j0, 4) and _linear(coff, j0, 1)):
            return None
        # the column loop
        r = self.names.fresh("r")
        Vr = N.Var(r)
        a_byte = self.word_byte(word, Vr)
        b_byte = N.Index(N.Var(bname), b("+", boff, Vr))
        if bt.dtype != "int8":
            b_byte = cast(I8, b_byte)           # dpbusd reads the B bytes signed
        upd = N.Assign(N.Var(acc), "+=", cast(U32, b("*", cast(I32, a_byte), cast(I32, b_byte))), loc=s.loc)
        new_inner = inner.with_(body=inner.body.with_(stmts=tuple(prefix) + (loop(r, 0, 4, [upd]),)))
        out = [N.Decl(acc, U32, N.Const(0, "uint32", "0u"), loc=d_acc.loc), new_inner,
               N.Assign(N.Index(N.Var(cname), coff), "=", cast(I32, N.Var(acc)), loc=store.loc)]
        return s.with_(step=c(1), body=s.body.with_(stmts=tuple(out)))

    def lanes_ok(self, j0, X, d_nj, d_m) -> bool:
        """Z3: 1 <= nj <= 16 and j0 + nj == min(X, j0 + 16) while 0 <= j0 < X; m = (1u << nj) - 1u."""
        mi = _strip(d_m.init)
        if not (isinstance(mi, N.BinOp) and mi.op == "-" and _const(mi.rhs) == 1):
            return False
        sh = _strip(mi.lhs)
        if not (isinstance(sh, N.BinOp) and sh.op == "<<" and _const(sh.lhs) == 1 and _is_var(_strip(sh.rhs), d_nj.name)):
            return False
        if not _pure(d_nj.init) or d_nj.name in self.assigned or d_m.name in self.assigned:
            return False
        if not (isinstance(d_m.type, N.Scalar) and d_m.type.dtype in ("uint16", "int32", "uint32", "int64", "uint64")):
            return False                    # a narrower mask would drop lanes 8..15
        tm = _Terms()
        try:
            n, x, j = tm.int(d_nj.init), tm.int(X), z3.Int(j0)
        except T.Untranslatable:
            return False
        return _proved([j >= 0, j < x], z3.And(n >= 1, n <= 16, j + n == z3.If(x < j + 16, x, j + 16)))

    def inner_parts(self, inner: N.For, j0, nj, m, acc):
        """(prefix statements, the broadcast word, the B pointer) of the inner loop, else None."""
        stmts = _plain(inner.body.stmts)
        if not stmts:
            return None
        upd = stmts[-1]
        if not (isinstance(upd, N.Assign) and upd.op == "=" and _is_var(upd.target, acc)
                and _name(upd.value) == "_mm512_dpbusd_epi32" and len(upd.value.args) == 3
                and _is_var(upd.value.args[0], acc)):
            return None
        ops = list(upd.value.args[1:])
        rest = stmts[:-1]
        # operand declarations right before the update
        for k in (0, 1):
            if isinstance(ops[k], N.Var):
                at = next((i for i in range(len(rest) - 1, -1, -1) if isinstance(rest[i], N.Decl)
                           and rest[i].name == ops[k].name), None)
                if at is None or rest[at].init is None or _uses(tuple(rest[at + 1:]), ops[k].name):
                    return None
                ops[k] = rest[at].init
                rest = rest[:at] + rest[at + 1:]
        va, vb = ops
        if not (_name(va) == "_mm512_set1_epi32" and len(va.args) == 1):
            return None
        if not (_name(vb) == "_mm512_maskz_loadu_epi32" and len(vb.args) == 2 and _is_var(vb.args[0], m)):
            return None
        word, pb = va.args[0], vb.args[1]
        if not _pure(word) or not _pure(pb) or _uses((word,), j0):
            return None
        # the prefix: pure scalar declarations, at most one memcpy into the word
        memcpy_at = None
        for i, t in enumerate(rest):
            if isinstance(t, N.ExprStmt) and _name(t.expr) == "memcpy" and memcpy_at is None:
                memcpy_at = i
                continue
            if not (isinstance(t, N.Decl) and isinstance(t.type, N.Scalar) and t.init is not None and _pure(t.init)):
                return None
        if any(_uses(t, n) for t in rest for n in (j0, nj, m, acc)):
            return None
        if memcpy_at is None:
            return rest, word, pb
        mc = rest[memcpy_at].expr
        if len(mc.args) != 3 or not isinstance(word, N.Var):
            return None
        dst, src, n = mc.args
        w = word.name
        wd = next((t for t in rest[:memcpy_at] if isinstance(t, N.Decl) and t.name == w), None)
        if not (isinstance(dst, N.UnOp) and dst.op == "&" and _is_var(dst.operand, w) and wd is not None
                and isinstance(wd.type, N.Scalar) and wd.type.dtype in ("int32", "uint32") and _const(wd.init) == 0):
            return None
        if not (_pure(src) and _pure(n)) or _uses(tuple(rest), w) != 1 or w in _assigned(tuple(rest[memcpy_at + 1:])):
            return None
        # the memcpy reads memory where it stands: nothing after it in the list writes memory
        # (only pure declarations follow), so reading the bytes in the new inner loop reads the same
        prefix = [t for i, t in enumerate(rest) if i != memcpy_at and t is not wd]
        return prefix, ("memcpy", src, n), pb

    def word_byte(self, word, r):
        """Byte ``r`` of the broadcast word as a ``uint8_t`` value."""
        if isinstance(word, tuple):
            _, src, n = word
            sp = _split_pointer(src, self.types)
            if sp is not None and isinstance(self.types[sp[0]].elem, N.Scalar) \
                    and self.types[sp[0]].elem.dtype in BYTE_TYPES:
                byte = N.Index(N.Var(sp[0]), b("+", sp[1], r))
            else:
                byte = N.Index(cast(N.Pointer(U8.with_(const=True)), src), r)
            if not (isinstance(byte.base, N.Var) and self.types[byte.base.name].elem.dtype == "uint8"):
                byte = cast(U8, byte)
            return N.Cond(b("<", r, _strip(n)), byte, cast(U8, c(0)))
        return cast(U8, N.BinOp(">>", cast(U32, word), b("*", c(8), r)))


def _is_var(e, name) -> bool:
    return isinstance(e, N.Var) and e.name == name
