"""Inlining of helper functions into a kernel, before the analyses that cannot see through calls.

The dependence tests of binding and the thread-loop construction of loop recovery reason about
one function body. A helper that takes a pointer (``exp_and_sum(row, dst, ...)``, a C++
reference turned into a pointer by the front end) or computes an index
(``input[offset4(n, c, h, w, C, H, W)]``) hides the accesses they need to see, and the kernel is
refused ("pointer passed to a call", "output dependence"). This module puts such helpers'
bodies in place of their calls. It is one inliner for every user:

* ``prepare_source(prog, entry)``: the driver (and replay) calls it on a parsed c source before
  the first pass (binding works on the c program directly);
* loop recovery calls ``inline_calls`` for the helpers that must be inlined there (a helper that
  holds a barrier, a BANG helper on file-scope on-chip buffers) and for the same
  pointer/index helpers as above.

How a call is replaced:

* a helper whose body is ``return e;`` with arguments free of side effects becomes ``e`` with its
  parameters replaced by the arguments, wherever the call is (also in loop bounds);
* otherwise the call must be in a plain statement (declaration, assignment, expression
  statement, the condition of an ``if``) and not under ``&&``, ``||`` or ``?:``: the body goes
  before that statement in a block, the parameters become locals initialised with the
  arguments (or are replaced by them, when the helper never assigns the parameter and the
  argument is a variable, a constant or ``&x``; ``*p`` with ``p = &x`` becomes ``x``), locals are
  renamed so they cannot capture the caller's names, and the final ``return e`` assigns a
  result variable that replaces the call.

Never inlined: recursive helpers, helpers with a ``return`` before their end (a valueless ``return;``
that ends a trailing block, ``{ ...; return; }``, is their end), helpers without a
body. A call that cannot be inlined stays a call (the analyses then refuse it as before), or,
for a helper that must be inlined, raises :class:`PassError` saying why.
"""
from __future__ import annotations

from typing import Callable

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError

_INT_DTYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}
_CONTROL = (N.Block, N.For, N.CFor, N.While, N.If)


def pointer_or_index_helper(f: N.Func) -> bool:
    """A helper whose calls hide memory accesses or subscripts from the analyses: it takes a
    pointer (or a reference, which the front end makes a pointer) or returns an integer."""
    if any(isinstance(p.type, (N.Pointer, N.Array)) for p in f.params):
        return True
    return isinstance(f.ret, N.Scalar) and f.ret.dtype in _INT_DTYPES


def prepare_source(prog: N.Program, entry: str) -> N.Program:
    """A parsed c source as the passes see it: pointer and index helpers inlined into ``entry``
    (binding's dependence tests need the accesses in one body). Other dialects are returned as
    they are (loop recovery inlines for them)."""
    if prog.dialect != "c":
        return prog
    try:
        fn = prog.func(entry)
    except KeyError:
        return prog
    if fn.body is None:
        return prog
    new_fn, inlined = inline_calls(prog, fn, pointer_or_index_helper)
    if not inlined:
        return prog
    return drop_unused(prog.with_(items=tuple(new_fn if it is fn else it for it in prog.items)), inlined)


def drop_unused(prog: N.Program, names: set) -> N.Program:
    """``prog`` without the helpers in ``names`` that nothing calls or names any more."""
    used = set()
    for it in prog.items:
        for n in walk(it):
            if isinstance(n, N.Call) and isinstance(n.func, str):
                used.add(n.func)
            elif isinstance(n, N.Var):
                used.add(n.name)
            elif isinstance(n, N.Launch):
                used.add(n.kernel)
    keep = tuple(it for it in prog.items
                 if not (isinstance(it, N.Func) and it.name in names and it.name not in used))
    return prog.with_(items=keep)


# ---------------------------------------------------------------------------------- analysis
def _defs(prog) -> dict:
    return {f.name: f for f in prog.funcs if f.body is not None}


def _calls(node) -> list:
    return [n for n in walk(node) if isinstance(n, N.Call) and isinstance(n.func, str)]


def _recursive(name: str, defs: dict) -> bool:
    seen, stack = set(), [name]
    while stack:
        f = defs.get(stack.pop())
        if f is None:
            continue
        for c in _calls(f.body):
            if c.func == name:
                return True
            if c.func not in seen:
                seen.add(c.func)
                stack.append(c.func)
    return False


def _final_return(body: N.Block):
    """The return that ends ``body`` (a valueless one may end a trailing block,
    ``{ ...; return; }``, as detensorize writes a void helper's last statement), or None."""
    return _without_final_return(body)[1]


def _without_final_return(body: N.Block) -> tuple:
    """``(body without its final return, that return)``; the return is None when the body does
    not end with one. Removing the return that ends the body (also from inside trailing blocks)
    leaves the statements before it running exactly as before."""
    stmts = list(body.stmts)
    if not stmts:
        return body, None
    last = stmts[-1]
    if isinstance(last, N.Return):
        return body.with_(stmts=tuple(stmts[:-1])), last
    if isinstance(last, N.Block):
        inner, ret = _without_final_return(last)
        if ret is not None and ret.value is None:    # a value could name the inner block's locals
            return body.with_(stmts=tuple(stmts[:-1] + [inner])), ret
    return body, None


def _early_return(f: N.Func) -> bool:
    last = _final_return(f.body)
    return any(isinstance(r, N.Return) and r is not last for r in walk(f.body))


def _expression_body(f: N.Func):
    """``e`` when the body is exactly ``return e;`` (comments aside)."""
    stmts = [s for s in f.body.stmts if not isinstance(s, N.Comment)]
    if len(stmts) == 1 and isinstance(stmts[0], N.Return) and stmts[0].value is not None:
        return stmts[0].value
    return None


def _side_effect_free(e) -> bool:
    for n in walk(e):
        if isinstance(n, (N.Call, N.AssignExpr, N.Comma)):
            return False
        if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
            return False
    return True


def _assigned(body, name: str) -> bool:
    for n in walk(body):
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var) and n.target.name == name:
            return True
        if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var) \
                and n.operand.name == name:
            return True
        if isinstance(n, N.For) and n.var == name:
            return True
    return False


def _writes_memory(body) -> bool:
    for n in walk(body):
        if isinstance(n, (N.Assign, N.AssignExpr)) and not isinstance(n.target, N.Var):
            return True
        if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") and not isinstance(n.operand, N.Var):
            return True
        if isinstance(n, N.Call):
            return True
    return False


def _simple(a) -> bool:
    """A variable, a constant, or the address of a variable: safe to write in place of a
    parameter the helper never assigns (reads only what the caller would have passed)."""
    if isinstance(a, (N.Var, N.Const)):
        return True
    return isinstance(a, N.UnOp) and a.op == "&" and isinstance(a.operand, N.Var)


def _fold_addr(node):
    """``*&x`` -> ``x`` and ``(&x)[0]`` -> ``x``."""
    def fn(n):
        if isinstance(n, N.UnOp) and n.op == "*" and isinstance(n.operand, N.UnOp) and n.operand.op == "&":
            return n.operand.operand
        if isinstance(n, N.Index) and isinstance(n.base, N.UnOp) and n.base.op == "&" \
                and isinstance(n.index, N.Const) and n.index.value == 0:
            return n.base.operand
        return n
    return rewrite(node, fn)


def _local_names(f: N.Func) -> set:
    out = {p.name for p in f.params}
    for n in walk(f.body):
        if isinstance(n, N.Decl):
            out.add(n.name)
        elif isinstance(n, N.For) and n.var_type is not None:
            out.add(n.var)
    return out


def _rename(node, ren: dict):
    def fn(n):
        if isinstance(n, N.Var) and n.name in ren:
            return n.with_(name=ren[n.name])
        if isinstance(n, N.Decl) and n.name in ren:
            return n.with_(name=ren[n.name])
        if isinstance(n, N.For) and n.var in ren:
            return n.with_(var=ren[n.var])
        return n
    return rewrite(node, fn)


def _unconst(t):
    if isinstance(t, (N.Scalar, N.Named, N.Vector)) and getattr(t, "const", False):
        return t.with_(const=False)
    return t


# ---------------------------------------------------------------------------------- inlining
class _Inliner:
    def __init__(self, prog, fn, select: Callable, must: Callable | None, pass_name: str = "inline"):
        self.pass_name = pass_name
        self.defs = {n: f for n, f in _defs(prog).items() if n != fn.name}
        self.select = select
        self.must = must or (lambda f: False)
        self.taken = {f.name for f in prog.funcs} | {p.name for p in fn.params} | {
            it.name for it in prog.items if isinstance(it, N.Decl)} | {m.name for m in getattr(prog, "macros", ())}
        for n in walk(fn.body):
            if isinstance(n, N.Var):
                self.taken.add(n.name)
            elif isinstance(n, N.Decl):
                self.taken.add(n.name)
            elif isinstance(n, N.For):
                self.taken.add(n.var)
        self.inlined: set = set()
        self.targets = {}
        for name, f in self.defs.items():
            if not (self.must(f) or self.select(f)):
                continue
            why = None
            if _recursive(name, self.defs):
                why = "it is recursive"
            elif _early_return(f):
                why = "it returns before its end"
            if why is None:
                self.targets[name] = f
            elif self.must(f):
                raise PassError(self.pass_name, f"helper '{name}' cannot be inlined: {why}", f)

    def fresh(self, base: str) -> str:
        k = 0
        name = base
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def fail(self, c: N.Call, why: str):
        if self.must(self.targets[c.func]):
            raise PassError(self.pass_name, f"call of '{c.func}' (it must be inlined: it holds a barrier or uses "
                                      f"file-scope on-chip memory) {why}", c)

    # -- expression helpers: substituted in place ----------------------------------------
    def subst_expressions(self, node):
        def fn(n):
            if isinstance(n, N.Call) and n.func in self.targets:
                f = self.targets[n.func]
                e = _expression_body(f)
                if e is not None and len(n.args) == len(f.params) and all(_side_effect_free(a) for a in n.args) \
                        and not _calls(e):
                    self.inlined.add(f.name)
                    mapping = {p.name: a for p, a in zip(f.params, n.args)}
                    out = rewrite(e, lambda v: mapping[v.name] if isinstance(v, N.Var) and v.name in mapping else v)
                    return _fold_addr(out)
            return n
        return rewrite(node, fn)

    # -- statement helpers: hoisted before the statement -------------------------------------
    def hoistable(self, st) -> list:
        """The target calls of statement ``st`` that may be hoisted before it (left to right),
        None when one of them may not."""
        exprs = []
        if isinstance(st, N.Decl):
            exprs = [st.init] if st.init is not None else []
        elif isinstance(st, N.Assign):
            exprs = [st.target, st.value]
        elif isinstance(st, N.ExprStmt):
            exprs = [st.expr]
        elif isinstance(st, N.If):
            exprs = [st.cond]
        elif isinstance(st, N.Return):
            exprs = [st.value] if st.value is not None else []
        out = []
        for e in exprs:
            guarded = set()
            for n in walk(e):
                if isinstance(n, N.BinOp) and n.op in ("&&", "||"):
                    guarded |= {id(x) for x in walk(n.rhs)}
                elif isinstance(n, N.Cond):
                    guarded |= {id(x) for x in walk(n.then)} | {id(x) for x in walk(n.else_)}
            for n in walk(e):
                if isinstance(n, N.Call) and n.func in self.targets:
                    if id(n) in guarded:
                        self.fail(n, "is under &&, || or ?:, where it may not run")
                        return None
                    if any(isinstance(x, N.Call) and x.func in self.targets for a in n.args for x in walk(a)):
                        self.fail(n, "has a helper call in its arguments")
                        return None
                    out.append(n)
        return out

    def body_for(self, c: N.Call, res: str | None) -> list:
        f = self.targets[c.func]
        ren = {name: self.fresh(name) for name in sorted(_local_names(f))}
        writes = _writes_memory(f.body)
        addr_of = {a.operand.name for a in c.args if isinstance(a, N.UnOp) and a.op == "&"
                   and isinstance(a.operand, N.Var)}
        stmts, mapping = [], {}
        for p, a in zip(f.params, c.args):
            reads_addr = bool({v.name for v in walk(a) if isinstance(v, N.Var)} & addr_of) and not (
                isinstance(a, N.UnOp) and a.op == "&")
            if _simple(a) and not _assigned(f.body, p.name) and not (writes and reads_addr):
                mapping[ren[p.name]] = a
            else:
                stmts.append(N.Decl(ren[p.name], p.type, a, "local", loc=p.loc))
        body = _rename(f.body, ren)
        body = rewrite(body, lambda v: mapping[v.name] if isinstance(v, N.Var) and v.name in mapping else v)
        body = _fold_addr(body)
        body, x = _without_final_return(body)
        stmts.extend(body.stmts)
        if x is not None:
            if x.value is not None and res is not None:
                stmts.append(N.Assign(N.Var(res), "=", x.value, loc=x.loc))
            elif x.value is not None and not _side_effect_free(x.value):
                stmts.append(N.ExprStmt(x.value, loc=x.loc))
        self.inlined.add(f.name)
        return stmts

    def stmt(self, st) -> list:
        st = self.subst_expressions(st) if not isinstance(st, _CONTROL) or isinstance(st, N.If) else st
        calls = self.hoistable(st)
        if not calls:
            return [st]
        out, repl = [], {}
        for c in calls:
            f = self.targets[c.func]
            void = isinstance(f.ret, N.Scalar) and f.ret.dtype == "void"
            whole = isinstance(st, N.ExprStmt) and st.expr is c
            res = None if (void or whole) else self.fresh(f"{f.name}_result")
            if res is not None:
                out.append(N.Decl(res, _unconst(f.ret), None, "local", loc=c.loc))
                repl[id(c)] = N.Var(res)
            out.append(N.Block(tuple(self.body_for(c, res)), loc=c.loc))
        if isinstance(st, N.ExprStmt) and id(st.expr) not in repl and any(st.expr is c for c in calls):
            return out
        if isinstance(st, N.If):
            new = st.with_(cond=rewrite(st.cond, lambda n: repl.get(id(n), n) if isinstance(n, N.Call) else n))
        else:
            new = rewrite(st, lambda n: repl.get(id(n), n) if isinstance(n, N.Call) else n)
        return out + [new]

    def stmts(self, stmts) -> list:
        res = []
        for st in stmts:
            if isinstance(st, N.Block):
                res.append(st.with_(stmts=tuple(self.stmts(st.stmts))))
            elif isinstance(st, N.For):
                st = st.with_(lo=self.subst_expressions(st.lo), hi=self.subst_expressions(st.hi),
                              step=self.subst_expressions(st.step))
                self.header_calls(st, (st.lo, st.hi, st.step))
                res.append(st.with_(body=N.Block(tuple(self.stmts(_as_block(st.body).stmts)), loc=st.body.loc)))
            elif isinstance(st, (N.CFor, N.While)):
                st = self.subst_expressions(st.with_(body=N.Block(()))).with_(body=st.body)
                self.header_calls(st, tuple(x for x in (getattr(st, "init", None), st.cond,
                                                        getattr(st, "next", None)) if x is not None))
                res.append(st.with_(body=N.Block(tuple(self.stmts(_as_block(st.body).stmts)))))
            elif isinstance(st, N.If):
                head = self.stmt(st.with_(then=N.Block(()), else_=None))
                new_if = head[-1].with_(then=N.Block(tuple(self.stmts(_as_block(st.then).stmts))),
                                        else_=None if st.else_ is None else N.Block(
                                            tuple(self.stmts(_as_block(st.else_).stmts))))
                res.extend(head[:-1] + [new_if])
            else:
                res.extend(self.stmt(st))
        return res

    def header_calls(self, st, parts):
        for c in _calls(parts):
            if c.func in self.targets:
                self.fail(c, f"is in the header of a {type(st).__name__}; only calls in plain statements "
                             "are inlined")


def _as_block(s) -> N.Block:
    return s if isinstance(s, N.Block) else N.Block((s,))


def inline_calls(prog: N.Program, fn: N.Func, select: Callable, must: Callable | None = None,
                 rounds: int = 8, pass_name: str = "inline") -> tuple:
    """``fn`` with the calls of helpers chosen by ``select`` (may stay calls where they cannot
    be inlined) and ``must`` (PassError where they cannot) inlined, nested helpers too, and the
    set of helper names inlined."""
    inlined: set = set()
    for _ in range(rounds):
        inl = _Inliner(prog, fn, select, must, pass_name)
        if not inl.targets or not any(c.func in inl.targets for c in _calls(fn.body)):
            return fn, inlined
        new = fn.with_(body=N.Block(tuple(inl.stmts(fn.body.stmts)), loc=fn.body.loc))
        inlined |= inl.inlined
        if not inl.inlined:
            return new, inlined
        fn = new
    if must is not None and any(c.func in _defs(prog) and must(_defs(prog)[c.func]) for c in _calls(fn.body)):
        raise PassError(pass_name, "helpers nest too deeply to inline", fn)
    return fn, inlined
