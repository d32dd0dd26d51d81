"""C / C++ library range operations of c sources as element loops.

A call that works on a whole range of memory hides its element accesses from the loop analyses
(binding sees a pointer passed to a call and cannot tell which elements it touches) and has no
spelling on the GPU / BANG targets.  This family writes each one as the loop it performs:

* ``std::max_element(first, last)`` / ``std::min_element`` (used as a value): an index loop
  before the statement, ``first + best`` in its place. Same answer as the library: the first
  maximum under ``operator<`` (``if (first[best] < first[k]) best = k``; ``last`` for an empty
  range, which is ``first + 0``);
* ``std::distance(a, b)`` on pointers: ``b - a`` (``k`` when ``b`` is ``a + k``);
* ``memcpy(dst, src, n * sizeof(T))`` / ``std::copy(first, last, dst)`` as statements, with
  ``dst``/``src`` pointers to ``T``: ``dst[k] = src[k]`` for ``k < n`` (memcpy's ranges do not
  overlap, so the order of the copies does not matter);
* ``memset(dst, 0, n * sizeof(T))``: ``dst[k] = 0`` (all-zero bytes are the value 0 of every
  integer and floating type); ``std::fill(first, last, v)``: ``first[k] = v``.

A byte count held in a variable (``const size_t row = dim * sizeof(float);``) is read through
its declaration when the function never assigns the variable again.  Only calls in a plain
statement (declaration, assignment, expression statement, return) whose arguments have no side
effect are rewritten; anything else is left as it is (valid C; later passes decide).  A function
the program defines itself under one of these names is never touched.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import rewrite, walk

from .common import INT, TypeEnv, add, assign, b, c, decl, ix, loop, sizeof_count
from .common import call_name as _name

#: value-returning range operations (hoisted into a loop before the statement)
VALUE_CALLS = {"max_element", "min_element", "distance"}
#: statement-only range operations (the call becomes the loop)
STMT_CALLS = {"memcpy", "memset", "copy", "fill"}
NAMES = VALUE_CALLS | STMT_CALLS


def _pure(e) -> bool:
    """No side effect: no assignment, no call other than math and the value calls above."""
    def impure(n):
        if isinstance(n, (N.AssignExpr, N.Comma)):
            return True
        if isinstance(n, N.Call):
            return _name(n) not in VALUE_CALLS
        if isinstance(n, N.Intrinsic):
            d = REGISTRY.get(n.name)
            return d is None or d.category != "math"
        return isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--")
    return not any(impure(n) for n in walk(e))


def _strip_int_casts(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype.startswith(("int", "uint")):
        e = e.expr
    return e


class _Fn:
    """One function: its types, its single-assignment locals, fresh names."""

    def __init__(self, program: N.Program, func: N.Func, names):
        self.env = TypeEnv.of(program, func)
        self.names = names
        self.own = {f.name for f in program.funcs}
        assigned = set()
        decls = {}
        for n in walk(func.body):
            if isinstance(n, N.Decl):
                decls[n.name] = None if n.name in decls else n
            elif isinstance(n, (N.Assign, N.AssignExpr)):
                t = n.target
                while isinstance(t, (N.Index, N.Member)):
                    t = t.base
                if isinstance(t, N.Var):
                    assigned.add(t.name)
            elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
                assigned.add(n.operand.name)
        self.fixed = {k: d.init for k, d in decls.items()
                      if d is not None and d.init is not None and k not in assigned and _pure(d.init)
                      and not isinstance(d.type, N.Array)}
        self.changed = False

    def value(self, e):
        """``e`` with a never-reassigned local replaced by its initializer (one level)."""
        if isinstance(e, N.Var) and e.name in self.fixed:
            return self.fixed[e.name]
        return e

    def diff(self, hi, lo):
        """``hi - lo`` for two pointers into one range, simplified when ``hi`` is ``lo + k``."""
        if hi == lo:
            return c(0)
        for h in (hi, self.value(hi)):
            if isinstance(h, N.BinOp) and h.op == "+" and (h.lhs == lo or self.value(h.lhs) == lo):
                return h.rhs
        return N.BinOp("-", hi, lo)

    def elem(self, p, k):
        """Element ``k`` after pointer ``p``: ``P[off + k]`` when ``p`` is ``P + off`` with P a
        pointer variable, else ``p[k]``."""
        if isinstance(p, N.BinOp) and p.op == "+" and isinstance(p.lhs, N.Var) and \
                isinstance(self.env.type_of(p.lhs), (N.Pointer, N.Array)):
            return ix(p.lhs, add(p.rhs, k))
        return ix(p, k)

    def count(self, nbytes, *ptrs):
        """n when ``nbytes`` is ``n * sizeof(T)`` and every pointer of ``ptrs`` points to T."""
        els = [self.env.elem_of(p) for p in ptrs]
        if any(e is None for e in els) or len({e.dtype for e in els}) != 1:
            return None
        n = sizeof_count(_strip_int_casts(nbytes), els[0])
        if n is None:
            n = sizeof_count(_strip_int_casts(self.value(nbytes)), els[0])
        return None if n is None else _strip_int_casts(n)

    # ------------------------------------------------------------------ value calls
    def hoist(self, e, pre):
        name = _name(e)
        a = e.args
        if name in ("max_element", "min_element") and len(a) == 2:
            first, last = a
            best, k = self.names.fresh("best"), self.names.fresh("k")
            cur, cand = self.elem(first, N.Var(best)), self.elem(first, N.Var(k))
            less = b("<", cur, cand) if name == "max_element" else b("<", cand, cur)
            pre.append(decl(best, INT, c(0)))
            pre.append(loop(k, 1, self.diff(last, first), N.If(less, N.Block((assign(N.Var(best), N.Var(k)),)))))
            self.changed = True
            return add(first, N.Var(best)) if isinstance(first, N.Var) else N.BinOp("+", first, N.Var(best))
        if name == "distance" and len(a) == 2 and all(isinstance(self.env.type_of(x), (N.Pointer, N.Array))
                                                      or _name(x) in ("max_element", "min_element") for x in a):
            self.changed = True
            return self.diff(a[1], a[0])
        return e

    # ------------------------------------------------------------------ statement calls
    def stmt_call(self, s):
        e = s.expr
        name, a = _name(e), e.args
        k = self.names.fresh("k")
        kv = N.Var(k)
        body = None
        if name == "memcpy" and len(a) == 3:
            n = self.count(a[2], a[0], a[1])
            if n is not None:
                body, hi = assign(self.elem(a[0], kv), self.elem(a[1], kv)), n
        elif name == "memset" and len(a) == 3 and isinstance(a[1], N.Const) and a[1].value == 0:
            n = self.count(a[2], a[0])
            if n is not None:
                body, hi = assign(self.elem(a[0], kv), c(0)), n
        elif name == "copy" and len(a) == 3:
            body, hi = assign(self.elem(a[2], kv), self.elem(a[0], kv)), self.diff(a[1], a[0])
        elif name == "fill" and len(a) == 3:
            body, hi = assign(self.elem(a[0], kv), a[2]), self.diff(a[1], a[0])
        if body is None:
            self.names.used.discard(k)
            return None
        self.changed = True
        return loop(k, 0, hi, body)

    def simple(self, s):
        """Lowered statement(s) for a simple statement ``s`` (a list)."""
        if isinstance(s, N.ExprStmt) and _name(s.expr) in STMT_CALLS - self.own and \
                all(_pure(x) for x in s.expr.args):
            r = self.stmt_call(s)
            if r is not None:
                return [r]
        calls = VALUE_CALLS - self.own
        if not any(_name(n) in calls for n in walk(s)):
            return [s]
        if not all(_pure(x) for n in walk(s) if _name(n) in calls for x in n.args):
            return [s]
        pre = []
        new = rewrite(s, lambda n: self.hoist(n, pre) if _name(n) in calls else n)
        return pre + [new]

    def stmts(self, stmts):
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return tuple(out)

    def sub(self, s):
        if s is None:
            return None
        r = self.stmt(s)
        return r[0] if len(r) == 1 else N.Block(tuple(r), loc=s.loc)

    def stmt(self, s):
        if isinstance(s, N.Block):
            return [s.with_(stmts=self.stmts(s.stmts))]
        if isinstance(s, N.For):
            return [s.with_(body=N.Block(self.stmts(s.body.stmts), loc=s.body.loc))]
        if isinstance(s, (N.CFor, N.While)):
            return [s.with_(body=self.sub(s.body))]
        if isinstance(s, N.If):
            return [s.with_(then=self.sub(s.then), else_=self.sub(s.else_))]
        if isinstance(s, (N.Decl, N.Assign, N.ExprStmt, N.Return)):
            return self.simple(s)
        return [s]


def sites(program: N.Program) -> list:
    """The library range calls of ``program`` that :func:`lower_program` writes as loops (not the
    program's own functions of those names, not calls it leaves, e.g. a byte copy into an int)."""
    own = {f.name for f in program.funcs}
    calls = [n for n in walk(program) if _name(n) in NAMES and _name(n) not in own]
    if not calls:
        return []
    from .common import Names
    low, changed = lower_program(program, Names(program))
    if not changed:
        return []
    kept = {id(n) for n in walk(low) if _name(n) in NAMES}
    return [n for n in calls if id(n) not in kept]


def lower_program(program: N.Program, names) -> tuple:
    """(program with its library range calls written as loops, whether anything changed)."""
    own = {f.name for f in program.funcs}
    if not any(_name(n) in NAMES and _name(n) not in own for n in walk(program)):
        return program, False
    items, changed = [], False
    for it in program.items:
        if isinstance(it, N.Func) and it.body is not None and it.name not in NAMES:
            f = _Fn(program, it, names)
            body = N.Block(f.stmts(it.body.stmts), loc=it.body.loc)
            if f.changed:
                it = it.with_(body=body)
                changed = True
        items.append(it)
    return program.with_(items=tuple(items)), changed
