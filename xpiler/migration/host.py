"""Host launchers migrated with the kernel (issue 5, item 3).

``migrate_host`` turns the host functions of a source program (``<entry>_host``: allocate,
copy in, launch, copy out, free) into host functions of the target dialect:

- every host runtime call, type and constant is translated through the single mapping table
  ``xpiler.mappings.host_api.TABLE``: the source form of a row is matched structurally
  against the call (``cudaMemcpy(d, h, n, cudaMemcpyHostToDevice)`` picks the "copy host to
  device" row by its constant operand), its operands are bound, and the target form is
  instantiated with them;
- a call with no counterpart in the target is kept as a ``// XP4101 ...`` comment and an
  XP4101 warning (with the call's location) is reported;
- the kernel launch is rebuilt from the FINAL kernel's launch configuration (the ``launch``
  dict over kernel parameter names), each parameter replaced by the argument expression at
  the launch site; the statements that only computed the old configuration (``dim3 grid``,
  ``int blocks = ...`` with its clamps, ``cnrtDim3_t``/``cnrtFunctionType_t``, the launch
  queue with its create/sync/destroy) are dropped;
- a c source has no launcher: one is generated from the spec (allocate every array, copy in
  ``in``/``inout``, launch, copy out ``out``/``inout``, free), named ``<entry>_host`` with the
  kernel's parameter list.

``test_host_launcher`` verifies a launcher by running it: a generated main calls
``<entry>_host(host arrays..., scalars...)`` (the emulators implement the device runtime on the
host heap) and the outputs are compared with the reference and/or a source kernel, exactly like
the kernel tester does (fresh inputs per seed, poisoned outputs, inputs checked unmodified).
"""
from __future__ import annotations

import functools
import re
import shutil
import tempfile
import time
from dataclasses import fields, replace
from pathlib import Path

from ..diagnostics import XPError
from ..expr import ExprError, to_c
from ..ir import nodes as N
from ..ir.visit import rewrite, substitute, walk
from ..mappings.host_api import BY_CONCEPT, DIALECTS, TABLE, HostApi

_OP = "__xp_op_"
_API_PREFIX = {"cuda": ("cuda",), "hip": ("hip",), "bang": ("cnrt", "CNRT_"), "c": ()}
_ALL_PREFIXES = ("cuda", "hip", "cnrt", "CNRT_")
#: launch-configuration types whose declarations are dropped with the old launch
_CONFIG_TYPES = {"dim3", "cnrtDim3_t", "cnrtFunctionType_t"}
_FUNC_TYPE = {"block": "CNRT_FUNC_TYPE_BLOCK", "union1": "CNRT_FUNC_TYPE_UNION1",
              "union2": "CNRT_FUNC_TYPE_UNION2", "union4": "CNRT_FUNC_TYPE_UNION4",
              "union8": "CNRT_FUNC_TYPE_UNION8"}


class _Unsupported(Exception):
    def __init__(self, name: str, loc, why: str = ""):
        super().__init__(name)
        self.name, self.loc, self.why = name, loc, why


# ------------------------------------------------------------------------------ templates
def _parse_expr(text: str, dialect: str) -> N.Expr:
    from ..frontend import parse_text
    prog = parse_text(f"void __xp_t(void) {{ __xp_e = {text}; }}", dialect, "<host-api>")
    st = prog.funcs[0].body.stmts[0]
    return st.value


@functools.lru_cache(maxsize=None)
def template(row_concept: str, dialect: str) -> N.Expr | None:
    """The row's form in ``dialect`` parsed to an IR expression (operands as ``__xp_op_<name>``
    variables); None for a type, a header, or no form."""
    row = BY_CONCEPT[row_concept]
    form = row.forms.get(dialect)
    if form is None or form.startswith("#") or kind_of(row) == "type":
        return None
    return _form_expr(form, dialect)


@functools.lru_cache(maxsize=None)
def read_templates(row_concept: str, dialect: str) -> tuple:
    """The row's further SOURCE forms in ``dialect`` (``HostApi.reads``: what people write, e.g.
    ``p = malloc(n)`` in c host code), parsed like ``template``; they may bind operands the row
    does not have (``$align``)."""
    row = BY_CONCEPT[row_concept]
    return tuple(t for t in (_form_expr(f, dialect) for f in row.reads.get(dialect, ())) if t is not None)


def _form_expr(form: str, dialect: str) -> N.Expr | None:
    text = re.sub(r"\$(\w+)", lambda m: _OP + m.group(1), form)
    if "<<<" in text:
        return None
    try:
        return _parse_expr(text, dialect)
    except Exception:  # noqa: BLE001 - a form the front end cannot read is simply not matchable
        return None


def kind_of(row: HostApi) -> str:
    """'header', 'type', 'launch', 'value' (a constant) or 'call'."""
    if row.concept == "launch kernel":
        return "launch"
    forms = [f for f in row.forms.values() if f]
    if any(f.startswith("#") for f in forms):
        return "header"
    if row.concept.endswith(" type"):
        return "type"
    if not row.operands and all("(" not in f for f in forms):
        return "value"
    return "call"


def _strip_cast(e):
    while isinstance(e, N.Cast):
        e = e.expr
    return e


def _match(t, s, binds: dict) -> bool:
    """Does source expression ``s`` fit template ``t``?  Binds the operands."""
    if isinstance(t, N.Var) and t.name.startswith(_OP):
        k = t.name[len(_OP):]
        if k in binds:
            return binds[k] == s
        binds[k] = s
        return True
    if isinstance(t, N.Cast):
        return _match(t.expr, _strip_cast(s), binds)
    if isinstance(s, N.Cast) and not isinstance(t, N.Cast) and not isinstance(t, N.Var):
        return _match(t, _strip_cast(s), binds)
    if type(t) is not type(s):
        return False
    if isinstance(t, N.Var):
        return t.name == s.name
    if isinstance(t, N.Const):
        return t.value == s.value
    if isinstance(t, N.Call):
        return t.func == s.func and len(t.args) == len(s.args) and all(
            _match(a, b, binds) for a, b in zip(t.args, s.args))
    if isinstance(t, N.UnOp):
        return t.op == s.op and _match(t.operand, s.operand, binds)
    if isinstance(t, N.BinOp):
        return t.op == s.op and _match(t.lhs, s.lhs, binds) and _match(t.rhs, s.rhs, binds)
    if isinstance(t, N.Comma):
        return len(t.exprs) == len(s.exprs) and all(_match(a, b, binds) for a, b in zip(t.exprs, s.exprs))
    if isinstance(t, N.AssignExpr):
        return t.op == s.op and _match(t.target, s.target, binds) and _match(t.value, s.value, binds)
    return t == s


def match_call(call: N.Expr, dialect: str) -> tuple[HostApi, dict] | None:
    """The table row (and bound operands) whose ``dialect`` form this call is: the printed
    forms first, then the rows' further source forms (``reads``)."""
    found = match_all(call, dialect)
    return found[0] if found else None


def match_all(call: N.Expr, dialect: str) -> list[tuple[HostApi, dict]]:
    """Every table row (with its bound operands) that ``call`` is a ``dialect`` form of, the
    rows matched by a printed form before those matched by a read form. In c host code the
    three copy rows all match ``memcpy``: ``host_c`` picks one by the buffers' side."""
    out = []
    for reads in (False, True):
        for row in TABLE:
            if kind_of(row) not in ("call", "value"):
                continue
            ts = read_templates(row.concept, dialect) if reads else (template(row.concept, dialect),)
            for t in ts:
                binds: dict = {}
                if t is not None and _match(t, call, binds):
                    out.append((row, binds))
                    break
    return out


def instantiate(row: HostApi, dialect: str, binds: dict, loc=None) -> N.Expr:
    """The row's ``dialect`` form with its operands replaced by ``binds`` (IR expressions)."""
    t = template(row.concept, dialect)
    if t is None:
        raise _Unsupported(row.concept, loc, f"no {dialect} form")
    return substitute(t, {_OP + k: v for k, v in binds.items()})


def type_name(name: str, src: str, dst: str) -> str | None:
    for row in TABLE:
        if kind_of(row) == "type" and row.forms.get(src) == name:
            return row.forms.get(dst)
    return None


def is_api_name(name: str) -> bool:
    return isinstance(name, str) and name.startswith(_ALL_PREFIXES)


# ----------------------------------------------------------------------------- translation
class _HostTranslator:
    def __init__(self, src: str, dst: str, file: str, kernel_from: str, kernel_to: str, launch: dict,
                 kernel_params: list[str]):
        self.src, self.dst, self.file = src, dst, file
        self.kernel_from, self.kernel_to = kernel_from, kernel_to
        self.launch, self.kernel_params = launch or {}, list(kernel_params)
        self.diags: list[XPError] = []
        self.src_printer = None
        self.c_host = None

    # -- diagnostics
    def _warn(self, name: str, loc, stmt) -> N.Comment:
        line = loc.line if loc is not None else None
        self.diags.append(XPError("XP4101", name=name, dst=self.dst, file=self.file, line=line))
        text = self._src_text(stmt)
        return N.Comment(f"/* XP4101: {name} has no {self.dst} counterpart; source: {text} */", loc=loc)

    def _src_text(self, stmt) -> str:
        from ..printers import printer_for
        p = printer_for(self.src)
        p.out, p.level = [], 0
        p.src_dialect = self.src
        try:
            p.stmt(stmt)
            text = " ".join(x.strip() for x in p.out)
        except Exception:  # noqa: BLE001
            text = "?"
        return text.replace("*/", "* /")

    # -- expressions
    def tx_expr(self, node):
        """Top-down: an API call is matched on its source operands, which are then translated."""
        n = node
        if isinstance(n, tuple):
            return tuple(self.tx_expr(x) for x in n)
        if not isinstance(n, N.Node):
            return n
        if isinstance(n, N.Call) and isinstance(n.func, str) and (is_api_name(n.func) or n.func == "dim3"):
            if n.func == "dim3" and self.dst in ("cuda", "hip"):
                return n.with_(args=self.tx_expr(n.args))
            return self._api(n, n.func)
        if isinstance(n, N.Var) and is_api_name(n.name):
            return self._api(n, n.name)
        if isinstance(n, N.Named) and (is_api_name(n.name) or n.name in _CONFIG_TYPES):
            new = type_name(n.name, self.src, self.dst)
            if new is None:
                raise _Unsupported(n.name, n.loc)
            return n.with_(name=new)
        changes = {}
        for f in fields(n):
            if f.name == "loc":
                continue
            v = getattr(n, f.name)
            if isinstance(v, (N.Node, tuple)):
                nv = self.tx_expr(v)
                if nv is not v:
                    changes[f.name] = nv
        return replace(n, **changes) if changes else n

    def _api(self, n, name):
        m = match_call(n, self.src)
        if m is None:
            raise _Unsupported(name, n.loc, "not in the mapping table")
        row, binds = m
        if row.forms.get(self.dst) is None:
            raise _Unsupported(name, n.loc)
        binds = {k: self.tx_expr(v) for k, v in binds.items()}
        if self.dst == "bang" and row.concept == "copy host to device" and not isinstance(binds["src"], N.Cast):
            binds["src"] = N.Cast(N.Pointer(N.Scalar("void", "void")), binds["src"])  # CNRT takes void*
        return instantiate(row, self.dst, binds, n.loc)

    # -- statements
    def tx_block(self, stmts) -> tuple:
        out: list = []
        for s in stmts:
            out += self.tx_stmt(s)
        return tuple(out)

    def tx_stmt(self, s) -> list:
        if isinstance(s, N.Launch):
            return self.launch_seq(s)
        if isinstance(s, N.Block):
            return [s.with_(stmts=self.tx_block(s.stmts))]
        if isinstance(s, (N.Comment, N.Raw, N.Pragma)):
            return [s]
        if self.c_host is not None:    # c host code: malloc/memcpy/free on device buffers (host_c.py)
            out = self.c_host.stmt(s, self)
            if out is not None:
                return out
        try:
            if isinstance(s, N.If):
                then = self._as_block(s.then)
                els = self._as_block(s.else_) if s.else_ is not None else None
                return [s.with_(cond=self.tx_expr(s.cond), then=then, else_=els)]
            if isinstance(s, (N.For, N.While, N.CFor)):
                body = self._as_block(s.body)
                return [self.tx_expr(s.with_(body=N.Block(()))).with_(body=body)]
            new = self.tx_expr(s)
        except _Unsupported as u:
            return [self._warn(u.name, u.loc or s.loc, s)]
        return self._simplify(new, s)

    def _as_block(self, s):
        stmts = s.stmts if isinstance(s, N.Block) else (s,)
        return N.Block(self.tx_block(stmts), loc=s.loc)

    def _simplify(self, new, old) -> list:
        """Statement-level clean-up of value-returning forms (the c column's ``(x, 0)``)."""
        if isinstance(new, N.ExprStmt):
            e = new.expr
            if isinstance(e, N.Comma) and len(e.exprs) == 2 and isinstance(e.exprs[1], N.Const):
                return [new.with_(expr=e.exprs[0])]
            if isinstance(e, (N.Const, N.Var)) and not isinstance(old.expr, (N.Const, N.Var)):
                return []            # a call that is a no-op in the target ("0")
            if self.dst == "bang" and isinstance(old.expr, N.Call) and old.expr.func in (
                    "cudaDeviceSynchronize", "hipDeviceSynchronize"):
                return [N.Comment(f"// {old.expr.func}(): the launch above already waits on its queue",
                                  loc=old.loc)]
        return [new]

    # -- the launch
    def _cfg_expr(self, x, args: dict) -> N.Expr:
        if isinstance(x, bool):
            raise XPError("XP9001", detail=f"bad launch value {x!r}")
        if isinstance(x, int):
            return N.Const(x, "int32", str(x))
        text = str(x)
        try:
            c = to_c(text)
            text = str(c)
        except (ExprError, SyntaxError, KeyError):
            pass
        e = _parse_expr(text, "c")
        return substitute(e, args)

    def launch_seq(self, s: N.Launch) -> list:
        if s.kernel != self.kernel_from:
            return [self._warn(f"launch of '{s.kernel}' (not the migrated kernel)", s.loc, s)]
        try:
            args = tuple(self.tx_expr(a) for a in s.args)
        except _Unsupported as u:
            return [self._warn(u.name, u.loc or s.loc, s)]
        if len(args) != len(self.kernel_params):
            raise XPError("XP9001", detail=f"launch of {s.kernel} has {len(args)} arguments, the migrated "
                                           f"kernel {len(self.kernel_params)} parameters")
        bind = dict(zip(self.kernel_params, args))
        return launch_statements(self.dst, self.kernel_to, args, self.launch,
                                 lambda x: self._cfg_expr(x, bind), self.taken, s.loc)


def _fresh(base: str, taken: set) -> str:
    name, k = base, 1
    while name in taken:
        name, k = f"{base}{k}", k + 1
    taken.add(name)
    return name


def launch_statements(dst: str, kernel: str, args: tuple, launch: dict, cfg, taken: set, loc=None) -> list:
    """The launch of ``kernel(args)`` in ``dst`` with configuration ``launch`` (``cfg`` turns
    one configuration value into an IR expression over the host's variables)."""
    if dst == "c":
        return [N.ExprStmt(N.Call(kernel, args), loc=loc)]
    if dst in ("cuda", "hip"):
        grid = [cfg(v) for v in (list(launch.get("grid", [1, 1, 1])) + [1, 1, 1])[:3]]
        block = [cfg(v) for v in (list(launch.get("block", [1, 1, 1])) + [1, 1, 1])[:3]]
        sh = launch.get("shared_bytes")
        shmem = cfg(sh) if sh not in (None, 0, "0") else None
        return [N.Launch(kernel, N.Call("dim3", tuple(grid)), N.Call("dim3", tuple(block)), shmem, None, args,
                         "ggl" if dst == "hip" else "chevron", loc=loc)]
    # bang: task dimensions, function type, a queue of our own
    dims = [cfg(v) for v in (list(launch.get("dim", [1, 1, 1])) + [1, 1, 1])[:3]]
    ft = str(launch.get("func_type", "block")).lower()
    if ft not in _FUNC_TYPE:
        raise XPError("XP9001", detail=f"unknown bang func_type {ft!r}")
    dim_n, kt_n, q_n = _fresh("dim", taken), _fresh("ktype", taken), _fresh("queue", taken)
    q = N.Var(q_n)
    create = instantiate(BY_CONCEPT["create stream"], "bang", {"stream": q})
    sync = instantiate(BY_CONCEPT["synchronize stream"], "bang", {"stream": q})
    destroy = instantiate(BY_CONCEPT["destroy stream"], "bang", {"stream": q})
    return [
        N.Decl(dim_n, N.Named("cnrtDim3_t"), N.InitList(tuple(dims)), loc=loc),
        N.Decl(kt_n, N.Named("cnrtFunctionType_t"), N.Var(_FUNC_TYPE[ft])),
        N.Decl(q_n, N.Named("cnrtQueue_t")),
        N.ExprStmt(create),
        N.Launch(kernel, N.Var(dim_n), N.Var(kt_n), None, q, args, "chevron", loc=loc),
        N.ExprStmt(sync),
        N.ExprStmt(destroy),
    ]


# ------------------------------------------------------------------ old launch configuration
def _free_vars(node) -> set:
    return {n.name for n in walk(node) if isinstance(n, N.Var)}


def _defines(s) -> set | None:
    """Variables a statement only defines (None when it does anything else)."""
    if isinstance(s, N.Decl):
        return {s.name}
    if isinstance(s, N.Assign) and isinstance(s.target, N.Var):
        return {s.target.name}
    if isinstance(s, N.Block):
        out = set()
        for x in s.stmts:
            d = _defines(x)
            if d is None:
                return None
            out |= d
        return out
    if isinstance(s, N.If):
        a = _defines(s.then)
        b = _defines(s.else_) if s.else_ is not None else set()
        return None if a is None or b is None else a | b
    return None


def _stream_call_on(s, streams: set) -> bool:
    """``cudaStreamCreate(&q)`` / sync / destroy (any dialect) on a queue of the old launch."""
    if not (isinstance(s, N.ExprStmt) and isinstance(s.expr, N.Call) and isinstance(s.expr.func, str)):
        return False
    for d in DIALECTS:
        m = match_call(s.expr, d)
        if m and m[0].concept in ("create stream", "synchronize stream", "destroy stream"):
            v = _strip_cast(m[1].get("stream"))
            return isinstance(v, N.Var) and v.name in streams
    return False


def drop_old_config(stmts: tuple) -> tuple:
    """Remove top-level statements that only compute the launch configuration of the (single)
    launch in ``stmts`` -- they are replaced by the final kernel's configuration."""
    launches = [s for s in stmts if isinstance(s, N.Launch)]
    if len(launches) != 1:
        return stmts
    L = launches[0]
    cfg_vars = set()
    for e in (L.grid, L.block, L.shmem, L.stream):
        if e is not None:
            cfg_vars |= _free_vars(e)
    streams = _free_vars(L.stream) if L.stream is not None else set()
    # closure over local definitions feeding the configuration
    while True:
        grow = set(cfg_vars)
        for s in stmts:
            d = _defines(s)
            if d and d & cfg_vars:
                grow |= {v for v in _free_vars(s) if any(isinstance(x, N.Decl) and x.name == v for x in stmts)}
        if grow == cfg_vars:
            break
        cfg_vars = grow
    while True:
        cand = [i for i, s in enumerate(stmts)
                if (d := _defines(s)) is not None and d and d <= cfg_vars or _stream_call_on(s, streams & cfg_vars)]
        used_elsewhere = set()
        for i, s in enumerate(stmts):
            if i in cand:
                continue
            if s is L:
                used_elsewhere |= set().union(*[_free_vars(a) for a in L.args]) if L.args else set()
            else:
                used_elsewhere |= _free_vars(s)
        bad = cfg_vars & used_elsewhere
        if not bad:
            break
        cfg_vars -= bad
    return tuple(s for i, s in enumerate(stmts) if i not in cand)


# ------------------------------------------------------------- sizes added as parameters
def _config_component(e, axis: int, decls: dict, member_sets: dict):
    """Component ``axis`` (0 = x) of a launch configuration expression of the source launch: a
    ``dim3(...)`` call, a ``dim3``/``cnrtDim3_t`` variable declared in the launcher (constructor,
    ``= dim3(...)``, ``= {x, y, z}``, or ``v.x = ...`` assignments), or a plain integer
    expression (axis 0 only). None when it cannot be read off."""
    if isinstance(e, N.Call) and e.func == "dim3":
        return e.args[axis] if axis < len(e.args) else N.Const(1, "int32", "1")
    if isinstance(e, N.InitList):
        return e.items[axis] if axis < len(e.items) else None
    if isinstance(e, N.Var) and e.name in decls:
        field = "xyz"[axis]
        sets = member_sets.get((e.name, field), [])
        if len(sets) == 1:
            return sets[0]
        if sets:
            return None
        d = decls[e.name]
        if d.init is None:
            return None
        return _config_component(d.init, axis, {}, {})
    if axis == 0 and not (isinstance(e, N.Var) and e.name in decls
                          and isinstance(decls[e.name].type, N.Named) and decls[e.name].type.name in _CONFIG_TYPES):
        return e
    return None


def append_size_args(h: N.Func, kernel: str, size_args, macros: set) -> N.Func:
    """``h`` with the value of every size in ``size_args`` (``(size, key, axis)`` from
    ``launch_sizes.host_size_values``) appended to the arguments of each launch of ``kernel``:
    the source launch's own grid/block/dim component when the spec's launch component is that
    size, else the source's macro of that name. XP9001 when neither is there. Used by
    ``launch_sizes.add_size_params`` on the source program, so the launches the host
    migration then translates already have one argument per kernel parameter."""
    if not size_args:
        return h
    decls = {n.name: n for n in walk(h.body) if isinstance(n, N.Decl)}
    member_sets: dict = {}
    for n in walk(h.body):
        if isinstance(n, N.Assign) and isinstance(n.target, N.Member) and isinstance(n.target.base, N.Var) \
                and n.target.field in ("x", "y", "z") and n.op == "=":
            member_sets.setdefault((n.target.base.name, n.target.field), []).append(n.value)

    def fn(n):
        if not (isinstance(n, N.Launch) and n.kernel == kernel):
            return n
        extra = []
        for size, key, axis in size_args:
            val = None
            if key in ("grid", "dim"):
                val = _config_component(n.grid, axis, decls, member_sets)
            elif key == "block":
                val = _config_component(n.block, axis, decls, member_sets)
            if val is None and size in macros:
                val = N.Var(size)
            if val is None:
                raise XPError("XP9001", detail=f"the launch of {kernel} gives no value for the size '{size}' the "
                                               f"migrated kernel takes as a parameter (the spec's launch does not "
                                               f"have it as a whole grid/block/dim entry, and it is not a macro)")
            extra.append(val)
        return n.with_(args=tuple(n.args) + tuple(extra))
    return h.with_(body=rewrite(h.body, fn))


# ----------------------------------------------------------------------------------- API
def source_launchers(program: N.Program) -> list[N.Func]:
    """The program's own host launchers: host functions (not main) that launch a kernel. Those are
    translated; a program without one gets a launcher generated from its spec."""
    return [f for f in program.funcs if f.kind == "host" and f.body is not None and f.name != "main"
            and any(isinstance(n, N.Launch) for n in walk(f.body))]


def migrate_host_ex(source_program: N.Program, target_dialect: str, kernel_entry: str, launch: dict,
                    kernel_params: list[str], *, spec=None, source_entry: str | None = None
                    ) -> tuple[list[N.Func], list[XPError]]:
    """``migrate_host`` returning ``(functions, XP4101 warnings)``."""
    src = source_program.dialect
    hosts = source_launchers(source_program)
    if source_entry is None:
        launched = {n.kernel for f in hosts for n in walk(f.body) if isinstance(n, N.Launch)}
        ks = [k.name for k in source_program.kernels]
        source_entry = (kernel_entry if kernel_entry in launched or kernel_entry in ks else
                        (sorted(launched)[0] if len(launched) == 1 else (ks[0] if len(ks) == 1 else kernel_entry)))
    if not hosts:
        if spec is None:
            return [], [XPError("XP4101", name="host launcher (a spec is needed to generate one)",
                                dst=target_dialect, file=source_program.file)]
        f = generate_launcher(source_program, target_dialect, kernel_entry, launch, kernel_params, spec,
                              source_entry=source_entry)
        return ([f] if f is not None else []), []
    out, diags = [], []
    for h in hosts:
        tr = _HostTranslator(src, target_dialect, source_program.file, source_entry, kernel_entry, launch,
                             kernel_params)
        tr.taken = {n.name for n in walk(h) if isinstance(n, (N.Var, N.Decl, N.Param))}
        if src == "c":    # XP4102 when the c host code cannot be translated
            from .host_c import CHost
            tr.c_host = CHost(h, source_entry, target_dialect, source_program.file)
        body = drop_old_config(h.body.stmts)
        params = tuple(p.with_(type=_host_type(tr, p.type, p.loc)) for p in h.params)
        stmts = tr.tx_block(body)
        attrs = tuple(a for a in h.attrs if a in ("extern_c", "static", "inline"))
        out.append(h.with_(params=params, body=h.body.with_(stmts=stmts), attrs=attrs, kind="host"))
        diags += tr.diags
    return out, diags


def _host_type(tr: "_HostTranslator", t, loc):
    try:
        return tr.tx_expr(_unscope(t))
    except _Unsupported as u:
        tr.diags.append(XPError("XP4101", name=u.name, dst=tr.dst, file=tr.file, line=loc.line if loc else None))
        return t


def _unscope(t):
    def fn(n):
        if isinstance(n, N.Pointer) and n.scope is not None:
            return n.with_(scope=None)
        return n
    return rewrite(t, fn)


def migrate_host(source_program: N.Program, target_dialect: str, kernel_entry: str, launch: dict,
                 kernel_params: list[str], *, spec=None, source_entry: str | None = None,
                 diagnostics: list | None = None) -> list[N.Func]:
    """The host functions of ``source_program`` translated to ``target_dialect`` (see the module
    docstring).  ``launch`` is the final kernel's launch table over KERNEL PARAMETER NAMES;
    ``kernel_params`` the final kernel's parameter names in order.  XP4101 warnings are appended
    to ``diagnostics`` when given.  A c source needs ``spec`` (roles and shapes) to get a
    generated launcher."""
    funcs, diags = migrate_host_ex(source_program, target_dialect, kernel_entry, launch, kernel_params,
                                   spec=spec, source_entry=source_entry)
    if diagnostics is not None:
        diagnostics.extend(diags)
    return funcs


# ------------------------------------------------------------------- launcher from a spec
def _size_params(spec, params: list[str]) -> dict:
    """size name -> the kernel parameter that carries it (a scalar whose value is that size)."""
    out = {}
    for a, p in zip(spec.args, params):
        if a.role == "scalar" and isinstance(a.value, str) and re.fullmatch(r"[A-Za-z_]\w*", a.value.strip()):
            out.setdefault(a.value.strip(), p)
    return out


def generate_launcher(source_program: N.Program, dst: str, kernel_entry: str, launch: dict,
                      kernel_params: list[str], spec, *, source_entry: str | None = None) -> N.Func | None:
    """``<entry>_host`` for a kernel without one (a c source): allocate, copy in, launch, copy
    out, free -- every runtime call instantiated from the mapping table."""
    try:
        kfun = source_program.func(source_entry or spec.entry)
    except KeyError:
        kfun = source_program.func(kernel_entry)
    if len(kfun.params) != len(spec.args) or len(kernel_params) != len(spec.args):
        raise XPError("XP9001", detail="kernel parameters and spec arguments differ in number")
    sizes = _size_params(spec, [p.name for p in kfun.params])
    taken = {p.name for p in kfun.params}
    params = tuple(N.Param(p.name, _unscope(p.type)) for p in kfun.params)
    body: list = []
    dev: dict = {}
    pre, copy_in, copy_out, free = [], [], [], []
    size_t = N.Scalar("uint64", "size_t")
    for a, p in zip(spec.args, params):
        if a.role == "scalar":
            continue
        if not isinstance(p.type, N.Pointer):
            raise XPError("XP9001", detail=f"array argument {a.name} is not a pointer parameter")
        elem = p.type.elem
        elem = elem.with_(const=False) if isinstance(elem, N.Scalar) else elem
        try:
            dims = [to_c(d, sizes) for d in a.shape]
        except (ExprError, SyntaxError) as e:
            raise XPError("XP9001", detail=f"shape of {a.name}: {e}") from None
        unknown = set()
        for d in dims:
            if isinstance(d, str):
                unknown |= _free_vars(_parse_expr(d, "c")) - {p.name for p in params}
        if unknown:
            raise XPError("XP4101", name=f"size(s) {sorted(unknown)} of '{a.name}' (no scalar parameter carries "
                                         f"them)", dst=dst, file=source_program.file)
        n_expr = N.Cast(size_t, _parse_expr(str(dims[0]), "c"))
        for d in dims[1:]:
            n_expr = N.BinOp("*", n_expr, _parse_expr(str(d), "c"))
        nbytes = N.BinOp("*", n_expr, N.SizeOf(elem))
        dname = _fresh("d_" + p.name, taken)
        bname = _fresh("bytes_" + p.name, taken)
        dev[p.name] = N.Var(dname)
        pre.append(N.Decl(bname, size_t, nbytes))
        pre.append(N.Decl(dname, N.Pointer(elem)))
        pre.append(N.ExprStmt(instantiate(BY_CONCEPT["allocate device memory"], dst,
                                          {"ptr": N.Var(dname), "bytes": N.Var(bname)})))
        if a.role in ("in", "inout"):
            src_ptr = N.Var(p.name)
            if dst == "bang":
                src_ptr = N.Cast(N.Pointer(N.Scalar("void", "void")), src_ptr)
            copy_in.append(N.ExprStmt(instantiate(BY_CONCEPT["copy host to device"], dst,
                                                  {"dst": N.Var(dname), "src": src_ptr, "bytes": N.Var(bname)})))
        if a.role in ("out", "inout"):
            copy_out.append(N.ExprStmt(instantiate(BY_CONCEPT["copy device to host"], dst,
                                                   {"dst": N.Var(p.name), "src": N.Var(dname),
                                                    "bytes": N.Var(bname)})))
        free.append(N.ExprStmt(instantiate(BY_CONCEPT["free device memory"], dst, {"ptr": N.Var(dname)})))
    args = tuple(dev.get(p.name, N.Var(p.name)) for p in params)
    bind = dict(zip(kernel_params, args))

    def cfg(x):
        if isinstance(x, int) and not isinstance(x, bool):
            return N.Const(x, "int32", str(x))
        text = str(x)
        try:
            text = str(to_c(text))
        except (ExprError, SyntaxError):
            pass
        return substitute(_parse_expr(text, "c"), bind)

    launch_st = launch_statements(dst, kernel_entry, args, launch, cfg, taken)
    stmts = []
    for group in (pre, copy_in, launch_st, copy_out, free):
        stmts += [_clean(dst, s) for s in group]
    return N.Func(f"{kernel_entry}_host", params, N.Scalar("void", "void"), N.Block(tuple(stmts)), "host")


def _clean(dst, s):
    if isinstance(s, N.ExprStmt) and isinstance(s.expr, N.Comma) and len(s.expr.exprs) == 2 \
            and isinstance(s.expr.exprs[1], N.Const):
        return s.with_(expr=s.expr.exprs[0])
    return s


# ------------------------------------------------------------------------- putting it in
def host_includes(dialect: str) -> list[N.Directive]:
    form = BY_CONCEPT["include runtime header"].forms.get(dialect) or ""
    return [N.Directive(line, "include") for line in form.splitlines() if line.strip()]


def attach_host(program: N.Program, funcs: list[N.Func], dialect: str | None = None) -> N.Program:
    """``program`` with its own host launchers replaced by ``funcs`` and the runtime header
    of ``dialect`` included (once)."""
    dialect = dialect or program.dialect
    names = {f.name for f in funcs}
    items = [i for i in program.items
             if not (isinstance(i, N.Func) and (i.name in names or (i.kind == "host" and i.body is not None and any(
                 isinstance(n, N.Launch) for n in walk(i.body)))))]
    have = {i.text.strip() for i in items if isinstance(i, N.Directive)}
    inc = [d for d in host_includes(dialect) if d.text.strip() not in have]
    last_dir = max((k for k, i in enumerate(items) if isinstance(i, N.Directive) and i.kind == "include"), default=-1)
    items[last_dir + 1:last_dir + 1] = inc
    return program.with_(items=tuple(items) + tuple(funcs))


# ----------------------------------------------------------------------- host test mode
def test_host_launcher(path, spec, against=None, *, host_fn: str | None = None, seeds=(0, 1, 2),
                       instances: list[str] | None = None, sanitize: bool = True, timeout: float = 120.0,
                       mem_mb: int = 4096, jobs: int = 2, use_reference: bool = True):
    """Verify the host launcher in ``path`` (kernel + ``<entry>_host``): a generated main calls
    ``host_fn(host arrays..., scalars...)``; outputs are compared with the spec's reference
    and/or ``against=(src_path, src_spec)`` run as an ordinary kernel.  Returns a Verdict."""
    from concurrent.futures import ThreadPoolExecutor
    from ..platforms import get_platform
    from ..platforms.harness_host import build_host
    from ..spec import load_spec
    from ..verify import tester as T
    from ..verify.inputs import make_inputs
    from ..verify.oracle import kernel_outputs_as_expected, reference_outputs

    t0 = time.time()
    path = Path(path)
    spec = spec if not isinstance(spec, (str, Path)) else load_spec(spec)
    host_fn = host_fn or f"{spec.entry}_host"
    insts = spec.instances(instances)
    parts = []
    if use_reference and spec.reference:
        parts.append("reference " + spec.reference)
    if against:
        parts.append(f"source kernel {Path(against[0]).name}")
    seeds = list(seeds)
    v = T.Verdict(False, get_platform(spec.dialect).substrate() + " (host launcher)", str(path), seeds,
                  [i.name for i in insts], sanitized=sanitize, oracle=" and ".join(parts) or "none")
    workroot = Path(tempfile.mkdtemp(prefix="xpiler-host-"))
    try:
        if not parts:
            v.failures.append(T.RunFailure("XP2108", "no oracle", "-", -1))
            return v
        try:
            runner = T._Runner.__new__(T._Runner)
            runner.src, runner.spec, runner.sanitize = path, spec, sanitize
            runner.timeout, runner.mem_mb, runner.workroot = timeout, mem_mb, workroot
            runner.platform = get_platform(spec.dialect)
            runner.exe = build_host(path, spec, host_fn, sanitize=sanitize)
            runner.substrate = runner.platform.substrate()
            src_runner = None
            if against:
                sspec = against[1] if not isinstance(against[1], (str, Path)) else load_spec(against[1])
                src_runner = T._Runner(Path(against[0]), sspec, False, workroot, timeout, mem_mb)
        except XPError as e:
            v.build_error = e
            v.failures.append(T.RunFailure(e.code, e.message, "-", -1, log=getattr(e, "log", "")))
            return v

        def one(task):
            inst, seed = task
            arrays = make_inputs(inst, seed)
            got, oc = runner.run(inst, arrays, f"h-{inst.name}-{seed}", seed)
            if got is None:
                return [T._failure_from_outcome(oc, inst, seed, timeout, mem_mb)], 0.0, 0.0
            fails, ma, mr = [], 0.0, 0.0
            if use_reference and spec.reference:
                exp = reference_outputs(spec, inst, arrays)
                f, a, r = T._compare(spec, inst, seed, got, exp, arrays)
                fails += f
                ma, mr = max(ma, a), max(mr, r)
            if src_runner is not None:
                si = src_runner.spec.instances([inst.name])
                if not si:
                    fails.append(T.RunFailure("XP2108", f"source spec has no instance '{inst.name}'", inst.name, seed))
                else:
                    sgot, soc = src_runner.run(si[0], {k: x.copy() for k, x in arrays.items()}, f"s-{seed}", seed)
                    if sgot is None:
                        fl = T._failure_from_outcome(soc, inst, seed, timeout, mem_mb)
                        fl.message = "the SOURCE kernel failed: " + fl.message
                        fails.append(fl)
                    else:
                        f, a, r = T._compare(spec, inst, seed, got,
                                             kernel_outputs_as_expected(src_runner.spec, sgot), arrays)
                        for x in f:
                            x.message = "vs source kernel: " + x.message
                        fails += f
                        ma, mr = max(ma, a), max(mr, r)
            return fails, ma, mr

        tasks = [(i, s) for i in insts for s in seeds]
        if jobs > 1 and len(tasks) > 1:
            with ThreadPoolExecutor(max_workers=jobs) as ex:
                results = list(ex.map(one, tasks))
        else:
            results = [one(t) for t in tasks]
        for fails, a, r in results:
            v.failures += fails
            v.max_abs_error, v.max_rel_error = max(v.max_abs_error, a), max(v.max_rel_error, r)
            v.runs += 1
        v.verified = not v.failures and v.runs > 0
        return v
    finally:
        v.elapsed_s = time.time() - t0
        shutil.rmtree(workroot, ignore_errors=True)


test_host_launcher.__test__ = False  # not a pytest test
