"""Un-threading: the SIMT forms loop recovery leaves behind, back to plain sequential loops.

Loop recovery turns a CUDA/HIP block that strides over a row into thread loops ``t < T``
(``T`` = the block size). Two forms stay SIMT-shaped and hide the row loop from the cache /
tensorize passes (NRAM staging and ``__bang_*`` on bang, vectorization on c). This step
(``unthread``, a plan step with the pass protocol) rewrites them:

1. **cyclic nest → one loop**::

       for (t = 0; t < T; ++t) { <prefix>; for (c = t; c < n; c += T) B(c); }
    →  <prefix>; for (c = 0; c < n; ++c) B(c);

   The map ``(t, k) -> c = t + k*T`` is a bijection from the nest's iterations onto
   ``[0, n)``, but not order-preserving (``passes/collapse.py`` covers the blocked map
   ``v*L + l``, which is, so it does not apply here). So the new loop must carry no dependence
   at all (``passes/dependence.py``, Z3); ``t`` must not occur in ``B`` or ``n``; ``n`` is not
   assigned in ``B``; the prefix is scalar declarations with pure initializers that read
   neither ``t`` nor anything ``B`` assigns (evaluated ``T`` times before, once after: the same
   value).

2. **privatized reduction + halving tree → one reduction**::

       for (t = 0; t < T; ++t) { p = init; for (c = t; c < n; c += T) { ...; p = op(p, f(c)); }
                                 red[t] = p; }
       for (h = T/2; h > 0; h /= 2) for (t = 0; t < T; ++t) if (t < h) red[t] = op(red[t], red[t+h]);
       ... red[0] ...
    →  p = init; for (c = 0; c < n; ++c) { ...; p = op(p, f(c)); }   ... p ...

   Legal when ``T`` is a power of two (so the tree folds every partial into ``red[0]``);
   ``op`` is one of ``+ * & | ^`` or ``fmaxf/fminf/fmax/fmin/max/min`` and the same in the
   partial and the tree; ``init`` is pure, free of ``t`` (the same in every partial), and for a
   non-idempotent op (``+ * ^``) a constant identity (0, 1, 0) since the tree combines ``T``
   copies of it; ``p`` occurs in the loop body only in its one update, and ``f`` does not read
   it; ``red`` is a local array used only by such partial/tree pairs and by reads ``red[0]``
   after a tree in the same block (each read takes the accumulator of the nearest tree before
   it); every other use of ``red`` is a refusal. Other statements of the loop body (stores such
   as ``y[c] = e``) move with the loop: each ``c`` is still visited once, and the dependence
   test (with ``p`` excluded) proves that the new order is allowed. For max/min/&/| the result
   is the same value; for ``+`` and ``*`` the order of the combination changes (a
   reassociation of floating-point arithmetic): allowed, and the differential test's tolerance
   decides whether the candidate is kept.

3. with one of the above applied, a guard ``if (v >= hi) continue;`` at the top of a loop
   ``for (v = lo; v < hi; v += s)`` (``s > 0``; only uninitialized declarations before it) is
   never taken and is dropped (loop recovery's form of the source's ``if (row >= rows)
   return;``; the cache pass refuses a loop body that holds a ``continue``).

4. **per-thread partial + warp-shuffle exchange → one reduction** (``passes/unthread_shuffle.py``):
   ``A[t] = init; for (c = t; c < n; c += T) A[t] = op(A[t], f(c));`` followed by the detensorized
   shuffle exchange (butterfly or tree through a scratch array, one value per warp through shared
   memory, a fold of those, in thread loops and loops over offsets) →
   ``acc = init; for (c = 0; c < n; ++c) acc = op(acc, f(c));``, each read of the fold afterwards
   (``A[t]``, ``lds[0]``, a scalar) replaced by ``acc``. The exchange is *run* on abstract values
   (multisets of partials) over its constant thread / lane / offset space: legal when every
   location read afterwards holds each partial exactly once (at least once for max/min/&/|);
   see that module's docstring.

5. **one warp per row** (``passes/unthread_warp_rows.py``): the ``(ty, lane)`` form of 4 with
   ``c = lane; c += W`` and an optional early exit through ``done[]``, one reduction per row; a
   chain of them (a later partial reading an earlier fold) in order, then the write nest, the
   fusion of the row loops and one loop over the rows (``passes/unthread_warp_chain.py``).

Nothing to rewrite is ``PassError`` XP4002; a candidate nest that is not proven legal is XP4001
naming the statement (the plan then continues without this step, xpiler/migration/pipeline.py).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, vars_used, walk

from .base import PassError
from . import dependence as D
from . import unthread_shuffle as S
from . import unthread_warp_rows as WR
from . import unthread_warp_chain as WC
from .patterns import common as U

NAME = "unthread"
_ASSIGN_OPS = {"+=": "+", "*=": "*", "&=": "&", "|=": "|", "^=": "^"}
_BIN_OPS = {"+", "*", "&", "|", "^"}
_CALL_OPS = {"fmaxf", "fminf", "fmax", "fmin", "max", "min"}
_IDEMPOTENT = {"&", "|"} | _CALL_OPS
_IDENTITY = {"+": 0, "*": 1, "^": 0}


def _line(node) -> str:
    ln = getattr(getattr(node, "loc", None), "line", None)
    return f" (line {ln})" if ln else ""


def _text(e) -> str:
    from xpiler.printers import printer_for
    return printer_for("c").expr(e)


def _fname(e):
    """The name of a call or intrinsic ``e`` (math functions parse as intrinsics), else None."""
    if isinstance(e, N.Intrinsic):
        return e.name
    if isinstance(e, N.Call):
        return e.func if isinstance(e.func, str) else getattr(e.func, "name", None)
    return None


def _pure(e) -> bool:
    return not any(isinstance(n, (N.Index, N.AssignExpr))
                   or isinstance(n, (N.Call, N.Intrinsic)) and _fname(n) not in _PURE_CALLS
                   or isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--")
                   for n in walk(e))


_PURE_CALLS = {"expf", "exp", "logf", "log", "sqrtf", "sqrt", "rsqrtf", "fabsf", "fabs", "fmaxf", "fminf",
               "fmax", "fmin", "max", "min", "tanhf", "powf"}


def _const_int(e, macros):
    if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, N.Var) and e.name in macros:
        return _const_int(macros[e.name], macros)
    if isinstance(e, N.Cast):
        return _const_int(e.expr if hasattr(e, "expr") else e.operand, macros)
    if isinstance(e, N.UnOp) and e.op in ("-", "~"):
        v = _const_int(e.operand, macros)
        return None if v is None else (-v if e.op == "-" else ~v)
    if isinstance(e, N.BinOp) and e.op in ("+", "-", "*", "/"):
        a, b = _const_int(e.lhs, macros), _const_int(e.rhs, macros)
        if a is None or b is None or (e.op == "/" and (b == 0 or a < 0 or b < 0)):
            return None
        return {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else None}[e.op]
    return None


def _const_num(e):
    if isinstance(e, N.Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, N.UnOp) and e.op == "-":
        v = _const_num(e.operand)
        return None if v is None else -v
    return None


def _is_var(e, name) -> bool:
    return isinstance(e, N.Var) and e.name == name


def _update(s, acc: str):
    """``(op, f)`` when ``s`` is ``acc = op(acc, f)`` (any spelling this step accepts), else None."""
    if not isinstance(s, N.Assign) or not _is_var(s.target, acc):
        return None
    if s.op in _ASSIGN_OPS:
        return _ASSIGN_OPS[s.op], s.value
    if s.op != "=":
        return None
    v = s.value
    if isinstance(v, N.BinOp) and v.op in _BIN_OPS:
        if _is_var(v.lhs, acc):
            return v.op, v.rhs
        if _is_var(v.rhs, acc):
            return v.op, v.lhs
    if _fname(v) in _CALL_OPS and len(v.args) == 2:
        a, b = v.args
        if _is_var(a, acc):
            return _fname(v), b
        if _is_var(b, acc):
            return _fname(v), a
    return None


def _tree_update(s, red: str, t: str, h: str):
    """The op of ``red[t] = op(red[t], red[t + h])`` (or ``red[t] op= red[t + h]``), else None."""
    def at(e, plus):
        if not (isinstance(e, N.Index) and _is_var(e.base, red)):
            return False
        i = e.index
        if not plus:
            return _is_var(i, t)
        return isinstance(i, N.BinOp) and i.op == "+" and (
            _is_var(i.lhs, t) and _is_var(i.rhs, h) or _is_var(i.lhs, h) and _is_var(i.rhs, t))
    if not isinstance(s, N.Assign) or not at(s.target, False):
        return None
    if s.op in _ASSIGN_OPS:
        return _ASSIGN_OPS[s.op] if at(s.value, True) else None
    v = s.value
    if s.op == "=" and isinstance(v, N.BinOp) and v.op in _BIN_OPS:
        pair = (v.lhs, v.rhs)
    elif s.op == "=" and _fname(v) in _CALL_OPS and len(v.args) == 2:
        pair = tuple(v.args)
    else:
        return None
    a, b = pair
    if at(a, False) and at(b, True) or at(a, True) and at(b, False):
        return v.op if isinstance(v, N.BinOp) else _fname(v)
    return None


def _body(s) -> list:
    stmts = s.stmts if isinstance(s, N.Block) else (s,)
    return [x for x in stmts if not isinstance(x, N.Comment)]


def _single(s):
    b = _body(s)
    return b[0] if len(b) == 1 else None


def _thread_loop(s):
    """``s`` as a loop ``for (t = 0; t < T; ++t)`` (T a constant), else None."""
    if isinstance(s, N.For) and s.binding is None and s.cmp == "<" and _const_int(s.lo, {}) == 0 \
            and _const_int(s.step, {}) == 1:
        return s
    return None


def _cyclic_inner(loop: N.For, T: int, macros):
    """The loops directly in ``loop``'s body of the form ``for (c = t; c < n; c += T)``."""
    return [s for s in _body(loop.body) if isinstance(s, N.For) and _is_var(s.lo, loop.var)
            and _const_int(s.step, macros) == T]


class _Unthread:
    def __init__(self, program: N.Program, func: N.Func):
        self.program, self.func = program, func
        self.macros = {k: m.expr for k, m in program.macro_table().items()
                       if isinstance(getattr(m, "expr", None), N.Const)}
        self.changed = False
        self.reduced: set = set()        # reduction arrays folded away
        self.new_loops: list = []        # (loop var, private names, original statement)
        self.taken: set = set()          # names hoisted so far
        self.names = [n.name for n in walk(func) if isinstance(n, (N.Var, N.Decl, N.Param))]
        self.shuffled: list = []         # form 4 (unthread_shuffle.py): (partial array, accumulator)
        self.shuffle_kept: set = set()   # scalars assigned the accumulator after an exchange
        self.shuffle_gone: dict = {}     # names an exchange wrote that must not be used elsewhere

    # -- naming
    def _hoist_name(self, name: str, inside) -> str:
        """``name`` when hoisting its declaration out of ``inside`` clashes with nothing, else a
        fresh one."""
        within = sum(1 for n in walk(inside) if isinstance(n, (N.Var, N.Decl)) and n.name == name)
        total = sum(1 for n in self.names if n == name)
        if total == within and name not in self.taken:
            self.taken.add(name)
            return name
        k = 2
        while f"{name}_u{k}" in self.names or f"{name}_u{k}" in self.taken:
            k += 1
        self.taken.add(f"{name}_u{k}")
        return f"{name}_u{k}"

    # -- the walk
    def block(self, b: N.Block) -> N.Block:
        stmts = list(b.stmts)
        stmts = WR.rewrite_block(self, stmts)
        stmts = S.rewrite_block(self, stmts)
        stmts = self._reductions(stmts)
        out = []
        for s in stmts:
            r = self._cyclic(s)
            out.extend(r if r is not None else [self._inner(s)])
        return b.with_(stmts=tuple(out))

    def _inner(self, s):
        if isinstance(s, N.Block):
            return self.block(s)
        if isinstance(s, N.For) and isinstance(s.body, N.Block):
            return s.with_(body=self.block(s.body))
        if isinstance(s, N.CFor) and isinstance(s.body, N.Block):
            return s.with_(body=self.block(s.body))
        if isinstance(s, N.While) and isinstance(s.body, N.Block):
            return s.with_(body=self.block(s.body))
        if isinstance(s, N.If):
            t = self.block(s.then) if isinstance(s.then, N.Block) else s.then
            e = self.block(s.else_) if isinstance(s.else_, N.Block) else s.else_
            return s.with_(then=t, else_=e)
        return s

    # -- rewrite 1: a cyclic nest
    def _cyclic(self, s):
        lp = _thread_loop(s)
        if lp is None:
            return None
        T = _const_int(lp.hi, self.macros)
        if T is None or T < 1:
            return None
        inner = _cyclic_inner(lp, T, self.macros)
        if not inner:
            return None
        t, items = lp.var, _body(lp.body)
        c = items[-1]
        if len(inner) != 1 or c is not inner[0]:
            raise PassError(NAME, f"thread loop '{t}'{_line(lp)}: the strided loop over '{t}' must be the last "
                                  "statement of its body and the only one", lp)
        written = U.assigned_names(c.body)
        prefix = items[:-1]
        for d in prefix:
            if not (isinstance(d, N.Decl) and isinstance(d.type, N.Scalar) and d.init is not None
                    and _pure(d.init) and t not in vars_used(d.init) and not (vars_used(d.init) & written)
                    and d.name not in written):
                what = f"the declaration of '{d.name}'" if isinstance(d, N.Decl) else \
                    f"a statement ({type(d).__name__.lower()})"
                raise PassError(NAME, f"thread loop '{t}'{_line(d)}: {what} before the strided loop is not a "
                                      "declaration of a value that every thread computes alike", d)
        keep = [x for x in lp.body.stmts if x is not c and (not isinstance(x, N.Comment) or not x.trailing)]
        return self._flatten(lp, c, keep)

    def _flatten(self, lp: N.For, c: N.For, prefix: list, private=()) -> list:
        t = lp.var
        if c.binding is not None or c.cmp != "<":
            raise PassError(NAME, f"strided loop '{c.var}'{_line(c)} is not a plain '<' loop", c)
        if t in vars_used(c.body) or t in vars_used(c.hi):
            raise PassError(NAME, f"strided loop '{c.var}'{_line(c)}: its body or bound reads the thread "
                                  f"index '{t}' itself", c)
        written = U.assigned_names(c.body)
        if (vars_used(c.hi) & written) or c.var in written:
            raise PassError(NAME, f"strided loop '{c.var}'{_line(c)}: its bound or index is assigned in it", c)
        ren = {}
        for d in prefix:
            if not isinstance(d, N.Decl):
                continue
            nm = self._hoist_name(d.name, lp)
            if nm != d.name:
                ren[d.name] = N.Var(nm)
        flat = c.with_(lo=U.C(0), step=U.C(1))
        if ren:
            flat = substitute(flat, ren)
        new_prefix = [d.with_(name=ren[d.name].name, init=substitute(d.init, ren))
                      if isinstance(d, N.Decl) and d.name in ren else
                      (substitute(d, ren) if ren and isinstance(d, N.Decl) else d) for d in prefix]
        self.new_loops.append((flat.var, set(private), c))
        self.changed = True
        return new_prefix + [self._inner(flat)]

    # -- rewrite 2: partial reductions with their trees
    def _reductions(self, stmts: list) -> list:
        out, i, current = [], 0, {}     # current: red -> accumulator name of the last tree
        while i < len(stmts):
            s = stmts[i]
            red = self._partial_array(s)
            if red is None:
                out.append(self._read_red0(s, current))
                i += 1
                continue
            j = i + 1
            while j < len(stmts) and isinstance(stmts[j], N.Comment):
                j += 1
            if j >= len(stmts):
                raise PassError(NAME, f"thread loop '{s.var}'{_line(s)}: the partials in '{red}' are not "
                                      "combined by a halving tree after it", s)
            new, acc = self._reduction(s, red, stmts[j])
            out.extend(stmts[i + 1:j])
            out.extend(new)
            current[red] = acc
            self.reduced.add(red)
            i = j + 1
        return out

    def _partial_array(self, s):
        """The array ``red`` when ``s`` is a thread loop ending in ``red[t] = p``, else None."""
        lp = _thread_loop(s)
        if lp is None:
            return None
        items = _body(lp.body)
        last = items[-1] if items else None
        if isinstance(last, N.Assign) and last.op == "=" and isinstance(last.target, N.Index) \
                and isinstance(last.target.base, N.Var) and _is_var(last.target.index, lp.var) \
                and isinstance(last.value, N.Var) and _cyclic_inner(lp, _const_int(lp.hi, self.macros) or -1,
                                                                    self.macros):
            return last.target.base.name
        return None

    def _reduction(self, lp: N.For, red: str, tree):
        t = lp.var
        T = _const_int(lp.hi, self.macros)
        where = f"reduction into '{red}'{_line(lp)}"
        if T is None or T < 1 or T & (T - 1):
            raise PassError(NAME, f"{where}: the thread count {_text(lp.hi)} is not a constant power of two, "
                                  "so the halving tree does not fold every partial", lp)
        items = _body(lp.body)
        if len(items) != 3 or not isinstance(items[0], N.Decl):
            raise PassError(NAME, f"{where}: the thread loop must be 'p = init; <strided loop>; "
                                  f"{red}[{t}] = p;'", lp)
        d, c, st = items
        p = d.name
        if not (isinstance(d.type, N.Scalar) and d.init is not None and _is_var(st.value, p)
                and isinstance(c, N.For) and _is_var(c.lo, t)):
            raise PassError(NAME, f"{where}: the thread loop must be 'p = init; <strided loop>; "
                                  f"{red}[{t}] = p;'", lp)
        init = d.init
        if not _pure(init) or t in vars_used(init):
            raise PassError(NAME, f"{where}: the initial value '{_text(init)}' is not the same in every "
                                  "thread", d)
        # the one update of p in the strided loop's body
        ups = [(k, x, _update(x, p)) for k, x in enumerate(_body(c.body))]
        hits = [(k, x, u) for k, x, u in ups if u is not None]
        if len(hits) != 1:
            raise PassError(NAME, f"{where}: the strided loop must update '{p}' exactly once, as "
                                  f"'{p} = op({p}, f)'", c)
        _, upd, (op, f) = hits[0]
        others = [x for x in _body(c.body) if x is not upd]
        if p in vars_used(f) or any(p in {n.name for n in walk(x) if isinstance(n, (N.Var, N.Decl))}
                                    for x in others):
            raise PassError(NAME, f"{where}: '{p}' is read in the strided loop besides its update", c)
        if op not in _IDEMPOTENT:
            v = _const_num(init)
            if v is None or v != _IDENTITY[op]:
                raise PassError(NAME, f"{where}: with '{op}' the initial value must be the identity "
                                      f"{_IDENTITY[op]} (the tree combines {T} copies of '{_text(init)}')", d)
        # the tree
        top = tree
        ok = isinstance(top, N.CFor) and isinstance(top.init, N.Decl) and top.init.init is not None
        h = top.init.name if ok else None
        if ok:
            ok = _const_int(top.init.init, self.macros) == T // 2 and isinstance(top.cond, N.BinOp) \
                and top.cond.op == ">" and _is_var(top.cond.lhs, h) and _const_int(top.cond.rhs, {}) == 0 \
                and _halves(top.next, h)
        inner = _single(top.body) if ok else None
        tl = _thread_loop(inner) if inner is not None else None
        ok = tl is not None and _const_int(tl.hi, self.macros) == T
        g = _single(tl.body) if ok else None
        ok = ok and isinstance(g, N.If) and g.else_ is None and isinstance(g.cond, N.BinOp) and g.cond.op == "<" \
            and _is_var(g.cond.lhs, tl.var) and _is_var(g.cond.rhs, h)
        u = _single(g.then) if ok else None
        top_op = _tree_update(u, red, tl.var, h) if u is not None else None
        if top_op is None:
            raise PassError(NAME, f"{where}: the statement after it{_line(tree)} is not a halving tree "
                                  f"'for ({h or 'h'} = {T}/2; {h or 'h'} > 0; {h or 'h'} /= 2) ... if (t < h) "
                                  f"{red}[t] = op({red}[t], {red}[t + h])'", tree)
        if top_op != op:
            raise PassError(NAME, f"{where}: the tree combines with '{top_op}' but the partials with '{op}'", tree)
        acc = self._hoist_name(p, lp)
        ren = {p: N.Var(acc)} if acc != p else {}
        cnew = substitute(c, ren) if ren else c
        new = [d.with_(name=acc)] + self._flatten(lp, cnew, [], private={acc})
        return new, acc

    def _read_red0(self, s, current: dict):
        """``s`` with each ``red[0]`` of a folded array read replaced by its accumulator."""
        if not current:
            return s
        from xpiler.ir.visit import rewrite

        def fn(n):
            if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in current \
                    and _const_int(n.index, {}) == 0:
                return N.Var(current[n.base.name])
            return n
        if any(isinstance(n, N.Assign) and isinstance(n.target, N.Index) and isinstance(n.target.base, N.Var)
               and n.target.base.name in current for n in walk(s)):
            raise PassError(NAME, f"'{next(iter(current))}' is written again{_line(s)} outside a "
                                  "partial/tree pair", s)
        return rewrite(s, fn)

    # -- rewrite 3: a guard that is never taken
    def drop_guards(self, body: N.Block) -> N.Block:
        from xpiler.ir.visit import rewrite

        def fn(n):
            if not (isinstance(n, N.For) and isinstance(n.body, N.Block)):
                return n
            step = _const_int(n.step, self.macros)
            if step is None or step <= 0 or n.cmp != "<" or not _pure(n.hi):
                return n
            stmts = list(n.body.stmts)
            bound = vars_used(n.hi) | {n.var}
            for k, s in enumerate(stmts):
                if isinstance(s, N.Comment) or isinstance(s, N.Decl) and s.init is None and s.name not in bound:
                    continue   # (a declaration shadowing the bound or the index would change the guard)
                if isinstance(s, N.If) and s.else_ is None and isinstance(_single(s.then), N.Continue) \
                        and isinstance(s.cond, N.BinOp) and s.cond.op == ">=" and _is_var(s.cond.lhs, n.var) \
                        and _text(s.cond.rhs) == _text(n.hi):
                    end = k + 1   # with the guard's own trailing comment
                    if end < len(stmts) and isinstance(stmts[end], N.Comment) and stmts[end].trailing:
                        end += 1
                    return n.with_(body=n.body.with_(stmts=tuple(stmts[:k] + stmts[end:])))
                return n
            return n
        return rewrite(body, fn)


def _halves(e, h: str) -> bool:
    if isinstance(e, N.AssignExpr) and _is_var(e.target, h):
        if e.op == "/=" and _const_int(e.value, {}) == 2 or e.op == ">>=" and _const_int(e.value, {}) == 1:
            return True
        if e.op == "=" and isinstance(e.value, N.BinOp) and _is_var(e.value.lhs, h) and (
                e.value.op == "/" and _const_int(e.value.rhs, {}) == 2 or
                e.value.op == ">>" and _const_int(e.value.rhs, {}) == 1):
            return True
    return False


def _drop_decl(body: N.Block, name: str) -> N.Block:
    from xpiler.ir.visit import rewrite

    def fn(n):
        if isinstance(n, N.Block) and any(isinstance(s, N.Decl) and s.name == name for s in n.stmts):
            return n.with_(stmts=tuple(s for s in n.stmts if not (isinstance(s, N.Decl) and s.name == name)))
        return n
    return rewrite(body, fn)


def apply(program: N.Program, *, entry: str, **_params) -> N.Program:
    """The program with the entry's cyclic thread nests and block reduction trees turned into
    plain loops (PassError XP4002 when it has none, XP4001 when one is not proven legal)."""
    func = U.kernel_func(program, entry)
    if func is None or func.body is None:
        raise PassError(NAME, f"no function '{entry}'", code="XP4002")
    u = _Unthread(program, func)
    body = WC.collapse_rows(u, u.block(func.body))
    if not u.changed:
        raise PassError(NAME, f"'{entry}' has no thread loop striding over a range ('for (c = t; c < n; c += T)')",
                        code="XP4002")
    for red in sorted(u.reduced):
        decls = [d for d in walk(body) if isinstance(d, N.Decl) and d.name == red]
        if len(decls) != 1 or not isinstance(decls[0].type, N.Array) or decls[0].scope != "local":
            raise PassError(NAME, f"'{red}' is not one local array of the kernel", decls[0] if decls else func)
        body = _drop_decl(body, red)
        left = [n for n in walk(body) if isinstance(n, N.Var) and n.name == red]
        if left:
            raise PassError(NAME, f"'{red}' is used besides its partials, its trees and reads of {red}[0] after a "
                                  "tree", decls[0])
    for name, (where, stop) in sorted(u.shuffle_gone.items()):
        if name in u.shuffle_kept:
            raise PassError(NAME, f"{where}: '{name}' holds the fold after one warp-shuffle exchange and another "
                                  "value after another", func)
        left = [n for n in walk(body) if isinstance(n, N.Var) and n.name == name]
        if left:
            why = f" (the exchange stops at the statement{S._line(stop[0])}: {stop[1]})" if stop else ""
            raise PassError(NAME, f"{where}: '{name}' is written by the warp-shuffle exchange and used elsewhere, "
                                  f"where it does not hold the fold of every partial{why}", left[0])
        body = _drop_decl(body, name)
    body, renamed = S.rename_accumulators(body, u.shuffled)
    u.new_loops = [(v, {renamed.get(x, x) for x in priv}, o) for v, priv, o in u.new_loops]
    body = u.drop_guards(body)
    new = func.with_(body=body)
    # the order of every flattened loop changed: it must carry no dependence (besides its accumulator)
    for var, private, orig in u.new_loops:
        for lp in [n for n in walk(new) if isinstance(n, N.For) and n.var == var and _const_int(n.lo, {}) == 0]:
            dep = D.check_parallel(program, new, lp, private=tuple(private))
            if dep is not None:
                raise PassError(NAME, f"strided loop '{var}'{_line(orig)}: visiting its iterations in order "
                                      f"changes the program ({dep})", orig)
    return U.replace_func(program, func, new)


def check(program: N.Program, *, entry: str, **params) -> None:
    apply(program, entry=entry, **params)


def candidates(program, target: str) -> list[dict]:
    return [{}]
