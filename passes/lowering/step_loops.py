"""Step loops over a variable declared before them, as canonical loops (c sources).

Vector code walks an array with a counter that lives outside its loops, so that the tail after
the main loop starts where the main loop stopped::

    size_t i = 0;
    for (; i + 16 <= n; i += 16) BODY          // main loop (16 lanes per iteration)
    if (i < n) TAIL                             // or: for (; i < n; ++i) TAIL

After detensorize the lanes are plain loops, but the main loop is still not canonical (no
``var = lo`` of its own, a ``v + K <= E`` condition, a counter read after the loop), so binding
cannot spread it.  :func:`normalize` rewrites each such loop into a canonical loop over a fresh
variable plus the counter's final value, computed in closed form::

    size_t i = 0;
    for (size_t i2 = i; i2 < (n >= 15 ? n - 15 : 0); i2 += 16) BODY[i := i2]
    size_t i3 = i >= hi ? i : i + (hi - i + 15) / 16 * 16;      // hi: the bound above
    if (i3 < n) TAIL[i := i3]

Exact, under these conditions (otherwise the loop is left as it was):

* the condition is ``v + K <= E`` (K >= 1), ``v + K < E`` or ``v < E`` with an integer
  constant ``K``, the step ``v += S`` / ``++v`` / ``v++`` / ``v = v + S`` with a constant
  ``S > 0``; ``E`` reads only scalars, and the body assigns neither ``v`` nor those scalars,
  declares no ``v`` of its own and contains no ``break``, ``return`` or ``goto``;
* ``v`` and ``E`` are ``int``/``long``-sized integers of the same signedness, or ``v`` unsigned
  and ``E`` signed of no larger size (C compares in ``v``'s type then); for unsigned types the
  bound is guarded so that ``E - K`` cannot wrap;
* the start value is the loop's own ``v = V0`` (or ``T v = V0``), else ``v``'s current value;
  ``v`` is declared in the same block before the loop, or in the loop's init.

The final value is declared as a fresh variable, and the rest of the block reads it instead of
``v`` (so it is a single-assignment value, which the dependence test can use); a later
statement that assigns ``v`` first gets ``v = <final>`` back.  Signed overflow of ``E - K`` or
of the counter itself (the source would overflow too) is not modelled.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

_INT_RANK = {"int32": 32, "uint32": 32, "int64": 64, "uint64": 64}


def _unsigned(t) -> bool:
    return t.dtype.startswith("uint")


def _const_int(e):
    if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _c(v):
    return N.Const(v, "int32", str(v))


def _assigned(node) -> set:
    out = set()
    for n in walk(node):
        t = None
        if isinstance(n, (N.Assign, N.AssignExpr)):
            t = n.target
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&"):
            t = n.operand
        elif isinstance(n, N.For):
            out.add(n.var)
        while isinstance(t, (N.Index, N.Member)):
            t = t.base
        if isinstance(t, N.Var):
            out.add(t.name)
    return out


def _declares(node, name) -> bool:
    return any(isinstance(n, N.Decl) and n.name == name or isinstance(n, N.For) and n.var == name
               for n in walk(node))


def _scalar_only(e) -> bool:
    return not any(isinstance(n, (N.Index, N.Call, N.Intrinsic, N.AssignExpr, N.Member, N.Comma)) or
                   isinstance(n, N.UnOp) and n.op in ("*", "&", "++", "--", "p++", "p--") for n in walk(e))


def _step(nx, v):
    """S of ``v += S`` / ``++v`` / ``v++`` / ``v = v + S`` (a positive constant), else None."""
    if isinstance(nx, N.UnOp) and nx.op in ("++", "p++") and isinstance(nx.operand, N.Var) and nx.operand.name == v:
        return 1
    if isinstance(nx, (N.AssignExpr, N.Assign)) and isinstance(nx.target, N.Var) and nx.target.name == v:
        if nx.op == "+=":
            s = _const_int(nx.value)
        elif nx.op == "=" and isinstance(nx.value, N.BinOp) and nx.value.op == "+" and \
                isinstance(nx.value.lhs, N.Var) and nx.value.lhs.name == v:
            s = _const_int(nx.value.rhs)
        else:
            s = None
        return s if s is not None and s > 0 else None
    return None


def _cond(cond, v):
    """(K, E, inclusive) for ``v + K <= E`` (inclusive), ``v + K < E``, ``v < E``."""
    if not (isinstance(cond, N.BinOp) and cond.op in ("<", "<=")):
        return None
    lhs = cond.lhs
    if isinstance(lhs, N.Var) and lhs.name == v:
        k = 0
    elif isinstance(lhs, N.BinOp) and lhs.op == "+" and isinstance(lhs.lhs, N.Var) and lhs.lhs.name == v and \
            _const_int(lhs.rhs) is not None and _const_int(lhs.rhs) >= 0:
        k = _const_int(lhs.rhs)
    else:
        return None
    if cond.op == "<=" and k < 1:
        return None
    return k, cond.rhs, cond.op == "<="


class _Norm:
    def __init__(self, env, names):
        self.env = env
        self.names = names

    def int_type(self, e):
        t = self.env.type_of(e)
        if isinstance(t, N.Scalar) and t.dtype in _INT_RANK:
            return t
        if isinstance(e, N.Const) and _const_int(e) is not None:
            return N.Scalar("int32", "int")
        return None

    # -------------------------------------------------------------- one loop
    def loop(self, s, cur, declared_here):
        """(For, v, T, lo, hi, S) when CFor ``s`` normalizes, else None."""
        init = s.init
        v = lo = None
        decl_init = False
        if isinstance(init, N.Decl) and isinstance(init.type, N.Scalar) and init.init is not None:
            v, lo, decl_init = init.name, init.init, True
        elif isinstance(init, N.ExprStmt) and isinstance(init.expr, N.AssignExpr) and init.expr.op == "=" and \
                isinstance(init.expr.target, N.Var):
            v, lo = init.expr.target.name, init.expr.value
        elif isinstance(init, N.Assign) and init.op == "=" and isinstance(init.target, N.Var):
            v, lo = init.target.name, init.value
        elif init is None:
            nx = s.next
            if isinstance(nx, N.UnOp) and isinstance(nx.operand, N.Var):
                v = nx.operand.name
            elif isinstance(nx, (N.AssignExpr, N.Assign)) and isinstance(nx.target, N.Var):
                v = nx.target.name
        if v is None or s.cond is None or s.next is None:
            return None
        if not decl_init and v not in declared_here:
            return None
        S = _step(s.next, v)
        kc = _cond(s.cond, v)
        if S is None or kc is None:
            return None
        K, E, inclusive = kc
        body = s.body if isinstance(s.body, N.Block) else N.Block((s.body,))
        if not _scalar_only(E) or any(isinstance(n, N.Var) and n.name == v for n in walk(E)):
            return None
        if any(isinstance(n, (N.Break, N.Return)) or isinstance(n, N.Raw) for n in walk(body)):
            return None
        evars = {n.name for n in walk(E) if isinstance(n, N.Var)}
        if (evars | {v}) & _assigned(body) or _declares(body, v):
            return None
        T = init.type if decl_init else self.env.type_of(N.Var(v))
        if not (isinstance(T, N.Scalar) and T.dtype in _INT_RANK):
            return None
        ET = self.int_type(E)
        if ET is None:
            return None
        if _unsigned(T) != _unsigned(ET):
            if _unsigned(T) and _INT_RANK[ET.dtype] <= _INT_RANK[T.dtype]:
                E = N.Cast(N.Scalar(T.dtype, T.spelling), E)      # C compares in v's type
            else:
                return None
        unsigned = _unsigned(T) or _unsigned(ET)
        d = K - 1 if inclusive else K              # v + K <= E  <=>  v < E - (K - 1)
        if d == 0:
            hi = E
        elif unsigned:
            hi = N.Cond(N.BinOp(">=", E, _c(d)), N.BinOp("-", E, _c(d)), _c(0))
        else:
            hi = N.BinOp("-", E, _c(d))
        mapping = {k: N.Var(x) for k, x in cur.items()}
        if not decl_init and lo is None:
            lo = N.Var(cur.get(v, v))
        else:
            lo = substitute(lo, mapping) if mapping else lo
        hi = substitute(hi, mapping) if mapping else hi
        nv = self.names.fresh(v + "_")
        inner = dict(mapping)
        inner[v] = N.Var(nv)
        body = substitute(body, inner)
        t = N.Scalar(T.dtype, T.spelling)
        new = N.For(nv, lo, hi, _c(S), body, None, t, s.pragmas, "<", loc=s.loc)
        return new, v, t, lo, hi, S, decl_init

    # -------------------------------------------------------------- blocks
    def block(self, stmts) -> tuple:
        out = []
        cur = {}                 # counter -> name of the variable that holds its value now
        declared_here = set()
        stmts = list(stmts)
        for pos, s in enumerate(stmts):
            s = self.stmt(s)
            r = self.loop(s, cur, declared_here) if isinstance(s, N.CFor) else None
            if r is not None:
                new, v, t, lo, hi, S, scoped = r
                out.append(new)
                if scoped:
                    continue
                cur.pop(v, None)
                rest = N.Block(tuple(stmts[pos + 1:]))
                if any(isinstance(n, N.Var) and n.name == v for n in walk(rest)):
                    end = N.Cond(N.BinOp(">=", lo, hi), lo,
                                 N.BinOp("+", lo, N.BinOp("*", N.BinOp("/", N.BinOp("+", N.BinOp("-", hi, lo),
                                                                                     _c(S - 1)), _c(S)), _c(S))))
                    if S == 1:
                        end = N.Cond(N.BinOp(">=", lo, hi), lo, hi)
                    e = self.names.fresh(v + "_end")
                    out.append(N.Decl(e, t, N.Cast(t, end)))
                    cur[v] = e
                continue
            if isinstance(s, N.Decl):
                declared_here.add(s.name)
            # a statement that assigns a counter (or declares its name) gets the counter back first
            back = [v for v in cur if v in _assigned(s) or _declares(s, v)]
            for v in back:
                out.append(N.Assign(N.Var(v), "=", N.Var(cur.pop(v)), loc=s.loc))
            if cur:
                s = substitute(s, {k: N.Var(x) for k, x in cur.items()})
            out.append(s)
        return tuple(out)

    def stmt(self, s):
        if isinstance(s, N.Block):
            return s.with_(stmts=self.block(s.stmts))
        if isinstance(s, N.For):
            return s.with_(body=N.Block(self.block(s.body.stmts), loc=s.body.loc))
        if isinstance(s, (N.CFor, N.While)):
            b = s.body if isinstance(s.body, N.Block) else N.Block((s.body,))
            return s.with_(body=N.Block(self.block(b.stmts), loc=b.loc))
        if isinstance(s, N.If):
            th = s.then if isinstance(s.then, N.Block) else N.Block((s.then,))
            el = s.else_
            if el is not None:
                el = el if isinstance(el, N.Block) else N.Block((el,))
                el = el.with_(stmts=self.block(el.stmts))
            return s.with_(then=th.with_(stmts=self.block(th.stmts)), else_=el)
        return s


def normalize(body: N.Block, env, names) -> N.Block:
    """``body`` with its step loops over outside counters made canonical (module doc)."""
    return body.with_(stmts=_Norm(env, names).block(body.stmts))
