"""A loop cut into whole chunks and a guarded tail, joined back into one loop.

Vector code walks a run of X elements in chunks of W (the vector width) and handles the last
``X % W`` elements with a mask. Once the lanes are lowered (``lowering/x86.py``,
``lowering/x86_dot_sum.py``) this reads::

    int F = X / W;                     // whole chunks
    int R = X % W;                     // elements in the tail
    ...
    for (int c = 0; c < F; ++c)
        for (int l = 0; l < W; ++l)
            BODY(W * c + l);
    if (R)
        for (int l2 = 0; l2 < W; ++l2)
            if (l2 < R)
                BODY(W * F + l2);

which is ``for (int i = 0; i < X; ++i) BODY(i);``: C's division gives ``X == W * F + R``
for every X, so for X >= 0 the chunks run ``i = W*c + l`` through ``[0, W*F)`` and the tail
through ``[W*F, X)``, each once and in ascending order, and for X < 0 neither runs (F <= 0,
and R <= 0 fails ``l2 < R``), as the joined loop does not.

Conditions (else the statements are left as they are):

* ``F`` and ``R`` are int declarations of the function initialised to ``X / W`` and ``X % W``
  (the same X, an int expression of variables; W a constant > 0), and nothing in the function
  assigns ``F``, ``R`` or a variable of X;
* the chunk loop runs ``c`` from 0 by 1 while ``c < F`` and holds only the lane loop, which
  runs ``l`` from 0 by 1 while ``l < W``; the tail is ``if (R)`` (or ``R != 0``) around one
  lane loop ``l2`` of the same shape whose whole body is ``if (l2 < R) { ... }``, without else;
* the tail's body is the chunk loop's body with ``c`` := F and ``l`` := l2;
* in that body ``c`` and ``l`` appear only as ``W * c + l``, nothing assigns them, and there
  is no break, continue, return or goto (they would leave a different loop after the join).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from .common import loop


def _assigned(node) -> set:
    out = set()
    for n in walk(node):
        t = n.target if isinstance(n, (N.Assign, N.AssignExpr)) else \
            n.operand if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") else None
        while isinstance(t, (N.Index, N.Member)):
            t = t.base
        if isinstance(t, N.Var):
            out.add(t.name)
        if isinstance(n, N.For):
            out.add(n.var)
    return out


def _const(e):
    while isinstance(e, N.Cast):
        e = e.expr
    return e.value if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


def _lane_loop(s):
    """(var, W, body stmts) of ``for (v = 0; v < W; ++v) {...}`` with a constant W > 0."""
    if not (isinstance(s, N.For) and s.binding is None and getattr(s, "cmp", "<") == "<"
            and _const(s.lo) == 0 and _const(s.step) == 1):
        return None
    w = _const(s.hi)
    if w is None or w <= 0:
        return None
    return s.var, w, [t for t in s.body.stmts if not isinstance(t, N.Comment)]


def _int_decl(d):
    return isinstance(d, N.Decl) and isinstance(d.type, N.Scalar) and d.type.dtype == "int32" and d.init is not None


class _Join:
    def __init__(self, func: N.Func, names):
        self.names = names
        self.assigned = _assigned(func.body)
        self.decls = {}
        dup = set()
        for n in walk(func.body):
            if isinstance(n, N.Decl):
                if n.name in self.decls:
                    dup.add(n.name)
                self.decls[n.name] = n
        for d in dup:
            del self.decls[d]
        self.params = {p.name: p for p in func.params}

    def _split(self, f_name, r_name, w):
        """X when F = X / W and R = X % W hold everywhere in the function, else None."""
        fd, rd = self.decls.get(f_name), self.decls.get(r_name)
        if not (_int_decl(fd) and _int_decl(rd)):
            return None
        fi, ri = fd.init, rd.init
        if not (isinstance(fi, N.BinOp) and fi.op == "/" and isinstance(ri, N.BinOp) and ri.op == "%"
                and _const(fi.rhs) == w and _const(ri.rhs) == w and fi.lhs == ri.lhs):
            return None
        return self._x_ok(fi.lhs, {f_name, r_name})

    def _x_ok(self, x, names):
        """``x`` when it is a pure int32 expression whose names (and ``names``) the function never
        assigns after their declaration, else None."""
        xvars = {n.name for n in walk(x) if isinstance(n, N.Var)}
        if any(not isinstance(n, (N.Var, N.BinOp, N.Const, N.UnOp, N.Cast)) for n in walk(x)):
            return None
        if (names | xvars) & self.assigned:
            return None
        for v in xvars:
            t = self.params[v].type if v in self.params else self.decls[v].type if v in self.decls else None
            if not (isinstance(t, N.Scalar) and t.dtype == "int32"):
                return None
        return x

    def pair(self, s1, s2):
        """The joined loop for the statements ``s1; s2``, or None."""
        if not (isinstance(s1, N.For) and s1.binding is None and getattr(s1, "cmp", "<") == "<"
                and _const(s1.lo) == 0 and _const(s1.step) == 1 and isinstance(s1.hi, N.Var)):
            return None
        chunk = [t for t in s1.body.stmts if not isinstance(t, N.Comment)]
        if len(chunk) != 1 or _lane_loop(chunk[0]) is None:
            return None
        cvar, f_name = s1.var, s1.hi.name
        lvar, w, body = _lane_loop(chunk[0])
        if not (isinstance(s2, N.If) and s2.else_ is None):
            return None
        cnd = s2.cond
        if isinstance(cnd, N.BinOp) and cnd.op == "!=" and _const(cnd.rhs) == 0:
            cnd = cnd.lhs
        if not isinstance(cnd, N.Var):
            return None
        r_name = cnd.name
        tail = s2.then.stmts if isinstance(s2.then, N.Block) else (s2.then,)
        tail = [t for t in tail if not isinstance(t, N.Comment)]
        if len(tail) != 1 or _lane_loop(tail[0]) is None:
            return None
        l2, w2, tbody = _lane_loop(tail[0])
        if w2 != w or len(tbody) != 1 or not isinstance(tbody[0], N.If) or tbody[0].else_ is not None:
            return None
        g = tbody[0].cond
        if not (isinstance(g, N.BinOp) and g.op == "<" and isinstance(g.lhs, N.Var) and g.lhs.name == l2
                and isinstance(g.rhs, N.Var) and g.rhs.name == r_name):
            return None
        guarded = tbody[0].then.stmts if isinstance(tbody[0].then, N.Block) else (tbody[0].then,)
        x = self._split(f_name, r_name, w)
        if x is None:
            return None
        blk = N.Block(tuple(body))
        if any(isinstance(n, (N.Break, N.Continue, N.Return)) or type(n).__name__ == "Goto" for n in walk(blk)):
            return None
        if {cvar, lvar} & _assigned(blk):
            return None
        if substitute(blk, {cvar: N.Var(f_name), lvar: N.Var(l2)}) != N.Block(tuple(guarded)):
            return None
        i = self.names.fresh("i")
        pos = N.BinOp("+", N.BinOp("*", N.Const(w, "int32", str(w)), N.Var(cvar)), N.Var(lvar))
        joined = rewrite(blk, lambda n: N.Var(i) if n == pos else n)
        if any(isinstance(n, N.Var) and n.name in (cvar, lvar) for n in walk(joined)):
            return None
        return loop(i, 0, x, joined.stmts).with_(loc=s1.loc)

    def block(self, stmts):
        out, k = [], 0
        stmts = list(stmts)
        while k < len(stmts):
            s = stmts[k]
            j = self.pair(s, stmts[k + 1]) if k + 1 < len(stmts) else None
            if j is not None:
                out.append(j)
                k += 2
                continue
            out.append(self.stmt(s))
            k += 1
        return tuple(out)

    def stmt(self, s):
        if isinstance(s, N.Block):
            return s.with_(stmts=self.block(s.stmts))
        if isinstance(s, (N.For, N.CFor, N.While)) and isinstance(s.body, N.Block):
            return s.with_(body=s.body.with_(stmts=self.block(s.body.stmts)))
        if isinstance(s, N.If):
            then = self.stmt(s.then)
            els = self.stmt(s.else_) if s.else_ is not None else None
            return s.with_(then=then, else_=els)
        return s


def join(func: N.Func, body: N.Block, names) -> N.Block:
    """``body`` (of ``func``) with every chunk loop + tail pair of the module doc joined."""
    return body.with_(stmts=_Join(func.with_(body=body), names).block(body.stmts))


# ------------------------------------------------------------------ second shape: masked tails
# A detensorized AVX-512 row kernel (examples/softmax/softmax_avx512.c after the lane fusions,
# contractions and lane accumulators of passes/flatten_lanes.py) writes the split another way::
#
#     int F = X / W * W;  int R = X - F;
#     for (int c = 0; c < F; c += W)
#         for (int l = 0; l < W; ++l) BODY(c + l);
#     if (R)
#         for (int l2 = 0; l2 < W; ++l2) MASKED(l2)        // lanes l2 >= R masked off
#
# which is ``for (int i = 0; i < X; ++i) BODY(i);`` by the same identity: F = W * (X / W), so the
# chunks run ``c + l`` through [0, F) and the tail through [F, F + R) = [F, X) when X >= 0, and
# neither runs when X < 0 (F <= 0; R <= 0 fails l2 < R). MASKED(l2) is first brought to the form
# ``if (l2 < R) { BODY(F + l2) }`` by these rewrites, each of which changes nothing on a lane:
#
# * ``if (l2 < R) { S }`` is S on a valid lane and nothing on a masked one;
# * a statement that writes only locals declared in the lane body, and whose expressions are pure
#   (no memory write, no call with effects), is put under the guard: on a masked lane what it
#   computes is read only by statements that are themselves under the guard (checked: every
#   statement ends up guarded), so dropping it there changes no result;
# * ``acc = acc > (l2 < R ? E : K) ? acc : (l2 < R ? E : K)`` (``<`` for a min) becomes
#   ``if (l2 < R) acc = acc > E ? acc : E`` when ``acc`` is declared with the initial value K and
#   every assignment to it in the function is such a max (min) fold: on a masked lane it folds K
#   in again, and K is already an operand of the fold (its initial value); max and min are
#   idempotent, so the fold's result is unchanged (in the reordering sense the lane accumulator
#   step already takes, passes/lane_accumulators.py);
# * under the guard, ``l2 < R ? E : K`` is E.
#
# Both bodies are then brought to one form (a local declared with a pure initialiser and read
# once, in the next statement only and never assigned, is replaced there by its initialiser: no
# statement runs in between) and compared up to the names of the locals they declare.

def _is_guard(e, l2, r_name) -> bool:
    return (isinstance(e, N.BinOp) and e.op == "<" and isinstance(e.lhs, N.Var) and e.lhs.name == l2
            and isinstance(e.rhs, N.Var) and e.rhs.name == r_name)


def _stmts_of(s):
    return [t for t in (s.stmts if isinstance(s, N.Block) else (s,)) if not isinstance(t, N.Comment)]


def _uses(node, name) -> int:
    return sum(1 for n in walk(node) if isinstance(n, N.Var) and n.name == name)


def _forward(stmts: list) -> list:
    """Locals declared with a pure initialiser, read only in the next statement (once, never
    assigned), replaced there by the initialiser."""
    from ..purity import is_pure
    stmts = list(stmts)
    k = 0
    while k + 1 < len(stmts):
        d, nxt = stmts[k], stmts[k + 1]
        if (isinstance(d, N.Decl) and isinstance(d.type, N.Scalar) and d.init is not None and is_pure(d.init)
                and isinstance(nxt, (N.Decl, N.Assign)) and d.name not in _assigned(N.Block(tuple(stmts)))
                and _uses(N.Block(tuple(stmts[k + 1:])), d.name) == 1
                and _uses(nxt.value if isinstance(nxt, N.Assign) else nxt.init, d.name) == 1
                and not (isinstance(nxt, N.Assign) and _uses(nxt.target, d.name))):
            if isinstance(nxt, N.Assign):
                nxt = nxt.with_(value=substitute(nxt.value, {d.name: d.init}))
            else:
                nxt = nxt.with_(init=substitute(nxt.init, {d.name: d.init}))
            stmts[k:k + 2] = [nxt]
            k = max(k - 1, 0)
            continue
        k += 1
    return stmts


def _rename_locals(stmts: list, to: list) -> list | None:
    """``stmts`` with the locals it declares (at its top level, in order) renamed to those of
    ``to``; None when the counts differ or a new name is already used in ``stmts``."""
    mine = [s.name for s in stmts if isinstance(s, N.Decl)]
    theirs = [s.name for s in to if isinstance(s, N.Decl)]
    if len(mine) != len(theirs) or len(set(mine)) != len(mine):
        return None
    used = {n.name for n in walk(N.Block(tuple(stmts))) if isinstance(n, (N.Var, N.Decl))}
    ren = {a: b for a, b in zip(mine, theirs) if a != b}
    if set(ren.values()) & (used - set(ren)):
        return None

    def fn(n):
        if isinstance(n, N.Var) and n.name in ren:
            return N.Var(ren[n.name])
        if isinstance(n, N.Decl) and n.name in ren:
            return n.with_(name=ren[n.name])
        return n
    return [rewrite(s, fn) for s in stmts]


class _MaskedJoin(_Join):
    def __init__(self, func, names, macros=()):
        super().__init__(func, names)
        # object-like macros with an int constant body (``#define LANES 16``), never redefined
        seen = [m.name for m in macros]
        self.macros = {m.name: _const(m.expr) for m in macros if m.params is None and m.expr is not None
                       and _const(m.expr) is not None and seen.count(m.name) == 1
                       and m.name not in self.decls and m.name not in self.params}

    def _k(self, e):
        """The int constant ``e`` is (a literal or such a macro), or None."""
        while isinstance(e, N.Cast):
            e = e.expr
        return self.macros.get(e.name) if isinstance(e, N.Var) else _const(e)

    def _split_masked(self, f_name, r_name, w):
        """X when F = X / W * W and R = X - F hold everywhere in the function, else None."""
        fd, rd = self.decls.get(f_name), self.decls.get(r_name)
        if not (_int_decl(fd) and _int_decl(rd)):
            return None
        fi, ri = fd.init, rd.init
        if not (isinstance(fi, N.BinOp) and fi.op == "*" and self._k(fi.rhs) == w and isinstance(fi.lhs, N.BinOp)
                and fi.lhs.op == "/" and self._k(fi.lhs.rhs) == w and isinstance(ri, N.BinOp) and ri.op == "-"
                and ri.lhs == fi.lhs.lhs and isinstance(ri.rhs, N.Var) and ri.rhs.name == f_name):
            return None
        return self._x_ok(fi.lhs.lhs, {f_name, r_name})

    def _fold(self, s, g):
        """``if (g) acc = acc OP E ? acc : E`` for a masked max / min fold ``s`` (see the notes
        above), or None."""
        if not (isinstance(s, N.Assign) and s.op == "=" and isinstance(s.target, N.Var)
                and isinstance(s.value, N.Cond)):
            return None
        acc, v = s.target.name, s.value
        if not (isinstance(v.cond, N.BinOp) and v.cond.op in (">", "<") and v.cond.lhs == s.target
                and v.then == s.target and v.cond.rhs == v.else_ and isinstance(v.else_, N.Cond)
                and v.else_.cond == g):
            return None
        op, e, k = v.cond.op, v.else_.then, v.else_.else_
        d = self.decls.get(acc)
        if d is None or d.init != k:
            return None
        for n in walk(self.func_body):
            if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var) and n.target.name == acc:
                w = n.value
                if not (n.op == "=" and isinstance(w, N.Cond) and isinstance(w.cond, N.BinOp) and w.cond.op == op
                        and w.cond.lhs == n.target and w.then == n.target and w.cond.rhs == w.else_):
                    return None
            elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and \
                    isinstance(n.operand, N.Var) and n.operand.name == acc:
                return None
        return N.Assign(s.target, "=", N.Cond(N.BinOp(op, s.target, e), s.target, e))

    def _unmask(self, stmts, l2, r_name):
        """MASKED(l2) as the statements of ``if (l2 < R) { ... }``, or None."""
        from ..purity import is_pure
        g = N.BinOp("<", N.Var(l2), N.Var(r_name))
        local = {s.name for s in stmts if isinstance(s, N.Decl)}
        out = []
        for s in stmts:
            if isinstance(s, N.If) and s.else_ is None and _is_guard(s.cond, l2, r_name):
                out += _stmts_of(s.then)
                continue
            f = self._fold(s, g)
            if f is not None:
                out.append(f)
                continue
            if isinstance(s, N.Decl) and s.name in local and (s.init is None or is_pure(s.init)) \
                    and isinstance(s.type, N.Scalar):
                out.append(s)
                continue
            if isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name in local \
                    and is_pure(s.value):
                out.append(s)
                continue
            return None
        # under the guard: l2 < R holds, so its selects take their first operand, its ifs run
        out = [rewrite(s, lambda n: n.then if isinstance(n, N.Cond) and _is_guard(n.cond, l2, r_name) else n)
               for s in out]
        flat = []
        for s in out:
            if isinstance(s, N.If) and s.else_ is None and _is_guard(s.cond, l2, r_name):
                flat += _stmts_of(s.then)
            else:
                flat.append(s)
        if any(_is_guard(n, l2, r_name) for s in flat for n in walk(s)):
            return None
        return flat

    def pair(self, s1, s2):
        if not (isinstance(s1, N.For) and s1.binding is None and getattr(s1, "cmp", "<") == "<"
                and _const(s1.lo) == 0 and isinstance(s1.hi, N.Var)):
            return None
        w = self._k(s1.step)
        chunk = _stmts_of(s1.body)
        if w is None or w <= 1 or len(chunk) != 1 or _lane_loop(chunk[0]) is None:
            return None
        cvar, f_name = s1.var, s1.hi.name
        lvar, w1, body = _lane_loop(chunk[0])
        if w1 != w or not (isinstance(s2, N.If) and s2.else_ is None):
            return None
        cnd = s2.cond
        if isinstance(cnd, N.BinOp) and cnd.op == "!=" and _const(cnd.rhs) == 0:
            cnd = cnd.lhs
        if not isinstance(cnd, N.Var):
            return None
        r_name = cnd.name
        tail = _stmts_of(s2.then)
        if len(tail) != 1 or _lane_loop(tail[0]) is None:
            return None
        l2, w2, tbody = _lane_loop(tail[0])
        x = self._split_masked(f_name, r_name, w) if w2 == w else None
        if x is None:
            return None
        blk = N.Block(tuple(body))
        if any(isinstance(n, (N.Break, N.Continue, N.Return)) or type(n).__name__ == "Goto" for n in walk(blk)):
            return None
        if {cvar, lvar} & _assigned(blk):
            return None
        guarded = self._unmask(tbody, l2, r_name)
        if guarded is None:
            return None
        mine = _forward(list(substitute(blk, {cvar: N.Var(f_name), lvar: N.Var(l2)}).stmts))
        theirs = _rename_locals(_forward(guarded), mine)
        if theirs is None or N.Block(tuple(theirs)) != N.Block(tuple(mine)):
            return None
        i = self.names.fresh("i")
        pos = {N.BinOp("+", N.Var(cvar), N.Var(lvar)), N.BinOp("+", N.Var(lvar), N.Var(cvar))}
        joined = rewrite(blk, lambda n: N.Var(i) if n in pos else n)
        if any(isinstance(n, N.Var) and n.name in (cvar, lvar) for n in walk(joined)):
            return None
        return loop(i, 0, x, joined.stmts).with_(loc=s1.loc)


def join_masked(func: N.Func, body: N.Block, names, macros=()) -> tuple:
    """``body`` (of ``func``) with every chunk loop + masked tail pair of the second shape joined,
    and the number of pairs joined (``macros``: the program's, for a width written as a macro)."""
    j = _MaskedJoin(func.with_(body=body), names, macros)
    j.func_body = body
    count = [0]
    pair = j.pair

    def counted(s1, s2):
        got = pair(s1, s2)
        count[0] += got is not None
        return got
    j.pair = counted
    return body.with_(stmts=j.block(body.stmts)), count[0]
