"""Shared machinery of the detensorize lowerings: IR builders, fresh names, a small type
environment, and the statement-level driver that lets a family lower an intrinsic either as a
whole statement or as a value hoisted out of its statement.

A family module (bang, x86, wmma, mfma, warp) exposes ``Lowering`` objects that the pass calls
with a :class:`Ctx`; they return plain statements (loops, assignments, barriers) built here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

INT = N.Scalar("int32", "int")
FLOAT = N.Scalar("float32", "float")


# ------------------------------------------------------------------------------ builders
def call_name(e):
    """The name an intrinsic or a plain function call calls, else None."""
    if isinstance(e, N.Intrinsic):
        return e.name
    if isinstance(e, N.Call) and isinstance(e.func, str):
        return e.func
    return None


def c(v) -> N.Const:
    if isinstance(v, bool):
        return N.Const(int(v), "int32", str(int(v)))
    if isinstance(v, int):
        return N.Const(v, "int32", str(v))
    if isinstance(v, float):
        return N.Const(v, "float32", repr(v) + "f" if "e" not in repr(v) else repr(v) + "f")
    raise TypeError(v)


def cf(v: float) -> N.Const:
    txt = repr(float(v))
    if "e" not in txt and "." not in txt:
        txt += ".0"
    return N.Const(float(v), "float32", txt + "f")


def v(name: str) -> N.Var:
    return N.Var(name)


def as_expr(x):
    if isinstance(x, N.Node):
        return x
    if isinstance(x, str):
        return N.Var(x)
    return c(x)


def b(op, lhs, rhs) -> N.Expr:
    lhs, rhs = as_expr(lhs), as_expr(rhs)
    # tiny constant folding keeps the printed loops readable
    if isinstance(lhs, N.Const) and isinstance(rhs, N.Const) and isinstance(lhs.value, int) \
            and isinstance(rhs.value, int) and not isinstance(lhs.value, bool):
        a, bb = lhs.value, rhs.value
        if op == "+":
            return c(a + bb)
        if op == "-":
            return c(a - bb)
        if op == "*":
            return c(a * bb)
    if op == "+" and isinstance(rhs, N.Const) and rhs.value == 0 and rhs.dtype == "int32":
        return lhs
    if op == "+" and isinstance(lhs, N.Const) and lhs.value == 0 and lhs.dtype == "int32" and not is_ptr_like(rhs):
        return rhs
    if op == "*" and isinstance(rhs, N.Const) and rhs.value == 1 and rhs.dtype == "int32":
        return lhs
    if op == "*" and isinstance(lhs, N.Const) and lhs.value == 1 and lhs.dtype == "int32":
        return rhs
    return N.BinOp(op, lhs, rhs)


def is_ptr_like(e) -> bool:
    return False


def add(*xs):
    out = as_expr(xs[0])
    for x in xs[1:]:
        out = b("+", out, x)
    return out


def mul(*xs):
    out = as_expr(xs[0])
    for x in xs[1:]:
        out = b("*", out, x)
    return out


def ix(base, *idx) -> N.Expr:
    """base[i0 + ...] (one flat subscript)."""
    return N.Index(as_expr(base), add(*idx) if len(idx) > 1 else as_expr(idx[0]))


def cast(t: N.Type, e) -> N.Cast:
    return N.Cast(t, as_expr(e))


def tofloat(e) -> N.Cast:
    return cast(FLOAT, e)


def assign(t, val, op="=") -> N.Assign:
    return N.Assign(as_expr(t), op, as_expr(val))


def decl(name, t, init=None, scope="local", const=False) -> N.Decl:
    if const and isinstance(t, N.Scalar):
        t = t.with_(const=True)
    return N.Decl(name, t, as_expr(init) if init is not None else None, scope)


def loop(var, lo, hi, body, step=1) -> N.For:
    if isinstance(body, N.Stmt) and not isinstance(body, N.Block):
        body = (body,)
    if not isinstance(body, N.Block):
        body = N.Block(tuple(body))
    return N.For(var, as_expr(lo), as_expr(hi), as_expr(step), body, var_type=INT)


def block(*stmts) -> N.Block:
    out = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, (list, tuple)):
            out.extend(x for x in s if x is not None)
        else:
            out.append(s)
    return N.Block(tuple(out))


def call(name, *args) -> N.Call:
    return N.Call(name, tuple(as_expr(a) for a in args))


def cond(cnd, a, bb) -> N.Cond:
    return N.Cond(as_expr(cnd), as_expr(a), as_expr(bb))


def ptr(elem: N.Type, const=False) -> N.Pointer:
    if const and isinstance(elem, N.Scalar):
        elem = elem.with_(const=True)
    return N.Pointer(elem)


SCALAR_SPELLING = {"float32": "float", "float64": "double", "int8": "int8_t", "uint8": "uint8_t",
                   "int16": "int16_t", "uint16": "uint16_t", "int32": "int32_t", "uint32": "uint32_t",
                   "int64": "int64_t", "uint64": "uint64_t"}


def scalar(dtype: str, spelling: str | None = None) -> N.Scalar:
    return N.Scalar(dtype, spelling or SCALAR_SPELLING.get(dtype, dtype))


# ------------------------------------------------------------------------------ names
class Names:
    """Fresh identifiers that clash with nothing in the program."""

    def __init__(self, program: N.Program, prefix: str = "xpd_"):
        used = set()
        for n in walk(program):
            for attr in ("name", "var"):
                x = getattr(n, attr, None)
                if isinstance(x, str):
                    used.add(x)
        used |= {m.name for m in program.macros}
        self.used = used
        self.prefix = prefix
        self.k = 0

    def fresh(self, hint: str) -> str:
        while True:
            self.k += 1
            name = f"{self.prefix}{hint}{self.k}"
            if name not in self.used:
                self.used.add(name)
                return name


# ------------------------------------------------------------------------------ types
_STRUCT = re.compile(r"^\s*(?:typedef\s+)?struct\s*(\w*)\s*\{([^{}]*)\}\s*(\w*)\s*;\s*$", re.S)


def struct_fields(text: str) -> dict:
    """``{tag: {field: Scalar}}`` of a plain struct definition kept as verbatim text (fields of
    C scalar types only; a field of another type is left out, so its type stays unknown)."""
    from xpiler.frontend.lower import SCALAR_NAMES
    m = _STRUCT.match(text)
    if not m:
        return {}
    fields_ = {}
    for part in m.group(2).split(";"):
        part = re.sub(r"//[^\n]*|/\*.*?\*/", " ", part, flags=re.S).strip()
        mm = re.match(r"^((?:const\s+|unsigned\s+|signed\s+|long\s+)*[A-Za-z_]\w*)\s+([\w\s,]+)$", part)
        if not mm:
            continue
        spelling = " ".join(mm.group(1).split())
        dtype = SCALAR_NAMES.get(spelling.replace("const ", ""))
        if dtype is None:
            continue
        for name in mm.group(2).split(","):
            if re.fullmatch(r"\s*\w+\s*", name):
                fields_[name.strip()] = N.Scalar(dtype, spelling.replace("const ", ""))
    out = {m.group(1): fields_} if m.group(1) else {}
    if m.group(3):
        out[m.group(3)] = fields_
    return out


@dataclass
class TypeEnv:
    """Declared types of parameters and variables of one function (+ file-scope data)."""
    types: dict = field(default_factory=dict)
    typedefs: dict = field(default_factory=dict)
    structs: dict = field(default_factory=dict)     # struct tag -> {field: scalar type}

    @classmethod
    def of(cls, program: N.Program, func: N.Func) -> "TypeEnv":
        env = cls()
        for it in program.items:
            if isinstance(it, N.Decl):
                env.types[it.name] = it.type
            if isinstance(it, N.Typedef):
                env.typedefs[it.name] = it.type
            if isinstance(it, N.Raw):
                env.structs.update(struct_fields(it.text))
        for p in func.params:
            env.types[p.name] = p.type
        for n in walk(func.body):
            if isinstance(n, N.Decl):
                env.types.setdefault(n.name, n.type)
            if isinstance(n, N.For) and n.var_type is not None:
                env.types.setdefault(n.var, n.var_type)
        return env

    def resolve(self, t):
        while isinstance(t, N.Named) and (t.target is not None or t.name in self.typedefs):
            t = t.target if t.target is not None else self.typedefs[t.name]
        return t

    def type_of(self, e):
        """Best-effort static type of an expression (None when unknown)."""
        if isinstance(e, N.Var):
            return self.resolve(self.types.get(e.name))
        if isinstance(e, N.Cast):
            return self.resolve(e.type)
        if isinstance(e, N.Const):
            return N.Scalar(e.dtype)
        if isinstance(e, N.Index):
            t = self.type_of(e.base)
            if isinstance(t, (N.Pointer, N.Array)):
                return self.resolve(t.elem)
            if isinstance(t, N.Vector):
                return t.elem
            return None
        if isinstance(e, N.UnOp):
            t = self.type_of(e.operand)
            if e.op == "&":
                return N.Pointer(t) if t is not None else None
            if e.op == "*":
                return self.resolve(t.elem) if isinstance(t, (N.Pointer, N.Array)) else None
            return t
        if isinstance(e, N.BinOp):
            lt, rt = self.type_of(e.lhs), self.type_of(e.rhs)
            if e.op in ("+", "-"):
                if isinstance(lt, (N.Pointer, N.Array)):
                    return N.Pointer(lt.elem) if isinstance(lt, N.Array) else lt
                if isinstance(rt, (N.Pointer, N.Array)) and e.op == "+":
                    return N.Pointer(rt.elem) if isinstance(rt, N.Array) else rt
            if e.op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
                return N.Scalar("int32")
            for t in (lt, rt):
                if isinstance(t, N.Scalar) and t.dtype in ("float64",):
                    return t
            for t in (lt, rt):
                if isinstance(t, N.Scalar) and t.dtype in ("float32",):
                    return t
            return lt or rt
        if isinstance(e, N.Cond):
            return self.type_of(e.then) or self.type_of(e.else_)
        if isinstance(e, N.Member):
            # a field of a struct the source defines (kept as verbatim text): `acc.m`, `p->m`
            t = self.resolve(self.type_of(e.base))
            if e.arrow:
                t = self.resolve(t.elem) if isinstance(t, (N.Pointer, N.Array)) else None
            if isinstance(t, N.Named):
                tag = t.name[len("struct "):] if t.name.startswith("struct ") else t.name
                return self.structs.get(tag, {}).get(e.field)
            return None
        return None

    def elem_of(self, e):
        """Element type of a pointer/array expression (None when unknown or void)."""
        t = self.type_of(e)
        if isinstance(t, (N.Pointer, N.Array)):
            el = self.resolve(t.elem)
            if isinstance(el, N.Scalar) and el.dtype != "void":
                return el
        return None


def base_name(e):
    """The variable a pointer expression is derived from (A + i*K -> 'A')."""
    while True:
        if isinstance(e, N.Var):
            return e.name
        if isinstance(e, N.BinOp) and e.op in ("+", "-"):
            e = e.lhs
        elif isinstance(e, N.Cast):
            e = e.expr
        elif isinstance(e, N.UnOp) and e.op == "&":
            e = e.operand
        elif isinstance(e, N.Index):
            e = e.base
        else:
            return None


def sizeof_count(e, elem: N.Scalar | None):
    """If ``e`` is ``X * sizeof(T)`` (or ``sizeof(T) * X``) with T == elem, return X."""
    if elem is None:
        return None

    def is_sizeof(x):
        if isinstance(x, N.SizeOf):
            a = x.arg
            if isinstance(a, N.Scalar):
                return a.dtype == elem.dtype
        return False

    if is_sizeof(e):
        return c(1)
    if isinstance(e, N.BinOp) and e.op == "*":
        if is_sizeof(e.rhs):
            return e.lhs
        if is_sizeof(e.lhs):
            return e.rhs
        inner = sizeof_count(e.lhs, elem)
        if inner is not None:
            return b("*", inner, e.rhs)
    return None
