"""The shared C-like printer.  Dialect printers (cuda.py, hip.py, bang.py, c.py) override the
hooks: qualifier spellings, type spellings, builtins, barrier names, launch syntax, includes.

Printing is deterministic (golden tests pin it): 4-space indentation, K&R braces, loop bodies
always braced, minimal parentheses from operator precedence (plus the ones gcc's
-Wparentheses asks for), comments and preprocessor lines re-emitted where the front end
attached them, blank lines kept where the source had them.
"""
from __future__ import annotations

import re

from ..frontend.errors import XPError, fe_error
from ..ir import nodes as N
from ..ir.intrinsics import REGISTRY

PREC = {",": 1, "=": 2, "?": 3, "||": 4, "&&": 5, "|": 6, "^": 7, "&": 8, "==": 9, "!=": 9,
        "<": 10, "<=": 10, ">": 10, ">=": 10, "<<": 11, ">>": 11, "+": 12, "-": 12, "*": 13, "/": 13, "%": 13}
UNARY_PREC = 15
POSTFIX_PREC = 16
BITWISE = {"|", "^", "&", "<<", ">>"}

#: parallel bindings of For loops: binding -> (index expression, extent expression)
SIMT_BINDINGS = {
    **{f"threadIdx.{a}": (f"threadIdx.{a}", f"blockDim.{a}") for a in "xyz"},
    **{f"blockIdx.{a}": (f"blockIdx.{a}", f"gridDim.{a}") for a in "xyz"},
    **{f"global.{a}": (f"(blockIdx.{a} * blockDim.{a} + threadIdx.{a})", f"(gridDim.{a} * blockDim.{a})")
       for a in "xyz"},
}
BANG_BINDINGS = {"taskId": ("taskId", "taskDim"), "clusterId": ("clusterId", "clusterDim"),
                 "coreId": ("coreId", "coreDim"), "taskIdX": ("taskIdX", "taskDimX"),
                 "taskIdY": ("taskIdY", "taskDimY"), "taskIdZ": ("taskIdZ", "taskDimZ")}

UNIVERSAL_SPELLINGS = {"float", "double", "int", "unsigned", "unsigned int", "signed", "signed int", "char",
                       "signed char", "unsigned char", "short", "unsigned short", "long", "long int", "long long",
                       "unsigned long", "unsigned long long", "long long int", "unsigned long long int", "void",
                       "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
                       "size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "short int", "unsigned short int",
                       "unsigned long int", "long double"}


class Printer:
    dialect = "c"
    indent_unit = "    "
    scope_quals: dict = {}
    builtins: set = set()
    bindings: dict = {}
    barrier_names: dict = {}
    scalar_spellings: set = set()      # extra valid scalar spellings in this dialect
    canonical_scalar = {"float32": "float", "float64": "double", "int8": "int8_t", "uint8": "uint8_t",
                        "int16": "int16_t", "uint16": "uint16_t", "int32": "int", "uint32": "unsigned int",
                        "int64": "long long", "uint64": "unsigned long long", "bool": "bool", "char": "char",
                        "void": "void", "float16": "_Float16", "bfloat16": "__bf16"}
    cpp = True

    def __init__(self):
        self.out: list = []
        self.level = 0
        self.src_dialect = self.dialect

    # ------------------------------------------------------------------ entry
    def print_program(self, prog: N.Program) -> str:
        self.out = []
        self.src_dialect = prog.dialect
        self.prog = prog
        from ..mappings.vector_types import builtin_plan
        # the program's typedefs named like one of this dialect's builtin vector types: name ->
        # None (left out, the builtin is used) or the name they are printed under
        self.type_plan = builtin_plan(self.dialect, prog)
        items = list(prog.items)
        lead = 0
        while lead < len(items) and isinstance(items[lead], N.Comment):
            lead += 1
        items[lead:lead] = list(self.prelude(prog))
        prev = None
        try:
            self._items(items)
        except XPError as e:
            if getattr(e, "file", None) is None:
                e.file = prog.file
            raise
        text = "\n".join(self.out).rstrip() + "\n"
        return text

    def _items(self, items):
        prev = None
        for it in items:
            if prev is not None and (self._gap(prev, it) or isinstance(prev, N.Func) and not (
                    isinstance(it, N.Comment) and it.trailing) or isinstance(it, N.Func) and not isinstance(
                    prev, (N.Comment, N.Func))):
                self.out.append("")
            self.top(it)
            prev = it

    def prelude(self, prog):
        """Items a dialect must add (headers) when the program comes from another dialect."""
        return ()

    def _gap(self, prev, it) -> bool:
        if isinstance(it, N.Comment) and it.trailing:
            return False
        pl, il = _last_line(prev), getattr(it, "loc", None)
        if pl is None or il is None:
            return isinstance(it, N.Func) or isinstance(prev, N.Func)
        return il.line - len(getattr(it, "pragmas", ()) or ()) > pl + 1

    def emit(self, text: str):
        self.out.append(self.indent_unit * self.level + text if text else "")

    # ------------------------------------------------------------------ top level
    def top(self, it):
        if isinstance(it, N.Func):
            self.func(it)
        elif isinstance(it, N.Directive):
            self.directive(it)
        elif isinstance(it, N.Using):
            self.using(it)
        elif isinstance(it, N.Typedef):
            self.s_Typedef(it, top=True)
        elif isinstance(it, N.Decl):
            self.emit(self.decl_text(it, top=True) + ";")
        elif isinstance(it, (N.Comment, N.Raw, N.Pragma)):
            self.stmt(it)
        else:
            raise TypeError(f"cannot print {type(it).__name__} at top level")

    def directive(self, d: N.Directive):
        if self.src_dialect != self.dialect and d.kind == "include":
            from .headers import foreign_include
            if foreign_include(d.text, self.dialect):
                return
        text = self.renamed_text(d.text) if d.kind != "include" else d.text
        for ln in text.split("\n"):
            self.out.append(ln)

    def using(self, u: N.Using):
        if self.dialect != "cuda" and "nvcuda" in u.text:
            return
        self.emit(u.text)

    def type_name(self, name: str) -> str:
        """``name`` as printed: a program's type named like a builtin of this dialect is renamed
        (``type_plan``); ``struct T`` renames its tag."""
        plan = getattr(self, "type_plan", None)
        if not plan:
            return name
        kw, _, tag = name.rpartition(" ")
        if kw in ("struct", "union") and plan.get(tag):
            return f"{kw} {plan[tag]}"
        return plan.get(name) or name

    def renamed_text(self, text: str) -> str:
        """Verbatim text (macro bodies, kept declarations) with the renamed type names."""
        for old, new in (getattr(self, "type_plan", None) or {}).items():
            if new:
                text = re.sub(rf"\b{re.escape(old)}\b", new, text)
        return text

    def typedef(self, t: N.Typedef) -> str:
        ty = t.type
        name = self.type_name(t.name)
        if isinstance(ty, N.Vector) and ty.spelling == t.name:
            attrs = t.attrs or (f"__attribute__((ext_vector_type({ty.n})))",)
            return f"typedef {self.scalar(ty.elem)} {name} {' '.join(attrs)};"
        s = "typedef " + self.declare(ty, name)
        if t.attrs:
            s += " " + " ".join(t.attrs)
        return s + ";"

    # ------------------------------------------------------------------ functions
    kind_quals = {"kernel": "", "device": "", "host": ""}
    func_attrs_ok: set = {"static", "inline", "extern"}

    def func_prefix(self, f: N.Func) -> list:
        parts = []
        if f.has("extern_c") and self.cpp:
            parts.append('extern "C"')
        for a in ("static", "extern"):
            if a in f.attrs:
                parts.append(a)
        k = self.kind_quals.get(f.kind, "")
        if k:
            parts.append(k)
        for a in f.attrs:
            if a in ("extern_c", "static", "extern"):
                continue
            base = a.split("(")[0]
            if base in self.func_attrs_ok or a in self.func_attrs_ok:
                parts.append(a)
        return parts

    def func(self, f: N.Func):
        params = ", ".join(self.declare(p.type, p.name) for p in f.params)
        if not params and not self.cpp:
            params = "void"
        head = " ".join(self.func_prefix(f) + [self.declare(f.ret, f"{f.name}({params})")])
        if f.body is None:
            self.emit(head + ";")
            return
        self.emit(head + " {")
        self.block_body(f.body)
        self.emit("}")

    # ------------------------------------------------------------------ types
    def scalar(self, t: N.Scalar) -> str:
        sp = t.spelling or ""
        if not (sp in UNIVERSAL_SPELLINGS or sp in self.scalar_spellings or sp == "bool"):
            sp = self.canonical_scalar.get(t.dtype, sp or t.dtype)
        return ("const " if t.const else "") + ("volatile " if t.volatile else "") + sp

    def base_type(self, t) -> str:
        if isinstance(t, N.Scalar):
            return self.scalar(t)
        if isinstance(t, N.Vector):
            return ("const " if t.const else "") + self.type_name(t.spelling)
        if isinstance(t, N.Named):
            return ("const " if t.const else "") + self.type_name(t.name)
        if isinstance(t, N.Struct):
            head = " ".join([t.kind, *t.attrs] + ([self.type_name(t.tag)] if t.tag else []))
            fields = " ".join(self.declare(f.type, f.name) + ";" for f in t.fields)
            return f"{head} {{ {fields} }}"
        if isinstance(t, N.Fragment):
            return self.fragment(t)
        raise TypeError(type(t).__name__)

    def fragment(self, t: N.Fragment) -> str:
        raise fe_error("XP1113", None, construct="a WMMA fragment", dialect=self.dialect)

    def declare(self, t, name: str) -> str:
        """C declarator text for a variable/parameter ``name`` of type ``t`` (name may be '')."""
        if isinstance(t, N.Pointer):
            q = ""
            if t.const:
                q += " const"
            if t.restrict:
                q += " " + self.restrict_kw()
            inner = "*" + (q.strip() + " " if q else "") + name if q else "*" + name
            if isinstance(t.elem, (N.Array, N.FuncType)):
                inner = f"({inner})"
            return self.declare(t.elem, inner)
        if isinstance(t, N.Array):
            dims = "".join(f"[{self.expr(d) if d is not None else ''}]" for d in t.dims)
            return self.declare(t.elem, name + dims)
        if isinstance(t, N.FuncType):
            ps = ", ".join(self.declare(p, "") for p in t.params)
            return self.declare(t.ret, f"{name}({ps})")
        b = self.base_type(t)
        if not name:
            return b
        sep = "" if name.startswith("*") and False else " "
        return f"{b}{sep}{name}"

    def restrict_kw(self) -> str:
        return "__restrict__" if self.cpp else "restrict"

    # ------------------------------------------------------------------ declarations
    def decl_text(self, d: N.Decl, top=False) -> str:
        parts = []
        if "extern_c" in d.storage and self.cpp:
            parts.append('extern "C"')
        for s in ("static", "extern", "register"):
            if s in d.storage:
                parts.append(s)
        q = self.scope_qual(d)
        if q:
            parts.append(q)
        ty = d.type
        if "constexpr" in d.storage:
            if self.cpp:
                parts.append("constexpr")
                ty = _unconst(ty)
        for a in d.attrs:
            if self.attr_ok(a):
                parts.append(a)
        text = " ".join(parts + [self.declare(ty, d.name)])
        if d.init is not None:
            if d.ctor and isinstance(d.init, N.Call):
                text += "(" + ", ".join(self.expr(a, 2) for a in d.init.args) + ")"
            else:
                text += " = " + self.expr(d.init, 2)
        return text

    def scope_qual(self, d: N.Decl) -> str:
        if d.scope in ("local", "host"):
            return ""
        if d.scope in self.scope_quals:
            return self.scope_quals[d.scope]
        raise fe_error("XP1113", None, d.loc.line if d.loc else None, construct=f"memory scope '{d.scope}'",
                       dialect=self.dialect)

    def attr_ok(self, a: str) -> bool:
        return a.startswith("__attribute__")

    # ------------------------------------------------------------------ statements
    def block_body(self, b: N.Block):
        self.level += 1
        prev = None
        for s in b.stmts:
            if prev is not None and self._gap(prev, s):
                self.out.append("")
            self.stmt(s)
            prev = s
        self.level -= 1

    def stmt(self, s):
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise TypeError(f"cannot print statement {type(s).__name__}")
        m(s)

    def s_Decl(self, s):
        self.emit(self.decl_text(s) + ";")

    def s_Func(self, s):
        self.func(s)

    def s_Assign(self, s):
        self.emit(f"{self.expr(s.target, 2)} {s.op} {self.expr(s.value, 2)};")

    def s_ExprStmt(self, s):
        self.emit(self.expr(s.expr, 1) + ";")

    def s_Block(self, s):
        self.emit("{")
        self.block_body(s)
        self.emit("}")

    def loop_pragmas(self, s):
        for p in s.pragmas:
            self.emit("#pragma " + p)

    def s_For(self, s: N.For):
        ty = self.declare(s.var_type, "") + " " if s.var_type is not None else ""
        v = s.var
        lo, step = s.lo, s.step
        if s.binding is None or s.binding == "omp":
            if s.binding == "omp" and not any(p.startswith("omp") for p in s.pragmas):
                self.emit("#pragma omp parallel for")
            self.loop_pragmas(s)
            init = f"{ty}{v} = {self.expr(lo, 2)}"
            stride = step
        else:
            if s.binding not in self.bindings:
                raise fe_error("XP1113", None, s.loc.line if s.loc else None,
                               construct=f"loop binding '{s.binding}'", dialect=self.dialect)
            idx, ext = self.bindings[s.binding]
            self.loop_pragmas(s)
            off = N.Var(idx) if _is_one(step) else N.BinOp("*", N.Var(idx), step)
            start = off if _is_zero(lo) else N.BinOp("+", lo, off)
            init = f"{ty}{v} = {self.expr(start, 2)}"
            stride = N.Var(ext) if _is_one(step) else N.BinOp("*", N.Var(ext), step)
        if s.cmp == "<=" and isinstance(s.hi, N.BinOp) and s.hi.op == "+" and _is_one(s.hi.rhs):
            cond = f"{v} <= {self.expr(s.hi.lhs, 11)}"
        else:
            cond = f"{v} < {self.expr(s.hi, 11)}"
        nxt = f"++{v}" if _is_one(stride) else f"{v} += {self.expr(stride, 2)}"
        self.emit(f"for ({init}; {cond}; {nxt}) {{")
        self.block_body(s.body)
        self.emit("}")

    def s_CFor(self, s: N.CFor):
        self.loop_pragmas(s)
        if s.init is None:
            init = ""
        elif isinstance(s.init, N.Decl):
            init = self.decl_text(s.init)
        elif isinstance(s.init, N.Block):
            ds = [d for d in s.init.stmts if isinstance(d, N.Decl)]
            init = self.decl_text(ds[0]) + "".join(
                ", " + d.name + (" = " + self.expr(d.init, 2) if d.init is not None else "") for d in ds[1:])
        else:
            init = self.expr(s.init.expr, 1)
        cond = self.expr(s.cond, 1) if s.cond is not None else ""
        nxt = self.expr(s.next, 1) if s.next is not None else ""
        self.emit(f"for ({init}; {cond}; {nxt}) {{")
        self.block_body(s.body if isinstance(s.body, N.Block) else N.Block((s.body,)))
        self.emit("}")

    def _sub(self, body):
        if isinstance(body, N.Block):
            self.block_body(body)
        else:
            self.level += 1
            self.stmt(body)
            self.level -= 1

    def s_While(self, s):
        if s.do:
            self.emit("do {")
            self.block_body(s.body if isinstance(s.body, N.Block) else N.Block((s.body,)))
            self.emit(f"}} while ({self.expr(s.cond, 1)});")
            return
        self.emit(f"while ({self.expr(s.cond, 1)}) {{")
        self.block_body(s.body if isinstance(s.body, N.Block) else N.Block((s.body,)))
        self.emit("}")

    def s_If(self, s, prefix="if"):
        head = f"{prefix} ({self.expr(s.cond, 1)})"
        braced = isinstance(s.then, N.Block) or s.else_ is not None
        if braced:
            self.emit(head + " {")
            self._sub(s.then if isinstance(s.then, N.Block) else N.Block((s.then,)))
            if s.else_ is None:
                self.emit("}")
            elif isinstance(s.else_, N.If):
                self.emit("}")
                self._else_if(s.else_)
            else:
                self.emit("} else {")
                self._sub(s.else_ if isinstance(s.else_, N.Block) else N.Block((s.else_,)))
                self.emit("}")
        else:
            self.emit(head)
            self._sub(s.then)

    def _else_if(self, s):
        last = self.out.pop()
        self.out.append(last + f" else if ({self.expr(s.cond, 1)}) {{")
        self._sub(s.then if isinstance(s.then, N.Block) else N.Block((s.then,)))
        if s.else_ is None:
            self.emit("}")
        elif isinstance(s.else_, N.If):
            self.emit("}")
            self._else_if(s.else_)
        else:
            self.emit("} else {")
            self._sub(s.else_ if isinstance(s.else_, N.Block) else N.Block((s.else_,)))
            self.emit("}")

    def s_Return(self, s):
        self.emit("return;" if s.value is None else f"return {self.expr(s.value, 1)};")

    def s_Break(self, s):
        self.emit("break;")

    def s_Continue(self, s):
        self.emit("continue;")

    def s_Pragma(self, s):
        self.emit("#pragma " + s.text)

    def s_Comment(self, s):
        if s.trailing and self.out and self.out[-1].strip() and "\n" not in s.text:
            self.out[-1] += "  " + s.text
            return
        lines = s.text.split("\n")
        self.emit(lines[0])
        for ln in lines[1:]:
            self.out.append(ln)

    def s_Raw(self, s):
        lines = self.renamed_text(s.text).split("\n")
        if lines[0].lstrip().startswith("#"):
            for ln in lines:
                self.out.append(ln)
            return
        for ln in lines:
            self.emit(ln)

    def s_Directive(self, s):
        self.directive(s)

    def s_Using(self, s):
        self.using(s)

    def s_Typedef(self, s, top=False):
        if top and s.name in (getattr(self, "type_plan", None) or {}) and self.type_plan[s.name] is None:
            return      # the dialect's builtin of the same name and layout is used
        self.emit(self.typedef(s))

    def s_Barrier(self, s):
        name = self.barrier_names.get(s.kind)
        if name is None:
            raise fe_error("XP1113", None, s.loc.line if s.loc else None, construct=f"barrier '{s.kind}'",
                           dialect=self.dialect)
        self.emit(f"{name}({', '.join(self.expr(a, 2) for a in s.args)});")

    def s_Launch(self, s):
        raise fe_error("XP1113", None, s.loc.line if s.loc else None, construct="kernel launch",
                       dialect=self.dialect)

    # ------------------------------------------------------------------ expressions
    def expr(self, e, need: int = 0) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < need else text

    def _child(self, parent_op, e, need):
        text, prec = self._expr(e)
        if prec < need:
            return f"({text})"
        if isinstance(e, N.BinOp) and parent_op is not None:
            if (parent_op in BITWISE and e.op not in BITWISE and prec >= 9 and e.op not in ("*",)) or \
                    (parent_op in BITWISE and e.op in BITWISE and e.op != parent_op) or \
                    (parent_op == "||" and e.op == "&&"):
                return f"({text})"
        return text

    def _expr(self, e):
        if isinstance(e, N.Const):
            return self.const(e), POSTFIX_PREC if not str(self.const(e)).startswith("-") else UNARY_PREC
        if isinstance(e, N.Var):
            return e.name, POSTFIX_PREC
        if isinstance(e, N.Builtin):
            return self.builtin(e), POSTFIX_PREC
        if isinstance(e, N.BinOp):
            p = PREC[e.op]
            return f"{self._child(e.op, e.lhs, p)} {e.op} {self._child(e.op, e.rhs, p + 1)}", p
        if isinstance(e, N.UnOp):
            if e.op in ("p++", "p--"):
                return self.expr(e.operand, POSTFIX_PREC) + e.op[1:], POSTFIX_PREC
            inner = self.expr(e.operand, UNARY_PREC)
            if e.op in ("-", "+") and inner.startswith(e.op) or e.op == "&" and inner.startswith("&"):
                inner = f"({inner})"
            return f"{e.op}{inner}", UNARY_PREC
        if isinstance(e, N.Cond):
            return f"{self.expr(e.cond, 6)} ? {self.expr(e.then, 3)} : {self.expr(e.else_, 3)}", 3
        if isinstance(e, N.Index):
            return f"{self.expr(e.base, POSTFIX_PREC)}[{self.expr(e.index, 1)}]", POSTFIX_PREC
        if isinstance(e, N.Member):
            return f"{self.expr(e.base, POSTFIX_PREC)}{'->' if e.arrow else '.'}{e.field}", POSTFIX_PREC
        if isinstance(e, N.Call):
            f = e.func if isinstance(e.func, str) else self.expr(e.func, POSTFIX_PREC)
            return f"{self.call_name(f)}({', '.join(self.expr(a, 2) for a in e.args)})", POSTFIX_PREC
        if isinstance(e, N.Intrinsic):
            return f"{self.intrinsic_name(e.name)}({', '.join(self.expr(a, 2) for a in e.args)})", POSTFIX_PREC
        if isinstance(e, N.Cast):
            return f"({self.declare(e.type, '')}){self.expr(e.expr, UNARY_PREC)}", UNARY_PREC
        if isinstance(e, N.SizeOf):
            if isinstance(e.arg, N.Type):
                return f"sizeof({self.declare(e.arg, '')})", POSTFIX_PREC
            return f"sizeof({self.expr(e.arg, 1)})", POSTFIX_PREC
        if isinstance(e, N.InitList):
            return "{" + ", ".join(self.expr(x, 2) for x in e.items) + "}", POSTFIX_PREC
        if isinstance(e, N.CompoundLit):
            return f"({self.declare(e.type, '')}){self.expr(e.init)}", POSTFIX_PREC
        if isinstance(e, N.AssignExpr):
            return f"{self.expr(e.target, 3)} {e.op} {self.expr(e.value, 2)}", 2
        if isinstance(e, N.Comma):
            return ", ".join(self.expr(x, 2) for x in e.exprs), 1
        raise TypeError(f"cannot print expression {type(e).__name__}")

    def const(self, c: N.Const) -> str:
        if c.value is None and c.text == "nullptr":
            return "nullptr" if self.cpp else "0"
        if c.text:
            return c.text
        if c.dtype == "bool":
            return "true" if c.value else "false"
        if isinstance(c.value, float):
            r = repr(c.value)
            if "e" not in r and "." not in r and "inf" not in r and "nan" not in r:
                r += ".0"
            return r + ("f" if c.dtype == "float32" else "")
        return str(c.value)

    def builtin(self, b: N.Builtin) -> str:
        if b.name in self.builtins:
            return b.name
        raise fe_error("XP1113", None, b.loc.line if b.loc else None, construct=f"builtin '{b.name}'",
                       dialect=self.dialect)

    def call_name(self, name: str) -> str:
        return name

    def intrinsic_name(self, key: str) -> str:
        ent = REGISTRY.get(key)
        return ent.spelling if ent is not None else key


def _is_one(e):
    return isinstance(e, N.Const) and e.value == 1 and not isinstance(e.value, bool)


def _is_zero(e):
    return isinstance(e, N.Const) and e.value == 0 and not isinstance(e.value, bool)


def _unconst(t):
    if isinstance(t, (N.Scalar, N.Named, N.Vector)) and t.const:
        return t.with_(const=False)
    if isinstance(t, N.Array):
        return t.with_(elem=_unconst(t.elem))
    return t


def _last_line(node):
    best = None
    stack = [node]
    while stack:
        n = stack.pop()
        loc = getattr(n, "loc", None)
        if loc is not None and (best is None or loc.line > best):
            best = loc.line
        if isinstance(n, N.Node):
            stack.extend(n.children())
    if best is not None and isinstance(node, N.Comment):
        best += node.text.count("\n")
    if best is not None and isinstance(node, N.Directive):
        best += node.text.count("\n")
    if best is not None and _has_block(node):
        best += 1
    return best


def _has_block(n):
    if isinstance(n, (N.For, N.CFor, N.While)) and isinstance(n.body, N.Block) and n.body.loc is not None \
            and n.body.loc.col == 0:
        return False  # the source had no braces: no closing-brace line
    return isinstance(n, (N.Func, N.For, N.CFor, N.While, N.Block)) or (
        isinstance(n, N.If) and (isinstance(n.then, N.Block) or n.else_ is not None))
