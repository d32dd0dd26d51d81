"""pycparser AST (of the text the dialect layer prepared) -> the xpiler IR."""
from __future__ import annotations

import re

from pycparser import c_ast, c_generator

from ..ir import nodes as N
from ..ir.intrinsics import REGISTRY, canonical_name
from ..mappings.vector_types import TABLE as VECTOR_TYPES
from .dialect import KIND_QUALS, SCOPE_QUALS, Prepared
from .errors import XPError, fe_error
from .cxx import AUTO, CG_REDUCE, LAMBDA, STD_PREFIX
from .macros import macro_expr_ast

SCALAR_NAMES = {
    "float": "float32", "double": "float64", "long double": "float64",
    "half": "float16", "__half": "float16", "_Float16": "float16", "__fp16": "float16",
    "bfloat16": "bfloat16", "bfloat16_t": "bfloat16", "__nv_bfloat16": "bfloat16", "__bf16": "bfloat16",
    "__hip_bfloat16": "bfloat16", "hip_bfloat16": "bfloat16",
    "int": "int32", "signed": "int32", "signed int": "int32", "int32_t": "int32",
    "unsigned": "uint32", "unsigned int": "uint32", "uint32_t": "uint32",
    "char": "char", "signed char": "int8", "int8_t": "int8", "unsigned char": "uint8", "uint8_t": "uint8",
    "short": "int16", "short int": "int16", "signed short": "int16", "int16_t": "int16",
    "unsigned short": "uint16", "unsigned short int": "uint16", "uint16_t": "uint16",
    "long": "int64", "long int": "int64", "long long": "int64", "long long int": "int64", "signed long": "int64",
    "int64_t": "int64", "ptrdiff_t": "int64", "intptr_t": "int64",
    "unsigned long": "uint64", "unsigned long int": "uint64", "unsigned long long": "uint64",
    "unsigned long long int": "uint64", "uint64_t": "uint64", "size_t": "uint64", "uintptr_t": "uint64",
    "bool": "bool", "_Bool": "bool", "void": "void",
    "__mmask8": "uint8", "__mmask16": "uint16", "__mmask32": "uint32", "__mmask64": "uint64",
}
# the cuda/hip vector type names a source may use undeclared (one table: xpiler/mappings/vector_types.py)
VECTOR_NAMES = {name: (row.dtype, row.lanes) for name, row in VECTOR_TYPES.items()}

BUILTIN_DIMS = {"threadIdx", "blockIdx", "blockDim", "gridDim"}
BUILTIN_IDS = {"warpSize", "taskId", "taskDim", "taskIdX", "taskIdY", "taskIdZ", "taskDimX", "taskDimY",
               "taskDimZ", "clusterId", "clusterDim", "coreId", "coreDim",
               "hipThreadIdx_x", "hipThreadIdx_y", "hipThreadIdx_z", "hipBlockIdx_x", "hipBlockIdx_y",
               "hipBlockIdx_z", "hipBlockDim_x", "hipBlockDim_y", "hipBlockDim_z", "hipGridDim_x",
               "hipGridDim_y", "hipGridDim_z"}
BARRIERS = {"__syncthreads": "block", "__syncwarp": "warp", "__sync_cluster": "cluster", "__sync_all": "all",
            "__sync_all_ipu": "all", "__sync": "copy", "__threadfence": "fence", "__threadfence_block": "fence_block",
            "__sync_compute": "copy", "__sync_io": "copy"}
LOOP_PRAGMA = re.compile(r"^\s*(unroll\b|omp\b|GCC\s+unroll|GCC\s+ivdep|clang\s+loop|ivdep|nounroll|loop\b|simd\b|xpiler\b)")


def _scalar(dtype, spelling, const=False, volatile=False):
    return N.Scalar(dtype, spelling, const=const, volatile=volatile)


class Lowerer:
    def __init__(self, prep: Prepared):
        self.p = prep
        self.file = prep.file
        self.trivia = list(prep.trivia)
        self.ti = 0
        self.typedefs: dict = {}      # user typedef name -> IR type
        self.gen = c_generator.CGenerator()
        self.in_kernel_params = False
        self.ctx_func = None
        self.scope: dict = {}         # name -> IR type of the variables in view (for auto, std::)
        self.globals: dict = {}
        self.func_ret: dict = {}      # function -> return type
        self.pending: list = []       # helper functions made while lowering a function (lambdas, cg::reduce)
        self.made: set = set()        # names of the helpers made so far
        self.lambdas: dict = {}       # lambda name -> {"helper", "caps": [(name, by pointer)], "shadowed"}
        self.in_lambda = False
        self.cur_func = None

    # ------------------------------------------------------------------ helpers
    def loc(self, node):
        c = getattr(node, "coord", None)
        if c is None or c.line is None:
            return None
        col = self.p.src_col(c.line, c.column) if c.column else 0
        return N.Loc(self.file, c.line, col)

    def err(self, code, node, **kw):
        c = getattr(node, "coord", None)
        line = c.line if c is not None else None
        col = self.p.src_col(c.line, c.column) if c is not None and c.column else None
        return fe_error(code, self.file, line, col, **kw)

    def claim(self, line, col=10 ** 6, *, top=False):
        """Trivia that come before (line, col), as IR items (top level) or statements."""
        out = []
        while self.ti < len(self.trivia):
            t = self.trivia[self.ti]
            if (t.line, t.col) >= (line, col):
                break
            self.ti += 1
            loc = N.Loc(self.file, t.line, t.col)
            if t.kind == "comment":
                out.append(N.Comment(t.text, trailing=t.trailing, loc=loc))
            elif t.kind == "using":
                out.append(N.Using(t.text, loc=loc) if top else N.Raw(t.text, loc=loc))
            elif top:
                out.append(N.Directive(t.text, t.kind, loc=loc))
            else:
                out.append(N.Raw(t.text, loc=loc))
        return out

    def _coord(self, node):
        c = node.coord
        return (c.line, c.column or 0) if c is not None else (0, 0)

    # ------------------------------------------------------------------ program
    def program(self, ast) -> N.Program:
        items = []
        for ext in ast.ext:
            c = ext.coord
            if c is None or c.file != self.file:   # the injected typedef prelude
                continue
            line, col = self._coord(ext if not isinstance(ext, c_ast.FuncDef) else ext.decl)
            items.extend(self.claim(line, col, top=True))
            try:
                item = self.top_item(ext)
                items.extend(self.pending)     # helpers the item needs go before it
                self.pending = []
                items.append(item)
            except XPError:
                raise
            except RecursionError:
                raise self.err("XP1112", ext, detail="nesting too deep") from None
            except Exception as e:  # a construct lower() does not model: report it, never a traceback
                raise self.err("XP1112", ext, detail=f"{type(e).__name__} while reading this declaration "
                                                      f"({e})") from None
        items.extend(self.claim(10 ** 9, top=True))
        return self._finish(items)

    def top_item(self, ext):
        if isinstance(ext, c_ast.FuncDef):
            return self.funcdef(ext)
        if isinstance(ext, c_ast.Pragma):
            return N.Directive("#pragma " + ext.string, "pragma", loc=self.loc(ext))
        if isinstance(ext, c_ast.Typedef):
            return self.typedef(ext)
        if isinstance(ext, c_ast.Decl):
            return self.top_decl(ext)
        return N.Raw(self.gen.visit(ext), loc=self.loc(ext))

    def _finish(self, items):
        if not any(isinstance(i, (N.Func, N.Decl, N.Typedef)) for i in items):
            raise fe_error("XP1114", self.file, 1, 1)
        macros = []
        for mi in self.p.macros:
            expr = None
            if not mi.expanded:
                a = macro_expr_ast(mi.body, set(self.p.typedef_names) | set(SCALAR_NAMES))
                if a is not None:
                    try:
                        expr = self.expr(a)
                    except Exception:
                        expr = None
            macros.append(N.Macro(mi.name, mi.params, mi.body, expr, mi.expanded, loc=N.Loc(self.file, mi.line, 1)))
        return N.Program(self.p.dialect, tuple(items), self.file, tuple(macros))

    def typedef(self, td):
        quals = self.p.quals_for(td.coord.line, td.coord.column)
        ty = self.struct_type(td.type)
        if ty is False:     # a member this IR does not hold (bit-field, nested definition): verbatim
            self.typedefs[td.name] = N.Named(td.name)
            return N.Raw(self.gen.visit(td) + ";", loc=self.loc(td))
        if ty:
            # the struct's own attributes (written before the typedef's name); alignas(N) / __align__(N)
            # spelled as the attribute every target's compiler reads on a struct
            own = self.p.struct_quals(td.coord.line, td.coord.column)
            quals = [q for q in quals if q not in own]
            ty = ty.with_(attrs=tuple(
                re.sub(r"^(?:alignas|__align__)\s*\(\s*(\d+)\s*\)$", r"__attribute__((aligned(\1)))", q)
                for q in own if q.startswith(("__attribute__", "__align", "alignas"))))
        ty = ty or self.type(td.type)
        attrs = tuple(q for q in quals if q.startswith("__attribute__") or q.startswith("__align"))
        if td.name in getattr(self.p, "alias_attrs", {}):
            attrs = attrs + (self.p.alias_attrs[td.name],)
        m = next((re.search(r"ext_vector_type\s*\(\s*(\d+)\s*\)", q) for q in attrs
                  if "ext_vector_type" in q), None)
        lanes = int(m.group(1)) if m else None
        vs = next((re.search(r"__vector_size__\s*\((.*)\)\s*\)\s*\)\s*$|vector_size\s*\((.*)\)\s*\)\s*\)\s*$", q)
                   for q in attrs if "vector_size" in q), None)
        if vs and isinstance(ty, N.Scalar):
            lanes = _vector_lanes(vs.group(1) or vs.group(2), ty.dtype)
        if lanes and isinstance(ty, N.Scalar):
            ty = N.Vector(ty, lanes, td.name)
        elif isinstance(ty, N.Scalar):
            pass
        self.typedefs[td.name] = ty
        return N.Typedef(td.name, ty, attrs, loc=self.loc(td))

    def struct_type(self, t):
        """``Struct`` of a typedef that defines its struct/union (``typedef struct { float x, y; } P;``),
        None when it defines none, False when a member is not a plain declarator."""
        if not isinstance(t, c_ast.TypeDecl) or not isinstance(t.type, (c_ast.Struct, c_ast.Union)) \
                or t.type.decls is None:
            return None
        fields = []
        for d in t.type.decls:
            if not isinstance(d, c_ast.Decl) or d.bitsize is not None or not d.name or isinstance(
                    getattr(d.type, "type", None), (c_ast.Struct, c_ast.Union, c_ast.Enum)):
                return False
            fields.append(N.Field(d.name, self.type(d.type), loc=self.loc(d)))
        kind = "union" if isinstance(t.type, c_ast.Union) else "struct"
        return N.Struct(kind, t.type.name, tuple(fields))

    def top_decl(self, d):
        if isinstance(d.type, c_ast.FuncDecl):
            return self.func_from_decl(d, None)
        if isinstance(d.type, (c_ast.Struct, c_ast.Union, c_ast.Enum)) or (
                isinstance(d.type, c_ast.TypeDecl) and isinstance(d.type.type, (c_ast.Struct, c_ast.Union, c_ast.Enum))
                and getattr(d.type.type, "decls", None) is not None
                or isinstance(getattr(d.type, "type", None), c_ast.Enum)):
            return N.Raw(self.gen.visit(d) + ";", loc=self.loc(d))
        return self.decl(d, top=True)

    # ------------------------------------------------------------------ functions
    def funcdef(self, fd):
        return self.func_from_decl(fd.decl, fd.body)

    def func_from_decl(self, d, body):
        quals = self.p.quals_for(d.coord.line, d.coord.column)
        kind = "host"
        attrs = []
        for q in quals:
            if q in KIND_QUALS:
                k = KIND_QUALS[q]
                if k == "kernel" or (k == "device" and kind != "kernel"):
                    kind = k
                if q in ("__host__", "__mlu_entry__"):
                    attrs.append(q)
            elif q in SCOPE_QUALS:
                raise self.err("XP1112", d, detail=f"memory qualifier {q} on function {d.name}")
            else:
                attrs.append(q)
        if "__host__" in attrs and kind == "host":
            attrs.remove("__host__")
        for s in d.storage:
            attrs.append(s)
        for s in d.funcspec:
            if s not in attrs:
                attrs.append(s)
        if self.p.dialect == "c" and kind == "host" and body is not None:
            internal = any(a <= d.coord.line <= b for a, b in getattr(self.p, "internal_ranges", ()))
            kind = "device" if "static" in attrs or "inline" in attrs or internal else "kernel"
            if internal and "static" not in attrs:
                attrs.append("static")
        fdecl = d.type
        ret = self.type(fdecl.type)
        self.func_ret[d.name] = ret
        params = []
        self.ctx_func = kind
        if body is not None:
            self.scope = dict(self.globals)
            self.lambdas = {}
            self.cur_func = d.name
        if fdecl.args is not None:
            for pd in fdecl.args.params:
                if isinstance(pd, c_ast.ID):
                    raise self.err("XP1112", pd, detail=f"old-style parameter '{pd.name}' without a type")
                if isinstance(pd, c_ast.EllipsisParam):
                    params.append(N.Param("...", N.Named("..."), loc=self.loc(pd)))
                    continue
                if isinstance(pd, c_ast.Typename):
                    t = self.type(pd.type)
                    if isinstance(t, N.Scalar) and t.dtype == "void":
                        continue
                    params.append(N.Param("", t, loc=self.loc(pd)))
                    continue
                t = self.type(pd.type)
                if kind == "kernel" and isinstance(t, N.Pointer) and self.p.dialect != "c":
                    t = t.with_(scope="global")
                params.append(N.Param(pd.name or "", t, loc=self.loc(pd)))
                if pd.name:
                    self.scope[pd.name] = t
        b = self.block(body) if body is not None else None
        self.ctx_func = None
        return N.Func(d.name, tuple(params), ret, b, kind, tuple(attrs), loc=self.loc(d))

    # ------------------------------------------------------------------ types
    def type(self, t, quals=()):
        if isinstance(t, c_ast.TypeDecl):
            return self.type(t.type, tuple(t.quals) + tuple(quals))
        if isinstance(t, c_ast.Typename):
            return self.type(t.type, tuple(t.quals) + tuple(quals))
        if isinstance(t, c_ast.IdentifierType):
            name = " ".join(t.names)
            const = "const" in quals
            vol = "volatile" in quals
            if name in self.p.frags:
                f = self.p.frags[name]
                elem = self.type_from_name(f.elem)
                return N.Fragment(f.kind, self.size_expr(f.m), self.size_expr(f.n), self.size_expr(f.k), elem,
                                  f.layout, loc=self.loc(t))
            return self.type_from_name(name, const, vol)
        if isinstance(t, c_ast.PtrDecl):
            elem = self.type(t.type)
            return N.Pointer(elem, None, const="const" in t.quals, restrict="restrict" in t.quals)
        if isinstance(t, c_ast.ArrayDecl):
            dims = []
            cur = t
            while isinstance(cur, c_ast.ArrayDecl):
                dims.append(self.expr(cur.dim) if cur.dim is not None else None)
                cur = cur.type
            return N.Array(self.type(cur), tuple(dims))
        if isinstance(t, (c_ast.Struct, c_ast.Union, c_ast.Enum)):
            kw = {c_ast.Struct: "struct", c_ast.Union: "union", c_ast.Enum: "enum"}[type(t)]
            return N.Named(f"{kw} {t.name}", const="const" in quals)
        if isinstance(t, c_ast.FuncDecl):
            ps = tuple(self.type(p.type) for p in (t.args.params if t.args else ())
                       if not isinstance(p, (c_ast.EllipsisParam, c_ast.ID)))
            return N.FuncType(self.type(t.type), ps)
        raise self.err("XP1112", t, detail=type(t).__name__)

    def type_from_name(self, name, const=False, vol=False):
        name = name.strip()
        if name in self.typedefs:
            target = self.typedefs[name]
            if isinstance(target, N.Vector):
                return target.with_(const=const)
            return N.Named(name, target, const=const)
        if name in SCALAR_NAMES:
            return _scalar(SCALAR_NAMES[name], name, const, vol)
        if name in VECTOR_NAMES:
            dt, n = VECTOR_NAMES[name]
            return N.Vector(N.Scalar(dt, dt), n, name, const=const)
        return N.Named(name, None, const=const)

    def size_expr(self, s):
        s = s.strip()
        if re.fullmatch(r"\d+", s):
            return N.Const(int(s), "int32", s)
        return N.Var(s)

    # ------------------------------------------------------------------ declarations
    def decl(self, d, top=False):
        quals = self.p.quals_for(d.coord.line, d.coord.column)
        scope = "global" if top else "local"
        if top and self.p.dialect == "c":
            scope = "host"
        storage = [s for s in d.storage]
        attrs = []
        for q in quals:
            if q in SCOPE_QUALS:
                scope = SCOPE_QUALS[q]
            elif q in KIND_QUALS:
                if q == "__device__" and top:
                    scope = "global"
                attrs.append(q) if q not in ("__device__",) else None
            elif q == "constexpr":
                storage.append("constexpr")
            elif q == "extern_c":
                if top:
                    storage.append("extern_c")
            else:
                attrs.append(q)
        if top and scope == "global" and not any(q in ("__device__", "__managed__") for q in quals) \
                and self.p.dialect in ("cuda", "hip"):
            scope = "host"
        if top and self.p.dialect == "bang" and scope == "global" and "__device__" not in quals:
            scope = "host"
        ty = self.type(d.type)
        init = None
        ctor = False
        if d.init is not None:
            if isinstance(d.init, c_ast.FuncCall) and isinstance(d.init.name, c_ast.ID) \
                    and d.init.name.name.startswith("__xp_ctor_") and self._ctor_decl(d):
                ctor = True
            init = self.expr(d.init)
        if _is_auto(ty):
            ty = self._auto_type(d, ty, init)
        (self.globals if top else self.scope)[d.name] = ty
        if not top:
            self._declared(d.name)
        return N.Decl(d.name, ty, init, scope, tuple(storage), tuple(attrs), ctor, loc=self.loc(d))

    # ------------------------------------------------------------------ auto and std:: (C++ sources)
    def _auto_type(self, d, ty, init):
        t = self.type_of(init) if init is not None else None
        if t is None or isinstance(t, N.Scalar) and t.dtype in ("void", "str"):
            raise self.err("XP1141", d, name=d.name)
        if isinstance(t, N.Array):
            t = N.Pointer(t.elem)
        if isinstance(t, (N.Scalar, N.Named, N.Vector)):
            t = t.with_(const=ty.const)
        return t

    def _resolve(self, t):
        while isinstance(t, N.Named) and t.target is not None:
            t = t.target
        return t

    def type_of(self, e):
        """Best-effort static type of a lowered expression (None when unknown)."""
        if isinstance(e, N.Const):
            if e.dtype in ("str", "char"):
                return N.Scalar("char", "char") if e.dtype == "char" else None
            if e.dtype == "void":
                return None
            return N.Scalar(e.dtype, {"float32": "float", "float64": "double", "int32": "int", "uint32": "unsigned",
                                      "int64": "long", "uint64": "unsigned long", "bool": "bool"}.get(e.dtype, e.dtype))
        if isinstance(e, N.Var):
            return self.scope.get(e.name, self.globals.get(e.name))
        if isinstance(e, N.Builtin):
            return N.Scalar("uint32", "unsigned")
        if isinstance(e, N.Cast):
            return e.type
        if isinstance(e, N.SizeOf):
            return N.Scalar("uint64", "size_t")
        if isinstance(e, N.Index):
            t = self._resolve(self.type_of(e.base))
            if isinstance(t, (N.Pointer, N.Array)):
                return t.elem
            if isinstance(t, N.Vector):
                return t.elem
            return None
        if isinstance(e, N.UnOp):
            t = self.type_of(e.operand)
            if e.op == "&":
                return N.Pointer(t) if t is not None else None
            if e.op == "*":
                t = self._resolve(t)
                return t.elem if isinstance(t, (N.Pointer, N.Array)) else None
            if e.op == "!":
                return N.Scalar("bool", "bool")
            return t
        if isinstance(e, N.BinOp):
            if e.op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
                return N.Scalar("bool", "bool")
            lt, rt = self._resolve(self.type_of(e.lhs)), self._resolve(self.type_of(e.rhs))
            if e.op in ("+", "-") and isinstance(lt, (N.Pointer, N.Array)):
                return N.Pointer(lt.elem) if isinstance(lt, N.Array) else lt
            if e.op == "+" and isinstance(rt, (N.Pointer, N.Array)):
                return N.Pointer(rt.elem) if isinstance(rt, N.Array) else rt
            if e.op in ("<<", ">>"):
                return lt
            return _arith(lt, rt)
        if isinstance(e, N.Cond):
            return _arith(self._resolve(self.type_of(e.then)), self._resolve(self.type_of(e.else_)))
        if isinstance(e, N.Call) and isinstance(e.func, str):
            if e.func in self.func_ret:
                return self.func_ret[e.func]
            if e.func in VECTOR_NAMES or e.func in SCALAR_NAMES:
                return self.type_from_name(e.func)
            return None
        if isinstance(e, N.Intrinsic):
            d = REGISTRY.get(e.name)
            if d is not None and d.category == "math":
                if e.name.endswith("f") and e.name not in ("erf",):
                    return N.Scalar("float32", "float")
                if e.args:
                    return _arith(self._resolve(self.type_of(e.args[0])),
                                  self._resolve(self.type_of(e.args[-1])) if len(e.args) > 1 else None)
            if d is not None and isinstance(d.ret, str) and d.ret.startswith("__m"):
                return N.Named(d.ret)
            return None
        if isinstance(e, N.AssignExpr):
            return self.type_of(e.target)
        if isinstance(e, N.Comma) and e.items:
            return self.type_of(e.items[-1])
        return None

    def std_call(self, name, args, loc):
        """``std::name(args)`` in the C spelling the argument types select."""
        ts = [self._resolve(self.type_of(a)) for a in args]
        dts = [t.dtype if isinstance(t, N.Scalar) else None for t in ts]
        flt = all(dt == "float32" or dt is None for dt in dts) and "float32" in dts
        if any(dt in ("float16", "bfloat16") for dt in dts):
            flt = False
        integral = all(dt is not None and dt.startswith(("int", "uint", "char", "bool")) for dt in dts) and dts
        if name in ("max", "min"):
            if flt or (all(dt in ("float32", "float64", None) for dt in dts) and "float64" in dts):
                key = ("fmaxf" if name == "max" else "fminf") if flt else ("fmax" if name == "max" else "fmin")
                return N.Intrinsic(key, args, loc=loc)
            return N.Intrinsic(name, args, loc=loc)
        if name == "abs":
            if integral:
                return N.Call("abs", args, loc=loc)
            name = "fabs"
        key = name + "f" if flt and name + "f" in REGISTRY else name
        if key in REGISTRY:
            return N.Intrinsic(key, args, loc=loc)
        return N.Call(key, args, loc=loc)

    # ------------------------------------------------------------------ lambdas (C++ sources)
    def _declared(self, name):
        for lam in self.lambdas.values():
            if name in dict(lam["caps"]):
                lam["shadowed"].add(name)

    def _lambda(self, decl, comp):
        """Lift ``auto f = [&](params) { body };`` (prepared by cxx.py as a prototype and a block)
        to a helper function before the enclosing one. Variables of the enclosing function that
        the body uses become extra parameters: by value when the body only reads them, by pointer
        (uses written ``(*x)``) when it assigns them or takes their address."""
        from ..ir.visit import rewrite, walk
        name = decl.name[len(LAMBDA):]
        if self.in_lambda:
            raise self.err("XP1142", decl, name=name, detail="a lambda inside a lambda")
        outer = dict(self.scope)
        local = {k for k, v in outer.items() if k not in self.globals or self.globals[k] is not v}
        fdecl = decl.type
        params = []
        for pd in (fdecl.args.params if fdecl.args is not None else ()):
            if isinstance(pd, (c_ast.EllipsisParam, c_ast.ID)):
                raise self.err("XP1142", decl, name=name, detail="a parameter without a type")
            t = self.type(pd.type)
            if isinstance(pd, c_ast.Typename) or not pd.name:
                if isinstance(t, N.Scalar) and t.dtype == "void":
                    continue
                raise self.err("XP1142", decl, name=name, detail="a parameter without a name")
            params.append(N.Param(pd.name, t, loc=self.loc(pd)))
            self.scope[pd.name] = t
        ret = self.type(fdecl.type)
        self.in_lambda = True
        try:
            body = self.block(comp)
            if _is_auto(ret):
                rets = [n for n in walk(body) if isinstance(n, N.Return)]
                vals = [r.value for r in rets if r.value is not None]
                ret = self._resolve(self.type_of(vals[0])) if vals else N.Scalar("void", "void")
                if ret is None:
                    raise self.err("XP1142", decl, name=name, detail="its return type cannot be told from its "
                                                                     "return statement; write -> T")
                if isinstance(ret, (N.Scalar, N.Named, N.Vector)):
                    ret = ret.with_(const=False)
        finally:
            self.in_lambda = False
            self.scope = outer
        inner = {p.name for p in params} | {n.name for n in walk(body) if isinstance(n, N.Decl)} | \
            {n.var for n in walk(body) if isinstance(n, N.For)}
        caps = []
        for n in walk(body):
            if isinstance(n, N.Var) and n.name in local and n.name not in inner and n.name not in dict(caps):
                caps.append((n.name, False))

        def root(x):
            while isinstance(x, N.Member) and not x.arrow:
                x = x.base
            return x.name if isinstance(x, N.Var) else None

        written = set()
        for n in walk(body):
            if isinstance(n, (N.Assign, N.AssignExpr)):
                written.add(root(n.target))
            elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&"):
                written.add(root(n.operand))
        extra = []
        for i, (c, _) in enumerate(caps):
            t = outer.get(c)
            if t is None:
                raise self.err("XP1142", decl, name=name, detail=f"the type of the captured '{c}' is not known here")
            rt = self._resolve(t)
            if isinstance(rt, N.Array) and len(rt.dims) == 1 and not isinstance(rt.dims[0], N.Const):
                t = N.Pointer(rt.elem)     # a run-time sized array (a std::vector buffer) is passed as T*
            by_ptr = c in written and not isinstance(self._resolve(t), N.Array)
            caps[i] = (c, by_ptr)
            extra.append(N.Param(c, N.Pointer(t) if by_ptr else t))
        ptr = {c for c, b in caps if b}
        if ptr:
            body = rewrite(body, lambda n: N.UnOp("*", N.Var(n.name), loc=n.loc)
                           if isinstance(n, N.Var) and n.name in ptr else n)
        helper = f"{self.cur_func}_{name}" if self.cur_func else name
        while helper in self.made or helper in self.func_ret:
            helper += "_"
        self.made.add(helper)
        self.func_ret[helper] = ret
        if self.p.dialect == "c" or self.ctx_func == "host":
            kind, attrs = ("device" if self.p.dialect == "c" else "host"), ("static",)
        else:
            kind, attrs = "device", ()
        self.pending.append(N.Func(helper, tuple(params) + tuple(extra), ret, body, kind, attrs, loc=self.loc(decl)))
        self.lambdas[name] = {"helper": helper, "caps": caps, "shadowed": set()}

    def _lambda_call(self, name, args, node, loc):
        lam = self.lambdas[name]
        extra = []
        for c, by_ptr in lam["caps"]:
            if c in lam["shadowed"]:
                raise self.err("XP1142", node, name=name, detail=f"it captures '{c}', which is declared again "
                                                                 "between the lambda and this call; rename one")
            extra.append(N.UnOp("&", N.Var(c)) if by_ptr else N.Var(c))
        return N.Call(lam["helper"], tuple(args) + tuple(extra), loc=loc)

    def _cg_reduce_helper(self, name, arg, node):
        """The __device__ function a ``cg::reduce(tile, v, cg::plus<T>())`` call becomes: an
        xor-butterfly over the tile's lanes, so every lane gets the result (as cg::reduce gives)."""
        op, size = name[len(CG_REDUCE):].rsplit("_", 1)
        size = int(size)
        t = self._resolve(self.type_of(arg))
        if not isinstance(t, N.Scalar) or t.dtype in ("void", "bool", "str"):
            raise self.err("XP1102", node, construct="cooperative_groups reduce of a value whose type is not "
                                                     "known here (declare it with a scalar type)")
        t = t.with_(const=False, volatile=False) if hasattr(t, "volatile") else t.with_(const=False)
        helper = f"cg_reduce_{op}_{t.spelling.replace(' ', '_')}_{size}"
        if helper in self.made:
            return helper
        self.made.add(helper)
        self.func_ret[helper] = t
        v = N.Var("v")
        mask = N.Const(0xffffffff, "uint32", "0xffffffffu")
        stmts = []
        off = size // 2
        while off >= 1:
            other = N.Intrinsic("__shfl_xor_sync", (mask, v, N.Const(off, "int32", str(off)),
                                                     N.Const(size, "int32", str(size))))
            if op == "add":
                stmts.append(N.Assign(v, "+=", other))
            else:
                flt = t.dtype.startswith("float")
                fn = {("max", True): "fmaxf" if t.dtype == "float32" else "fmax",
                      ("min", True): "fminf" if t.dtype == "float32" else "fmin",
                      ("max", False): "max", ("min", False): "min"}[(op, flt)]
                stmts.append(N.Assign(v, "=", N.Intrinsic(fn, (v, other))))
            off //= 2
        stmts.append(N.Return(v))
        self.pending.append(N.Func(helper, (N.Param("v", t),), t, N.Block(tuple(stmts)), "device", ("inline",)))
        return helper

    def _ctor_decl(self, d):
        # the dialect layer wrote "name = __xp_ctor_T(" for a `T name(args)` declaration
        k = self.p.tok_index(d.coord.line, d.coord.column)
        return k is not None and "__xp_ctor_" in (self.p.toks[k].out or "")

    # ------------------------------------------------------------------ statements
    def block(self, comp) -> N.Block:
        stmts = []
        items = list(comp.block_items or [])
        pend = []
        skip = None
        for k, it in enumerate(items):
            if it is skip:
                continue
            if isinstance(it, c_ast.Decl) and isinstance(it.type, c_ast.FuncDecl) and \
                    (it.name or "").startswith(LAMBDA):
                body = items[k + 1] if k + 1 < len(items) else None
                if not isinstance(body, c_ast.Compound):   # pragma: no cover - cxx.py writes the pair
                    raise self.err("XP1142", it, name=it.name[len(LAMBDA):], detail="no body")
                stmts.extend(self.claim(*self._coord(it)))
                self._lambda(it, body)
                skip = body
                continue
            line, col = self._coord(it)
            claimed = self.claim(line, col)
            if claimed and pend:
                stmts.extend(pend)
                pend = []
            stmts.extend(claimed)
            if isinstance(it, c_ast.Pragma):
                if LOOP_PRAGMA.match(it.string or ""):
                    pend.append(N.Pragma(it.string.strip(), loc=self.loc(it)))
                else:
                    stmts.append(N.Pragma(it.string.strip(), loc=self.loc(it)))
                continue
            lowered = self.stmt(it)
            if pend:
                if len(lowered) == 1 and isinstance(lowered[0], (N.For, N.CFor)):
                    lowered = [self._attach_pragmas(lowered[0], pend)]
                else:
                    stmts.extend(pend)
                pend = []
            stmts.extend(lowered)
        stmts.extend(pend)
        close = self.p.brace_close.get((comp.coord.line, comp.coord.column)) if comp.coord else None
        if close is not None:
            stmts.extend(self.claim(close, 0))
        return N.Block(tuple(stmts), loc=self.loc(comp))

    def _attach_pragmas(self, loop, pragmas):
        texts = tuple(p.text for p in pragmas)
        if isinstance(loop, N.For):
            binding = loop.binding
            if any(re.match(r"omp\s+(parallel\s+for|for|parallel\s+for\s+simd)\b", t) for t in texts):
                binding = "omp"
            return loop.with_(pragmas=texts + loop.pragmas, binding=binding)
        return loop.with_(pragmas=texts + loop.pragmas)

    def body(self, node) -> N.Block:
        """A loop body, always as a Block."""
        if isinstance(node, c_ast.Compound):
            return self.block(node)
        line, col = self._coord(node)
        claimed = self.claim(line, col)
        stmts = self.stmt(node)
        # a comment at the end of the (single-line) body belongs inside the braces we add
        while self.ti < len(self.trivia) and self.trivia[self.ti].trailing and \
                self.trivia[self.ti].kind == "comment" and self.trivia[self.ti].line == line:
            stmts = stmts + self.claim(line + 1, 0)[:1]
        loc = self.loc(node)
        # col 0 marks a block the source did not brace (the printer's blank-line logic uses it)
        return N.Block(tuple(claimed) + tuple(stmts), loc=N.Loc(loc.file, loc.line, 0) if loc else None)

    def branch(self, node):
        if node is None:
            return None
        if isinstance(node, c_ast.Compound):
            return self.block(node)
        line, col = self._coord(node)
        claimed = self.claim(line, col)
        s = self.stmt(node)
        if claimed or len(s) != 1:
            return N.Block(tuple(claimed) + tuple(s), loc=self.loc(node))
        return s[0]

    def stmt(self, s) -> list:
        loc = self.loc(s)
        if isinstance(s, c_ast.Decl):
            if isinstance(s.type, c_ast.FuncDecl):
                return [self.func_from_decl(s, None)]
            return [self.decl(s)]
        if isinstance(s, c_ast.DeclList):
            return [self.decl(d) for d in s.decls]
        if isinstance(s, c_ast.Typedef):
            return [N.Raw(self.gen.visit(s) + ";", loc=loc)]
        if isinstance(s, c_ast.Assignment):
            return [N.Assign(self.expr(s.lvalue), s.op, self.expr(s.rvalue), loc=loc)]
        if isinstance(s, c_ast.FuncCall):
            x = self.call_stmt(s)
            if x is not None:
                return [x]
            return [N.ExprStmt(self.expr(s), loc=loc)]
        if isinstance(s, c_ast.Compound):
            return [self.block(s)]
        if isinstance(s, c_ast.For):
            return [self.for_(s)]
        if isinstance(s, c_ast.While):
            return [N.While(self.expr(s.cond), self.branch(s.stmt), loc=loc)]
        if isinstance(s, c_ast.DoWhile):
            return [N.While(self.expr(s.cond), self.branch(s.stmt), do=True, loc=loc)]
        if isinstance(s, c_ast.If):
            return [N.If(self.expr(s.cond), self.branch(s.iftrue), self.branch(s.iffalse), loc=loc)]
        if isinstance(s, c_ast.Return):
            return [N.Return(self.expr(s.expr) if s.expr is not None else None, loc=loc)]
        if isinstance(s, c_ast.Break):
            return [N.Break(loc=loc)]
        if isinstance(s, c_ast.Continue):
            return [N.Continue(loc=loc)]
        if isinstance(s, c_ast.EmptyStatement):
            return []
        if isinstance(s, c_ast.Pragma):
            return [N.Pragma(s.string.strip(), loc=loc)]
        if isinstance(s, (c_ast.Switch, c_ast.Label, c_ast.Goto, c_ast.Case, c_ast.Default)):
            return [N.Raw(self._raw(s), loc=loc)]
        if isinstance(s, c_ast.Node) and hasattr(s, "coord"):
            return [N.ExprStmt(self.expr(s), loc=loc)]
        raise self.err("XP1112", s, detail=type(s).__name__)

    def _raw(self, s):
        text = self.gen.visit(s)
        text = re.sub(r"__xpw_(\w+)", r"wmma::\1", text)
        text = re.sub(r"__xp_ctor_(\w+)", r"\1", text)
        return text.rstrip()

    def call_stmt(self, s):
        loc = self.loc(s)
        fn = s.name
        args = list(s.args.exprs) if s.args is not None else []
        # k<<<cfg>>>(args), prepared as k(cfg)(args)
        if isinstance(fn, c_ast.FuncCall) and isinstance(fn.name, c_ast.ID) and \
                self.p.is_launch(fn.name.coord.line, fn.name.coord.column):
            cfg = [self.expr(a) for a in (fn.args.exprs if fn.args else [])]
            if len(cfg) < 2:
                raise self.err("XP1111", fn, detail="a launch needs at least grid and block")
            if self.p.dialect == "bang":
                if len(cfg) != 3:
                    raise self.err("XP1111", fn, detail="a BANG launch is <<<dim, func_type, queue>>>")
                return N.Launch(fn.name.name, cfg[0], cfg[1], None, cfg[2],
                                tuple(self.expr(a) for a in args), loc=loc)
            return N.Launch(fn.name.name, cfg[0], cfg[1], cfg[2] if len(cfg) > 2 else None,
                            cfg[3] if len(cfg) > 3 else None, tuple(self.expr(a) for a in args), loc=loc)
        if isinstance(fn, c_ast.ID):
            name = fn.name
            if name in BARRIERS:
                return N.Barrier(BARRIERS[name], tuple(self.expr(a) for a in args), loc=loc)
            if name == "hipLaunchKernelGGL":
                if len(args) < 5:
                    raise self.err("XP1111", s, detail="hipLaunchKernelGGL needs kernel, grid, block, shmem, stream")
                k = args[0]
                if isinstance(k, c_ast.FuncCall) and isinstance(k.name, c_ast.ID) and k.args:
                    k = k.args.exprs[0]   # HIP_KERNEL_NAME(k)
                if not isinstance(k, c_ast.ID):
                    raise self.err("XP1111", s, detail="kernel must be a name")
                return N.Launch(k.name, self.expr(args[1]), self.expr(args[2]), self.expr(args[3]),
                                self.expr(args[4]), tuple(self.expr(a) for a in args[5:]), style="ggl", loc=loc)
        return None

    def for_(self, s):
        loc = self.loc(s)
        if isinstance(s.init, c_ast.DeclList):    # the loop variables are in view in the body
            for d in s.init.decls:
                try:
                    t = self.type(d.type)
                    if _is_auto(t):
                        t = self._auto_type(d, t, self.expr(d.init)) if d.init is not None else None
                except XPError:
                    t = None
                if t is not None:
                    self.scope[d.name] = t
                self._declared(d.name)
        body = self.body(s.stmt)
        canon = self._canonical(s, body)
        if canon is not None:
            return canon
        init = None
        if s.init is not None:
            if isinstance(s.init, c_ast.DeclList):
                ds = [self.decl(d) for d in s.init.decls]
                init = ds[0] if len(ds) == 1 else N.Block(tuple(ds))
            else:
                init = N.ExprStmt(self.expr(s.init))
        return N.CFor(init, self.expr(s.cond) if s.cond is not None else None,
                      self.expr(s.next) if s.next is not None else None, body, loc=loc)

    def _canonical(self, s, body):
        var = lo = vtype = None
        if isinstance(s.init, c_ast.DeclList) and len(s.init.decls) == 1:
            d = s.init.decls[0]
            if d.init is None or not isinstance(d.type, c_ast.TypeDecl):
                return None
            vtype = self.type(d.type)
            if _is_auto(vtype):
                vtype = self._auto_type(d, vtype, self.expr(d.init))
            if not (isinstance(vtype, N.Scalar) and vtype.dtype.startswith(("int", "uint"))) or vtype.const:
                return None
            var, lo = d.name, self.expr(d.init)
        elif isinstance(s.init, c_ast.Assignment) and s.init.op == "=" and isinstance(s.init.lvalue, c_ast.ID):
            var, lo = s.init.lvalue.name, self.expr(s.init.rvalue)
        else:
            return None
        c = s.cond
        if not isinstance(c, c_ast.BinaryOp):
            return None
        if c.op in ("<", "<=") and isinstance(c.left, c_ast.ID) and c.left.name == var:
            hi, cmp = self.expr(c.right), c.op
        elif c.op in (">", ">=") and isinstance(c.right, c_ast.ID) and c.right.name == var:
            hi, cmp = self.expr(c.left), "<" if c.op == ">" else "<="
        else:
            return None
        if cmp == "<=":
            hi = N.BinOp("+", hi, N.Const(1, "int32", "1"))
        nx = s.next
        step = None
        if isinstance(nx, c_ast.UnaryOp) and nx.op in ("p++", "++") and isinstance(nx.expr, c_ast.ID) \
                and nx.expr.name == var:
            step = N.Const(1, "int32", "1")
        elif isinstance(nx, c_ast.Assignment) and isinstance(nx.lvalue, c_ast.ID) and nx.lvalue.name == var:
            if nx.op == "+=":
                step = self.expr(nx.rvalue)
            elif nx.op == "=" and isinstance(nx.rvalue, c_ast.BinaryOp) and nx.rvalue.op == "+" and \
                    isinstance(nx.rvalue.left, c_ast.ID) and nx.rvalue.left.name == var:
                step = self.expr(nx.rvalue.right)
        if step is None:
            return None
        if isinstance(step, N.Const) and not (isinstance(step.value, int) and step.value > 0):
            return None
        from ..ir.visit import walk
        for n in walk(body):
            tgt = None
            if isinstance(n, (N.Assign, N.AssignExpr)):
                tgt = n.target
            elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
                tgt = n.operand
            elif isinstance(n, N.UnOp) and n.op == "&":
                tgt = n.operand
            elif isinstance(n, N.Decl) and n.name == var:
                return None
            if isinstance(tgt, N.Var) and tgt.name == var:
                return None
        if any(isinstance(n, N.Var) and n.name == var for n in walk(hi)) or \
                any(isinstance(n, N.Var) and n.name == var for n in walk(step)):
            return None
        return N.For(var, lo, hi, step, body, None, vtype, (), cmp, loc=self.loc(s))

    # ------------------------------------------------------------------ expressions
    def expr(self, e):
        loc = self.loc(e)
        if isinstance(e, c_ast.Constant):
            return self.const(e, loc)
        if isinstance(e, c_ast.ID):
            n = e.name
            if n in ("true", "false"):
                return N.Const(n == "true", "bool", n, loc=loc)
            if n == "nullptr":
                return N.Const(None, "void", "nullptr", loc=loc)
            if n in BUILTIN_IDS:
                if n.startswith("hip"):
                    m = re.match(r"hip(Thread|Block)(Idx|Dim)_([xyz])|hipGridDim_([xyz])", n)
                    if m and m.group(1):
                        return N.Builtin(f"{m.group(1).lower()}{m.group(2)}.{m.group(3)}", loc=loc)
                    if m:
                        return N.Builtin(f"gridDim.{m.group(4)}", loc=loc)
                return N.Builtin(n, loc=loc)
            if n.startswith("__xpw_"):
                return N.Var("wmma::" + n[6:], loc=loc)
            if n in self.lambdas:
                raise self.err("XP1142", e, name=n, detail="it is used other than by a call (passed or copied); "
                                                           "only calls f(...) are rewritten")
            return N.Var(n, loc=loc)
        if isinstance(e, c_ast.BinaryOp):
            return N.BinOp(e.op, self.expr(e.left), self.expr(e.right), loc=loc)
        if isinstance(e, c_ast.UnaryOp):
            if e.op == "sizeof":
                arg = self.type(e.expr.type) if isinstance(e.expr, c_ast.Typename) else self.expr(e.expr)
                return N.SizeOf(arg, loc=loc)
            return N.UnOp(e.op, self.expr(e.expr), loc=loc)
        if isinstance(e, c_ast.TernaryOp):
            return N.Cond(self.expr(e.cond), self.expr(e.iftrue), self.expr(e.iffalse), loc=loc)
        if isinstance(e, c_ast.ArrayRef):
            return N.Index(self.expr(e.name), self.expr(e.subscript), loc=loc)
        if isinstance(e, c_ast.StructRef):
            if e.type == "." and isinstance(e.name, c_ast.ID) and e.name.name in BUILTIN_DIMS \
                    and e.field.name in ("x", "y", "z"):
                return N.Builtin(f"{e.name.name}.{e.field.name}", loc=loc)
            return N.Member(self.expr(e.name), e.field.name, e.type == "->", loc=loc)
        if isinstance(e, c_ast.FuncCall):
            args = tuple(self.expr(a) for a in (e.args.exprs if e.args is not None else []))
            if isinstance(e.name, c_ast.ID):
                name = e.name.name
                if name.startswith("__xp_ctor_"):
                    return N.Call(name[len("__xp_ctor_"):], args, loc=loc)
                if name in self.lambdas:
                    return self._lambda_call(name, args, e, loc)
                if name.startswith(CG_REDUCE) and len(args) == 1:
                    return N.Call(self._cg_reduce_helper(name, args[0], e), args, loc=loc)
                if name.startswith(STD_PREFIX):
                    if self.p.dialect == "c":   # C has no overloads: pick the spelling by type
                        return self.std_call(name[len(STD_PREFIX):], args, loc)
                    name = name[len(STD_PREFIX):]   # cuda/hip/bang: the overloaded name, as before
                if name.startswith("__xpw_"):
                    name = "wmma::" + name[6:]
                key = canonical_name(name, self.p.dialect)
                if key is not None:
                    return N.Intrinsic(key, args, loc=loc)
                return N.Call(name, args, loc=loc)
            return N.Call(self.expr(e.name), args, loc=loc)
        if isinstance(e, c_ast.Cast):
            return N.Cast(self.type(e.to_type), self.expr(e.expr), loc=loc)
        if isinstance(e, c_ast.InitList):
            return N.InitList(tuple(self.expr(x) for x in e.exprs), loc=loc)
        if isinstance(e, c_ast.CompoundLiteral):
            return N.CompoundLit(self.type(e.type), self.expr(e.init), loc=loc)
        if isinstance(e, c_ast.Assignment):
            return N.AssignExpr(e.op, self.expr(e.lvalue), self.expr(e.rvalue), loc=loc)
        if isinstance(e, c_ast.ExprList):
            return N.Comma(tuple(self.expr(x) for x in e.exprs), loc=loc)
        if isinstance(e, c_ast.Typename):
            return N.SizeOf(self.type(e.type), loc=loc)
        raise self.err("XP1112", e, detail=f"expression {type(e).__name__}")

    def const(self, e, loc):
        v = e.value
        if e.type == "string":
            return N.Const(v, "str", v, loc=loc)
        if e.type == "char":
            return N.Const(v, "char", v, loc=loc)
        low = v.lower()
        is_hex = low.startswith("0x")
        if e.type in ("float", "double", "long double") or (not is_hex and ("." in low or "e" in low)) \
                or (is_hex and "p" in low):
            s = low.rstrip("fl")
            try:
                val = float.fromhex(s) if is_hex else float(s)
            except ValueError:
                val = float("nan")
            dt = "float32" if low.endswith("f") else "float64"
            return N.Const(val, dt, v, loc=loc)
        s = low.rstrip("ul")
        try:
            val = int(s, 0) if not (len(s) > 1 and s.startswith("0") and s[1].isdigit()) else int(s, 8)
        except ValueError:
            val = 0
        suf = low[len(s):]
        dt = ("uint64" if "l" in suf else "uint32") if "u" in suf else ("int64" if "l" in suf or val > 2**31 - 1
                                                                         else "int32")
        return N.Const(val, dt, v, loc=loc)


def _is_auto(t) -> bool:
    return isinstance(t, N.Named) and t.name == AUTO


_RANK = ["bool", "char", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
         "bfloat16", "float32", "float64"]


def _arith(lt, rt):
    """The type of ``a op b`` for scalar operands (usual arithmetic conversions, simplified)."""
    if lt is None or rt is None:
        return lt or rt
    if isinstance(lt, N.Vector):
        return lt
    if isinstance(rt, N.Vector):
        return rt
    if isinstance(lt, N.Scalar) and isinstance(rt, N.Scalar):
        a, b = lt.dtype, rt.dtype
        if a in _RANK and b in _RANK:
            w = max(a, b, key=_RANK.index)
            if _RANK.index(w) < _RANK.index("int32"):
                return N.Scalar("int32", "int")
            return (lt if w == a else rt).with_(const=False)
    return lt


def _vector_lanes(expr: str, dtype: str):
    """Lanes of ``__attribute__((vector_size(expr)))`` over elements of ``dtype``."""
    sizes = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4, "int8": 1, "uint8": 1,
             "char": 1, "int16": 2, "uint16": 2, "int64": 8, "uint64": 8}
    e = re.sub(r"sizeof\s*\(\s*([^()]*)\)",
               lambda m: str(sizes.get(SCALAR_NAMES.get(" ".join(m.group(1).split()), ""), 0)), expr)
    if not re.fullmatch(r"[\d\s*+()/-]+", e) or dtype not in sizes:
        return None
    try:
        nbytes = int(eval(e, {"__builtins__": {}}))
    except Exception:
        return None
    return nbytes // sizes[dtype] if nbytes % sizes[dtype] == 0 and nbytes > 0 else None
