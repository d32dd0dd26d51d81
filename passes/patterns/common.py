"""IR helpers used by the cache / pipeline / tensorize passes (pure functions, no mutation)."""
from __future__ import annotations

from typing import Optional

from xpiler.dtypes import ELEM_BYTES  # noqa: F401  (read as U.ELEM_BYTES by the passes)
from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

NRAM_BYTES = 512 * 1024
WRAM_BYTES = 1024 * 1024
SHARED_BYTES = 48 * 1024
VECTOR_RULE_BYTES = 128       # BANG: n * sizeof(T) % 128 == 0 for every vector op


def kernel_func(program: N.Program, entry: str) -> N.Func:
    return program.func(entry)


def replace_func(program: N.Program, old: N.Func, new: N.Func) -> N.Program:
    return program.with_(items=tuple(new if it is old else it for it in program.items))


def replace_stmt(block: N.Block, old, new_stmts) -> N.Block:
    """``block`` with the statement ``old`` (by identity, searched recursively through nested
    blocks and loop bodies) replaced by ``new_stmts`` (a list)."""
    found = []

    def fn(n):
        return n

    def rec(b):
        out, changed = [], False
        for s in b.stmts:
            if s is old:
                out.extend(new_stmts)
                changed = True
                found.append(1)
            elif isinstance(s, N.Block):
                nb = rec(s)
                out.append(nb)
                changed |= nb is not s
            elif isinstance(s, (N.For, N.While)) and isinstance(s.body, N.Block):
                nb = rec(s.body)
                out.append(s.with_(body=nb) if nb is not s.body else s)
                changed |= nb is not s.body
            elif isinstance(s, N.If):
                t = rec(s.then) if isinstance(s.then, N.Block) else s.then
                e = rec(s.else_) if isinstance(s.else_, N.Block) else s.else_
                ns = s.with_(then=t, else_=e) if (t is not s.then or e is not s.else_) else s
                out.append(ns)
                changed |= ns is not s
            else:
                out.append(s)
        return b.with_(stmts=tuple(out)) if changed else b

    res = rec(block)
    if not found:
        raise KeyError("statement not found")
    return res


def scalar_dtype(t) -> Optional[str]:
    while isinstance(t, N.Named) and t.target is not None:
        t = t.target
    return t.dtype if isinstance(t, N.Scalar) else None


def pointer_params(func: N.Func) -> dict:
    """{name: element dtype} of the pointer parameters of ``func``."""
    out = {}
    for p in func.params:
        if isinstance(p.type, N.Pointer):
            dt = scalar_dtype(p.type.elem)
            if dt:
                out[p.name] = dt
    return out


def strip_casts(e):
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in (
            "int32", "int64", "uint32", "uint64"):
        e = e.expr
    return e


def is_var(e, name: str) -> bool:
    e = strip_casts(e)
    return isinstance(e, N.Var) and e.name == name


def assigned_names(node) -> set:
    out = set()
    for n in walk(node):
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            out.add(n.target.name)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
            out.add(n.operand.name)
        elif isinstance(n, N.For):
            out.add(n.var)
    return out


def inline_lets(stmts) -> list:
    """Substitute block-local scalar/pointer declarations with an initializer that are never
    assigned again into the statements after them (``float v = x[i]; y[i] = f(v)`` becomes
    ``y[i] = f(x[i])``; ``float* c = C + i * N; c[j] = ...`` becomes ``(C + i * N)[j]``)."""
    stmts = list(stmts)
    changed = True
    while changed:
        changed = False
        assigned = assigned_names(N.Block(tuple(stmts)))
        for k, s in enumerate(stmts):
            if (isinstance(s, N.Decl) and s.init is not None and s.scope == "local"
                    and isinstance(s.type, (N.Scalar, N.Pointer)) and s.name not in assigned
                    and not isinstance(s.init, N.InitList)):
                rest = [substitute(x, {s.name: s.init}) for x in stmts[k + 1:]]
                stmts = stmts[:k] + rest
                changed = True
                break
    out = []
    for s in stmts:
        s = rewrite(s, _inline_nested)
        out.append(normalize_ptr_index(s))
    return out


def _inline_nested(n):
    if isinstance(n, N.Block) and any(isinstance(s, N.Decl) and s.init is not None for s in n.stmts):
        new = inline_lets(n.stmts)
        if len(new) != len(n.stmts) or any(a is not b for a, b in zip(new, n.stmts)):
            return n.with_(stmts=tuple(new))
    return n


def normalize_ptr_index(node):
    """``(P + off)[j]`` -> ``P[off + j]`` so every access is base[index]."""
    def fn(n):
        if isinstance(n, N.Index):
            b = n.base
            while isinstance(b, N.Cast) and isinstance(b.type, N.Pointer):
                b = b.expr
            if isinstance(b, N.BinOp) and b.op == "+":
                return N.Index(b.lhs, N.BinOp("+", b.rhs, n.index), loc=n.loc)
        if isinstance(n, N.UnOp) and n.op == "*" and isinstance(n.operand, N.BinOp) and n.operand.op == "+":
            return N.Index(n.operand.lhs, n.operand.rhs, loc=n.loc)
        return n
    prev = None
    while prev is not node:
        prev, node = node, rewrite(node, fn)
    return node


def upper_bound(e, lets: dict) -> Optional[int]:
    """A constant upper bound of an int expression, from constants, ``min`` calls and
    let-bound locals (``int len = min(CH, n - c0)`` -> CH); None when unknown."""
    e = strip_casts(e)
    if isinstance(e, N.Const) and isinstance(e.value, int):
        return e.value
    if isinstance(e, N.Var) and e.name in lets:
        return upper_bound(lets[e.name], lets)
    if isinstance(e, N.Call) and e.func in ("min", "std::min") and len(e.args) == 2:
        bs = [upper_bound(a, lets) for a in e.args]
        bs = [b for b in bs if b is not None]
        return min(bs) if bs else None
    if isinstance(e, N.Intrinsic) and e.name == "min" and len(e.args) == 2:
        bs = [upper_bound(a, lets) for a in e.args]
        bs = [b for b in bs if b is not None]
        return min(bs) if bs else None
    if isinstance(e, N.Cond):
        a, b = upper_bound(e.then, lets), upper_bound(e.else_, lets)
        return max(a, b) if a is not None and b is not None else None
    return None


def decl_lets(func: N.Func) -> dict:
    """{name: init} of every local declared once with an initializer and never reassigned."""
    assigned, decls, count = assigned_names(func), {}, {}
    for n in walk(func):
        if isinstance(n, N.Decl):
            count[n.name] = count.get(n.name, 0) + 1
            if n.init is not None:
                decls[n.name] = n.init
    return {k: v for k, v in decls.items() if k not in assigned and count[k] == 1}


def buffer_decls(func: N.Func, program: N.Program | None = None) -> dict:
    """{name: Decl} of array declarations in the function (and at file scope)."""
    out = {}
    if program is not None:
        for it in program.items:
            if isinstance(it, N.Decl) and isinstance(it.type, N.Array):
                out[it.name] = it
    for n in walk(func):
        if isinstance(n, N.Decl) and isinstance(n.type, N.Array):
            out[n.name] = n
    return out


def const_size(decl: N.Decl, macros: dict | None = None) -> Optional[int]:
    if not isinstance(decl.type, N.Array):
        return None
    n = 1
    for d in decl.type.dims:
        d = strip_casts(d) if d is not None else None
        if isinstance(d, N.Const) and isinstance(d.value, int):
            n *= d.value
        elif isinstance(d, N.Var) and macros and d.name in macros and macros[d.name].expr is not None \
                and isinstance(macros[d.name].expr, N.Const):
            n *= macros[d.name].expr.value
        else:
            return None
    return n


def static_bytes(program: N.Program, func: N.Func, scope: str) -> int:
    """Bytes of fixed-size arrays of ``scope`` already declared (file scope + the function)."""
    total = 0
    for d in buffer_decls(func, program).values():
        if d.scope == scope:
            n = const_size(d, program.macro_table())
            dt = scalar_dtype(d.type.elem)
            if n is not None and dt in ELEM_BYTES:
                total += n * ELEM_BYTES[dt]
    return total


def fresh(func: N.Func, base: str) -> str:
    used = {n.name for n in walk(func) if isinstance(n, (N.Var, N.Decl, N.Param))} | \
           {n.var for n in walk(func) if isinstance(n, N.For)}
    name, k = base, 1
    while name in used:
        k += 1
        name = f"{base}{k}"
    return name


def C(v: int) -> N.Const:
    return N.Const(v, "int32", str(v))


def F(v: float) -> N.Const:
    return N.Const(float(v), "float32", "")


def V(name: str) -> N.Var:
    return N.Var(name)


def add(a, b):
    if isinstance(b, N.Const) and b.value == 0:
        return a
    if isinstance(a, N.Const) and a.value == 0:
        return b
    return N.BinOp("+", a, b)


def mul(a, b):
    if isinstance(b, N.Const) and b.value == 1:
        return a
    if isinstance(a, N.Const) and a.value == 1:
        return b
    return N.BinOp("*", a, b)


def scalar_type(dtype: str) -> N.Scalar:
    return N.Scalar(dtype)


def sizeof(dtype: str):
    return N.SizeOf(N.Scalar(dtype))


def round_up(e, unit: int):
    """(e + unit - 1) / unit * unit"""
    if unit == 1:
        return e
    return N.BinOp("*", N.BinOp("/", N.BinOp("+", e, C(unit - 1)), C(unit)), C(unit))


def int_decl(name: str, init) -> N.Decl:
    return N.Decl(name, N.Scalar("int32", "int"), init)


def call(name: str, *args) -> N.ExprStmt:
    return N.ExprStmt(N.Intrinsic(name, tuple(args)))
