"""Forwarding of packed temporaries: a heap buffer filled by one pure loop nest and only read
afterwards is replaced, at every read, by the value the nest stored there.

Binding maps one parallel loop nest per kernel. A C kernel that first repacks an input into a
``malloc``'d buffer in one parallel nest and then reads it in a second nest needs a grid-wide
barrier between the two, which neither the SIMT targets nor BANG offer inside a kernel. When
the packed element is a pure function of its position, no barrier is needed: each read
recomputes the element. Binding tries this only after its ordinary plans refuse.

Before::

    int8_t* P = (int8_t*)malloc((size_t)Kq * N * 4);
    if (P == NULL) return;
    for (int q = 0; q < Kq; ++q)
        for (int j = 0; j < N; ++j)
            for (int r = 0; r < 4; ++r) {
                const int k = 4 * q + r;
                P[((long)q * N + j) * 4 + r] = k < K ? B[(long)k * N + j] : (int8_t)0;
            }
    for (...) { ... ((const int32_t*)(P + off))[l] ... }
    free(P);

After: the allocation, the check, the nest and ``free`` are gone; the int32 read becomes the
little-endian assembly of the four bytes at ``x = off + 4 * l + t``, each byte
``0 <= x && x < Kq * N * 4 ? (int8_t)(v at q = x / (N * 4), j = x / 4 % N, r = x % 4) : 0``.

Legality (:func:`forward_temporaries` returns None when unsure, and binding then reports its
original refusal):

* ``P`` is a top-level local initialised by ``malloc`` and used only by: an ``if (P == NULL)
  return;`` check, ``free(P)``, exactly one top-level store nest, and reads ``P[e]`` /
  ``((const U*)(P + e))[l]`` (``U`` an integer type, ``P``'s elements one byte) in top-level
  statements after the nest.
* The nest is perfect: loops that declare their variable, from 0 with step 1 and
  loop-invariant bounds ``H1..Hd``; the
  innermost body is scalar declarations with pure initialisers and one plain store
  ``P[idx] = v``, where ``idx`` (integer casts ignored) is the row-major index
  ``(..((v1 * H2 + v2) * H3 + v3)..) * Hd + vd`` of the loop variables in nest order. That
  index is a bijection from the iteration space onto ``[0, H1 * .. * Hd)``, so every element
  there holds exactly one value and its iteration is recovered by division and remainder.
* ``v`` calls only pure functions, reads loop variables, the nest's declarations, scalars the
  function never assigns, and buffers that are ``const`` pointer parameters used elsewhere only
  as ``B[e]`` reads (so no later statement changes what the nest read).

A read outside ``[0, H1 * .. * Hd)`` saw uninitialised memory in the source (an indeterminate
value): the forwarded read gives 0 there and evaluates nothing of ``v``. Dropping the ``NULL``
check keeps the behaviour of a successful allocation. Targets are little-endian.
"""
from __future__ import annotations

from typing import Optional

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from . import dependence as D
from . import radix_join

INT_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8}
_UNSIGNED = {1: ("uint8", "uint8_t"), 2: ("uint16", "uint16_t"), 4: ("uint32", "uint32_t"), 8: ("uint64", "uint64_t")}
LONG = N.Scalar("int64", "long")


def forward_temporaries(program: N.Program, func: N.Func) -> Optional[N.Program]:
    """The program with every forwardable temporary of ``func`` forwarded, or None when none is."""
    changed = False
    while True:
        for s in func.body.stmts:
            if isinstance(s, N.Decl) and _is_malloc(s):
                new = _forward_one(func, s)
                if new is not None:
                    program = program.with_(items=tuple(new if it is func else it for it in program.items))
                    func, changed = new, True
                    break
        else:
            return program if changed else None


# ---------------------------------------------------------------------------- matching
def _strip(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in INT_BYTES:
        e = e.expr
    return e


def _is_malloc(d: N.Decl) -> bool:
    e = d.init.expr if isinstance(d.init, N.Cast) else d.init
    return (isinstance(d.type, N.Pointer) and isinstance(d.type.elem, N.Scalar)
            and isinstance(e, N.Call) and e.func == "malloc")


def _null_check(s, name) -> bool:
    if not (isinstance(s, N.If) and s.else_ is None):
        return False
    body = s.then.stmts if isinstance(s.then, N.Block) else (s.then,)
    if not body or not all(isinstance(x, N.Return) and x.value is None for x in body):
        return False
    c = s.cond
    if isinstance(c, N.UnOp) and c.op == "!":
        return _is_var(c.operand, name)
    if isinstance(c, N.BinOp) and c.op == "==":
        null = (lambda e: isinstance(e, N.Var) and e.name == "NULL"
                or isinstance(e, N.Const) and e.value in (0, None))
        return _is_var(c.lhs, name) and null(c.rhs) or _is_var(c.rhs, name) and null(c.lhs)
    return False


def _is_var(e, name) -> bool:
    return isinstance(e, N.Var) and e.name == name


def _is_free(s, name) -> bool:
    return (isinstance(s, N.ExprStmt) and isinstance(s.expr, N.Call) and s.expr.func == "free"
            and len(s.expr.args) == 1 and _is_var(s.expr.args[0], name))


def _uses(node, name) -> bool:
    return any(_is_var(n, name) for n in walk(node))


def _plain(stmts):
    return [s for s in stmts if not isinstance(s, (N.Comment, N.Pragma))]


def _pure(e) -> bool:
    for n in walk(e):
        if isinstance(n, N.Call) and not (isinstance(n.func, str) and n.func in D.PURE_CALLS):
            return False
        if isinstance(n, (N.AssignExpr, N.Intrinsic, N.Comma)) or isinstance(n, N.UnOp) and n.op in (
                "++", "--", "p++", "p--", "&", "*"):
            return False
    return True


def _text(e) -> str:
    from xpiler.printers import printer_for
    return printer_for("c").expr(rewrite(e, _strip))


def _nest(lp: N.For):
    """(loops outside-in, lets, store) of a perfect store nest, or None."""
    loops = [lp]
    while True:
        body = _plain(loops[-1].body.stmts)
        if len(body) == 1 and isinstance(body[0], N.For):
            loops.append(body[0])
            continue
        break
    for l in loops:
        if l.binding not in (None, "omp") or l.var_type is None or not _pure(l.hi) or \
                not (isinstance(l.lo, N.Const) and l.lo.value == 0) or \
                not (isinstance(l.step, N.Const) and l.step.value == 1):
            return None
    *lets, store = body if body else [None]
    if not isinstance(store, N.Assign) or store.op != "=" or not isinstance(store.target, N.Index):
        return None
    for d in lets:
        if not (isinstance(d, N.Decl) and isinstance(d.type, N.Scalar) and d.init is not None and _pure(d.init)):
            return None
    return loops, lets, store


def _horner(e, loops) -> bool:
    """``e`` (casts ignored) is the row-major index of ``loops``' variables."""
    e = _strip(e)
    if len(loops) == 1:
        return _is_var(e, loops[0].var)
    if not (isinstance(e, N.BinOp) and e.op == "+"):
        return False
    for a, v in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        a, v = _strip(a), _strip(v)
        if _is_var(v, loops[-1].var) and isinstance(a, N.BinOp) and a.op == "*":
            for inner, h in ((a.lhs, a.rhs), (a.rhs, a.lhs)):
                if _text(h) == _text(loops[-1].hi) and _horner(inner, loops[:-1]):
                    return True
    return False


def _strip_wide(e):
    """``e`` without conversions to 32/64-bit integers (they keep a non-negative index below the
    temporary's size, which the source computes too); a narrower one may truncate and stays."""
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in ("int32", "uint32", "int64", "uint64"):
        e = e.expr
    return e


def _horner_parts(e, his):
    """``[e1, .., ed]`` when ``e`` (32/64-bit integer casts ignored) is
    ``(..(e1 * H2 + e2) * H3 + ..) * Hd + ed`` with ``his`` the texts of ``H2..Hd``, else None."""
    _strip = _strip_wide
    e = _strip(e)
    if not his:
        return [e]
    if not (isinstance(e, N.BinOp) and e.op == "+"):
        return None
    for a, v in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        a = _strip(a)
        if isinstance(a, N.BinOp) and a.op == "*":
            for inner, h in ((a.lhs, a.rhs), (a.rhs, a.lhs)):
                if _text(h) == his[-1]:
                    rest = _horner_parts(inner, his[:-1])
                    if rest is not None:
                        return rest + [_strip(v)]
    return None


# ---------------------------------------------------------------------------- rewriting
def _forward_one(func: N.Func, decl: N.Decl) -> Optional[N.Func]:
    name, elem = decl.name, decl.type.elem
    stmts = list(func.body.stmts)
    k0 = next(i for i, s in enumerate(stmts) if s is decl)
    nest_at, drop = None, {k0}
    for i, s in enumerate(stmts):
        if i == k0 or not _uses(s, name):
            continue
        if _null_check(s, name) or _is_free(s, name):
            drop.add(i)
        elif isinstance(s, N.For) and nest_at is None and _nest(s) is not None and \
                _is_var(_nest(s)[2].target.base, name):
            nest_at = i
        elif nest_at is None:
            return None                      # a use before the store nest
    if nest_at is None:
        return None
    loops, lets, store = _nest(stmts[nest_at])
    if not _horner(store.target.index, loops):
        return None
    value = store.value
    if _uses(value, name) or not _pure(value) or any(_uses(l.hi, name) for l in loops):
        return None
    # the value as a function of the loop variables: lets inlined (innermost first)
    for d in reversed(lets):
        if d.name in D.assigned_names(stmts[nest_at]) - {d.name} or _uses(d.init, name):
            return None
        value = substitute(value, {d.name: N.Cast(d.type.with_(const=False), d.init)})
    if not _invariant(func, stmts[nest_at], loops, value):
        return None
    for s in stmts[nest_at + 1:]:
        for n in walk(s):
            tgt = n.target if isinstance(n, (N.Assign, N.AssignExpr)) else \
                n.operand if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") else None
            if tgt is not None and _uses(tgt, name):
                return None                  # written or its address taken after the nest
    forwarded = _Forward(name, elem, loops, value)
    out = []
    for i, s in enumerate(stmts):
        if i in drop or i == nest_at:
            continue
        if i > nest_at and _uses(s, name):
            s = forwarded.in_range_reads(s)
            s = rewrite(s, forwarded)
            s = radix_join.join_all(func, s)
            if _uses(s, name):
                return None                  # a use that is not a read of an element
        out.append(s)
    return func.with_(body=func.body.with_(stmts=tuple(out)))


def _invariant(func, nest, loops, value) -> bool:
    """Every name ``value`` and the bounds read is a loop variable, a scalar the function never
    assigns, or a const-pointee pointer parameter only ever read as ``B[e]``."""
    assigned = D.assigned_names(func.body)
    lvars = {l.var for l in loops}
    params = {p.name: p.type for p in func.params}
    top = {s.name: s for s in func.body.stmts if isinstance(s, N.Decl)}
    names = {n.name for n in walk((value,) + tuple(l.hi for l in loops)) if isinstance(n, N.Var)}
    declared = [d.name for d in walk(func.body) if isinstance(d, N.Decl)] + \
        [f.var for f in walk(func.body) if isinstance(f, N.For)] + list(params)
    if any(declared.count(v) > 1 for v in names - lvars):
        return False                         # shadowed somewhere: a read site could capture it
    for v in names - lvars:
        t = params.get(v, top[v].type if v in top else None)
        if v in assigned or t is None:
            return False
        if isinstance(t, N.Scalar):
            continue
        if not (isinstance(t, N.Pointer) and getattr(t.elem, "const", False) and v in params):
            return False
        if not _only_indexed(func.body, v):
            return False
    return True


def _only_indexed(node, name) -> bool:
    """Every occurrence of ``name`` is the base of a read ``name[e]``."""
    ok_ids, targets = set(), set()
    for n in walk(node):
        if isinstance(n, N.Index) and _is_var(n.base, name):
            ok_ids.add(id(n.base))
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Index) and _is_var(n.target.base, name):
            targets.add(id(n.target.base))
    return all(id(n) in ok_ids and id(n) not in targets for n in walk(node) if _is_var(n, name))


class _Forward:
    """rewrite() callback: a read of the temporary becomes its forwarded value."""

    def __init__(self, name, elem, loops, value):
        self.name, self.elem, self.loops, self.value = name, elem, loops, value

    def element(self, x):
        """The element at index ``x`` (an int64 Expr)."""
        hs = [N.Cast(LONG, l.hi) for l in self.loops]
        total, env = hs[0], {}
        for h in hs[1:]:
            total = N.BinOp("*", total, h)
        stride = None
        for l, h in zip(reversed(self.loops), reversed(hs)):
            q = x if stride is None else N.BinOp("/", x, stride)
            if l is not self.loops[0]:
                q = N.BinOp("%", q, h)
            env[l.var] = N.Cast(l.var_type, q)
            stride = h if stride is None else N.BinOp("*", stride, h)
        et = self.elem.with_(const=False)
        inside = N.BinOp("&&", N.BinOp(">=", x, N.Const(0)), N.BinOp("<", x, total))
        return N.Cond(inside, N.Cast(et, substitute(self.value, env)), N.Cast(et, N.Const(0)))

    def in_range_reads(self, stmt):
        """``stmt`` with each read ``P[idx]`` whose index is the row-major index of variables
        ``e1..ed`` of loops around the read that run 0 .. H1..Hd by 1 (the nest's own bounds, the
        same text: names the function never assigns) replaced by the value at
        ``v1..vd := e1..ed``: the index is in range there, and the division and remainder of
        :meth:`element` give back ``e1..ed``, so the guard and the arithmetic are not needed."""
        his = [_text(l.hi) for l in self.loops]
        hits = {}

        def visit(node, ranges):
            if isinstance(node, N.For):
                if node.binding in (None, "omp") and getattr(node, "cmp", "<") == "<" and \
                        isinstance(node.lo, N.Const) and node.lo.value == 0 and \
                        isinstance(node.step, N.Const) and node.step.value == 1 and \
                        node.var not in D.assigned_names(node.body) and \
                        not any(isinstance(d, N.Decl) and d.name == node.var for d in walk(node.body)):
                    ranges = {**ranges, node.var: _text(node.hi)}
                else:
                    ranges = {k: v for k, v in ranges.items() if k != node.var}
            if isinstance(node, N.Index) and _is_var(node.base, self.name):
                parts = _horner_parts(node.index, his[1:])
                if parts is not None and len(parts) == len(self.loops) and all(
                        isinstance(p, N.Var) and ranges.get(p.name) == h for p, h in zip(parts, his)):
                    hits[id(node)] = parts
            for ch in node.children() if isinstance(node, N.Node) else ():
                visit(ch, ranges)

        visit(stmt, {})
        if not hits:
            return stmt
        et = self.elem.with_(const=False)

        def fn(n):
            if isinstance(n, N.Index) and id(n) in hits:
                env = {l.var: N.Cast(l.var_type, e) for l, e in zip(self.loops, hits[id(n)])}
                return N.Cast(et, substitute(self.value, env))
            return n
        return rewrite(stmt, fn)

    def __call__(self, n):
        if not isinstance(n, N.Index):
            return n
        if _is_var(n.base, self.name):
            return self.element(N.Cast(LONG, n.index))
        b = n.base
        if not (isinstance(b, N.Cast) and isinstance(b.type, N.Pointer) and isinstance(b.type.elem, N.Scalar)):
            return n
        inner, off = b.expr, N.Const(0)
        if isinstance(inner, N.BinOp) and inner.op == "+" and _is_var(inner.lhs, self.name):
            off = inner.rhs
        elif not _is_var(inner, self.name):
            return n
        w = INT_BYTES.get(b.type.elem.dtype)
        if w is None or INT_BYTES.get(self.elem.dtype) != 1:
            return n                          # left as is: forwarding then refuses
        ut = N.Scalar(*_UNSIGNED[w])
        base = N.BinOp("+", N.Cast(LONG, off), N.BinOp("*", N.Cast(LONG, n.index), N.Const(w)))
        word = None
        for t in range(w):
            byte = self.element(N.BinOp("+", base, N.Const(t)) if t else base)
            part = N.Cast(ut, N.Cast(N.Scalar(*_UNSIGNED[1]), byte))
            if t:
                part = N.BinOp("<<", part, N.Const(8 * t))
            word = part if word is None else N.BinOp("|", word, part)
        return N.Cast(b.type.elem.with_(const=False), word)
