"""Host code of c origin: a c source's own launcher migrated to cuda, hip or bang.

In c a launcher is an ordinary function that calls the kernel (an earlier c output's
``<entry>_host``: ``d = malloc(bytes); memcpy(d, x, bytes); entry(d, ...); free(d);``). The
front end reads every non-static c function as a kernel, so:

- ``split_c_launchers`` takes the launchers out of the program the passes see (a function other
  than the entry and ``main`` that calls the entry as a statement) and gives them back, marked
  ``host`` with their calls of the entry as ``Launch`` nodes, in a second program that the host
  migration (``host.py``) translates;
- ``CHost`` decides which buffers are device buffers -- those the launcher allocates (a row of the
  host API table read in its c forms: ``malloc``, ``calloc``, ``aligned_alloc``,
  ``posix_memalign``, ``_mm_malloc``) AND hands to the kernel -- and translates the statements
  on them through the table: allocation, ``free``, ``memset``, and ``memcpy`` into the copy row
  its two sides select (host to device, device to host, device to device). A null check of a
  device buffer (``if (!p)``) keeps its c meaning: the allocation is written
  ``if (cudaMalloc(...) != cudaSuccess) p = 0;`` (one that an ``if`` tests first,
  ``if ((p = malloc(n)) == NULL)``, is moved before it). Buffers the kernel never sees stay host
  memory (``malloc`` with the cast C++ needs);
- what cannot be translated is refused as a whole with XP4102 and its line: a host pointer given
  to the kernel (no device copy exists), or a device buffer read, written or passed anywhere on
  the host except those calls, null checks and ``p = NULL``. The migration then writes the kernel without
  the launcher (never a launcher that would be wrong on the device; the CPU emulators, where
  device memory is host memory, could not tell).
"""
from __future__ import annotations

from ..diagnostics import XPError
from ..ir import nodes as N
from ..ir.visit import walk
from ..mappings.host_api import BY_CONCEPT

ALLOC_ROWS = ("allocate device memory", "allocate zeroed device memory")
_COPY_ROW = {(True, False): "copy host to device", (False, True): "copy device to host",
             (True, True): "copy device to device"}      # (dst is device, src is device)
_POINTER_OPERANDS = {"ptr", "dst", "src"}
#: c allocators returning void*: C++ (cuda, hip, bang) needs a cast where the value is stored
_VOID_ALLOCATORS = {"malloc", "calloc", "realloc", "aligned_alloc", "_mm_malloc"}
_NULLS = {"NULL", "nullptr"}


# ------------------------------------------------------------------------- the launchers
def launcher_names(prog: N.Program, entry: str) -> set:
    """Functions of a c program that launch ``entry``: not the entry or main, calling it only as
    a statement, and called by no function the passes keep (else they are left as they are)."""
    if prog.dialect != "c":
        return set()
    funcs = [f for f in prog.funcs if f.body is not None]
    found = set()
    for f in funcs:
        if f.name in (entry, "main"):
            continue
        calls = [n for n in walk(f.body) if isinstance(n, N.Call) and n.func == entry]
        stmts = [n for n in walk(f.body) if isinstance(n, N.ExprStmt) and isinstance(n.expr, N.Call)
                 and n.expr.func == entry]
        if calls and len(calls) == len(stmts):
            found.add(f.name)
    kept_calls = {n.func for f in funcs if f.name not in found and f.name != "main"
                  for n in walk(f.body) if isinstance(n, N.Call) and isinstance(n.func, str)}
    return {name for name in found if name not in kept_calls}


def split_c_launchers(prog: N.Program, entry: str) -> tuple[N.Program, N.Program | None]:
    """``(kernel program, host program)``: the program without its c launchers (what the passes
    see), and the program with them as host functions whose calls of ``entry`` are ``Launch``
    nodes (what ``host.migrate_host`` translates). ``(prog, None)`` when there is none."""
    names = launcher_names(prog, entry)
    if not names:
        return prog, None
    kernel_items, host_items = [], []
    for it in prog.items:
        if isinstance(it, N.Func) and it.name in names and it.body is not None:
            host_items.append(it.with_(kind="host", body=_as_launches(it.body, entry)))
            continue
        kernel_items.append(it)
        host_items.append(it)
    return prog.with_(items=tuple(kernel_items)), prog.with_(items=tuple(host_items))


def _as_launches(body, entry: str):
    from ..ir.visit import rewrite

    def fn(n):
        if isinstance(n, N.ExprStmt) and isinstance(n.expr, N.Call) and n.expr.func == entry:
            return N.Launch(entry, None, None, None, None, tuple(n.expr.args), "call", loc=n.loc)
        return n
    return rewrite(body, fn)


# -------------------------------------------------------------------------- expressions
def base_name(e) -> str | None:
    """The variable a pointer expression points into: ``p``, ``(T*)p``, ``p + k``, ``&p[i]``."""
    while True:
        if isinstance(e, N.Var):
            return e.name
        if isinstance(e, N.Cast):
            e = e.expr
        elif isinstance(e, N.BinOp) and e.op in ("+", "-"):
            e = e.lhs
        elif isinstance(e, N.UnOp) and e.op == "&" and isinstance(e.operand, N.Index):
            e = e.operand.base
        else:
            return None


def _is_null(e) -> bool:
    while isinstance(e, N.Cast):
        e = e.expr
    return (isinstance(e, N.Var) and e.name in _NULLS) or (isinstance(e, N.Const) and e.value in (0, None)
                                                           and not isinstance(e.value, bool))


def _as_assign(s):
    """A statement storing one value in a variable, as the ``AssignExpr`` the table's c read
    forms are written in; else the statement's expression (or None)."""
    if isinstance(s, N.Assign) and s.op == "=":
        return N.AssignExpr("=", s.target, s.value, loc=s.loc)
    if isinstance(s, N.Decl) and s.init is not None:
        return N.AssignExpr("=", N.Var(s.name), s.init, loc=s.loc)
    if isinstance(s, N.ExprStmt):
        return s.expr
    return None


def _lead_alloc(s):
    """The assignment ``p = <call>`` that an ``if`` tests first: ``if (p = f(n))``,
    ``if (!(p = f(n)))``, ``if ((p = f(n)) == NULL)`` / ``!= NULL``; else None."""
    if not isinstance(s, N.If):
        return None
    e = s.cond
    while True:
        if isinstance(e, N.UnOp) and e.op == "!":
            e = e.operand
        elif isinstance(e, N.BinOp) and e.op in ("==", "!=") and _is_null(e.rhs):
            e = e.lhs
        elif isinstance(e, N.BinOp) and e.op in ("==", "!=") and _is_null(e.lhs):
            e = e.rhs
        else:
            break
    return e if isinstance(e, N.AssignExpr) and e.op == "=" and isinstance(e.value, (N.Call, N.Cast)) else None


def _seq(e) -> list:
    """The calls of a table form, in order: ``(a, b)`` -> [a, b]; the trailing value of the c
    column's ``(x, 0)`` is dropped."""
    if isinstance(e, N.Comma):
        out = []
        for x in e.exprs:
            out += _seq(x)
        return out
    return [] if isinstance(e, (N.Const, N.Var)) else [e]


# --------------------------------------------------------------------------- translation
class CHost:
    """One c launcher ``func`` of kernel ``entry``, on its way to ``dst``: the analysis, the
    checks (XP4102 on what cannot be translated) and the statement translation."""

    def __init__(self, func: N.Func, entry: str, dst: str, file: str | None):
        from .host import match_all
        self.func, self.entry, self.dst, self.file = func, entry, dst, file
        self._match_all = match_all
        self.types = {p.name: p.type for p in func.params}
        self.types.update({n.name: n.type for n in walk(func.body) if isinstance(n, N.Decl)})
        self.pointers = {k for k, t in self.types.items() if isinstance(t, (N.Pointer, N.Array))}
        allocated = set()
        for n in walk(func.body):
            m = self.match(n) if not isinstance(n, N.AssignExpr) else self._alloc_expr(n)
            if m and m[0].concept in ALLOC_ROWS:
                allocated.add(base_name(m[1].get("ptr")))
        self.launches = [n for n in walk(func.body) if isinstance(n, N.Launch) and n.kernel == entry]
        given = {base_name(a) for L in self.launches for a in L.args}
        self.device = (allocated & given) - {None}
        self.null_checked: set = set()
        if dst != "c":
            self._check()

    # -- matching
    def _alloc_expr(self, e):
        """``(row, binds)`` when expression ``e`` is an allocation ``p = malloc(n)`` (e.g. inside
        ``if ((p = malloc(n)) == NULL)``), else None."""
        if not isinstance(e, N.AssignExpr):
            return None
        return next(((r, b) for r, b in self._match_all(e, "c") if r.concept in ALLOC_ROWS), None)

    def match(self, s):
        """``(row, binds)`` when statement ``s`` is a c runtime call of the table, else None."""
        if not isinstance(s, (N.Assign, N.Decl, N.ExprStmt)):
            return None
        e = _as_assign(s)
        if e is None:
            return None
        found = self._match_all(e, "c")
        if not found:
            return None
        copies = [f for f in found if f[0].concept in _COPY_ROW.values()]
        if copies:    # the three copy rows read alike in c: the buffers' sides pick one (host to host: kept)
            b = copies[0][1]
            dev = getattr(self, "device", set())
            key = (base_name(b["dst"]) in dev, base_name(b["src"]) in dev)
            return (BY_CONCEPT[_COPY_ROW[key]] if key in _COPY_ROW else copies[0][0]), b
        return found[0]

    # -- checks
    def _refuse(self, why: str, node) -> XPError:
        loc = getattr(node, "loc", None)
        line = loc.line if loc is not None else None
        return XPError("XP4102", func=self.func.name, dst=self.dst, why=why, file=self.file, line=line)

    def _check(self):
        for L in self.launches:
            for a in L.args:
                b = base_name(a)
                if b in self.pointers and b not in self.device:
                    raise self._refuse(f"'{b}' is given to the kernel but is host memory (the launcher does not "
                                       f"allocate it), so the kernel would read host memory", L)
                if b is None or b not in self.device:
                    self._uses(a, False)
        self._stmts(self.func.body)

    def _stmts(self, s):
        if isinstance(s, N.Block):
            for x in s.stmts:
                self._stmts(x)
            return
        if isinstance(s, N.Launch):
            return
        if isinstance(s, N.If):
            self._uses(s.cond, True, s)
            self._stmts(s.then)
            if s.else_ is not None:
                self._stmts(s.else_)
            return
        if isinstance(s, N.While):
            self._uses(s.cond, True)
            self._stmts(s.body)
            return
        if isinstance(s, N.CFor):
            if s.init is not None:
                self._stmts(s.init)
            self._uses(s.cond, True)
            self._uses(s.next, False)
            self._stmts(s.body)
            return
        if isinstance(s, N.For):
            self._uses((s.lo, s.hi, s.step), False)
            self._stmts(s.body)
            return
        m = self.match(s)
        if m is not None:
            row, binds = m
            for k, v in binds.items():
                if not (k in _POINTER_OPERANDS and base_name(v) is not None):
                    self._uses(v, False, s)
            return
        if isinstance(s, N.Assign) and s.op == "=" and isinstance(s.target, N.Var) and s.target.name in self.device \
                and _is_null(s.value):
            return   # ``free(p); p = NULL;``
        if isinstance(s, N.Decl) and s.name in self.device:
            if s.init is None or _is_null(s.init):
                return
            raise self._refuse(f"device buffer '{s.name}' is set to something other than an allocation", s)
        self._uses(s, False)

    def _uses(self, e, cond: bool, stmt=None):
        """Refuse a device buffer named in ``e`` outside a null check (``cond``: ``e`` is
        read only as a truth value)."""
        if isinstance(e, N.Var):
            if e.name in self.device:
                if not cond:
                    raise self._refuse(f"device buffer '{e.name}' is used on the host (only memcpy, memset, free, "
                                       f"null checks and the kernel's arguments may name it)", stmt or e)
                self.null_checked.add(e.name)
            return
        if isinstance(e, N.SizeOf):
            return   # not evaluated
        if isinstance(e, N.AssignExpr) and base_name(e.target) in self.device:
            m = self._alloc_expr(e)
            if not (cond and m is not None and stmt is not None and _lead_alloc(stmt) is e):
                raise self._refuse(f"device buffer '{base_name(e.target)}' is allocated inside an expression "
                                   f"(only `if ((p = malloc(n)) == NULL)`, `if (!(p = malloc(n)))` and the "
                                   f"statement forms are read)", stmt or e)
            self.null_checked.add(base_name(e.target))
            for k, v in m[1].items():
                if k != "ptr":
                    self._uses(v, False, stmt)
            return
        if isinstance(e, N.UnOp) and e.op == "!":
            return self._uses(e.operand, True, stmt)
        if isinstance(e, N.BinOp) and e.op in ("&&", "||"):
            self._uses(e.lhs, True, stmt)
            return self._uses(e.rhs, True, stmt)
        if isinstance(e, N.BinOp) and e.op in ("==", "!="):
            if _is_null(e.rhs):
                return self._uses(e.lhs, True, stmt)
            if _is_null(e.lhs):
                return self._uses(e.rhs, True, stmt)
        if isinstance(e, N.Cond):
            self._uses(e.cond, True, stmt)
            self._uses(e.then, False, stmt)
            return self._uses(e.else_, False, stmt)
        if isinstance(e, tuple):
            for x in e:
                self._uses(x, False, stmt)
            return
        if not isinstance(e, N.Node):
            return
        from dataclasses import fields
        for f in fields(e):
            if f.name != "loc":
                v = getattr(e, f.name)
                if isinstance(v, (N.Node, tuple)):
                    self._uses(v, False, stmt if isinstance(e, N.Expr) else (stmt or e))

    # -- statements
    def stmt(self, s, tr) -> list | None:
        """The ``dst`` statements for ``s`` when it is c host runtime code, else None (the
        host translator goes on as for any statement). ``tr`` translates operands."""
        if self.dst == "c":
            return None
        if isinstance(s, N.If):
            return self._if_allocation(s, tr)
        m = self.match(s)
        if m is None:
            return self._cast_allocation(s)
        row, binds = m
        ptrs = {base_name(binds[k]) for k in _POINTER_OPERANDS if k in binds}
        if not ptrs & self.device:
            return self._cast_allocation(s)
        return self._runtime(s, row, binds, tr)

    def _if_allocation(self, s: N.If, tr) -> list | None:
        """``if ((p = malloc(n)) == NULL) ...``: the allocation of a device buffer goes before the
        ``if`` (it is the condition's first evaluation, so the order holds) and the test reads p;
        a host buffer's gets its cast."""
        a = _lead_alloc(s)
        if a is None:
            return None
        m = self._alloc_expr(a)
        if base_name(a.target) in self.device and m is not None:
            pre = self._runtime(N.ExprStmt(a, loc=s.loc), m[0], m[1], tr)
            new_value = a.target
        else:
            t = self.types.get(base_name(a.target))
            if not (isinstance(a.value, N.Call) and a.value.func in _VOID_ALLOCATORS and isinstance(t, N.Pointer)):
                return None
            pre, new_value = [], a.with_(value=N.Cast(t.with_(const=False, restrict=False), a.value))
        from ..ir.visit import rewrite
        cond = rewrite(s.cond, lambda n: new_value if n == a else n)
        return pre + tr.tx_stmt(s.with_(cond=cond))

    def _runtime(self, s, row, binds, tr) -> list:
        """The ``dst`` calls of table row ``row`` for c statement ``s`` on a device buffer."""
        from .host import instantiate
        binds = {k: tr.tx_expr(v) for k, v in binds.items() if k in row.operands}
        if self.dst == "bang" and row.concept == "copy host to device" and not isinstance(binds["src"], N.Cast):
            binds["src"] = N.Cast(N.Pointer(N.Scalar("void", "void")), binds["src"])   # CNRT takes void*
        calls = [N.ExprStmt(c, loc=s.loc) for c in _seq(instantiate(row, self.dst, binds, s.loc))]
        pre = [N.Decl(s.name, s.type, None, s.scope, s.storage, s.attrs, loc=s.loc)] if isinstance(s, N.Decl) else []
        ptr = base_name(binds.get("ptr")) if row.concept in ALLOC_ROWS else None
        if ptr in self.null_checked and calls:
            # the c test ``if (!p)`` after a failed allocation: p is null there too
            ok = instantiate(BY_CONCEPT["success value"], self.dst, {})
            first = N.If(N.BinOp("!=", calls[0].expr, ok),
                         N.Assign(N.Var(ptr), "=", N.Const(0, "int32", "0")), loc=s.loc)
            calls = [first] + [N.If(N.Var(ptr), c, loc=s.loc) for c in calls[1:]]
        return pre + calls

    def _cast_allocation(self, s) -> list | None:
        """A host buffer's ``p = malloc(n)``: C++ wants the void* cast to p's type."""
        if self.dst == "c":
            return None
        if isinstance(s, N.Assign) and s.op == "=" and isinstance(s.target, N.Var):
            name, value = s.target.name, s.value
        elif isinstance(s, N.Decl) and s.init is not None:
            name, value = s.name, s.init
        else:
            return None
        t = self.types.get(name)
        if not (isinstance(value, N.Call) and value.func in _VOID_ALLOCATORS and isinstance(t, N.Pointer)):
            return None
        cast = N.Cast(t.with_(const=False, restrict=False), value)
        return [s.with_(value=cast) if isinstance(s, N.Assign) else s.with_(init=cast)]
