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
        x = fi.lhs
        xvars = {n.name for n in walk(x) if isinstance(n, N.Var)}
        if any(not isinstance(n, (N.Var, N.BinOp, N.Const, N.UnOp, N.Cast)) for n in walk(x)):
            return None
        if ({f_name, r_name} | xvars) & self.assigned:
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
