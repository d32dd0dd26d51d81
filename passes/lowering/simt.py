"""SIMT (cuda/hip) side of detensorize: fragments, MFMA and warp collectives, with the
control-flow facts they need (is this point reached by every live thread of the block?).

Uniformity: a variable is thread-varying when its value depends on threadIdx (directly, through
another varying variable, or by being assigned under varying control).  A collective is
lowered with block barriers when no enclosing if/loop condition is varying.  Threads that
returned earlier do not matter (an exited thread leaves ``__syncthreads``).  An ``if`` with a
varying condition around a collective is if-converted: the condition goes into a predicate,
the collective runs for every thread, every other statement runs under the predicate.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from . import mfma as L_mfma, mfma_lift as L_lift, warp as L_warp, wmma as L_wmma, wmma_lift as L_wlift
from .common import FLOAT, INT, add, assign, base_name, block, c, cast, decl, ix, mul
from .common import call_name as _name

LANE_BUILTINS = ("threadIdx.x", "threadIdx.y", "threadIdx.z", "__lane_id")


def _is_collective(e) -> bool:
    return _name(e) in L_warp.NAMES


def _collectives_in(node) -> list:
    return [n for n in walk(node) if _is_collective(n)]


def _mentions(e, var: set) -> bool:
    for n in walk(e):
        if isinstance(n, N.Builtin) and n.name in LANE_BUILTINS:
            return True
        if isinstance(n, N.Var) and n.name in var:
            return True
        if _is_collective(n):
            return True
    return False


def varying_names(func: N.Func) -> set:
    var = set() if func.kind == "kernel" else {p.name for p in func.params}
    for _ in range(12):
        before = len(var)

        def visit(s, ctl):
            if s is None:
                return
            if isinstance(s, N.Block):
                for x in s.stmts:
                    visit(x, ctl)
            elif isinstance(s, N.Decl):
                # a declaration's value is its initializer's (only the threads running it see it)
                if s.init is not None and _mentions(s.init, var):
                    var.add(s.name)
            elif isinstance(s, N.Assign):
                if ctl or _mentions(s.value, var) or _mentions(s.target, var):
                    bn = base_name(s.target)
                    if bn:
                        var.add(bn)
            elif isinstance(s, N.ExprStmt):
                for n in walk(s.expr):
                    if isinstance(n, N.AssignExpr) and (ctl or _mentions(n.value, var)):
                        bn = base_name(n.target)
                        if bn:
                            var.add(bn)
            elif isinstance(s, N.For):
                h = ctl or any(_mentions(x, var) for x in (s.lo, s.hi, s.step))
                if h:
                    var.add(s.var)
                visit(s.body, h)
            elif isinstance(s, N.CFor):
                visit(s.init, ctl)
                h = ctl or (s.cond is not None and _mentions(s.cond, var))
                visit(s.body, h)
            elif isinstance(s, N.While):
                visit(s.body, ctl or _mentions(s.cond, var))
            elif isinstance(s, N.If):
                h = ctl or _mentions(s.cond, var)
                visit(s.then, h)
                visit(s.else_, h)
        visit(func.body, False)
        if len(var) == before:
            break
    return var


class SimtHooks:
    def __init__(self, mfma_lift: bool = True):
        self.coll_funcs = None
        self.mfma_lift = mfma_lift      # MFMA as its contraction where mfma_lift.plan allows it

    # -------------------------------------------------------------- per function
    def begin(self, ctx):
        if self.coll_funcs is None:
            funcs = {f.name: f for f in ctx.program.funcs if f.body is not None}
            coll = {n for n, f in funcs.items() if _collectives_in(f.body)}
            for _ in range(4):
                for n, f in funcs.items():
                    if any(isinstance(x, N.Call) and x.func in coll for x in walk(f.body)):
                        coll.add(n)
            self.coll_funcs = coll
        ctx.varying = varying_names(ctx.func)
        ctx.uniform = [True]
        ctx.frags = {}
        ctx.buffers = {}
        ctx.tid_name = None
        ctx.mfma_lifts, ctx.mfma_kept, ctx.mfma_drop = {}, {}, set()
        if ctx.dialect == "hip" and self.mfma_lift and ctx.func.kind == "kernel":
            ctx.mfma_lifts, ctx.mfma_kept = L_lift.plan(ctx.func, ctx.varying)
            for lift in ctx.mfma_lifts.values():
                ctx.mfma_drop.update(lift.drop)
        # WMMA: the accumulators spread over the warp, loads forwarded into the products (wmma_lift.py)
        ctx.wlift = "not tried"
        if self.mfma_lift and ctx.func.kind == "kernel" and any(
                isinstance(d, N.Decl) and isinstance(d.type, N.Fragment) for d in walk(ctx.func.body)):
            ctx.wlift = L_wlift.plan(ctx.program, ctx.func, ctx.varying)

    def end(self, ctx, body):
        # hip vector values (floatx4 ...) -> plain arrays, so the result compiles for any SIMT target;
        # where an MFMA was lowered, a vector that cannot become an array is refused
        if ctx.dialect != "hip":
            return body
        from . import vector_types as VT
        try:
            return VT.lower_func(ctx.func.with_(body=body)).body
        except VT.Kept as e:
            if getattr(ctx, "mfma_lowered", False):
                ctx.refuse(e.why, e.node)
            return body

    def buffer(self, ctx, hint, elem: N.Scalar, n: int) -> str:
        key = (hint, elem.dtype)
        if key not in ctx.buffers:
            name = ctx.fresh(hint)
            ctx.buffers[key] = name
            ctx.func_top.append(N.Decl(name, N.Array(elem.with_(const=False), (c(n),)), None, "shared"))
        return ctx.buffers[key]

    def tid(self, ctx) -> str:
        if ctx.tid_name is None:
            ctx.tid_name = ctx.fresh("tid")
            tx, ty, tz = (N.Builtin(f"threadIdx.{a}") for a in "xyz")
            bx, by = N.Builtin("blockDim.x"), N.Builtin("blockDim.y")
            ctx.func_top.insert(0, decl(ctx.tid_name, INT, add(tx, mul(ty, bx), mul(tz, bx, by)), const=True))
        return ctx.tid_name

    @staticmethod
    def barrier():
        return N.Barrier("block")

    # -------------------------------------------------------------- control flow
    def around_loop(self, ctx, s, rebuild):
        if id(s) in ctx.mfma_drop:      # an operand fill loop a lifted MFMA no longer reads
            return []
        if isinstance(s, N.For):
            hv = any(_mentions(x, ctx.varying) for x in (s.lo, s.hi, s.step))
        elif isinstance(s, N.CFor):
            hv = s.cond is not None and _mentions(s.cond, ctx.varying)
        else:
            hv = _mentions(s.cond, ctx.varying)
        ctx.uniform.append(ctx.uniform[-1] and not hv)
        try:
            return [rebuild()]
        finally:
            ctx.uniform.pop()

    def _has_collective(self, node) -> bool:
        return bool(_collectives_in(node)) or any(
            isinstance(x, N.Call) and x.func in self.coll_funcs for x in walk(node))

    def around_if(self, ctx, s, rebuild):
        from xpiler.passes.detensorize import _lower_stmt
        hv = _mentions(s.cond, ctx.varying)
        if hv and ctx.uniform[-1] and s.else_ is None and _collectives_in(s.then):
            return _lower_stmt(ctx, self.if_convert(ctx, s))
        ctx.uniform.append(ctx.uniform[-1] and not hv)
        try:
            return [rebuild()]
        finally:
            ctx.uniform.pop()

    def if_convert(self, ctx, s: N.If) -> N.Block:
        p = ctx.fresh("pred")
        ctx.varying.add(p)

        def guard(t):
            return N.If(N.Var(p), t, loc=getattr(t, "loc", None))

        def pred(stmts):
            out = []
            for t in stmts:
                if isinstance(t, (N.Comment, N.Pragma)):
                    out.append(t)
                    continue
                if any(isinstance(x, (N.Return, N.Break, N.Continue, N.Barrier)) for x in walk(t)):
                    ctx.refuse("a warp collective under thread-dependent control flow whose branch also "
                               "returns, breaks or synchronizes cannot be if-converted", t)
                if any(isinstance(x, N.Call) and x.func in self.coll_funcs for x in walk(t)):
                    ctx.refuse("a call to a function using warp collectives under thread-dependent control flow", t)
                colls = _collectives_in(t)
                if not colls:
                    if isinstance(t, N.Decl):
                        if isinstance(t.type, N.Array):
                            out.append(t)
                        elif t.init is not None:
                            out.append(t.with_(type=_nonconst(t.type), init=cast(_nonconst(t.type), c(0))))
                            out.append(guard(assign(t.name, t.init)))
                        else:
                            out.append(t)
                    else:
                        out.append(guard(t))
                    continue
                if isinstance(t, N.For):
                    if any(_mentions(x, ctx.varying) for x in (t.lo, t.hi, t.step)):
                        ctx.refuse("a warp collective inside a loop with a thread-dependent trip count", t)
                    out.append(t.with_(body=N.Block(tuple(pred(t.body.stmts)))))
                elif isinstance(t, N.CFor):
                    if t.cond is not None and _mentions(t.cond, ctx.varying):
                        ctx.refuse("a warp collective inside a loop with a thread-dependent trip count", t)
                    body = t.body.stmts if isinstance(t.body, N.Block) else (t.body,)
                    out.append(t.with_(body=N.Block(tuple(pred(body)))))
                elif isinstance(t, N.Block):
                    out.append(N.Block(tuple(pred(t.stmts))))
                elif isinstance(t, (N.Assign, N.ExprStmt, N.Decl)):
                    mapping = {}
                    for call in colls:
                        if call in mapping:
                            continue
                        tmp = ctx.fresh("coll")
                        mapping[call] = tmp
                        out.append(decl(tmp, L_warp.result_type(ctx, call), call))
                    new = rewrite(t, lambda n: N.Var(mapping[n]) if n in mapping else n)
                    if isinstance(new, N.Decl):
                        out.append(new.with_(type=_nonconst(new.type), init=cast(_nonconst(new.type), c(0))))
                        out.append(guard(assign(new.name, new.init)))
                    else:
                        out.append(guard(new))
                else:
                    ctx.refuse("a warp collective in a statement that cannot be if-converted", t)
            return out

        then = s.then.stmts if isinstance(s.then, N.Block) else (s.then,)
        return N.Block((decl(p, INT, N.Cond(s.cond, c(1), c(0)), const=True),) + tuple(pred(then)), loc=s.loc)

    # -------------------------------------------------------------- statements
    def stmt(self, ctx, s):
        from xpiler.passes.detensorize import _call_name
        if id(s) in ctx.mfma_drop:      # an operand declaration a lifted MFMA no longer reads
            return []
        # fragments -> whole-tile arrays
        lifted = isinstance(getattr(ctx, "wlift", None), L_wlift.WLift)
        if isinstance(s, N.Decl) and isinstance(s.type, N.Fragment):
            ctx.frags[s.name] = s.type
            if lifted:
                return L_wlift.decl_of(ctx.wlift, s)
            return [s.with_(type=L_wmma.frag_array(s.type))]
        s = self._frag_members(ctx, s)
        if lifted and isinstance(s, N.ExprStmt) and _call_name(s.expr) in L_wmma.NAMES:
            out = L_wlift.lower(ctx, ctx.wlift, s, L_wmma.short(_call_name(s.expr)), list(s.expr.args))
            return [N.Block(tuple(out), loc=s.loc)] if out else []
        if isinstance(s, N.ExprStmt) and _call_name(s.expr) in L_wmma.NAMES:
            return [N.Block(tuple(L_wmma.lower(ctx, _call_name(s.expr), list(s.expr.args), ctx.frags)), loc=s.loc)]
        if any(isinstance(x, N.Call) and x.func in self.coll_funcs for x in walk(s)) and not ctx.uniform[-1]:
            ctx.refuse("a call to a function that uses warp collectives, under thread-dependent control flow")
        pre = []
        # MFMA: acc = __builtin_amdgcn_mfma_...(a, b, c, 0, 0, 0)
        mf = [n for n in walk(s) if _call_name(n) in L_mfma.NAMES]
        if mf:
            if not ctx.uniform[-1]:
                ctx.refuse("an MFMA under thread-dependent control flow (the lowering needs a block barrier)")
            if not ((isinstance(s, N.Assign) and s.op == "=" and s.value in mf)
                    or (isinstance(s, N.Decl) and s.init in mf)):
                ctx.refuse("an MFMA builtin must be the whole right-hand side of an assignment or declaration")
            call = s.value if isinstance(s, N.Assign) else s.init
            ctx.mfma_lowered = True
            res = ctx.fresh("d")
            if id(s) in ctx.mfma_lifts:
                if isinstance(s, N.Assign) and isinstance(s.target, N.Var) and call.args[2] == s.target:
                    # acc = mfma(a, b, acc): the sums run in acc itself (the same float operations)
                    out = L_lift.lower(ctx, call, None, ctx.mfma_lifts[id(s)], into=s.target.name)
                    return [N.Block(tuple(out), loc=s.loc)]
                pre += L_lift.lower(ctx, call, res, ctx.mfma_lifts[id(s)])
            else:
                pre += L_mfma.lower(ctx, call, res, self.barrier)
            e = ctx.fresh("e")
            from .common import loop
            if isinstance(s, N.Assign):
                tail = [loop(e, 0, 4, assign(ix(s.target, N.Var(e)), ix(res, N.Var(e))))]
            else:
                tail = [s.with_(init=None), loop(e, 0, 4, assign(ix(s.name, N.Var(e)), ix(res, N.Var(e))))]
            return [N.Block(tuple(pre + tail), loc=s.loc)] if isinstance(s, N.Assign) else pre + tail
        if any(_name(n) in L_warp.MBCNT for n in walk(s)):       # lane counts: an expression each
            s = rewrite(s, lambda n: L_warp.lower_mbcnt(ctx, n) if _name(n) in L_warp.MBCNT else n)
        colls = _collectives_in(s)
        if colls:
            if not ctx.uniform[-1]:
                ctx.refuse("a warp collective under thread-dependent control flow (the exchange needs every "
                           "thread of the block; see the uniform-control-flow assumption)")
            mapping = {}
            for call in colls:
                if call in mapping or any(call in walk(o) for o in colls if o is not call and o != call):
                    continue
                tmp = ctx.fresh("sh")
                mapping[call] = tmp
                pre += L_warp.lower(ctx, call, tmp, self.barrier)
            new = rewrite(s, lambda n: N.Var(mapping[n]) if n in mapping else n)
            if _collectives_in(new):
                ctx.refuse("nested warp collectives")
            if isinstance(new, N.Decl):
                return pre + [new]
            return [N.Block(tuple(pre + [new]), loc=s.loc)] if not isinstance(new, N.Return) else pre + [new]
        return [s]

    def _frag_members(self, ctx, s):
        if not ctx.frags:
            return s

        def fn(n):
            if isinstance(n, N.Member) and isinstance(n.base, N.Var) and n.base.name in ctx.frags:
                t = ctx.frags[n.base.name]
                if n.field == "x":
                    return n.base
                if n.field == "num_elements":
                    r, c_ = L_wmma.frag_shape(t)
                    return mul(r, c_)
            return n
        return rewrite(s, fn)


def _nonconst(t):
    return t.with_(const=False) if isinstance(t, (N.Scalar, N.Vector, N.Named)) and hasattr(t, "const") else t
