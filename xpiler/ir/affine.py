"""Affine access functions.

``to_affine(expr, ctx)`` turns an index expression into ``Affine`` (integer coefficients over
symbols: loop variables, parameters, builtins like ``threadIdx.x``, plus a constant) or None
when it is not affine.  Macros (#define N 64, IDX(i, j)) and single-assignment locals
(``const int r = row0 + i / BK``) are substituted first.  ``accesses(func)`` lists every
buffer access with its affine index per dimension, its read/write mode and its enclosing
loops; intrinsic calls contribute the accesses their registry effects declare.  An access
through a pointer cast to another element type (``((float4 *)c)[i]``, ``float4 *c4 = (float4 *)c;
c4[i]``) is an access to the buffer it points into: its index is counted in that buffer's
elements and ``lanes`` says how many of them it covers (:mod:`xpiler.ir.lanes`); where that is
not known, its index is unknown (None).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import lanes as L
from . import nodes as N
from . import poly as P
from .intrinsics import REGISTRY
from .visit import walk

INT_DTYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "char", "bool"}
MAX_DEGREE = 3      # symbols in one monomial (i * j * K); a product with more is not an access function
MAX_SUBST = 24      # nested macro / let substitutions


@dataclass(frozen=True)
class Affine:
    """Integer polynomial over symbols, kept as (monomial, coeff) pairs.  A monomial is a
    '*'-joined sorted tuple of symbol names ('i', 'K*i').  Products of a loop variable with a
    size parameter (row * cols + c) are common in kernels; ``affine_in(loopvars)`` says whether
    every monomial holds at most one loop variable (linear in the loops, parametric in sizes)."""
    coeffs: tuple          # sorted ((monomial, int coeff), ...), no zero coefficients
    const: int = 0

    @staticmethod
    def of(coeffs: dict, const: int = 0) -> "Affine":
        return Affine(tuple(sorted((k, v) for k, v in coeffs.items() if v != 0)), const)

    @property
    def cdict(self) -> dict:
        return dict(self.coeffs)

    def symbols(self) -> set:
        return {x for k, _ in self.coeffs for x in k.split("*")}

    @staticmethod
    def from_poly(p: dict) -> "Affine":
        """The Affine of a polynomial of :mod:`xpiler.ir.poly` over names."""
        return Affine.of({"*".join(m): c for m, c in p.items() if m}, p.get((), 0))

    @property
    def poly(self) -> dict:
        """This Affine as a polynomial of :mod:`xpiler.ir.poly` (monomials: sorted name tuples)."""
        p = {tuple(k.split("*")): v for k, v in self.coeffs}
        if self.const:
            p[()] = self.const
        return p

    def __add__(self, o):
        if isinstance(o, int):
            o = Affine.of({}, o)
        elif not isinstance(o, Affine):
            return NotImplemented
        return Affine.from_poly(P.add(self.poly, o.poly))

    def scale(self, c: int):
        return Affine.of({k: v * c for k, v in self.coeffs}, self.const * c)

    def mul(self, o) -> Optional["Affine"]:
        """self * o; None when a product has more than three symbols (MAX_DEGREE)."""
        try:
            return Affine.from_poly(P.mul(self.poly, o.poly, max_degree=MAX_DEGREE))
        except P.NotPoly:
            return None

    def __sub__(self, o):
        return self + (o if isinstance(o, Affine) else Affine.of({}, o)).scale(-1)

    def __mul__(self, o):
        if not isinstance(o, Affine):
            if not isinstance(o, int):
                return NotImplemented
            o = Affine.of({}, o)
        return self.mul(o)

    __rmul__ = __mul__

    def __radd__(self, o):
        return self + Affine.of({}, o)

    def is_const(self):
        return not self.coeffs

    def coeff(self, sym) -> int:
        return self.cdict.get(sym, 0)

    def affine_in(self, loopvars) -> bool:
        return all(sum(x in loopvars for x in k.split("*")) <= 1 for k, _ in self.coeffs)

    def eval(self, env: dict) -> int:
        total = self.const
        for k, v in self.coeffs:
            t = v
            for x in k.split("*"):
                t *= env[x]
            total += t
        return total

    def __str__(self):
        parts = [f"{v}*{k}" if v != 1 else k for k, v in self.coeffs]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


@dataclass
class Context:
    """What substitution may use: macros (name -> Macro) and let-bound locals (name -> Expr);
    ``types``: pointer/array types by name (:func:`xpiler.ir.lanes.pointer_types`), which
    accesses through cast pointers are read with."""
    macros: dict = field(default_factory=dict)
    lets: dict = field(default_factory=dict)
    depth: int = 0
    types: dict = field(default_factory=dict)


def context_for(program: Optional[N.Program], func: Optional[N.Func] = None) -> Context:
    ctx = Context(program.macro_table() if program is not None else {})
    if func is not None:
        ctx.lets = let_bindings(func)
        ctx.types = L.pointer_types(func)
    return ctx


def let_bindings(func) -> dict:
    """Locals declared with an initializer and never assigned again (safe to substitute)."""
    assigned, decls, count = set(), {}, {}
    for n in walk(func):
        if isinstance(n, N.Decl):
            count[n.name] = count.get(n.name, 0) + 1
            if n.init is not None and isinstance(n.type, (N.Scalar, N.Pointer)):
                decls[n.name] = n.init
        elif isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            assigned.add(n.target.name)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
            assigned.add(n.operand.name)
        elif isinstance(n, N.For):
            assigned.add(n.var)
        elif isinstance(n, N.CFor):
            for m in walk(n.init) if n.init is not None else ():
                if isinstance(m, N.Decl):
                    assigned.add(m.name)
    return {k: v for k, v in decls.items() if k not in assigned and count.get(k) == 1}


class _Symbols(P.Reader):
    """The access functions' reading of :mod:`xpiler.ir.poly`: leaves are symbols (variable and
    builtin names) after macro and let substitution (MAX_SUBST levels deep; a let that does not
    read stays a symbol), integer casts read through, ``/ % << >>`` of constants folded with C's
    semantics, ``x << c`` as ``x * 2**c``, at most MAX_DEGREE symbols in a monomial."""

    max_degree = MAX_DEGREE

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def strip(self, e):
        while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in INT_DTYPES:
            e = e.expr
        return e

    def sub(self, e) -> dict:
        ctx = Context(self.ctx.macros, self.ctx.lets, self.ctx.depth + 1, self.ctx.types)
        if ctx.depth > MAX_SUBST:
            raise P.NotPoly()
        return _Symbols(ctx).read(e)

    def leaf(self, e):
        ctx = self.ctx
        if isinstance(e, N.Var):
            m = ctx.macros.get(e.name)
            if m is not None and m.params is None and m.expr is not None:
                return self.sub(m.expr)
            if e.name in ctx.lets:
                try:
                    return self.sub(ctx.lets[e.name])
                except P.NotPoly:
                    pass
            return {(e.name,): 1}
        if isinstance(e, N.Builtin):
            return {(e.name,): 1}
        if isinstance(e, N.Call) and isinstance(e.func, str):
            m = ctx.macros.get(e.func)
            if m is not None and m.params is not None and m.expr is not None and len(m.params) == len(e.args):
                from .visit import substitute
                return self.sub(substitute(m.expr, dict(zip(m.params, e.args))))
        raise P.NotPoly()

    def other(self, e, depth):
        a, b = self.read(e.lhs, depth + 1), self.read(e.rhs, depth + 1)
        a_const, b_const = set(a) <= {()}, set(b) <= {()}
        x, y = a.get((), 0), b.get((), 0)
        if e.op in ("/", "%", "<<", ">>") and a_const and b_const:
            r = None
            if e.op == "/" and y != 0:
                q = abs(x) // abs(y)
                r = q if (x >= 0) == (y > 0) else -q
            elif e.op == "%" and y != 0:
                r = x - y * int(x / y)
            elif e.op == "<<":
                r = x << y
            elif e.op == ">>":
                r = x >> y
            if r is not None:
                return {(): r} if r else {}
        if e.op == "<<" and b_const:
            k = 1 << y
            return {m: c * k for m, c in a.items() if c * k}
        raise P.NotPoly()


def to_affine(e, ctx: Optional[Context] = None) -> Optional[Affine]:
    ctx = ctx or Context()
    if ctx.depth > MAX_SUBST:
        return None
    try:
        return Affine.from_poly(_Symbols(ctx).read(e))
    except P.NotPoly:
        return None


# ------------------------------------------------------------------------------ accesses
@dataclass
class Access:
    buffer: str
    indices: tuple            # Affine | None per dimension (one for flat pointers)
    mode: str                 # r | w | rw
    stmt: object              # the statement holding it
    loops: tuple              # enclosing For nodes, outermost first
    exprs: tuple = ()         # the index expressions as written
    extent: Optional[object] = None  # for intrinsic effects: element/byte count (Expr or int)
    lanes: int = 1            # elements of the buffer covered from the index on (a float4 of floats: 4)

    @property
    def affine(self) -> bool:
        return all(i is not None for i in self.indices)


def _index_chain(e):
    idx = []
    while isinstance(e, N.Index):
        idx.append(e.index)
        e = e.base
    if isinstance(e, N.Var):
        return e.name, tuple(reversed(idx))
    return None, ()


def _resolve(buf, idx, ctx):
    """Follow a let-bound pointer alias (float* c = C + i * N; c[j]) to its base buffer."""
    for _ in range(8):
        init = ctx.lets.get(buf)
        if init is None or len(idx) != 1:
            break
        base, off = _ptr_base_raw(init)
        if base is None:
            break
        idx = (N.BinOp("+", off, idx[0]),)
        buf = base
    return buf, idx


def _ptr_base_raw(e):
    if isinstance(e, N.Cast):
        return _ptr_base_raw(e.expr)
    if isinstance(e, N.Var):
        return e.name, N.Const(0, "int32", "0")
    if isinstance(e, N.UnOp) and e.op == "&" and isinstance(e.operand, N.Index) and isinstance(e.operand.base, N.Var):
        return e.operand.base.name, e.operand.index
    if isinstance(e, N.BinOp) and e.op == "+":
        b, off = _ptr_base_raw(e.lhs)
        if b is not None:
            return b, N.BinOp("+", off, e.rhs)
    return None, None


def _ptr_base(e, ctx):
    """p + off / &p[off] / p -> (p, affine off)."""
    if isinstance(e, N.Cast):
        return _ptr_base(e.expr, ctx)
    if isinstance(e, N.Var):
        if e.name in ctx.lets and isinstance(ctx.lets[e.name], (N.BinOp, N.Var, N.Cast, N.UnOp)):
            b, off = _ptr_base_raw(ctx.lets[e.name])
            if b is not None and b != e.name:
                return b, to_affine(off, ctx)
        return e.name, Affine.of({}, 0)
    if isinstance(e, N.UnOp) and e.op == "&" and isinstance(e.operand, N.Index):
        b, idx = _index_chain(e.operand)
        if b is not None and len(idx) == 1:
            return b, to_affine(idx[0], ctx)
    if isinstance(e, N.BinOp) and e.op in ("+", "-"):
        b, off = _ptr_base(e.lhs, ctx)
        if b is not None:
            o = to_affine(e.rhs, ctx)
            if o is None or off is None:
                return b, None
            return b, off + (o if e.op == "+" else o.scale(-1))
    return None, None


def _retyped(ptr, ctx, k=None):
    """``(buffer, first element Expr or None, lanes)`` of element ``k`` of the pointer ``ptr``
    (``k`` None: ``*ptr``) when a cast on the way changed the pointer's element type or left it
    unknown (:attr:`xpiler.ir.lanes.Target.retyped`); None for any other pointer (read as before)."""
    t = L.pointer_target(ptr, ctx.types, ctx.lets)
    if t is None or not t.retyped:
        return None
    if t.lanes is None or t.offset is None:
        return t.buffer, None, 1
    first = t.offset if k is None else L.plus(t.offset, L.times(k, t.lanes))
    return t.buffer, first, t.lanes


def _element(e, ctx):
    """``(buffer, subscripts, lanes)`` of the element the Index ``e`` reaches: subscripts are
    Exprs (None: unknown) in the buffer's own elements. None when its base is not a pointer
    into a named buffer."""
    b, idx = _index_chain(e)
    if b is None or len(idx) == 1:
        r = _retyped(e.base, ctx, e.index)
        if r is not None:
            return r[0], (r[1],), r[2]
        if b is None:
            t = L.pointer_target(e.base, ctx.types, ctx.lets)
            if t is None:
                return None
            return t.buffer, (L.plus(t.offset, e.index),), 1
    b, idx = _resolve(b, idx, ctx)
    return b, idx, 1


def _subscripts(e):
    out = []
    while isinstance(e, N.Index):
        out.append(e.index)
        e = e.base
    return out


def _record(out, el, mode, stmt, loops, ctx):
    b, idx, lanes = el
    out.append(Access(b, tuple(to_affine(i, ctx) if i is not None else None for i in idx), mode, stmt, loops,
                      idx, lanes=lanes))


def accesses(node, ctx: Optional[Context] = None) -> list:
    """Every buffer access under ``node`` (a Func, Block or statement)."""
    ctx = ctx or Context()
    out: list = []
    _acc_stmt(node, ctx, (), out)
    return out


def _acc_stmt(s, ctx, loops, out):
    if isinstance(s, N.Func):
        if s.body is not None:
            _acc_stmt(s.body, ctx, loops, out)
        return
    if isinstance(s, N.Block):
        for x in s.stmts:
            _acc_stmt(x, ctx, loops, out)
        return
    if isinstance(s, N.For):
        for e in (s.lo, s.hi, s.step):
            _acc_expr(e, ctx, loops, out, s, "r")
        _acc_stmt(s.body, ctx, loops + (s,), out)
        return
    if isinstance(s, N.Assign):
        tgt, mode = _field_target(s.target, "w" if s.op == "=" else "rw")
        el = _element(tgt, ctx) if isinstance(tgt, N.Index) else None
        if el is not None:
            for i in _subscripts(tgt):
                _acc_expr(i, ctx, loops, out, s, "r")
            _record(out, el, mode, s, loops, ctx)
        elif isinstance(tgt, N.UnOp) and tgt.op == "*":
            _record_deref(out, tgt.operand, mode, s, loops, ctx)
        else:
            _acc_expr(s.target, ctx, loops, out, s, "r", lvalue=True)
        _acc_expr(s.value, ctx, loops, out, s, "r")
        return
    for c in s.children() if isinstance(s, N.Node) else ():
        if isinstance(c, N.Stmt):
            _acc_stmt(c, ctx, loops, out)
        elif isinstance(c, N.Expr):
            _acc_expr(c, ctx, loops, out, s, "r")


def _record_deref(out, ptr, mode, stmt, loops, ctx):
    """Record ``*ptr``: through its lanes where a cast retyped the pointer, else at the pointer's
    base and offset (nothing when the pointer is not into a named buffer)."""
    r = _retyped(ptr, ctx)
    if r is not None:
        _record(out, (r[0], (r[1],), r[2]), mode, stmt, loops, ctx)
        return
    b, off = _ptr_base(ptr, ctx)
    if b is not None:
        out.append(Access(b, (off,), mode, stmt, loops, (ptr,)))


def _field_target(tgt, mode):
    """The element an assignment to ``tgt`` writes, and how: a lane or field of an element
    (``a[i].y``, ``p->x``) writes part of it and keeps the rest ("rw"); ``p->f`` is ``(*p).f``."""
    while isinstance(tgt, N.Member):
        mode = "rw"
        if tgt.arrow:
            return N.UnOp("*", tgt.base, loc=tgt.loc), mode
        tgt = tgt.base
    return tgt, mode


def _acc_expr(e, ctx, loops, out, stmt, mode, lvalue=False):
    if isinstance(e, N.Index):
        el = _element(e, ctx)
        if el is not None:
            for i in _subscripts(e):
                _acc_expr(i, ctx, loops, out, stmt, "r")
            if not lvalue:
                _record(out, el, "r", stmt, loops, ctx)
            return
    if isinstance(e, N.Intrinsic):
        d = REGISTRY.get(e.name)
        names = [a.name for a in d.args] if d else []
        for eff in (d.effects if d else ()):
            if eff.arg in names and names.index(eff.arg) < len(e.args):
                arg = e.args[names.index(eff.arg)]
                b, off = _ptr_base(arg, ctx)
                t = L.pointer_target(arg, ctx.types, ctx.lets)
                if t is not None and t.retyped:
                    # the start address is the offset in the buffer's elements; an element count
                    # of a retyped pointer is not one of the buffer's
                    b = t.buffer
                    off = to_affine(t.offset, ctx) if t.offset is not None and \
                        (t.lanes == 1 or eff.unit != "elem") else None
                if b is not None:
                    env = {n: (e.args[i] if i < len(e.args) else None) for i, n in enumerate(names)}
                    out.append(Access(b, (off,), eff.mode, stmt, loops, (arg,), extent=(eff.extent, env, eff.unit)))
    if isinstance(e, N.AssignExpr):
        tgt, mode = _field_target(e.target, "w" if e.op == "=" else "rw")
        el = _element(tgt, ctx) if isinstance(tgt, N.Index) else None
        if el is not None:
            _record(out, el, mode, stmt, loops, ctx)
        elif isinstance(tgt, N.UnOp) and tgt.op == "*":
            _record_deref(out, tgt.operand, mode, stmt, loops, ctx)
        _acc_expr(e.value, ctx, loops, out, stmt, "r")
        return
    if isinstance(e, N.Member) and e.arrow and not lvalue:
        # p->f reads the element *p (a field of it): the same access as (*p).f
        _acc_expr(N.UnOp("*", e.base, loc=e.loc), ctx, loops, out, stmt, "r")
        return
    if isinstance(e, N.UnOp) and e.op == "*" and not lvalue:
        _record_deref(out, e.operand, "r", stmt, loops, ctx)
    if isinstance(e, N.Node):
        for c in e.children():
            if isinstance(c, N.Expr):
                _acc_expr(c, ctx, loops, out, stmt, "r")
