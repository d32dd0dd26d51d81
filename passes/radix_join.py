"""A pair of loops over the digits of one index, joined back into the loop over that index.

Code that works on groups of W elements walks a reduction in two loops, a group ``q`` and an
element ``r`` of the group, with the padding past the end zeroed by guards (examples/gemm/
gemm_vnni.c after ``lowering/x86_dot_cols.py`` and the forwarding of its packed B,
``passes/forward.py``)::

    for (int q = 0; q < Kq; ++q) {                    // Kq = (K + 3) / 4
        const int kr = K - 4 * q < 4 ? K - 4 * q : 4;
        for (int r = 0; r < 4; ++r)
            acc += (uint32_t)((int32_t)(r < kr ? a[4 * q + r] : (uint8_t)0)
                              * (int32_t)(int8_t)(4 * q + r < K ? B[(long)(4 * q + r) * N + j] : (int8_t)0));
    }

is the plain reduction the gemm passes (cache, tensorize) recognise::

    for (int k = 0; k < K; ++k)
        acc += (uint32_t)((int32_t)a[k] * (int32_t)(int8_t)B[(long)k * N + j]);

Why it is exact: ``(q, r)`` for ``q < Q``, ``r < W`` runs ``k = W*q + r`` through ``[0, W*Q)`` once
each, in ascending order (the order of the additions does not change). A guard ``g ? x : 0`` that
is a factor of the added value (through integer casts and products) makes the update add 0 where
``g`` fails; when the guards together hold exactly for ``k < X`` (Z3, for every ``q < Q``,
``r < W`` and every value of the other names) and every ``k < X`` is below ``W*Q`` (Z3, from the
definition of ``Q`` when it is a constant declaration), the joined loop runs ``k < X`` with the
guards taken as true. ``q`` and ``r`` must then appear only as ``W*q + r``, which becomes ``k``.

Conditions (else the loops are left as they are; :func:`join` returns the statement unchanged):

* the outer loop runs ``q`` from 0 by 1 while ``q < Q``, unbound; its body is const integer
  declarations with pure initialisers, then the inner loop, which runs ``r`` from 0 by 1 while
  ``r < W`` (a constant > 0) and holds one update ``acc += E`` of an integer scalar (an integer
  sum, so that adding 0 changes nothing; a float ``-0.0`` would become ``+0.0``);
* ``E`` is pure (no call, no assignment); its guards are found syntactically (a conditional with
  the constant 0 as its else branch, as an operand of ``*`` or of integer casts from the top);
* ``Q``, ``X`` and the declarations read only names the function never assigns;
* the arithmetic read by Z3 is that of ``xpiler/ir/z3term.py`` (integer casts read through:
  loop indices and bounds are in range, as in the source).
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt
from xpiler.ir import z3term as T
from xpiler.ir.visit import rewrite, substitute, walk

from . import dependence as D

BUDGET_MS = 3000
INT_T = N.Scalar("int32", "int")


def strip_int_casts(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype.startswith(("int", "uint")):
        e = e.expr
    return e


def const_int(e):
    e = strip_int_casts(e)
    return e.value if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


def plain(stmts):
    return [s for s in stmts if not isinstance(s, (N.Comment, N.Pragma))]


def _is_var(e, name) -> bool:
    return isinstance(e, N.Var) and e.name == name


def _names(node) -> set:
    return {n.name for n in walk(node) if isinstance(n, N.Var)}


def pure(e) -> bool:
    for n in walk(e):
        if isinstance(n, (N.Call, N.Intrinsic, N.AssignExpr, N.Comma)):
            return False
        if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&"):
            return False
    return True


def _canonical(f, binding_ok=False) -> bool:
    return isinstance(f, N.For) and (f.binding is None or binding_ok) and getattr(f, "cmp", "<") == "<" \
        and const_int(f.lo) == 0 and const_int(f.step) == 1 and f.var_type is not None


def _int_scalar(t) -> bool:
    return isinstance(t, N.Scalar) and t.dtype.startswith(("int", "uint"))


class Terms(T.Terms):
    def __init__(self):
        super().__init__(policy=T.REFUSE, names=lambda v: z3.Int(v.name) if isinstance(v, N.Var) else None)


def proved(facts, goal) -> bool:
    s = smt.solver(BUDGET_MS)
    s.add(*facts)
    s.add(z3.Not(goal))
    return s.check() == z3.unsat


def guards(e) -> list:
    """The conditionals ``g ? x : 0`` that are factors of ``e`` (through integer casts and ``*``)."""
    e = strip_int_casts(e)
    if isinstance(e, N.Cond) and const_int(e.else_) == 0:
        return [e]
    if isinstance(e, N.BinOp) and e.op == "*":
        return guards(e.lhs) + guards(e.rhs)
    return []


def _digit_sum(e, q, r, w) -> bool:
    """``e`` (casts ignored) is ``w*q + r`` in one of its spellings."""
    e = strip_int_casts(e)
    if not (isinstance(e, N.BinOp) and e.op == "+"):
        return False
    for a, v in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        a = strip_int_casts(a)
        if _is_var(strip_int_casts(v), r) and isinstance(a, N.BinOp) and a.op == "*":
            if (const_int(a.lhs) == w and _is_var(strip_int_casts(a.rhs), q)) or (const_int(a.rhs) == w and _is_var(strip_int_casts(a.lhs), q)):
                return True
    return False


class Joiner:
    def __init__(self, func: N.Func):
        self.func = func
        self.assigned = D.assigned_names(func.body)
        self.top = {}
        dup = set()
        for n in walk(func.body):
            if isinstance(n, N.Decl):
                if n.name in self.top:
                    dup.add(n.name)
                self.top[n.name] = n
        for d in dup:
            self.top.pop(d)
        self.types = {p.name: p.type for p in func.params}
        for k, d in self.top.items():          # a name both a parameter and a local: no type
            self.types[k] = None if k in self.types else d.type
        for k in dup:
            self.types[k] = None
        self.used = {n.name for n in walk(func) if isinstance(n, N.Var)} | \
            {n.name for n in walk(func) if isinstance(n, N.Decl)} | {n.var for n in walk(func) if isinstance(n, N.For)}
        self.count = 0

    def fresh(self) -> str:
        while True:
            self.count += 1
            name = f"xp_k{self.count}"
            if name not in self.used:
                self.used.add(name)
                return name

    def no_op_cast(self, n):
        """``(T)x`` -> ``x`` where ``x`` is already a ``T`` (an integer scalar type): ``(T)(T)y``, or
        an element ``p[e]`` of a pointer ``p`` to ``T`` (a conversion to its own type is the
        identity). Dropping a guard leaves such casts: the guarded value was converted to the type
        of its else branch."""
        if not (isinstance(n, N.Cast) and _int_scalar(n.type)):
            return n
        x = n.expr
        if isinstance(x, N.Cast) and _int_scalar(x.type) and x.type.dtype == n.type.dtype:
            return x
        if isinstance(x, N.Index) and isinstance(x.base, N.Var):
            t = self.types.get(x.base.name)
            if isinstance(t, N.Pointer) and isinstance(t.elem, N.Scalar) and t.elem.dtype == n.type.dtype:
                return x
        return n

    def integer(self, e) -> bool:
        """Integer arithmetic throughout (so a factor 0 makes the product 0; a float factor could
        be an infinity or a NaN): no float constant, no conversion to a non-integer type, and
        every element read through a pointer to an integer type."""
        for n in walk(e):
            if isinstance(n, N.Const) and isinstance(n.value, float):
                return False
            if isinstance(n, N.Cast) and not _int_scalar(n.type):
                return False
            if isinstance(n, N.Index):
                t = self.types.get(n.base.name) if isinstance(n.base, N.Var) else None
                if not (isinstance(t, N.Pointer) and _int_scalar(t.elem)):
                    return False
            if isinstance(n, N.Var) and n.name in self.types and self.types[n.name] is not None \
                    and not isinstance(self.types[n.name], N.Pointer) and not _int_scalar(self.types[n.name]):
                return False
        return True

    def invariant(self, e) -> bool:
        return pure(e) and not (_names(e) & self.assigned)

    def facts_for(self, names) -> list:
        """``Q == init`` for constant declarations among ``names`` (recursively) with pure,
        never-assigned initialisers."""
        out, seen, todo = [], set(), list(names)
        tm = Terms()
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            d = self.top.get(v)
            if d is None or d.init is None or v in self.assigned or not _int_scalar(d.type) or not self.invariant(d.init):
                continue
            try:
                out.append(z3.Int(v) == tm.int(d.init))
            except T.Untranslatable:
                continue
            todo += list(_names(d.init))
        return out

    def join(self, f: N.For):
        """The joined loop for ``f``, or None."""
        if not _canonical(f):
            return None
        q, Q = f.var, f.hi
        body = plain(f.body.stmts)
        if not body or not self.invariant(Q):
            return None
        *lets, inner = body
        if not (_canonical(inner) and const_int(inner.hi) is not None and const_int(inner.hi) > 0):
            return None
        r, W = inner.var, const_int(inner.hi)
        ib = plain(inner.body.stmts)
        if len(ib) != 1 or not isinstance(ib[0], N.Assign) or ib[0].op != "+=" or not isinstance(ib[0].target, N.Var):
            return None
        upd = ib[0]
        acc = upd.target.name
        if not _int_scalar(self.types.get(acc)) or acc in (q, r):
            return None
        E = upd.value
        if not pure(E) or acc in _names(E) or not self.integer(E):
            return None
        env = {}
        for d in lets:
            if not (isinstance(d, N.Decl) and _int_scalar(d.type) and d.init is not None and pure(d.init)):
                return None
            if d.name in self.assigned or (_names(d.init) - {q} - set(env)) & self.assigned:
                return None
            env[d.name] = N.Cast(d.type.with_(const=False), substitute(d.init, env))
        E = substitute(E, env)
        gs = guards(E)
        if not gs:
            return None
        k = self.fresh()
        Vk = N.Var(k)

        def to_k(n):
            return Vk if _digit_sum(n, q, r, W) else n
        drop = {id(g): g.then for g in gs}
        E2 = rewrite(E, lambda n: drop.get(id(n), n))
        E2 = rewrite(rewrite(E2, to_k), self.no_op_cast)
        if {q, r} & _names(E2):
            return None
        # the bound: a guard that reads ``k < X`` once its digits are joined
        X = None
        for g in gs:
            c = strip_int_casts(rewrite(g.cond, to_k))
            if isinstance(c, N.BinOp) and c.op == "<" and isinstance(strip_int_casts(c.lhs), N.Var) and strip_int_casts(c.lhs).name == k \
                    and self.invariant(c.rhs) and not ({q, r, k} & _names(c.rhs)):
                X = c.rhs
                break
        if X is None:
            return None
        tm = Terms()
        try:
            zq, zr, zQ, zX = z3.Int(q), z3.Int(r), tm.int(Q), tm.int(X)
            conds = [tm.bool(g.cond) for g in gs]
        except T.Untranslatable:
            return None
        facts = self.facts_for(_names(Q) | _names(X))
        rng = [zq >= 0, zq < zQ, zr >= 0, zr < W]
        if not proved(facts + rng, z3.And(*conds) == (W * zq + zr < zX)):
            return None
        if not proved(facts, z3.Or(zX <= 0, zX <= W * zQ)):
            return None
        new_upd = upd.with_(value=E2)
        return N.For(k, N.Const(0, "int32", "0"), X, N.Const(1, "int32", "1"), N.Block((new_upd,)),
                     var_type=INT_T, loc=f.loc)


def join_all(func: N.Func, node):
    """``node`` with every loop pair that :meth:`Joiner.join` accepts joined."""
    jn = Joiner(func)

    def fn(n):
        if isinstance(n, N.For):
            new = jn.join(n)
            if new is not None:
                return new
        return n
    return rewrite(node, fn)
