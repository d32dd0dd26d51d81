"""Phases: a sequential kernel whose top-level statements cannot share one grid-stride binding
(scalar reductions carried across a loop, sibling loop nests where a later nest reads what
another thread of an earlier one wrote) becomes a kernel of ordered phases.

Binding tries this plan last, when the one-loop plan, the sibling-nests plan and forwarding all
refused (docs/passes/binding.md, "Phases"):

* cuda / hip: the kernel runs as **one block** of ``B`` threads.  Each top-level statement is a
  phase, in source order:

  - a canonical loop that carries no dependence, apart from recognised scalar reductions, is
    spread over the block (``For.binding = "threadIdx.x"``, block-stride).  Each reduction
    ``acc`` gets a per-thread partial (identity ``0`` / ``1`` for ``+`` ``*`` ``^``, the current
    ``acc`` for the idempotent ``max`` ``min`` ``&`` ``|``), the partials meet in a
    shared-memory tree (``__shared__ T xp_red[B]``, ``log2 B`` halving steps with
    ``__syncthreads``; with ``reduce="shuffle"``, warp shuffles and one barrier,
    ``passes/warp_reduce.py``), and every thread reads the result, so ``acc`` stays uniform;
  - a statement that writes no memory (scalar declarations and assignments, early returns with a
    uniform condition, a loop that only updates scalars) runs in every thread, each computing
    the same values;
  - any other statement (a store, a loop that carries a dependence and writes memory) runs in
    thread 0 only, and may not assign a scalar the other threads use;
  - ``if (C) { S; return; }`` with a pure ``C`` that reads no memory is a uniform early exit:
    every thread returns, thread 0 runs the stores ``S`` first (``_uniform_exit``);
  - ``__syncthreads()`` follows every phase that writes memory, so the next phase sees it, and
    precedes a phase that stores to a buffer that a statement run by every thread read since
    the last barrier (``float m = y[0];`` then a loop writing ``y``), so no thread stores
    before another has read.

  Launch ``{"grid": [1, 1, 1], "block": [B, 1, 1]}``.

* bang: the kernel body runs in task 0 (``for (once = taskId; once < 1; once += taskDim)``),
  sequentially; launch ``{"dim": [1, 1, 1], "func_type": "block"}``.  Later passes may
  vectorize its loops.

Reductions (``reductions``): the loop's only uses of a scalar ``acc`` declared outside it are
updates ``acc OP= E``, ``acc = acc OP E`` / ``E OP acc`` (OP one of ``+ - * | & ^``; ``-`` and
``-=`` accumulate ``-E`` and combine with ``+``), ``acc = fmaxf/fminf/max/min(acc, E)`` (either
order), ``acc = acc > E ? acc : E`` and its variants, ``if (E > acc) acc = E;`` and variants,
``acc++`` / ``acc--``, with ``E`` not reading ``acc`` and all updates of one ``acc`` of one
operator.  ``+`` and ``*`` regroup a float sum or product (docs/decisions.md, "Floating-point
regrouping"); max / min and integer operators are exact.
"""
from __future__ import annotations

from dataclasses import dataclass

from xpiler.ir import nodes as N
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import substitute, walk

from .base import PassError
from . import dependence as D
from . import purity

NAME = "binding"
MAX_FUNCS = {"fmaxf", "fmax", "max", "std::max", "fmaxl"}
MIN_FUNCS = {"fminf", "fmin", "min", "std::min", "fminl"}
IDEMPOTENT = {"max", "min", "|", "&"}
IDENTITY = {"+": 0, "*": 1, "^": 0}


@dataclass
class Red:
    acc: str
    op: str              # + * | & ^ max min
    stmts: list


class NotPhases(Exception):
    def __init__(self, why, node=None):
        super().__init__(why)
        self.why, self.node = why, node


# ============================================================================ reductions
def _var(e, name=None):
    return isinstance(e, N.Var) and (name is None or e.name == name)


def _reads(e, name) -> bool:
    return any(isinstance(n, N.Var) and n.name == name for n in walk(e))


def _cmp_kind(cond, acc, val):
    """max / min when ``cond`` compares acc and val such that the update keeps ``val`` when it
    holds, else None (``val > acc`` keeps the larger: max)."""
    if not (isinstance(cond, N.BinOp) and cond.op in ("<", "<=", ">", ">=")):
        return None
    if cond.lhs == val and _var(cond.rhs, acc):
        return "max" if cond.op in (">", ">=") else "min"
    if _var(cond.lhs, acc) and cond.rhs == val:
        return "max" if cond.op in ("<", "<=") else "min"
    return None


def _call_name(e):
    if isinstance(e, N.Intrinsic):
        return e.name
    if isinstance(e, N.Call) and isinstance(e.func, str):
        return e.func
    return None


def reduction_of(s, acc):
    """The operator of statement ``s`` when it is a reduction update of ``acc``, else None."""
    if isinstance(s, N.UnOp) and s.op in ("++", "--", "p++", "p--") and _var(s.operand, acc):
        return "+"
    if isinstance(s, N.ExprStmt):
        return reduction_of(s.expr, acc)
    if isinstance(s, (N.Assign, N.AssignExpr)) and _var(s.target, acc):
        v = s.value
        if s.op in ("+=", "-=", "*=", "|=", "&=", "^="):
            if _reads(v, acc):
                return None
            return "+" if s.op in ("+=", "-=") else s.op[0]
        if s.op != "=":
            return None
        if isinstance(v, N.BinOp) and v.op in ("+", "-", "*", "|", "&", "^"):
            if _var(v.lhs, acc) and not _reads(v.rhs, acc):
                return "+" if v.op == "-" else v.op
            if v.op != "-" and _var(v.rhs, acc) and not _reads(v.lhs, acc):
                return v.op
            return None
        name = _call_name(v)
        if name in MAX_FUNCS | MIN_FUNCS and len(v.args) == 2:
            a, b = v.args
            if _var(a, acc) and not _reads(b, acc) or _var(b, acc) and not _reads(a, acc):
                return "max" if name in MAX_FUNCS else "min"
            return None
        if isinstance(v, N.Cond) and {_var(v.then, acc), _var(v.else_, acc)} == {True, False}:
            val = v.else_ if _var(v.then, acc) else v.then
            if _reads(val, acc):
                return None
            k = _cmp_kind(v.cond, acc, val)
            if k is None:
                return None
            # Cond(c, val, acc): keeps val when c holds; Cond(c, acc, val): the opposite
            return k if _var(v.else_, acc) else {"max": "min", "min": "max"}[k]
        return None
    if isinstance(s, N.If) and s.else_ is None:
        body = s.then.stmts if isinstance(s.then, N.Block) else (s.then,)
        body = D.strip_comments(body)
        if len(body) == 1 and isinstance(body[0], N.Assign) and body[0].op == "=" and _var(body[0].target, acc):
            val = body[0].value
            if not _reads(val, acc):
                return _cmp_kind(s.cond, acc, val)
    return None


def reductions(loop: N.For, names) -> dict:
    """{acc: Red} for the scalars ``names`` (declared outside ``loop``, assigned inside); raises
    NotPhases when one of them is not a reduction."""
    out = {}
    for acc in names:
        upd, ops = [], set()

        def visit(s):
            if isinstance(s, (N.If,)) and reduction_of(s, acc):
                upd.append(s)
                ops.add(reduction_of(s, acc))
                return
            if isinstance(s, (N.Assign, N.ExprStmt)) and reduction_of(s, acc):
                upd.append(s)
                ops.add(reduction_of(s, acc))
                return
            for c in s.children():
                if isinstance(c, N.Stmt):
                    visit(c)
        visit(loop.body)
        if len(ops) != 1:
            raise NotPhases(f"'{acc}' is updated with {'several operators' if ops else 'no reduction'}", loop)
        # no other read or write of acc in the loop
        inside = sum(1 for n in walk(loop.body) if isinstance(n, N.Var) and n.name == acc)
        in_upd = sum(1 for u in upd for n in walk(u) if isinstance(n, N.Var) and n.name == acc)
        if inside != in_upd:
            raise NotPhases(f"'{acc}' is read in loop '{loop.var}' outside its reduction updates", loop)
        out[acc] = Red(acc, ops.pop(), upd)
    return out


# ============================================================================ planning
def _pure(e, macros=frozenset()) -> bool:
    for n in walk(e):
        if isinstance(n, N.Call) and not (isinstance(n.func, str) and (n.func in D.PURE_CALLS or n.func in macros)):
            return False
        if isinstance(n, N.AssignExpr) or isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
            if not (isinstance(n, N.UnOp) and _var(n.operand)) and \
                    not (isinstance(n, N.AssignExpr) and _var(n.target)):
                return False
        if isinstance(n, N.Intrinsic):
            d = REGISTRY.get(n.name)
            if d is None or d.category != "math":
                return False
    return True


def writes_memory(s, macros=frozenset()) -> bool:
    """``s`` stores to memory or calls something that may (``macros``: pure function-like
    macros, ``passes/purity.py``)."""
    for n in walk(s):
        if isinstance(n, (N.Assign, N.AssignExpr)) and not _var(n.target):
            return True
        if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") and not _var(n.operand):
            return True
        if isinstance(n, N.Call) and not (isinstance(n.func, str) and (n.func in D.PURE_CALLS or n.func in macros)):
            return True
        if isinstance(n, N.Intrinsic):
            d = REGISTRY.get(n.name)
            if d is None or d.category != "math":
                return True
        if isinstance(n, N.Barrier):
            return True
    return False


def _has_exit(s) -> bool:
    """A return anywhere, or a break/continue that leaves ``s`` itself."""
    if any(isinstance(n, N.Return) for n in walk(s)):
        return True

    def go(n, depth):
        if isinstance(n, (N.Break, N.Continue)) and depth == 0:
            return True
        for c in n.children():
            if isinstance(c, N.Stmt):
                inner = isinstance(c, (N.For, N.CFor, N.While))
                if go(c, depth + (1 if inner else 0)):
                    return True
        return False
    body = s.body if isinstance(s, N.For) else s
    return go(body, 0)


def plan(program, func: N.Func, target: str, block: int) -> dict:
    """The phases plan of ``func`` (see the module doc); raises NotPhases."""
    top = {s.name for s in func.body.stmts if isinstance(s, N.Decl)}
    macros = purity.pure_macros(program)
    units = []
    for s in func.body.stmts:
        if isinstance(s, (N.Comment, N.Pragma)):
            units.append((s, "keep", None))
            continue
        if isinstance(s, N.Decl):
            if isinstance(s.type, N.Array) or not isinstance(s.type, (N.Scalar, N.Pointer, N.Named)):
                raise NotPhases(f"local array '{s.name}' at the top level", s)
            if s.init is not None and not _pure(s.init, macros):
                raise NotPhases(f"declaration of '{s.name}' has side effects", s)
            units.append((s, "all", None))
            continue
        if isinstance(s, N.For):
            reds = None
            if not _has_exit(s):
                deps = D.carried(program, func, s)
                if not any(d.kind != "scalar" for d in deps):
                    try:
                        reds = reductions(s, [d.buffer for d in deps])
                    except NotPhases:
                        reds = None
            if reds is not None:
                units.append((s, "par", reds))
                continue
        if not writes_memory(s, macros) and _pure_control(s, macros):
            units.append((s, "all", None))
            continue
        if _uniform_exit(s):
            units.append((s, "exit", None))
            continue
        if _has_exit(s):
            raise NotPhases("a statement that runs in one thread/task only returns or breaks out", s)
        inside = {d.name for d in walk(s) if isinstance(d, N.Decl)}
        outer = (D.assigned_names(s) - inside) & (top | {p.name for p in func.params})
        if isinstance(s, N.For):
            outer.discard(s.var)
        if outer and target != "bang":
            raise NotPhases(f"statement run by one thread assigns '{sorted(outer)[0]}', which the other "
                            f"threads also use", s)
        units.append((s, "once", None))
    if not any(h == "par" for _, h, _ in units) and target != "bang":
        raise NotPhases("no loop to spread over the block", func)
    return {"units": units, "block": block}


def _uniform_exit(s) -> bool:
    """``if (C) { S; return; }``: C is pure and reads no memory (only parameters and the
    top-level scalars, which every thread holds alike), so the whole block leaves together; S
    (stores, such as writing the result of an empty input) has no exit or barrier of its own and
    runs in thread 0 before the return."""
    if not (isinstance(s, N.If) and s.else_ is None and _pure(s.cond)):
        return False
    if any(isinstance(n, (N.Index, N.Member)) or isinstance(n, N.UnOp) and n.op == "*" for n in walk(s.cond)):
        return False
    body = D.strip_comments(s.then.stmts if isinstance(s.then, N.Block) else (s.then,))
    if not body or not isinstance(body[-1], N.Return) or body[-1].value is not None:
        return False
    rest = N.Block(tuple(body[:-1]))
    return not _has_exit(rest) and not any(isinstance(n, N.Barrier) for n in walk(rest)) and \
        _pure_control(rest)


def _pure_control(s, macros=frozenset()) -> bool:
    """Conditions and loop bounds of ``s`` have no side effects (the statement may then run in
    every thread)."""
    for n in walk(s):
        if isinstance(n, N.If) and not _pure(n.cond, macros):
            return False
        if isinstance(n, N.While) and not _pure(n.cond, macros):
            return False
    return True


# ============================================================================ rewriting
def build(program, func: N.Func, target: str, ph: dict, fresh):
    """The new body of ``func`` and the launch table."""
    if target == "bang":
        body = N.Block((N.For(var=fresh("once"), lo=N.Const(0), hi=N.Const(1), step=N.Const(1), body=func.body,
                              binding="taskId", var_type=N.Scalar("int32", "int")),))
        return body, {"dim": [1, 1, 1], "func_type": "block"}
    B = ph["block"]
    tid = N.Builtin("threadIdx.x")
    types = {s.name: s.type for s in walk(func.body) if isinstance(s, N.Decl)}
    types.update({p.name: p.type for p in func.params})
    names, ptrs = _buffer_names(func), D.pointer_names(func)
    out = []
    pending = set()          # buffers read by statements every thread ran since the last barrier

    def order_reads(s):
        """A barrier before ``s`` when it may write what an every-thread statement read since the
        last barrier (``float m = y[0];`` then a phase storing ``y[0]``: a fast thread would
        store before a slow one has read)."""
        if pending and _clash(pending, _written_buffers(s, names)):
            out.append(N.Barrier("block"))
            pending.clear()
    for s, how, reds in ph["units"]:
        if how == "keep":
            out.append(s)
            continue
        if how == "all":
            out.append(s)
            pending.update(_read_buffers(s, names, ptrs))
            continue
        order_reads(s)
        if how == "once":
            out.append(N.If(N.BinOp("==", tid, N.Const(0)), s if isinstance(s, N.Block) else N.Block((s,)),
                            loc=s.loc))
            out.append(N.Barrier("block"))
            pending.clear()
            continue
        if how == "exit":               # uniform early return: thread 0 stores, every thread returns
            body = D.strip_comments(s.then.stmts if isinstance(s.then, N.Block) else (s.then,))
            out.append(s.with_(then=N.Block((N.If(N.BinOp("==", tid, N.Const(0)), N.Block(tuple(body[:-1]))),
                                             body[-1]))))
            continue
        # a block-stride loop with its reductions
        pre, post, mapping = [], [], {}
        for acc, r in reds.items():
            t = types.get(acc)
            if not isinstance(t, N.Scalar):
                raise NotPhases(f"reduction into '{acc}' of a non-scalar type", s)
            t = N.Scalar(t.dtype, t.spelling)
            p, red = fresh(f"{acc}_part"), fresh(f"xp_red_{acc}")
            mapping[acc] = N.Var(p)
            init = N.Var(acc) if r.op in IDEMPOTENT else N.Const(IDENTITY[r.op], "int32", str(IDENTITY[r.op]))
            pre.append(N.Decl(p, t, init))
            post += block_reduce(N.Var(acc), N.Var(p), red, t, r.op, B, tid, fresh, ph.get("reduce", "tree"),
                                 target)
        loop = s.with_(body=substitute(s.body, mapping), binding="threadIdx.x")
        out.append(N.Block(tuple(pre) + (loop,) + tuple(post), loc=s.loc))
        if not post and writes_memory(s):
            out.append(N.Barrier("block"))     # (a reduction's first barrier already orders the stores)
        if post or writes_memory(s):
            pending.clear()                    # (the tree's barriers order the loop's reads too)
        else:
            pending.update(_read_buffers(s, names, ptrs))
    return func.body.with_(stmts=tuple(out)), {"grid": [1, 1, 1], "block": [B, 1, 1]}


def _buffer_names(func: N.Func) -> dict:
    """name -> the buffer its element accesses reach: pointer/array parameters themselves, local
    pointers initialised once from one (``float* row = y + k``, ``dependence.alias_table``);
    None for other local names (a pointer reassigned later: unknown buffer).  Names declared
    nowhere in ``func`` (file-scope arrays) stand for themselves."""
    table = D.alias_table(func)
    out = {p.name: p.name for p in func.params}
    for d in walk(func.body):
        if isinstance(d, N.Decl):
            out[d.name] = None
    for _ in range(8):
        for k, init in table.items():
            b, _ = D._split_ptr(init)
            out[k] = out.get(b, b) if b is not None else None
    return out


def _root(e, names):
    """The buffer an element access ``e`` (Index, ``*p``, ``p->f``) reaches, or "*" (unknown)."""
    while isinstance(e, N.Index) or isinstance(e, N.Member) and not e.arrow:
        e = e.base
    if isinstance(e, N.UnOp) and e.op == "*" or isinstance(e, N.Member):
        e = e.operand if isinstance(e, N.UnOp) else e.base
    b, _ = D._split_ptr(e)
    if b is None:
        return "*"
    r = names.get(b, b)
    return "*" if r is None else r


def _read_buffers(s, names, ptrs=frozenset()) -> set:
    """Buffers whose elements ``s`` may read ("*": unknown).  A pure macro handed a pointer of
    ``ptrs`` or a file-scope name (``AT(y, 0)``) may read through it."""
    out = set()
    for n in walk(s):
        if isinstance(n, N.Index) or isinstance(n, N.UnOp) and n.op == "*" or isinstance(n, N.Member) and n.arrow:
            out.add(_root(n, names))
        elif isinstance(n, N.Call) and not (isinstance(n.func, str) and n.func in D.PURE_CALLS):
            for a in n.args:
                for v in walk(a):
                    if isinstance(v, N.Var) and (v.name in ptrs or v.name not in names):
                        out.add(names.get(v.name, v.name) or "*")
    return out


def _written_buffers(s, names) -> set:
    """Buffers ``s`` may store to ("*": unknown, e.g. a call with side effects)."""
    if not writes_memory(s):
        return set()
    out = set()
    for n in walk(s):
        if isinstance(n, (N.Assign, N.AssignExpr)) and not _var(n.target):
            out.add(_root(n.target, names))
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") and not _var(n.operand):
            out.add(_root(n.operand, names))
        elif isinstance(n, N.Call) and not (isinstance(n.func, str) and n.func in D.PURE_CALLS):
            out.add("*")
        elif isinstance(n, N.Intrinsic) and (REGISTRY.get(n.name) is None or REGISTRY[n.name].category != "math"):
            out.add("*")
    return out


def _clash(read: set, written: set) -> bool:
    return bool(written) and ("*" in read or "*" in written or bool(read & written))


def _combine(op, a, b):
    if op == "max":
        return N.Cond(N.BinOp(">", b, a), b, a)
    if op == "min":
        return N.Cond(N.BinOp("<", b, a), b, a)
    return N.BinOp(op, a, b)


def _tree(acc, part, red, t, op, B, tid, fresh) -> list:
    """Shared-memory tree over the block's partials; every thread ends with the result in acc."""
    arr = N.Var(red)
    k, s = fresh("xp_k"), fresh("xp_s")
    steps = B.bit_length() - 1
    at = N.Index(arr, tid)
    other = N.Index(arr, N.BinOp("+", tid, N.Var(s)))
    body = N.Block((
        N.Decl(s, N.Scalar("int32", "int"), N.BinOp(">>", N.Const(B // 2), N.Var(k))),
        N.If(N.BinOp("<", tid, N.Var(s)), N.Block((N.Assign(at, "=", _combine(op, at, other)),))),
        N.Barrier("block"),
    ))
    first = N.Index(arr, N.Const(0))
    final = first if op in IDEMPOTENT else _combine(op, acc, first)
    return [
        N.Decl(red, N.Array(t, (N.Const(B),)), scope="shared"),
        N.Assign(at, "=", part),
        N.Barrier("block"),
        N.For(var=k, lo=N.Const(0), hi=N.Const(steps), step=N.Const(1), body=body, var_type=N.Scalar("int32", "int")),
        N.Assign(acc, "=", final),
    ]


def block_reduce(acc, part, red, t, op, B, tid, fresh, reduce="tree", target="cuda") -> list:
    """The block's partials ``part`` of ``op`` folded into ``acc`` in every thread:
    ``[__shared__ declaration, statements...]``; ``reduce`` "tree" (:func:`_tree`) or "shuffle"
    (warp shuffles, ``passes/warp_reduce.py``)."""
    if reduce == "shuffle":
        from .warp_reduce import shuffle
        return shuffle(acc, part, red, t, op, B, tid, fresh, target)
    return _tree(acc, part, red, t, op, B, tid, fresh)


def try_plan(program, func, target, block, fresh, reduce="tree"):
    """(body, launch) or raise PassError (XP4001) saying why the phases form does not apply."""
    try:
        # bang: the whole body in one task is the sequential program itself
        ph = plan(program, func, target, block) if target != "bang" else None
        if ph is not None:
            ph["reduce"] = reduce
        return build(program, func, target, ph, fresh)
    except NotPhases as e:
        raise PassError(NAME, f"phases: {e.why}", e.node if getattr(e.node, "loc", None) else func) from None
