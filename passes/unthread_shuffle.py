"""Un-threading, form 4: a per-thread partial combined by an emulated warp-shuffle exchange.

Loop recovery leaves a warp-shuffle block reduction (``__shfl_xor`` / ``__shfl_down_sync``,
detensorized into an exchange through a scratch array) as a run of thread loops::

    for (t = 0; t < T; ++t) { A[t] = init; for (c = t; c < n; c += T) { ...; A[t] = op(A[t], f(c)); } }
    <exchange region: thread loops over T, loops over offsets, ``xch[tid] = v[t]``,
     ``sh[t] = src < W ? xch[seg + src] : xch[tid]``, ``v[t] = op(v[t], sh[t])``,
     ``if (lane == 0) lds[wave] = v[t]``, a fold ``r = op(r, lds[w])`` ...>
    ... reads of the fold (``A[t]``, ``lds[0]``, a scalar) ...
 →  acc = init; for (c = 0; c < n; ++c) { ...; acc = op(acc, f(c)); }   ... acc ...

**How it is proven.** Everything in the exchange region is integer control flow over constants
(``T``, the warp width, the offsets ``W/2 .. 1``, ``lane``, ``wave``), so the region is *run* here,
once, on abstract values: the value ``A[t]`` after the partial loop is "the partial of thread
``t``", and every float value in the region is a multiset of such partials (plus constants), or
opaque. A combine with the reduction's ``op`` adds multisets; a copy copies; every other float
operation, a read of an element no statement of the region wrote, a read of anything outside the
region gives an opaque value. Integers are evaluated exactly (C's truncating ``/`` and ``%``; the
out-of-range lane rule ``src < W ? … : own`` is just evaluated). The region is legal when every
location read after it (an element ``A[t]`` for every thread, ``lds[0]``, a scalar) holds each
partial ``0..T-1`` exactly once (any number of times for the idempotent max/min/&/|) and no other
value but the op's identity (non-idempotent ops) or the partial's own initial value (idempotent
ops). That is an exhaustive proof over the finitely many threads and offsets, not a pattern match
on the spelling of the butterfly: a ``__shfl_down`` tree whose lane 0 only is used passes, an
exchange that does not gather every lane of a group, a warp width that does not divide ``T`` (the
last group reads lanes that do not exist), a second copy of a partial under ``+`` are refused.

Further conditions (as form 2 in passes/unthread.py): ``T`` is an integer constant; the partial
loop is exactly ``A[t] = init; <strided loop>`` with one update ``A[t] = op(A[t], f)`` (op one of
``+ * & | ^ fmaxf fminf fmax fmin max min``), ``f`` and the loop's other statements do not
touch ``A``; ``init`` is pure and free of ``t``, and the identity (0, 1, 0) for ``+ * ^`` (the
exchange combines ``T`` copies of it); the region writes only local variables; every name it
writes is used nowhere else in the kernel except reads of a fold after it (replaced by the
accumulator) and scalars that end holding the fold (assigned the accumulator in its place). The
flattened loop then goes through passes/unthread.py's dependence test (Z3), the accumulator
excluded. For ``+`` and ``*`` the combination order changes (reassociation, as form 2).
"""
from __future__ import annotations

from collections import Counter

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError

NAME = "unthread"
_INT_DTYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool", "char"}
#: integers evaluated exactly here: signed ones at least 32 bits wide (overflow is undefined in C)
#: and bool; unsigned and narrow ones wrap, which this evaluator does not model: refused
_EXACT_INTS = {"int32", "int64", "bool"}
_FLOAT_DTYPES = {"float32", "float16", "bfloat16", "float64"}
_STEP_CAP = 2_000_000


class Refuse(Exception):
    def __init__(self, why: str, node=None):
        super().__init__(why)
        self.why, self.node = why, node


class Val:
    """An abstract float value: a multiset of partials (thread indices) and constants, or opaque."""
    __slots__ = ("lanes", "consts", "top", "why")

    def __init__(self, lanes=None, consts=frozenset(), top=False, why=""):
        self.lanes = lanes or Counter()
        self.consts, self.top, self.why = consts, top, why


def _top(why: str) -> Val:
    return Val(top=True, why=why)


def _combine(a: Val, b: Val) -> Val:
    if a.top:
        return a
    if b.top:
        return b
    return Val(a.lanes + b.lanes, a.consts | b.consts)


def _line(node) -> str:
    """`` (line N)`` of ``node`` or, for a statement loop recovery made, of the first node in it
    that has a source line."""
    for n in walk(node) if node is not None else ():
        ln = getattr(getattr(n, "loc", None), "line", None)
        if ln:
            return f" (line {ln})"
    return ""


def _text(e) -> str:
    from xpiler.printers import printer_for
    return printer_for("c").expr(e)


def _cdiv(a: int, b: int) -> int:
    if b == 0:
        raise Refuse("a division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a: int, b: int) -> int:
    return a - _cdiv(a, b) * b


_INT_BIN = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": _cdiv, "%": _cmod,
    "^": lambda a, b: a ^ b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a) and bool(b)), "||": lambda a, b: int(bool(a) or bool(b)),
}
_INT_ASSIGN = {"+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "^=": "^", "&=": "&", "|=": "|",
               "<<=": "<<", ">>=": ">>"}


def _fname(e):
    if isinstance(e, N.Intrinsic):
        return e.name
    if isinstance(e, N.Call):
        return e.func if isinstance(e.func, str) else getattr(e.func, "name", None)
    return None


def _scalar_kind(t):
    if isinstance(t, N.Scalar):
        if t.dtype in _INT_DTYPES:
            return "int"
        if t.dtype in _FLOAT_DTYPES:
            return "float"
    return None


class Machine:
    """Runs statements of an exchange region on abstract values (see the module docstring).

    ``outer_ints``: name -> constant of integer variables declared outside the region (never
    assigned); ``outer``: name -> Decl of the kernel's local variables the region may write;
    ``op``: the reduction's combine (``+``, ``fmaxf``, ...); ``arrays``/``scalars``: the state."""

    def __init__(self, op: str, outer_ints: dict, outer: dict, macros: dict, dtype: str = "float32"):
        self.op, self.outer_ints, self.outer, self.macros, self.dtype = op, outer_ints, outer, macros, dtype
        self.outer_writes = 0         # stores to the kernel's variables so far
        self.arrays: dict = {}        # name -> {index: Val}
        self.scalars: dict = {}       # outer float scalars written: name -> Val
        self.written: set = set()     # outer names written
        self.steps = 0
        self.stored_top = None        # why the first opaque value stored to a kernel variable is opaque

    # -- scopes: a list of dicts name -> ("int", value | None) | ("float", Val)
    def _lookup(self, scopes, name):
        for sc in reversed(scopes):
            if name in sc:
                return sc[name]
        return None

    def ival(self, e, scopes) -> int:
        try:
            return self._ival(e, scopes)
        except (ValueError, OverflowError):
            raise Refuse(f"'{_text(e)}' shifts by a negative amount or overflows") from None

    def _ival(self, e, scopes) -> int:
        if isinstance(e, N.Const) and isinstance(e.value, (int, bool)):
            if str(e.dtype) not in _EXACT_INTS:
                raise Refuse(f"the constant '{_text(e)}' is {e.dtype}: wrapping arithmetic is not modeled")
            return int(e.value)
        if isinstance(e, N.Var):
            b = self._lookup(scopes, e.name)
            if b is not None:
                if b[0] not in ("int", "bool") or b[1] is None:
                    raise Refuse(f"'{e.name}' is not an initialized integer here")
                return b[1]
            if e.name in self.outer_ints:
                return self.outer_ints[e.name]
            if e.name in self.macros:
                return self.ival(self.macros[e.name], scopes)
            raise Refuse(f"the integer '{e.name}' is not a constant known here")
        if isinstance(e, N.BinOp) and e.op in _INT_BIN:
            if e.op in ("&&", "||"):
                a = self.ival(e.lhs, scopes)
                if (e.op == "&&" and not a) or (e.op == "||" and a):
                    return int(bool(a))
                return int(bool(self.ival(e.rhs, scopes)))
            return _INT_BIN[e.op](self.ival(e.lhs, scopes), self.ival(e.rhs, scopes))
        if isinstance(e, N.UnOp) and e.op in ("-", "!", "~", "+"):
            v = self.ival(e.operand, scopes)
            return {"-": -v, "!": int(not v), "~": ~v, "+": v}[e.op]
        if isinstance(e, N.Cond):
            return self.ival(e.then if self.ival(e.cond, scopes) else e.else_, scopes)
        if isinstance(e, N.Cast) and _scalar_kind(e.type) == "int":
            if e.type.dtype not in _EXACT_INTS:
                raise Refuse(f"'{_text(e)}' converts to {e.type.dtype}: wrapping arithmetic is not modeled")
            v = self.ival(e.expr, scopes)
            return int(bool(v)) if e.type.dtype == "bool" else v
        raise Refuse(f"'{_text(e)}' is not an integer computed from constants")

    def _array(self, e, scopes):
        """(name, index) of an element ``a[i]`` of a local one-dimensional array."""
        if not (isinstance(e, N.Index) and isinstance(e.base, N.Var)):
            return None
        name = e.base.name
        if self._lookup(scopes, name) is not None or name not in self.outer \
                or not isinstance(self.outer[name].type, N.Array):
            return None
        i = self.ival(e.index, scopes)
        dims = self.outer[name].type.dims
        if len(dims) == 1 and dims[0] is not None:
            try:
                n = self.ival(dims[0], [])
            except Refuse:
                n = None
            if n is not None and not 0 <= i < n:
                raise Refuse(f"'{name}[{i}]' is outside the array ({n} elements)")
        return name, i

    def fval(self, e, scopes) -> Val:
        _effect_free(e)
        if isinstance(e, N.Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
            return Val(consts=frozenset({float(e.value)}))
        if isinstance(e, N.UnOp) and e.op == "-" and isinstance(e.operand, N.Const) \
                and isinstance(e.operand.value, (int, float)):
            return Val(consts=frozenset({-float(e.operand.value)}))
        if isinstance(e, N.Cast) and _scalar_kind(e.type) == "float":
            if e.type.dtype != self.dtype:
                return _top(f"'{_text(e)}' converts to {e.type.dtype}")
            if isinstance(e.expr, N.Const):
                return self.fval(e.expr, scopes)
            inner = self.fval(e.expr, scopes)
            return inner if self._float_expr(e.expr, scopes) else _top(f"'{_text(e)}' converts a value")
        if isinstance(e, N.Var):
            b = self._lookup(scopes, e.name)
            if b is not None:
                if b[0] != "float":
                    return _top(f"'{e.name}' is not a float")
                return b[1]
            if e.name in self.scalars:
                return self.scalars[e.name]
            return _top(f"'{e.name}' is not written in the exchange")
        if isinstance(e, N.Index):
            at = self._array(e, scopes)
            if at is None:
                return _top(f"'{_text(e)}' is not an element of a local array")
            name, i = at
            v = self.arrays.get(name, {}).get(i)
            return v if v is not None else _top(f"'{name}[{i}]' is read but no statement of the exchange wrote it")
        if isinstance(e, N.Cond):
            return self.fval(e.then if self.ival(e.cond, scopes) else e.else_, scopes)
        if isinstance(e, N.BinOp) and e.op == self.op:
            return _combine(self.fval(e.lhs, scopes), self.fval(e.rhs, scopes))
        if _fname(e) == self.op and len(e.args) == 2:
            return _combine(self.fval(e.args[0], scopes), self.fval(e.args[1], scopes))
        return _top(f"'{_text(e)}' is not a combination with '{self.op}'")

    def _float_expr(self, e, scopes) -> bool:
        if isinstance(e, N.Var):
            b = self._lookup(scopes, e.name)
            return b[0] == "float" if b else e.name in self.scalars
        return isinstance(e, N.Index)

    # -- statements
    def run(self, s, scopes):
        self.steps += 1
        if self.steps > _STEP_CAP:
            raise Refuse("the exchange is too long to run here", s)
        if isinstance(s, N.Comment):
            return
        if isinstance(s, N.Block):
            scopes.append({})
            try:
                for x in s.stmts:
                    self.run(x, scopes)
            finally:
                scopes.pop()
            return
        if isinstance(s, N.Decl):
            kind = _scalar_kind(s.type)
            if kind == "int":
                if s.type.dtype not in _EXACT_INTS:
                    raise Refuse(f"'{s.name}' is {s.type.dtype}: wrapping arithmetic is not modeled", s)
                v = None if s.init is None else self.ival(s.init, scopes)
                isb = s.type.dtype == "bool"
                scopes[-1][s.name] = ("bool" if isb else "int", int(bool(v)) if v is not None and isb else v)
            elif kind == "float":
                if s.type.dtype != self.dtype:
                    raise Refuse(f"'{s.name}' is {s.type.dtype}, the partials {self.dtype}", s)
                scopes[-1][s.name] = ("float", _top("uninitialized") if s.init is None else self.fval(s.init, scopes))
            else:
                raise Refuse(f"the declaration of '{s.name}' is not an integer or float scalar", s)
            return
        if isinstance(s, N.Assign):
            self._assign(s.target, s.op, s.value, scopes, s)
            return
        if isinstance(s, N.ExprStmt) and isinstance(s.expr, (N.AssignExpr, N.UnOp)):
            self._expr_effect(s.expr, scopes, s)
            return
        if isinstance(s, N.If):
            if self.ival(s.cond, scopes):
                self.run(s.then, scopes)
            elif s.else_ is not None:
                self.run(s.else_, scopes)
            return
        if isinstance(s, N.For):
            if s.binding is not None:
                raise Refuse(f"loop '{s.var}' is bound to hardware", s)
            lo, hi, step = self.ival(s.lo, scopes), self.ival(s.hi, scopes), self.ival(s.step, scopes)
            if step <= 0:
                raise Refuse(f"loop '{s.var}' does not count up", s)
            if s.var_type is None and self._lookup(scopes, s.var) is None:
                raise Refuse(f"loop '{s.var}' writes a variable declared outside the exchange", s)
            v = lo
            while v < hi:
                scopes.append({s.var: ("int", v)})
                try:
                    self.run(s.body, scopes)
                finally:
                    scopes.pop()
                v += step
                self.steps += 1
                if self.steps > _STEP_CAP:
                    raise Refuse("the exchange is too long to run here", s)
            return
        if isinstance(s, N.CFor):
            scopes.append({})
            try:
                if s.init is not None:
                    self.run(s.init, scopes)
                while s.cond is None or self.ival(s.cond, scopes):
                    self.run(s.body, scopes)
                    if s.next is not None:
                        self._expr_effect(s.next, scopes, s)
                    self.steps += 1
                    if self.steps > _STEP_CAP:
                        raise Refuse("the exchange is too long to run here", s)
            finally:
                scopes.pop()
            return
        raise Refuse(f"a statement ({type(s).__name__.lower()}) is not part of an exchange", s)

    def _expr_effect(self, e, scopes, s):
        if isinstance(e, N.AssignExpr):
            self._assign(e.target, e.op, e.value, scopes, s)
        elif isinstance(e, N.UnOp) and e.op in ("++", "--", "p++", "p--"):
            one = N.Const(1)
            self._assign(e.operand, "+=" if "+" in e.op else "-=", one, scopes, s)
        elif isinstance(e, N.Comma):
            for x in e.exprs:
                self._expr_effect(x, scopes, s)
        else:
            raise Refuse(f"'{_text(e)}' is not an assignment", s)

    def _store(self, old: Val, op: str, value, scopes) -> Val:
        v = self._fnew(old, op, value, scopes)
        if v.top and self.stored_top is None:
            self.stored_top = v.why or "an opaque value"
        return v

    def _assign(self, target, op, value, scopes, s):
        if isinstance(target, N.Var):
            b = self._lookup(scopes, target.name)
            if b is not None:
                scope = next(sc for sc in reversed(scopes) if target.name in sc)
                if b[0] == "bool":
                    if op != "=":
                        raise Refuse(f"'{op}' on the bool '{target.name}'", s)
                    scope[target.name] = ("bool", int(bool(self.ival(value, scopes))))
                elif b[0] == "int":
                    if op == "=":
                        scope[target.name] = ("int", self.ival(value, scopes))
                    elif op in _INT_ASSIGN:
                        if b[1] is None:
                            raise Refuse(f"'{target.name}' is read before it is set", s)
                        scope[target.name] = ("int", _INT_BIN[_INT_ASSIGN[op]](b[1], self.ival(value, scopes)))
                    else:
                        raise Refuse(f"'{op}' on '{target.name}'", s)
                else:
                    scope[target.name] = ("float", self._fnew(b[1], op, value, scopes))
                return
            d = self.outer.get(target.name)
            if d is None or _scalar_kind(d.type) != "float" or d.type.dtype != self.dtype:
                raise Refuse(f"it writes '{target.name}', which is not a {self.dtype} variable of the kernel", s)
            self.outer_writes += 1
            self.written.add(target.name)
            self.scalars[target.name] = self._store(self.scalars.get(target.name, _top("unset")), op, value,
                                                    scopes)
            return
        at = self._array(target, scopes)
        el = self.outer[at[0]].type.elem if at is not None else None
        if at is None or _scalar_kind(el) != "float" or el.dtype != self.dtype:
            raise Refuse(f"it writes '{_text(target)}', which is not an element of a local {self.dtype} array", s)
        name, i = at
        self.outer_writes += 1
        self.written.add(name)
        arr = self.arrays.setdefault(name, {})
        arr[i] = self._store(arr.get(i, _top(f"'{name}[{i}]' unset")), op, value, scopes)

    def _fnew(self, old: Val, op: str, value, scopes) -> Val:
        from .unthread import _ASSIGN_OPS
        v = self.fval(value, scopes)
        if op == "=":
            return v
        if _ASSIGN_OPS.get(op) == self.op:
            return _combine(old, v)
        return _top(f"'{op}' is not the reduction's combine")


def full(v: Val, T: int, op: str, init_consts: frozenset) -> bool:
    """``v`` is the fold of all ``T`` partials (see the module docstring)."""
    from .unthread import _IDEMPOTENT, _IDENTITY
    if v.top:
        return False
    if op in _IDEMPOTENT:
        return set(v.lanes) == set(range(T)) and v.consts <= init_consts
    return v.lanes == Counter(range(T)) and v.consts <= {float(_IDENTITY[op])}


def describe(v: Val, T: int, op: str, init_consts: frozenset) -> str:
    """What a value that is not the fold holds instead, in words."""
    from .unthread import _IDEMPOTENT, _IDENTITY
    if v.top:
        return f"an unknown value ({v.why})"
    out = []
    missing = [k for k in range(T) if k not in v.lanes]
    if missing:
        out.append(f"{len(missing)} of the {T} partials missing (partial {missing[0]} among them)")
    if op not in _IDEMPOTENT:
        dup = sorted(k for k, c in v.lanes.items() if c > 1)
        if dup:
            out.append(f"partial {dup[0]} combined {v.lanes[dup[0]]} times")
    allowed = init_consts if op in _IDEMPOTENT else {float(_IDENTITY[op])}
    extra = sorted(v.consts - allowed)
    if extra:
        out.append(f"the constant {extra[0]:g}")
    return ", ".join(out) or "not the fold"


def written_names(node) -> set:
    """Names assigned in ``node``, as a whole variable or through an element ``a[i]``."""
    out = set()
    for n in walk(node):
        t = None
        if isinstance(n, (N.Assign, N.AssignExpr)):
            t = n.target
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&"):
            t = n.operand
        while isinstance(t, N.Index):
            t = t.base
        if isinstance(t, N.Var):
            out.add(t.name)
    return out


def substitute_reads(s, subst: dict, tloops: dict):
    """``s`` with reads ``a[t]`` (``t`` the index of an enclosing thread loop over ``T``, every
    ``a[0..T)`` the fold) and ``a[k]`` (``a[k]`` the fold) replaced by the accumulator.

    ``subst``: name -> (accumulator, T, set of element indices holding the fold);
    ``tloops``: enclosing thread-loop variables -> their count."""
    if not subst:
        return s

    def expr(e, tl):
        def fn(n):
            if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in subst:
                acc, T, fulls = subst[n.base.name]
                i = n.index
                if isinstance(i, N.Var) and tl.get(i.name) == T and set(range(T)) <= fulls:
                    return N.Var(acc)
                if isinstance(i, N.Const) and isinstance(i.value, int) and i.value in fulls:
                    return N.Var(acc)
            return n
        return rewrite(e, fn)

    def stmt(x, tl):
        if isinstance(x, N.Block):
            return x.with_(stmts=tuple(stmt(y, tl) for y in x.stmts))
        if isinstance(x, N.For):
            from .unthread import _const_int
            inner = dict(tl)
            inner.pop(x.var, None)
            # (its index stays in [0, T) only when the body neither assigns nor redeclares it)
            if x.binding is None and _const_int(x.lo, {}) == 0 and _const_int(x.step, {}) == 1 \
                    and x.var not in written_names(x.body) \
                    and not any(isinstance(n, N.Decl) and n.name == x.var for n in walk(x.body)):
                T = _const_int(x.hi, {})
                if T is not None:
                    inner[x.var] = T
            for n in walk(x.body):      # a name redeclared inside is another variable there
                if isinstance(n, N.Decl) and n.name in inner and n.name != x.var:
                    inner.pop(n.name)
            return x.with_(lo=expr(x.lo, tl), hi=expr(x.hi, tl), step=expr(x.step, tl), body=stmt(x.body, inner))
        if isinstance(x, (N.CFor, N.While)):
            return expr(x, {})
        if isinstance(x, N.If):
            return x.with_(cond=expr(x.cond, tl), then=stmt(x.then, tl),
                           else_=None if x.else_ is None else stmt(x.else_, tl))
        if isinstance(x, N.Decl):
            return x if x.init is None else x.with_(init=expr(x.init, tl))
        if isinstance(x, N.Assign):
            return x.with_(value=expr(x.value, tl),
                           target=x.target if not isinstance(x.target, N.Index)
                           else x.target.with_(index=expr(x.target.index, tl)))
        return expr(x, tl)
    return stmt(s, tloops)


# ----------------------------------------------------------------------------- the rewrite
def _partial(u, s):
    """``(loop, A, init decl-free assign, strided loop)`` when ``s`` is
    ``for (t = 0; t < T; ++t) { A[t] = init; for (c = t; c < n; c += T) ... }``, else None."""
    from .unthread import _body, _const_int, _cyclic_inner, _is_var, _thread_loop
    lp = _thread_loop(s)
    if lp is None:
        return None
    T = _const_int(lp.hi, u.macros)
    items = _body(lp.body)
    if T is None or T < 1 or len(items) != 2:
        return None
    a, c = items
    if not (isinstance(a, N.Assign) and a.op == "=" and isinstance(a.target, N.Index)
            and isinstance(a.target.base, N.Var) and _is_var(a.target.index, lp.var)):
        return None
    if c not in _cyclic_inner(lp, T, u.macros):
        return None
    return lp, T, a.target.base.name, a, c


def _outer_decls(program, func, macros: dict) -> tuple[dict, dict]:
    """(name -> Decl of the kernel's locals declared once (and not also a parameter or a global);
    name -> value of the integer ones that have a constant initializer and are never assigned)."""
    from .patterns import common as U
    decls, count = {}, Counter()
    for n in walk(func.body):
        if isinstance(n, N.Decl):
            decls[n.name] = n
            count[n.name] += 1
    params = {p.name for p in func.params} | {i.name for i in program.items if isinstance(i, N.Decl)}
    decls = {k: d for k, d in decls.items() if count[k] == 1 and k not in params and not d.storage}
    assigned = U.assigned_names(func.body)
    ints: dict = {}
    m = Machine("+", ints, {}, macros)
    changed = True
    while changed:
        changed = False
        for k, d in decls.items():
            if k in ints or k in assigned or _scalar_kind(d.type) != "int" or d.init is None \
                    or d.type.dtype not in ("int32", "int64"):
                continue
            try:
                ints[k] = m.ival(d.init, [])
                changed = True
            except Refuse:
                pass
    return decls, ints


def rewrite_block(u, stmts: list) -> list:
    """The statements with each partial + exchange (form 4) turned into one reduction."""
    if not any(_partial(u, s) for s in stmts):
        return stmts
    macros = dict(u.macros)
    decls, ints = _outer_decls(u.program, u.func, macros)
    out, subst, i = [], {}, 0
    while i < len(stmts):
        s = stmts[i]
        w = written_names(s)
        for name in [n for n in subst if n in w]:
            del subst[name]
        s = substitute_reads(s, subst, {})
        m = _partial(u, s)
        if m is None:
            out.append(s)
            i += 1
            continue
        new, j, fulls, tail, gone = _one(u, m, stmts, i, decls, ints, macros)
        for name in [n for n in subst if n in gone]:
            del subst[name]
        subst.update(fulls)
        out.extend(new)
        if tail is not None:      # the thread loop that finished the exchange: later reads in it
            for name in [n for n in subst if n in written_names(tail)]:
                del subst[name]
            out.append(substitute_reads(tail, subst, {}))
        i = j
    return out


def _one(u, m, stmts, i, decls, ints, macros):
    from .unthread import (_IDEMPOTENT, _IDENTITY, _body, _const_num, _is_var, _pure, _update)
    from xpiler.ir.visit import vars_used
    lp, T, A, first, c = m
    t = lp.var
    where = f"warp-shuffle reduction into '{A}'{_line(lp)}"
    d = decls.get(A)
    if d is None or not isinstance(d.type, N.Array) or _scalar_kind(d.type.elem) != "float":
        raise PassError(NAME, f"{where}: '{A}' is not one local float array of the kernel", lp)
    init = first.value
    if not _pure(init) or t in vars_used(init) or A in vars_used(init):
        raise PassError(NAME, f"{where}: the initial value '{_text(init)}' is not the same in every thread", first)
    # the one update A[t] = op(A[t], f) of the strided loop
    acc = u._hoist_name(A + "_acc", lp)
    elem = N.Index(N.Var(A), N.Var(t))
    probe = "\u0000acc"

    def to_acc(n):
        if isinstance(n, N.Index) and _is_var(n.base, A) and _is_var(n.index, t):
            return N.Var(probe)
        return n
    cbody = _body(c.body)
    ups = [(x, _update(rewrite(x, to_acc), probe)) for x in cbody]
    hits = [(x, up) for x, up in ups if up is not None]
    if len(hits) != 1:
        raise PassError(NAME, f"{where}: the strided loop must update '{_text(elem)}' exactly once, as "
                              f"'{_text(elem)} = op({_text(elem)}, f)'", c)
    upd, (op, f) = hits[0]
    if A in vars_used(f) or any(A in vars_used(x) for x in cbody if x is not upd) or A in vars_used(c.hi):
        raise PassError(NAME, f"{where}: '{A}' is read in the strided loop besides its update", c)
    if op not in _IDEMPOTENT:
        v = _const_num(init)
        if v is None or v != _IDENTITY[op]:
            raise PassError(NAME, f"{where}: with '{op}' the initial value must be the identity "
                                  f"{_IDENTITY[op]} (the exchange combines {T} copies of '{_text(init)}')", first)
    init_consts = frozenset()
    if isinstance(_const_num(init), (int, float)):
        init_consts = frozenset({float(_const_num(init))})
    # run the exchange region on abstract values
    mach = Machine(op, ints, decls, macros, d.type.elem.dtype)
    mach.arrays[A] = {k: Val(Counter({k: 1})) for k in range(T)}
    j, stop = i + 1, None
    while j < len(stmts):
        x = stmts[j]
        if isinstance(x, N.Comment):
            j += 1
            continue
        saved = (_copy_state(mach), mach.stored_top)
        try:
            mach.run(x, [{}])
        except Refuse as r:
            stop = (x, r.why)
        else:
            if mach.stored_top is not None:
                stop = (x, mach.stored_top)
        if stop is not None:
            _restore(mach, saved)
            break
        j += 1
    region_end = j
    prefix_loop = None
    if stop is not None:
        prefix_loop = _prefix(mach, stmts[j], T, op, init_consts, acc, where)
        if prefix_loop is not None:
            j += 1
    if region_end == i + 1 and prefix_loop is None:
        nxt = stmts[i + 1] if i + 1 < len(stmts) else lp
        why = stop[1] if stop else "the block ends"
        raise PassError(NAME, f"{where}: the partials are not combined by an exchange after it; the next "
                              f"statement{_line(nxt)} is not one ({why})", nxt)
    # what the region leaves: scalars and elements that hold the fold, everything else must vanish
    fulls, assigns, gone = {}, [], set()
    for name in sorted(mach.written | {A}):
        if name in mach.scalars:
            if full(mach.scalars[name], T, op, init_consts):
                assigns.append(N.Assign(N.Var(name), "=", N.Var(acc)))
                u.shuffle_kept.add(name)
            else:
                gone.add(name)
            continue
        gone.add(name)
        ok = {k for k, v in mach.arrays.get(name, {}).items() if full(v, T, op, init_consts)}
        if ok:
            fulls[name] = (acc, T, ok)
    if not fulls and not assigns and prefix_loop is None:
        why = f"; it stops at the statement{_line(stop[0])}: {stop[1]}" if stop else ""
        last = _last_written(mach, A)
        if last is not None:
            why += f"; '{last[0]}' holds {describe(last[1], T, op, init_consts)}"
        raise PassError(NAME, f"{where}: after the exchange no variable holds the fold of all {T} partials "
                              f"(each {'at least' if op in _IDEMPOTENT else 'exactly'} once){why}", c)
    for name in gone:
        u.shuffle_gone.setdefault(name, (where, stop))
    # the partial loop as one reduction
    cnew = rewrite(c, lambda n: N.Var(acc) if isinstance(n, N.Index) and _is_var(n.base, A)
                   and _is_var(n.index, t) else n)
    dtype = d.type.elem
    new = [N.Decl(acc, dtype, init)] + u._flatten(lp, cnew, [], private={acc})
    new += assigns
    u.shuffled.append((A, acc))
    return new, j, fulls, prefix_loop, gone | set(u.shuffle_kept)


def _copy_state(mach):
    return ({k: dict(v) for k, v in mach.arrays.items()}, dict(mach.scalars), set(mach.written))


def _restore(mach, saved):
    (arrays, scalars, written), top = saved
    mach.arrays, mach.scalars, mach.written, mach.stored_top = arrays, scalars, written, top


def _prefix(mach, s, T, op, init_consts, acc, where):
    """A thread loop ``s`` whose leading statements finish the exchange with thread-local
    scalars (``float total = 0; for (w ...) total += lds[w];``): those statements removed, each
    such scalar used after them declared with the accumulator (None when there are none)."""
    from .unthread import _const_int, _thread_loop
    from xpiler.ir.visit import vars_used
    lp = _thread_loop(s)
    if lp is None or _const_int(lp.hi, mach.macros) is None:
        return None
    n = _const_int(lp.hi, mach.macros)
    items = list(lp.body.stmts)
    scopes = [[{lp.var: ("int", t)}, {}] for t in range(n)]
    k = 0
    while k < len(items):
        x = items[k]
        if isinstance(x, N.Comment):
            k += 1
            continue
        before = [dict(sc[1]) for sc in scopes]
        saved = (_copy_state(mach), mach.stored_top)
        writes = mach.outer_writes
        try:
            for t in range(n):
                mach.run(x, scopes[t])
        except Refuse:
            ok = False
        else:
            ok = mach.outer_writes == writes and mach.stored_top is None and not any(
                b[0] == "float" and b[1].top for sc in scopes for b in sc[1].values())
        if not ok:
            for sc, b in zip(scopes, before):
                sc[1] = b
            _restore(mach, saved)
            break
        k += 1
    if k == 0 or all(isinstance(x, N.Comment) for x in items[:k]):
        return None
    rest = items[k:]
    # thread 0's remaining statements run before thread 1's leading ones: they must not change
    # what those read
    if written_names(N.Block(tuple(rest))) & (mach.written | set(mach.arrays)):
        return None
    used = vars_used(N.Block(tuple(rest))) | written_names(N.Block(tuple(rest)))
    head = []
    for x in items[:k]:
        if not isinstance(x, N.Decl) or x.name not in used:
            continue
        kind = _scalar_kind(x.type)
        vals = [sc[1].get(x.name) for sc in scopes]
        bad = [(t, v) for t, v in enumerate(vals) if v is None or not full(v[1], T, op, init_consts)]
        if kind == "float" and not bad:
            head.append(x.with_(init=N.Var(acc)))
        elif kind == "int" and x.name not in written_names(N.Block(tuple(items[:k]))) and x.init is not None:
            head.append(x)
        else:
            what = ""
            if kind == "float" and bad and bad[0][1] is not None:
                what = f" (in thread {bad[0][0]}: {describe(bad[0][1][1], T, op, init_consts)})"
            raise PassError(NAME, f"{where}: '{x.name}'{_line(x)} is used after the exchange in its thread loop "
                                  f"but does not hold the fold of all {T} partials{what}", x)
    return lp.with_(body=lp.body.with_(stmts=tuple(head + rest)))


def rename_accumulators(body, pairs):
    """Each accumulator ``A_acc`` named ``A`` when the array ``A`` is gone and the name is free;
    with the names changed."""
    renamed = {}
    for A, acc in pairs:
        if any(isinstance(n, (N.Var, N.Decl)) and n.name == A for n in walk(body)):
            continue

        def fn(n, A=A, acc=acc):
            if isinstance(n, N.Var) and n.name == acc:
                return n.with_(name=A)
            if isinstance(n, N.Decl) and n.name == acc:
                return n.with_(name=A)
            return n
        body = rewrite(body, fn)
        renamed[acc] = A
    return body, renamed


def _effect_free(e):
    """Refuse an expression that calls anything but a pure math function or assigns."""
    from .unthread import _PURE_CALLS
    for n in walk(e):
        if isinstance(n, (N.Call, N.Intrinsic)) and _fname(n) not in _PURE_CALLS \
                or isinstance(n, N.AssignExpr) or isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
            raise Refuse(f"'{_text(e)}' has an effect besides its value")


def _last_written(mach, A):
    """(name, value) of the element of the partial array ``A`` (or else another array) that the
    exchange left closest to the fold, for a message."""
    for name in [A] + sorted(mach.arrays):
        arr = mach.arrays.get(name, {})
        if arr:
            k = min(arr)
            return f"{name}[{k}]", arr[k]
    return None
