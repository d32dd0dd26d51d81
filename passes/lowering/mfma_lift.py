"""MFMA lifted to its contraction: each lane computes its 4 outputs straight from where its
wavefront's operands come from, instead of exchanging the operands through ``__shared__``
buffers (``mfma.lower``).

The MFMA ``D = C + A·B`` (gfx90a, wave64; i = lane % 16, g = lane / 16) takes A[r][k] from the
operand of lane 16k + r (f32, K = 4) or element k % 4 of lane 16(k/4) + r (f16, K = 16), and
B[k][col] likewise from lane 16k + col / 16(k/4) + col.  When a lane's operand is an expression
of the lane's position (its ``i`` / ``g`` / ``lane`` variables) over wave-uniform values and
memory that no thread writes while the wavefront reads it, "the operand of lane L" is that
expression with L's position put in.  Then lane (i, g) computes

    D[4g+e][i] = C[e] + sum_k A(r = 4g+e, k) * B(k, col = i)     (k ascending, float products)

with no exchange and no barrier: the same float operations in the same order as ``mfma.lower``.

What is checked (else :func:`plan` gives a reason and the exchange lowering is used):

* the operands are ``const T a = E;`` (f32) or ``halfx4 a;`` filled by one loop ``for (e = 0; e <
  4; ++e) { a[e] = E; ... }`` (f16), declared in the same statement list before the MFMA, never
  assigned anywhere else, with only pure scalar declarations between them and the MFMA;
* the position variables are recognised from their definitions with the lets inlined:
  ``threadIdx.x % 64`` (lane), ``lane % 16`` (i), ``lane / 16`` (g); every other variable of ``E``
  is uniform (not thread-varying) or wave-uniform (threadIdx.x only under ``/ 64``); the kernel
  never reads threadIdx.y / threadIdx.z (the wavefront is 64 consecutive threadIdx.x);
* ``E`` reads only ``__shared__`` arrays and pointer parameters, no call, and none of them is
  written between the nearest block barriers around the MFMA (in every enclosing statement list
  up to the one that has a barrier on both sides): every lane of the wavefront reads the same
  values the operand's owner read.
"""
from __future__ import annotations

from dataclasses import dataclass

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from .common import FLOAT, add, assign, b, decl, ix, loop, mul, scalar, tofloat
from .mfma import F16, I8, NAMES

TX = "threadIdx.x"


@dataclass
class Lift:
    half: bool
    ops: tuple          # (A expression, B expression) as written at the operands' definitions
    pos: dict           # variable -> 'lane' | 'i' | 'g'
    elem: str | None    # f16: the fill loop's element variable
    drop: tuple         # ids of the operand statements the lift makes dead


def _call_of(s):
    if isinstance(s, N.Assign) and s.op == "=" and isinstance(s.value, N.Intrinsic) and s.value.name in NAMES:
        return s.value
    if isinstance(s, N.Decl) and isinstance(s.init, N.Intrinsic) and s.init.name in NAMES:
        return s.init
    return None


def _lists(node, chain=()):
    """(statement list, chain of enclosing (list, index) pairs) for every list below ``node``."""
    if isinstance(node, N.Block):
        yield node.stmts, chain
        for j, s in enumerate(node.stmts):
            for sub in _children(s):
                yield from _lists(sub, chain + ((node.stmts, j),))
    else:
        for sub in _children(node):
            yield from _lists(sub, chain)


def _children(s):
    if isinstance(s, N.Block):
        return [s]
    out = []
    for f in ("body", "then", "else_"):
        x = getattr(s, f, None)
        if isinstance(x, N.Stmt):
            out.append(x if isinstance(x, N.Block) else N.Block((x,)))
    return out


def _strip(e):
    while isinstance(e, N.Cast):
        e = e.expr
    return e


def _int(e):
    e = _strip(e)
    return e.value if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) else None


class _Planner:
    def __init__(self, func: N.Func, varying: set):
        self.func = func
        self.varying = varying
        decls, self.dup = {}, set()
        for n in walk(func.body):
            if isinstance(n, N.Decl):
                if n.name in decls:
                    self.dup.add(n.name)
                decls[n.name] = n
            elif isinstance(n, (N.For,)):
                self.dup.add(n.var)
        self.decls = decls
        self.params = {p.name for p in func.params}
        self.assigned = {}
        for n in walk(func.body):
            tgt = n.target if isinstance(n, (N.Assign, N.AssignExpr)) else None
            if tgt is not None:
                base = tgt
                while isinstance(base, (N.Index, N.Member)):
                    base = base.base
                if isinstance(base, N.Var):
                    self.assigned.setdefault(base.name, []).append(n)
        self.uses = {}
        for n in walk(func.body):
            if isinstance(n, N.Var):
                self.uses[n.name] = self.uses.get(n.name, 0) + 1
        self.ty = any(isinstance(n, N.Builtin) and n.name in ("threadIdx.y", "threadIdx.z") for n in walk(func.body))

    # ---- values of the let chain
    def inline(self, e, depth=0):
        if depth > 16:
            return None
        def fn(n):
            if isinstance(n, N.Var) and n.name in self.decls and n.name not in self.dup \
                    and n.name not in self.assigned and self.decls[n.name].init is not None \
                    and isinstance(self.decls[n.name].type, N.Scalar) and n.name in self.varying:
                return self.inline(self.decls[n.name].init, depth + 1) or n
            return n
        return rewrite(e, fn)

    def position(self, name):
        """'lane' / 'i' / 'g' when ``name`` is the lane's position, else None."""
        d = self.decls.get(name)
        if d is None or name in self.dup or name in self.assigned or d.init is None:
            return None
        v = _strip(self.inline(d.init))
        if not isinstance(v, N.BinOp) or v.op not in ("%", "/"):
            return None
        lhs, k = _strip(v.lhs), _int(v.rhs)
        if v.op == "%" and k == 64 and isinstance(lhs, N.Builtin) and lhs.name == TX:
            return "lane"
        inner = lhs if isinstance(lhs, N.BinOp) else None
        if k == 16 and inner is not None and inner.op == "%" and _int(inner.rhs) == 64 and \
                isinstance(_strip(inner.lhs), N.Builtin) and _strip(inner.lhs).name == TX:
            return "i" if v.op == "%" else "g"
        return None

    def wave_uniform(self, name, width: int = 64) -> bool:
        """Same value in every lane of a group of ``width`` consecutive threadIdx.x (a wave64, or a
        warp with ``width=32``): uniform, or threadIdx.x only under a division by a multiple of
        ``width``."""
        if name not in self.varying or (name in self.decls and isinstance(self.decls[name].type, N.Array)):
            return True
        d = self.decls.get(name)
        if d is None or name in self.dup or name in self.assigned or d.init is None:
            return False
        v = self.inline(d.init)
        ok = [True]

        def fn(n, under=False):
            if isinstance(n, N.BinOp) and n.op == "/" and _int(n.rhs) is not None and _int(n.rhs) % width == 0 \
                    and _int(n.rhs) > 0:
                fn(n.lhs, True)
                return
            if isinstance(n, N.Builtin) and n.name in ("threadIdx.x", "threadIdx.y", "threadIdx.z", "__lane_id") \
                    and not under:
                ok[0] = False
            if isinstance(n, N.Var) and n.name in self.varying:
                ok[0] = False
            for f in getattr(n, "__dataclass_fields__", {}):
                x = getattr(n, f)
                if isinstance(x, N.Expr):
                    fn(x, under)
                elif isinstance(x, tuple):
                    for y in x:
                        if isinstance(y, N.Expr):
                            fn(y, under)
        fn(v)
        return ok[0]

    # ---- one MFMA
    def plan(self, stmts, j, chain):
        s = stmts[j]
        call = _call_of(s)
        if self.ty:
            return "the kernel reads threadIdx.y / threadIdx.z (a wavefront is not 64 consecutive threadIdx.x)"
        if call.name == I8:
            return "the int8 MFMA is lowered by the exchange form only (no lift of packed byte operands yet)"
        half = call.name == F16
        defs, drop, elem = [], [], None
        for arg in call.args[:2]:
            if not isinstance(arg, N.Var) or arg.name in self.dup:
                return "an operand is not a variable declared once"
            if self.uses.get(arg.name, 0) != (1 if not half else 2):
                return f"operand '{arg.name}' is read elsewhere than by the MFMA"
            k = next((n for n in range(j) if isinstance(stmts[n], N.Decl) and stmts[n].name == arg.name), None)
            if k is None:
                return f"operand '{arg.name}' is not declared in the MFMA's statement list"
            d = stmts[k]
            if not half:
                if d.init is None or not isinstance(d.type, N.Scalar) or arg.name in self.assigned:
                    return f"operand '{arg.name}' is not 'T {arg.name} = E;' assigned nowhere else"
                defs.append(d.init)
                drop.append(d)
                continue
            writes = self.assigned.get(arg.name, [])
            fills = [n for n in range(k + 1, j) if isinstance(stmts[n], N.For)
                     and any(w in list(walk(stmts[n])) for w in writes)]
            if d.init is not None or len(fills) != 1:
                return f"operand '{arg.name}' is not filled by one loop before the MFMA"
            f = stmts[fills[0]]
            if not (_int(f.lo) == 0 and _int(f.hi) == 4 and _int(f.step) == 1 and f.binding is None):
                return f"the loop filling '{arg.name}' is not 'for (e = 0; e < 4; ++e)'"
            mine = [w for w in writes if any(w is x for x in walk(f))]
            if len(mine) != len(writes) or len(mine) != 1 or mine[0] not in f.body.stmts:
                return f"operand '{arg.name}' is written elsewhere than once in its fill loop"
            w = mine[0]
            if not (isinstance(w, N.Assign) and w.op == "=" and isinstance(w.target, N.Index)
                    and isinstance(w.target.base, N.Var) and isinstance(_strip(w.target.index), N.Var)
                    and _strip(w.target.index).name == f.var):
                return f"operand '{arg.name}' is not written as {arg.name}[{f.var}] = E"
            if elem not in (None, f.var) or any(not isinstance(x, N.Assign) for x in f.body.stmts):
                return "the operands are not filled by one loop of plain assignments"
            elem = f.var
            defs.append(w.value)
            drop += [d, f]
        # between the operands and the MFMA: pure scalar declarations (or the fill loop)
        first = min(n for n in range(j) if any(stmts[n] is x for x in drop))
        for x in stmts[first:j]:
            if any(x is y for y in drop):
                continue
            if not (isinstance(x, N.Decl) and isinstance(x.type, N.Scalar)
                    and not any(isinstance(n, (N.Call, N.Intrinsic, N.AssignExpr)) for n in walk(x))):
                return "a statement between the operands and the MFMA is not a pure scalar declaration"
        # variables of the operand expressions
        pos, arrays = {}, set()
        names = set()
        for e in defs:
            for n in walk(e):
                if isinstance(n, N.Builtin) and n.name.startswith(("threadIdx", "__lane")):
                    return "an operand reads threadIdx directly"
                if isinstance(n, (N.Call, N.Intrinsic, N.AssignExpr)):
                    return "an operand calls a function"
                if isinstance(n, N.Index):
                    base = n.base
                    while isinstance(base, N.Index):
                        base = base.base
                    if not isinstance(base, N.Var):
                        return "an operand reads memory through an expression"
                    arrays.add(base.name)
                if isinstance(n, N.Var):
                    names.add(n.name)
        for name in names - arrays - ({elem} if elem else set()):
            p = self.position(name)
            if p is not None:
                pos[name] = p
            elif not self.wave_uniform(name):
                return f"operand variable '{name}' differs between the lanes of a wavefront"
            elif any(isinstance(x, N.Decl) and x.name == name for x in stmts[first:j]):
                return f"operand variable '{name}' is redeclared before the MFMA"
        for a in arrays:
            d = self.decls.get(a)
            if not (a in self.params or (d is not None and d.scope == "shared" and a not in self.dup)):
                return f"operand reads '{a}', neither a __shared__ array nor a parameter"
        why = self._between_barriers(chain + ((stmts, j),), arrays)
        if why:
            return why
        return Lift(half, tuple(defs), pos, elem, tuple(id(x) for x in drop))

    def _between_barriers(self, chain, arrays):
        """None when no statement between the block barriers around the MFMA writes ``arrays``."""
        for lst, j in reversed(chain):
            before = next((n for n in range(j - 1, -1, -1) if isinstance(lst[n], N.Barrier)), None)
            after = next((n for n in range(j + 1, len(lst)) if isinstance(lst[n], N.Barrier)), None)
            lo = 0 if before is None else before + 1
            hi = len(lst) if after is None else after
            for x in lst[lo:hi]:
                for n in walk(x):
                    if isinstance(n, N.Barrier) and x is not lst[j]:
                        continue
                    if isinstance(n, (N.Assign, N.AssignExpr)):
                        base = n.target
                        while isinstance(base, (N.Index, N.Member)):
                            base = base.base
                        if isinstance(base, N.Var) and base.name in arrays:
                            return f"'{base.name}' is written between the barriers around the MFMA"
                    if isinstance(n, (N.Call,)) and not isinstance(n.func, str):
                        return "a call through a pointer near the MFMA"
            if before is not None and after is not None:
                return None
        return "no block barrier before and after the MFMA in any enclosing statement list"


def plan(func: N.Func, varying: set) -> tuple[dict, dict]:
    """({id(MFMA statement): Lift}, {id(MFMA statement): reason it is not lifted})."""
    p = _Planner(func, varying)
    lifts, why = {}, {}
    for stmts, chain in _lists(func.body):
        for j, s in enumerate(stmts):
            if _call_of(s) is not None:
                r = p.plan(stmts, j, chain)
                (lifts if isinstance(r, Lift) else why)[id(s)] = r
    return lifts, why


def lower(ctx, call: N.Intrinsic, result: str | None, lift: Lift, into: str | None = None):
    """Statements computing the MFMA ``call`` into the float[4] array ``result`` (lifted form);
    with ``into`` (``into = mfma(a, b, into)``) the products are added to ``into[e]`` in place:
    ``into[e] += p`` for each k is the same float operation sequence as a sum started from
    ``into[e]`` and copied back, and the operands never read ``into`` (a register vector)."""
    tid = N.Var(ctx.hooks.tid(ctx))
    lane, i, g = ctx.fresh("lane"), ctx.fresh("li"), ctx.fresh("lg")
    INT = scalar("int32", "int")
    out = [decl(lane, INT, b("%", tid, 64), const=True),
           decl(i, INT, b("%", N.Var(lane), 16), const=True),
           decl(g, INT, b("/", N.Var(lane), 16), const=True)]
    if into is None:
        out.append(decl(result, N.Array(FLOAT, (N.Const(4, "int32", "4"),))))
    e, k, s = ctx.fresh("e"), ctx.fresh("k"), ctx.fresh("acc")
    Ve, Vk = N.Var(e), N.Var(k)
    K = 16 if lift.half else 4
    kq = b("/", Vk, 4) if lift.half else Vk

    def at(expr, r):
        m = {}
        for name, p in lift.pos.items():
            m[name] = r if p == "i" else kq if p == "g" else add(mul(kq, 16), r)
        if lift.elem:
            m[lift.elem] = b("%", Vk, 4)
        return substitute(expr, m)

    row = add(mul(4, N.Var(g)), Ve)
    av, bv = at(lift.ops[0], row), at(lift.ops[1], N.Var(i))
    cc = call.args[2]
    if into is not None:
        out.append(loop(e, 0, 4, loop(k, 0, K, assign(ix(into, Ve), b("*", tofloat(av), tofloat(bv)), "+="))))
        return out
    out.append(loop(e, 0, 4, [decl(s, FLOAT, tofloat(ix(cc, Ve))),
                              loop(k, 0, K, assign(s, b("*", tofloat(av), tofloat(bv)), "+=")),
                              assign(ix(result, Ve), N.Var(s))]))
    return out
