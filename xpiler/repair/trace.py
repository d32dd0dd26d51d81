"""Per-store access traces of a failing candidate (issue 14, "Localization"; docs/repair.md).

An instrumented copy of the candidate is built for the CPU emulator (the substrate the repair's
filter already uses): after every statement that stores into an output — an assignment through
a subscript or a dereference of the output parameter or of a pointer declared from it, a BANG
``__memcpy`` or an AVX/AVX-512 float store of a c output whose destination is one — a call records one event: the store's id, the element
index written (the byte distance from the output parameter, in elements), how many elements (a
copy's size), the value now at that element (a copy: its first element), and the values of the
integer variables the store's address is computed from (its own leaves and, through locals
assigned once, the leaves of their definitions) and of the enclosing canonical loops' variables:
which iteration wrote which element. The trace is bounded (``CAP`` events per store) and taken on
the smallest failing (instance, seed) of the unrepaired test.

Two uses (xpiler/repair/__init__.py):

* **Localization** (``Trace.culprits``): the wrong output elements (the same comparison as the
  test) are mapped to the store that wrote them last, and stores that wrote outside their output
  are named too; the backward slice from those stores ranks first (localize.py). Elements nobody
  wrote name the output (its stores' guards and bounds should have covered them).
* **Constraints from the reference run** (``derive``): a traced value that matches exactly one
  element of the expected output (random float inputs make values nearly unique; ambiguous and
  unmatched values are skipped) gives an example "iteration -> expected element index". For a
  sketch of an index or div/mod region that feeds a traced store's address, each example is a
  Z3 constraint over the holes (the address with the sketch spliced in, evaluated at the traced
  variable values, equals the expected index), chosen counter-example guided: solve on a few,
  check on all, add a violated one, re-solve. The search tries the fillings those constraints
  allow first (solve.py); the full test stays the only gate.

What the trace cannot see: stores through pointers not declared from the output (a pointer
passed to a helper function, an alias built by integer casts), stores inside called functions,
other vector-intrinsic writes (``__bang_*`` into GDRAM), and the contents of a copy past its first
element; a store whose address reads memory (``out[idx[i]]``) gives no constraints (its leaves
are not variables). Without events that name a store, localization falls back to the static
slice, and says so.
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import z3

from xpiler.ir import nodes as N
from xpiler.ir import z3term as T
from xpiler.ir.visit import walk

from .localize import INT_TYPES, _base_name, entry_index, get_at, set_at

TRACE_ENV = "XPILER_REPAIR_TRACE"
CAP = 4096          # events recorded per store
MAX_STORES = 200    # stores instrumented
MAX_EXAMPLES = 200  # examples kept per store (spread over its events)

_PRELUDE = f"""#include <stdio.h>
#include <stdlib.h>
static FILE *xp_trace_f;
static int xp_trace_n[{MAX_STORES}];
__attribute__((constructor)) static void xp_trace_open(void)
{{
    const char *p = getenv("{TRACE_ENV}");
    xp_trace_f = p ? fopen(p, "w") : 0;
}}
__attribute__((destructor)) static void xp_trace_close(void)
{{
    if (xp_trace_f)
        fclose(xp_trace_f);
}}
static int xp_trace_on(int sid)
{{
    return xp_trace_f && __atomic_fetch_add(&xp_trace_n[sid], 1, __ATOMIC_RELAXED) < {CAP};
}}
static void xp_trace_emit(int sid, long long elem, long long count, double value, const long long *v, int n)
{{
    char buf[1024];
    int k = snprintf(buf, sizeof buf, "%d %lld %lld %.17g", sid, elem, count, value);
    for (int i = 1; i < n && k < (int)sizeof buf - 24; i++)
        k += snprintf(buf + k, sizeof buf - k, " %lld", v[i]);
    fprintf(xp_trace_f, "%s\\n", buf);
}}
{{TV}}static int xp_trace_in(int sid, long long e, long long c, long long numel)
{{
    if (e >= 0 && e + (c > 0 ? c : 1) <= numel)
        return 1;
    if (xp_trace_on(sid))   /* a write outside the output: recorded, and not done */
        fprintf(xp_trace_f, "%d %lld %lld nan\\n", sid, e, c);
    return 0;
}}
#define XP_ELEM(p, out) ((long long)(((const char *)(p) - (const char *)(out)) / (long long)sizeof((out)[0])))
#define XP_TRACE_STORE(sid, lv, out, ...) do {{ if (xp_trace_on(sid)) {{ \\
    long long xp_v_[] = {{__VA_ARGS__}}; long long xp_e_ = XP_ELEM(&(lv), out); \\
    xp_trace_emit(sid, xp_e_, (long long)(sizeof(lv) / sizeof((out)[0])), XP_TV((out)[xp_e_]), xp_v_, \\
                  (int)(sizeof xp_v_ / sizeof xp_v_[0])); }} }} while (0)
#define XP_TRACE_IN_STORE(sid, lv, out, numel) \
    xp_trace_in(sid, XP_ELEM(&(lv), out), (long long)(sizeof(lv) / sizeof((out)[0])), numel)
#define XP_TRACE_IN_COPY(sid, dst, out, bytes, numel) \
    xp_trace_in(sid, XP_ELEM(dst, out), (long long)(bytes) / (long long)sizeof((out)[0]), numel)
#define XP_TRACE_IN_N(sid, dst, out, n, numel) xp_trace_in(sid, XP_ELEM(dst, out), (long long)(n), numel)
#define XP_TRACE_N(sid, dst, out, n, ...) XP_TRACE_COPY(sid, dst, out, (long long)(n) * (long long)sizeof((out)[0]), \
                                                       __VA_ARGS__)
#define XP_TRACE_COPY(sid, dst, out, bytes, ...) do {{ if (xp_trace_on(sid)) {{ \\
    long long xp_v_[] = {{__VA_ARGS__}}; long long xp_e_ = XP_ELEM(dst, out); \\
    long long xp_c_ = (long long)(bytes) / (long long)sizeof((out)[0]); \\
    xp_trace_emit(sid, xp_e_, xp_c_, xp_c_ > 0 ? XP_TV((out)[xp_e_]) : 0.0, xp_v_, \\
                  (int)(sizeof xp_v_ / sizeof xp_v_[0])); }} }} while (0)
"""

#: how a traced value becomes a double: C++ dialects (cuda, hip, bang) overload it, so a half or
#: bfloat16 type converts through float; a c output stays C (the c platform compiles a file as
#: C++ only when its text needs it, and an overload in the prelude would make it so)
_TV_CXX = """template <class T> static double xp_tv(const T &x) { return (double)(float)x; }
static double xp_tv(double x) { return x; }
static double xp_tv(float x) { return x; }
static double xp_tv(int x) { return x; }
static double xp_tv(unsigned x) { return x; }
static double xp_tv(long x) { return (double)x; }
static double xp_tv(unsigned long x) { return (double)x; }
static double xp_tv(long long x) { return (double)x; }
static double xp_tv(unsigned long long x) { return (double)x; }
static double xp_tv(short x) { return x; }
static double xp_tv(unsigned short x) { return x; }
static double xp_tv(signed char x) { return x; }
static double xp_tv(unsigned char x) { return x; }
static double xp_tv(char x) { return x; }
#define XP_TV(x) xp_tv(x)
"""
_TV_C = "#define XP_TV(x) ((double)(x))\n"


def prelude(dialect: str) -> str:
    return _PRELUDE.replace("{TV}", _TV_C if dialect == "c" else _TV_CXX)


_COPIES = ("__memcpy", "__memcpy_async")
#: vector stores of the c outputs: name -> (lanes, index of the mask argument or None); a masked
#: store counts the mask's set lanes (the c printer's tails are prefix masks)
_VSTORES = {"_mm512_storeu_ps": (16, None), "_mm512_store_ps": (16, None), "_mm512_mask_storeu_ps": (16, 1),
            "_mm512_mask_store_ps": (16, 1), "_mm512_storeu_pd": (8, None), "_mm512_mask_storeu_pd": (8, 1),
            "_mm256_storeu_ps": (8, None), "_mm256_store_ps": (8, None), "_mm512_stream_ps": (16, None)}


class Unsupported(Exception):
    """An address expression the trace (or the Z3 translation) does not model."""


@dataclass
class Store:
    sid: int
    path: tuple            # the store statement's path in the Program
    out: str               # the output parameter it writes
    kind: str              # "store" | "copy" | "vstore" (an AVX-512/AVX store of a c output)
    line: int | None
    leaves: list           # names recorded per event, in order
    loops: list            # enclosing canonical loop variables


@dataclass
class Trace:
    """One traced run: events per store, the wrong elements, the stores named."""
    stores: list
    events: dict = field(default_factory=dict)   # sid -> [(elem, count, value, {leaf: int})]
    truncated: set = field(default_factory=set)
    wrong: dict = field(default_factory=dict)    # output -> number of wrong elements
    unwritten: dict = field(default_factory=dict)   # output -> wrong elements no traced store wrote
    bad: dict = field(default_factory=dict)      # sid -> wrong elements it wrote last
    outside: dict = field(default_factory=dict)  # sid -> events outside its output
    expected: dict = field(default_factory=dict)  # output -> flat expected values (first oracle)
    sizes: dict = field(default_factory=dict)    # the instance's sizes
    instance: str = ""
    seed: int = 0
    time_s: float = 0.0
    model: object = None

    def by_sid(self) -> dict:
        return {s.sid: s for s in self.stores}

    def culprits(self) -> list:
        """Stores named by the trace, most wrong elements first: those that wrote wrong elements
        last or wrote outside their output; when no store wrote a wrong element but elements
        were left unwritten, every store into those outputs."""
        c = sorted(set(self.bad) | set(self.outside), key=lambda s: -(self.bad.get(s, 0) + self.outside.get(s, 0)))
        if c:
            return [self.by_sid()[s] for s in c]
        miss = {o for o, n in self.unwritten.items() if n}
        return [s for s in self.stores if s.out in miss]

    def evidence(self) -> str | None:
        """The failure kind the trace shows, as the failure code localize.py orders region kinds
        by: a store outside its output (XP2105), elements left unwritten and none written wrong
        (XP2102), wrong values written inside the outputs only (XP2101); when every named store is
        a copy, a write outside or elements left unwritten order as a bad copy (XP3050)."""
        named = self.culprits()
        copies = bool(named) and all(s.kind == "copy" for s in named)
        if self.outside:
            return "XP3050" if copies else "XP2105"
        if self.bad:
            return "XP2101" if not any(self.unwritten.values()) else None
        if any(self.unwritten.values()):
            # elements no copy wrote: the copies' sizes first (as the BANG copy check orders)
            return "XP3050" if copies else "XP2102"
        return None

    def summary(self) -> dict:
        return {"instance": self.instance, "seed": self.seed, "stores": len(self.stores),
                "events": sum(len(v) for v in self.events.values()), "truncated": sorted(self.truncated),
                "wrong": self.wrong, "unwritten": self.unwritten, "evidence": self.evidence(),
                "culprits": [{"line": s.line, "out": s.out, "kind": s.kind, "wrong": self.bad.get(s.sid, 0),
                              "outside": self.outside.get(s.sid, 0)} for s in self.culprits()][:8],
                "time_s": round(self.time_s, 2)}


# -- the program side: stores, their address expressions, the instrumented text ---------------

def _func_info(func: N.Func, outs: set):
    """(aliases: pointer name -> its definition, assigned: names written anywhere, types, loop vars)."""
    types = {p.name: p.type for p in func.params}
    decls: dict = {}
    assigned: set = set()
    loopvars: set = set()
    for n in walk(func.body):
        if isinstance(n, N.Decl):
            types.setdefault(n.name, n.type)
            decls.setdefault(n.name, []).append(n)
        elif isinstance(n, (N.Assign, N.AssignExpr)):
            b = n.target.name if isinstance(n.target, N.Var) else None
            if b:
                assigned.add(b)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&"):
            if isinstance(n.operand, N.Var):
                assigned.add(n.operand.name)
        elif isinstance(n, N.For):
            loopvars.add(n.var)
            types.setdefault(n.var, n.var_type or N.Scalar("int32"))
        elif isinstance(n, N.CFor):
            for m in walk(n):
                if isinstance(m, N.Decl):
                    assigned.add(m.name)   # a C-style loop's variable changes every trip
    single = {k: v[0] for k, v in decls.items() if len(v) == 1 and v[0].init is not None and k not in assigned
              and k not in loopvars}
    aliases = {k: d for k, d in single.items() if isinstance(d.type, N.Pointer) and _base_name(d.init) in outs}
    # a pointer assigned later (``c = C + off``) is an alias too, but not a fixed one: not modelled
    return aliases, assigned, types, loopvars, single


def _int_name(name, types) -> bool:
    t = types.get(name)
    return isinstance(t, N.Scalar) and t.dtype in INT_TYPES


def _ptr_off(p, outs, aliases):
    """The element offset of pointer expression ``p`` from its output parameter (an IR expr)."""
    if isinstance(p, N.Var):
        if p.name in outs:
            return N.Const(0, "int32", "0")
        if p.name in aliases:
            return _ptr_off(aliases[p.name].init, outs, aliases)
        raise Unsupported(p.name)
    if isinstance(p, N.Cast) and isinstance(p.type, N.Pointer):
        return _ptr_off(p.expr, outs, aliases)
    if isinstance(p, N.BinOp) and p.op in ("+", "-") and _base_name(p.lhs) in (set(outs) | set(aliases)):
        return N.BinOp(p.op, _ptr_off(p.lhs, outs, aliases), p.rhs)
    if isinstance(p, N.BinOp) and p.op == "+" and _base_name(p.rhs) in (set(outs) | set(aliases)):
        return N.BinOp("+", _ptr_off(p.rhs, outs, aliases), p.lhs)
    if isinstance(p, N.UnOp) and p.op == "&" and isinstance(p.operand, N.Index):
        return _elem(p.operand, outs, aliases)
    raise Unsupported(type(p).__name__)


def _elem(target, outs, aliases):
    """The element index a store's target writes, as an IR expression over the function's names."""
    if isinstance(target, N.Index):
        return N.BinOp("+", _ptr_off(target.base, outs, aliases), target.index)
    if isinstance(target, N.UnOp) and target.op == "*":
        return _ptr_off(target.operand, outs, aliases)
    raise Unsupported(type(target).__name__)


def _expand(e, single, types, stable, depth=4):
    """``e`` with integer locals assigned once replaced by their definitions (when every name
    the definition reads is stable: a parameter never assigned, a loop variable, a builtin, or
    another such local), so a region inside a definition feeds the store's address."""
    if depth <= 0:
        return e

    def sub(x):
        if isinstance(x, N.Var) and x.name in single and _int_name(x.name, types) and stable(x.name):
            return N.Cast(N.Scalar("int64"), _expand(single[x.name].init, single, types, stable, depth - 1))
        if isinstance(x, N.Expr):
            import dataclasses
            ch = {}
            for f in dataclasses.fields(x):
                if f.name == "loc":
                    continue
                v = getattr(x, f.name)
                if isinstance(v, N.Expr):
                    nv = sub(v)
                    if nv is not v:
                        ch[f.name] = nv
                elif isinstance(v, tuple) and any(isinstance(a, N.Expr) for a in v):
                    nv = tuple(sub(a) if isinstance(a, N.Expr) else a for a in v)
                    if any(a is not b for a, b in zip(nv, v)):
                        ch[f.name] = nv
            return x.with_(**ch) if ch else x
        return x
    return sub(e)


def _leaf_names(e) -> list:
    out = []
    for n in walk(e):
        if isinstance(n, N.Var) and n.name not in out:
            out.append(n.name)
        elif isinstance(n, N.Builtin) and n.name not in out:
            out.append(n.name)
    return out


class Model:
    """What the trace and the constraints need to know about the entry function."""

    def __init__(self, prog: N.Program, entry: str, outs: list):
        self.prog, self.entry = prog, entry
        self.fi = entry_index(prog, entry)
        self.func = prog.items[self.fi]
        self.outs = set(outs)
        aliases, assigned, types, loopvars, single = _func_info(self.func, self.outs)
        self.aliases, self.assigned, self.types, self.loopvars, self.single = aliases, assigned, types, loopvars, single
        params = {p.name for p in self.func.params}
        memo: dict = {}

        def stable(name, seen=()):
            if name in memo:
                return memo[name]
            if name in seen:
                return False
            if name in params:
                r = name not in assigned
            elif name in loopvars:
                r = True
            elif name in single and _int_name(name, types):
                r = all(stable(x, seen + (name,)) if not _is_builtin(x) else True
                        for x in _leaf_names(single[name].init))
            else:
                r = False
            memo[name] = r
            return r
        self.stable = stable

    def address(self, stmt):
        """(kind, output, target IR expr of the written element's index, the lvalue or dst) of a
        store statement, or None."""
        if isinstance(stmt, N.Assign) and isinstance(stmt.target, (N.Index, N.UnOp)):
            b = _base_name(stmt.target if not isinstance(stmt.target, N.UnOp) else stmt.target.operand)
            out = self._out_of(b)
            if out is None:
                return None
            return "store", out, _elem(stmt.target, self.outs, self.aliases), stmt.target
        if isinstance(stmt, N.ExprStmt) and isinstance(stmt.expr, N.Intrinsic) and stmt.expr.name in _COPIES \
                and len(stmt.expr.args) >= 3:
            dst = stmt.expr.args[0]
            out = self._out_of(_base_name(dst))
            if out is None:
                return None
            return "copy", out, _ptr_off(dst, self.outs, self.aliases), dst
        if isinstance(stmt, N.ExprStmt) and isinstance(stmt.expr, N.Intrinsic) and stmt.expr.name in _VSTORES \
                and len(stmt.expr.args) >= 2:
            dst = stmt.expr.args[0]
            out = self._out_of(_base_name(dst))
            if out is None:
                return None
            return "vstore", out, _ptr_off(dst, self.outs, self.aliases), dst
        return None

    def _out_of(self, name):
        seen = set()
        while name is not None and name not in self.outs and name in self.aliases and name not in seen:
            seen.add(name)
            name = _base_name(self.aliases[name].init)
        return name if name in self.outs else None

    def expanded(self, e):
        return _expand(e, self.single, self.types, self.stable)


def _is_builtin(name: str) -> bool:
    return "." in name or name in ("taskId", "taskDim", "taskIdX", "taskIdY", "taskIdZ", "coreId", "clusterId",
                                   "taskDimX", "taskDimY", "taskDimZ", "clusterDim", "coreDim", "warpSize")


def find_stores(model: Model) -> list:
    """Every store into an output in the entry function, with the names recorded per event."""
    out: list = []

    def go(s, path, loops):
        if len(out) >= MAX_STORES:
            return
        try:
            a = model.address(s)
        except Unsupported:
            a = None
        if a is not None:
            kind, o, el, _ = a
            names = []
            for e in (el, model.expanded(el)):
                for n in _leaf_names(e):
                    if n not in names and n not in model.outs and n not in model.aliases and \
                            (_is_builtin(n) or n in model.loopvars or _int_name(n, model.types)):
                        names.append(n)
            lv = [v for v in loops if v not in names]
            out.append(Store(len(out), tuple(path), o, kind, _line(s), names + lv, list(loops)))
        if isinstance(s, N.Block):
            for k, x in enumerate(s.stmts):
                go(x, path + ["stmts", k], loops)
        elif isinstance(s, N.For):
            go(s.body, path + ["body"], loops + [s.var])
        elif isinstance(s, (N.CFor, N.While)):
            go(s.body, path + ["body"], loops)
        elif isinstance(s, N.If):
            go(s.then, path + ["then"], loops)
            if s.else_ is not None:
                go(s.else_, path + ["else_"], loops)
    go(model.func.body, ["items", model.fi, "body"], [])
    return out


def _line(n):
    loc = getattr(n, "loc", None)
    return loc.line if loc is not None else None


def _leaf_expr(name: str):
    return N.Cast(N.Scalar("int64", "long long"), N.Builtin(name) if _is_builtin(name) else N.Var(name))


def instrument(model: Model, stores: list, dialect: str, numel: dict) -> str:
    """The candidate with a trace call after every store of ``stores`` (printed in ``dialect``).
    A store whose element lies outside its output (``numel``: the traced instance's element
    count per output) is recorded as such and not done, so a wrong index does not crash the
    traced run (it runs without AddressSanitizer)."""
    from xpiler.printers import print_program
    prog = model.prog
    zero = N.Const(0, "int32", "0")
    for st in sorted(stores, key=lambda s: s.path, reverse=True):
        s = get_at(prog, st.path)
        kind, out, _, lv = model.address(s)
        leaves = [zero] + [_leaf_expr(n) for n in st.leaves]
        sid = N.Const(st.sid, "int32", str(st.sid))
        cnt = N.Const(int(numel[out]), "int64", f"{int(numel[out])}LL")
        if kind == "store":
            call = N.Call("XP_TRACE_STORE", (sid, lv, N.Var(out), *leaves))
            inside = N.Call("XP_TRACE_IN_STORE", (sid, lv, N.Var(out), cnt))
        elif kind == "vstore":
            lanes, mk = _VSTORES[s.expr.name]
            n = N.Const(lanes, "int32", str(lanes)) if mk is None else N.Call(
                "__builtin_popcountll", (N.Cast(N.Scalar("uint64", "unsigned long long"), s.expr.args[mk]),))
            call = N.Call("XP_TRACE_N", (sid, lv, N.Var(out), n, *leaves))
            inside = N.Call("XP_TRACE_IN_N", (sid, lv, N.Var(out), n, cnt))
        else:
            call = N.Call("XP_TRACE_COPY", (sid, lv, N.Var(out), s.expr.args[2], *leaves))
            inside = N.Call("XP_TRACE_IN_COPY", (sid, lv, N.Var(out), s.expr.args[2], cnt))
        prog = set_at(prog, st.path, N.If(inside, N.Block((s, N.ExprStmt(call))), None))
    return prelude(dialect) + print_program(prog, dialect)


def parse_events(text: str, stores: list) -> tuple[dict, set]:
    by = {s.sid: s for s in stores}
    ev: dict = {}
    for ln in text.splitlines():
        parts = ln.split()
        if len(parts) < 4:
            continue
        try:
            sid, elem, count = int(parts[0]), int(parts[1]), int(parts[2])
            val = float(parts[3])
            vals = [int(x) for x in parts[4:]]
        except ValueError:
            continue
        st = by.get(sid)
        if st is None:
            continue
        ev.setdefault(sid, []).append((elem, count, val, dict(zip(st.leaves, vals))))
    trunc = {s for s, v in ev.items() if len(v) >= CAP}
    return ev, trunc


def _wrong_mask(spec, a, got, exps):
    from xpiler.dtypes import is_float, to_compute
    g = to_compute(a.dtype, got).ravel()
    bad = np.zeros(g.shape, dtype=bool)
    for exp in exps:
        e = np.asarray(exp[a.name]).ravel()
        if is_float(a.dtype):
            rtol, atol = spec.tolerance_for(a.dtype)
            with np.errstate(invalid="ignore", over="ignore"):
                ok = (np.abs(g - e) <= atol + rtol * np.abs(e)) | ((g == e) & ~np.isnan(g))
            ok &= ~np.isnan(g)
        else:
            ok = g == e
        bad |= ~ok
    return bad


def analyse(tr: Trace, spec, got: dict, exps: list):
    """Wrong elements -> the stores that wrote them last; elements no store wrote; stores that
    wrote outside their output."""
    for a in spec.outputs:
        if a.name not in got:
            continue
        bad = _wrong_mask(spec, a, got[a.name], exps)
        size = bad.size
        tr.wrong[a.name] = int(bad.sum())
        # values are matched against the last oracle: the source kernel's run when there is one
        # (the same float32 arithmetic as the candidate, so a value matches to the last bit)
        tr.expected[a.name] = np.asarray(exps[-1][a.name], dtype=np.float64).ravel()
        last = np.full(size, -1, dtype=np.int64)
        for st in tr.stores:
            if st.out != a.name:
                continue
            for elem, count, _, _ in tr.events.get(st.sid, []):
                if elem < 0 or elem + max(count, 1) > size:
                    tr.outside[st.sid] = tr.outside.get(st.sid, 0) + 1
                    continue
                last[elem:elem + max(count, 1)] = st.sid
        for sid in np.unique(last[bad]):
            if sid >= 0:
                tr.bad[int(sid)] = int((last[bad] == sid).sum())
        if not any(st.sid in tr.truncated for st in tr.stores if st.out == a.name):
            tr.unwritten[a.name] = int((bad & (last < 0)).sum())


def instance_of(spec, verdict, name: str):
    """The Instance a failing run named (a spec instance or one the test derived)."""
    for i in spec.instances():
        if i.name == name:
            return i
    for d in getattr(verdict, "derived", None) or []:
        if d.get("name") == name and "sizes" in d:
            return spec.instance_with(name, d["sizes"])
    raise Unsupported(f"instance {name} not found")


@dataclass
class Prepared:
    path: Path
    model: Model
    stores: list
    numel: dict
    build: object = None     # the background compile (a thread) or None


def prepare(prog, entry: str, dialect: str, spec, inst, workdir: Path, background: bool = True) -> Prepared:
    """Write the instrumented candidate for instance ``inst`` and start its compile for the
    emulator in the background (the build cache is keyed by content: the traced run's own build
    finds it there), so it overlaps the source kernel's build for the filter's oracle."""
    import threading
    from xpiler.spec import DIALECT_EXT
    model = Model(prog, entry, [a.name for a in spec.outputs])
    stores = find_stores(model)
    if not stores:
        raise Unsupported("no store into an output the trace can see")
    numel = {a.name: int(inst.numel(a.name)) for a in spec.outputs}
    path = Path(workdir) / f"trace{DIALECT_EXT[dialect]}"
    path.write_text(instrument(model, stores, dialect, numel))
    pre = Prepared(path, model, stores, numel)
    if background:
        def go():
            try:
                from xpiler.platforms import get_platform
                get_platform(spec.dialect).build(path, spec, path.with_name(path.name + "-build"), sanitize=False)
            except Exception:   # the traced run's own build reports it
                pass
        pre.build = threading.Thread(target=go, daemon=True)
        pre.build.start()
    return pre


def take(prog, entry: str, dialect: str, spec, oracle, example, workdir: Path, *, timeout: float,
         prepared: Prepared | None = None) -> Trace:
    """Build the instrumented candidate (CPU emulator, no AddressSanitizer), run it on one example
    and analyse its events. Raises on any failure (the caller falls back to the slice)."""
    from .fastcheck import FastRunner
    t0 = time.time()
    ex = oracle.expected(*example)
    if ex is None:
        raise Unsupported("the example's expected outputs cannot be computed")
    inst, arrays, exps = ex
    numel = {a.name: int(np.prod(arrays[a.name].shape)) for a in spec.outputs}
    if prepared is None or prepared.numel != numel:
        if prepared is not None and prepared.build is not None:
            prepared.build.join()
        prepared = prepare(prog, entry, dialect, spec, inst, workdir, background=False)
    elif prepared.build is not None:
        prepared.build.join()
    path, model, stores = prepared.path, prepared.model, prepared.stores
    fr = FastRunner(path, oracle, False)
    fd, tf = tempfile.mkstemp(prefix="xp-trace-", suffix=".txt", dir=str(workdir))
    os.close(fd)
    os.environ[TRACE_ENV] = tf
    try:
        got, oc = fr.runner.run(inst, {k: v.copy() for k, v in arrays.items()}, f"trace-{example[1]}", example[1],
                                timeout=oracle.limit())
    finally:
        os.environ.pop(TRACE_ENV, None)
    evtext = Path(tf).read_text(errors="replace") if Path(tf).is_file() else ""
    tr = Trace(stores, instance=example[0], seed=example[1], sizes=dict(inst.sizes))
    tr.events, tr.truncated = parse_events(evtext, stores)
    if got is None:
        raise Unsupported(f"the traced run did not finish ({getattr(oc, 'reason', '?')})")
    analyse(tr, spec, got, exps)
    tr.model = model
    tr.time_s = time.time() - t0
    return tr


# -- constraints from the reference run ---------------------------------------------------------

def examples(tr: Trace, sid: int, spec) -> list:
    """(leaf values, expected element index) for the events of store ``sid`` whose value matches
    exactly one element of the expected output."""
    st = tr.by_sid()[sid]
    exp = tr.expected.get(st.out)
    if exp is None or not len(exp):
        return []
    a = next(x for x in spec.outputs if x.name == st.out)
    from xpiler.dtypes import is_float
    rtol, atol = spec.tolerance_for(a.dtype) if is_float(a.dtype) else (0.0, 0.0)
    fin = np.isfinite(exp)
    order = np.argsort(np.where(fin, exp, np.inf), kind="stable")
    sv = exp[order]
    n_fin = int(fin.sum())
    evs = tr.events.get(sid, [])
    if len(evs) > MAX_EXAMPLES:
        step = len(evs) / MAX_EXAMPLES
        evs = [evs[int(i * step)] for i in range(MAX_EXAMPLES)]
    out = []
    for elem, count, val, leaves in evs:
        if count < 1 or not np.isfinite(val):
            continue
        # to a few float32 ulps first (a large output has many values within the test's
        # tolerance of any value); only when nothing is that close, within the tolerance
        for tol in (4 * _EPS32 * abs(val) + 1e-38, atol + rtol * abs(val)):
            lo = np.searchsorted(sv[:n_fin], val - tol, side="left")
            hi = np.searchsorted(sv[:n_fin], val + tol, side="right")
            if hi - lo:
                break
        if hi - lo == 1:
            out.append((leaves, int(order[lo])))
    return out


_EPS32 = float(np.finfo(np.float32).eps)


class _Terms(T.Terms):
    """Repair's reading of :class:`xpiler.ir.z3term.Terms`: policy REFUSE (:class:`Unsupported`),
    names from a dict of Z3 terms; no ``min``/``max``, no ``>>``, no calls."""

    reads = frozenset({"bool_const", "cond", "cmp_int", "shl", "int_as_bool"})
    int_casts = bool_casts = frozenset(INT_TYPES)

    def __init__(self, env):
        super().__init__(T.REFUSE)
        self.env = env

    def refusal(self, why, node):
        return Unsupported(why)

    def name(self, e, depth):
        if e.name in self.env:
            return self.env[e.name]
        raise Unsupported(e.name)


def to_z3(e, env: dict):
    """An integer IR expression as a Z3 term (a condition as a Bool); names from ``env`` (z3
    terms). C division."""
    return _Terms(env).value(e)


HOLE = "xp_hole_"


def _contains(prefix, path) -> bool:
    return len(path) >= len(prefix) and tuple(path[:len(prefix)]) == tuple(prefix)


def address_with_holes(tr: Trace, sid: int, region, sketch):
    """The store's written element index with the sketch spliced in at ``region`` (holes as
    variables ``xp_hole_<name>``), or None when the region does not feed the store's address."""
    model = tr.model
    st = tr.by_sid()[sid]
    s_path = tuple(st.path)
    r_path = tuple(region.path)
    feeds = _contains(s_path + ("target",), r_path) or _contains(s_path + ("expr", "args", 0), r_path)
    if not feeds:
        stmt = get_at(model.prog, s_path)
        el = model.address(stmt)[2]
        used = set(_leaf_names(model.expanded(el)))
        feeds = any(_contains(tuple(p) + ("init",), r_path) for p in _decl_paths(model, used))
    if not feeds:
        return None
    hv = {h.name: N.Var(HOLE + h.name) for h in sketch.holes}
    rep = sketch.instantiate(hv)
    prog2 = set_at(model.prog, r_path, rep)
    m2 = Model(prog2, model.entry, list(model.outs))
    a = m2.address(get_at(prog2, s_path))
    if a is None:
        return None
    return m2.expanded(a[2])


def _decl_paths(model: Model, names: set) -> list:
    out = []

    def go(s, path):
        if isinstance(s, N.Decl) and s.name in names and s.name in model.single:
            out.append(path)
        for f in ("stmts",):
            if isinstance(s, N.Block):
                for k, x in enumerate(s.stmts):
                    go(x, path + [f, k])
        if isinstance(s, (N.For, N.CFor, N.While)):
            go(s.body, path + ["body"])
        elif isinstance(s, N.If):
            go(s.then, path + ["then"])
            if s.else_ is not None:
                go(s.else_, path + ["else_"])
    go(model.func.body, ["items", model.fi, "body"])
    return out


@dataclass
class Hints:
    """Trace-derived constraints for one sketch problem: ``used`` are the example constraints
    the counter-example guided loop needed; ``check(vals)`` tells whether an assignment maps
    every example to its expected element (the first violated example's constraint, or None)."""
    exprs: list                # z3 Bool per example
    used: list
    holes: dict                # hole name -> z3 Int (the problem's)
    sid: int
    line: int | None

    def violated(self, vals: dict):
        sub = [(v, z3.IntVal(vals[k])) for k, v in self.holes.items()]
        for c in self.exprs:
            if not z3.is_true(z3.simplify(z3.substitute(c, *sub))):
                return c
        return None


def derive(tr: Trace, spec, sp, max_level: int = 3, rounds: int = 16):
    """Hints for sketch problem ``sp`` (solve.SketchProblem) from the traced stores its region
    feeds, or None: no traced store, no example, an address the translation does not model, the
    examples agree with the region as written (the trace says it is right), or no filling within
    the cost levels maps every example right."""
    if sp.region.kind not in ("index", "divmod"):
        return None
    for st in tr.culprits() + [s for s in tr.stores if s not in tr.culprits()]:
        try:
            e = address_with_holes(tr, st.sid, sp.region, sp.sketch)
        except (Unsupported, AttributeError, IndexError, TypeError, KeyError):
            e = None
        if e is None:
            continue
        exs = examples(tr, st.sid, spec)
        if not exs:
            continue
        hv = {HOLE + k: v for k, v in sp.vars.items()}
        cons = []
        try:
            for leaves, j in exs:
                env = dict(hv)
                env.update({k: z3.IntVal(v) for k, v in leaves.items()})
                cons.append(to_z3(e, env) == j)
        except Unsupported:
            continue
        h = Hints(cons, [], dict(sp.vars), st.sid, st.line)
        orig = {x.name: x.orig for x in sp.sketch.holes}
        if h.violated(orig) is None:
            return None      # the reference agrees with this address as written
        s = z3.Solver()
        s.set("timeout", 2000)
        for a in sp.solver.assertions():
            s.add(a)
        s.add(sp.cost >= 1, sp.cost <= max_level)
        picks = [cons[0], cons[len(cons) // 2], cons[-1]]
        for c in dict.fromkeys(picks):
            h.used.append(c)
            s.add(c)
        for _ in range(rounds):
            r = s.check()
            if r != z3.sat:
                return None
            m = s.model()
            vals = {k: m.eval(v, model_completion=True).as_long() for k, v in sp.vars.items()}
            bad = h.violated(vals)
            if bad is None:
                return h
            h.used.append(bad)
            s.add(bad)
        return None
    return None


def stores_of(tr: Trace, culprits_only: bool = True) -> set:
    return {s.path for s in (tr.culprits() if culprits_only else tr.stores)}

