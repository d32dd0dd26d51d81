"""Localization: which regions of a failing candidate a sketch should rewrite, most likely
first.

Method (docs/repair.md): a static backward slice, ordered first by an instrumented trace when
one could be taken (trace.py: the stores that wrote the wrong elements). The failing
verdict names the outputs that are wrong and how (wrong values XP2101, unwritten/NaN XP2102,
out-of-bounds XP2105, a bad BANG copy XP3050...). The slice starts at every statement that
stores into a wrong output (an assignment through an index of the output parameter, or a
``__memcpy`` whose destination is based on it) and adds, to a fixed point, the statements that
define a variable or write a buffer those statements read, plus their enclosing loops and
conditions. Regions (index expressions, loop bounds and steps, guards, div/mod, copy sizes,
reduction inits, barrier gaps) inside the slice rank before those outside; among them the
failure kind orders the region kinds (an unwritten element points at bounds, guards and copy
sizes first, a wrong value at indices, inits and barriers first); source order breaks ties.
Regions outside the slice are kept (last): the slice can miss a dependence through a pointer
alias, and the final test is the gate either way.
"""
from __future__ import annotations

import re
from dataclasses import fields

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.sketches._base import Region

#: failure code -> region kinds in the order they are tried
PRIORITY = {
    "XP2102": ["bound", "guard", "copy", "stride", "index", "divmod", "init", "block"],
    "XP2105": ["bound", "guard", "index", "copy", "stride", "divmod", "init", "block"],
    # an out-of-bounds write the harness's guard zones found (a store AddressSanitizer does not see)
    "XP4280": ["guard", "bound", "index", "copy", "stride", "divmod", "init", "block"],
    "XP3050": ["copy", "index", "bound", "guard", "stride", "divmod", "init", "block"],
    # a hang: a loop that does not end (its condition, bound or step) first
    "XP2103": ["guard", "stride", "bound", "divmod", "index", "init", "block", "copy"],
    # wrong values: the kinds with few sites and few cheap fillings first (a reduction init, a
    # div/mod), then indices, barriers, loops
    "XP2101": ["init", "divmod", "index", "block", "bound", "guard", "stride", "copy"],
}
DEFAULT = PRIORITY["XP2101"]
ORDER_OPS = ("<", "<=", ">", ">=")
INT_TYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "char"}


def get_at(node, path):
    for p in path:
        node = node[p] if isinstance(p, int) else getattr(node, p)
    return node


def set_at(node, path, new):
    if not path:
        return new
    p, rest = path[0], path[1:]
    if isinstance(p, int):
        lst = list(node)
        lst[p] = set_at(lst[p], rest, new)
        return tuple(lst)
    return node.with_(**{p: set_at(getattr(node, p), rest, new)})


def _int_type(t) -> bool:
    return isinstance(t, N.Scalar) and t.dtype in INT_TYPES


def _has_float(e) -> bool:
    return any(isinstance(n, N.Const) and isinstance(n.value, float) for n in walk(e)) or \
        any(isinstance(n, N.Cast) and isinstance(n.type, N.Scalar) and n.type.dtype.startswith(("float", "bfloat"))
            for n in walk(e))


def entry_index(prog: N.Program, entry: str) -> int:
    for i, it in enumerate(prog.items):
        if isinstance(it, N.Func) and it.name == entry and it.body is not None:
            return i
    raise KeyError(entry)


def _base_name(e):
    while isinstance(e, (N.Index, N.Member, N.Cast)):
        e = e.base if not isinstance(e, N.Cast) else e.expr
    if isinstance(e, N.BinOp) and e.op in ("+", "-"):
        return _base_name(e.lhs)
    if isinstance(e, N.UnOp) and e.op == "&":
        return _base_name(e.operand)
    return e.name if isinstance(e, N.Var) else None


def regions(prog: N.Program, entry: str, dialect: str) -> list[Region]:
    """Every region of the entry function a sketch kind applies to, in source order."""
    fi = entry_index(prog, entry)
    func = prog.items[fi]
    ints = {p.name for p in func.params if _int_type(p.type)}
    shared = set()
    for n in walk(prog):
        if isinstance(n, N.Decl):
            if _int_type(n.type):
                ints.add(n.name)
            if n.scope in ("shared", "nram", "wram", "sram"):
                shared.add(n.name)
    ints, shared = frozenset(ints), frozenset(shared)
    out: list[Region] = []
    # names assigned by a compound update later (reduction variables)
    updated = set()
    for n in walk(func):
        if isinstance(n, N.Assign) and isinstance(n.target, (N.Var, N.Index)):
            b = _base_name(n.target)
            if b and (n.op != "=" or b in {v.name for v in walk(n.value) if isinstance(v, N.Var)}):
                updated.add(b)

    def R(path, node, kind, loops, stmt_path):
        out.append(Region(tuple(path), node, kind, tuple(loops), dialect, ints, shared, tuple(stmt_path)))

    def expr(e, path, loops, sp, index_ctx=False):
        if not isinstance(e, N.Expr):
            return
        if isinstance(e, N.Index):
            expr(e.base, path + ["base"], loops, sp)
            if not _has_float(e.index):
                R(path + ["index"], e.index, "index", loops, sp)
            expr(e.index, path + ["index"], loops, sp, True)
            return
        if isinstance(e, N.BinOp) and e.op in ("/", "%") and not _has_float(e) and \
                (isinstance(e.rhs, N.Const) and isinstance(e.rhs.value, int) or
                 isinstance(e.rhs, N.Var) and e.rhs.name in ints):
            R(path, e, "divmod", loops, sp)
        if isinstance(e, N.Intrinsic) and e.name in ("__memcpy", "__memcpy_async"):
            R(path, e, "copy", loops, sp)
            for k, a in enumerate(e.args[:2]):
                if isinstance(a, N.BinOp) and a.op == "+" and not _has_float(a.rhs):
                    R(path + ["args", k, "rhs"], a.rhs, "index", loops, sp)
        for f in fields(e):
            if f.name == "loc":
                continue
            v = getattr(e, f.name)
            if isinstance(v, N.Expr):
                expr(v, path + [f.name], loops, sp, index_ctx)
            elif isinstance(v, tuple):
                for k, x in enumerate(v):
                    if isinstance(x, N.Expr):
                        expr(x, path + [f.name, k], loops, sp, index_ctx)

    def cond(e, path, loops, sp):
        """ordering comparisons of a condition (through && || !)"""
        if isinstance(e, N.BinOp) and e.op in ("&&", "||"):
            cond(e.lhs, path + ["lhs"], loops, sp)
            cond(e.rhs, path + ["rhs"], loops, sp)
        elif isinstance(e, N.UnOp) and e.op == "!":
            cond(e.operand, path + ["operand"], loops, sp)
        elif isinstance(e, N.BinOp) and e.op in ORDER_OPS and not _has_float(e):
            R(path, e, "guard", loops, sp)

    def stmt(s, path, loops, under_if, thread_loop):
        sp = list(path)
        if isinstance(s, N.Block):
            if not under_if and not thread_loop and shared and dialect in ("cuda", "hip") and any(
                    isinstance(n, N.Index) and _base_name(n) in shared for n in walk(s)):
                R(path, s, "block", loops, sp)
            for k, x in enumerate(s.stmts):
                stmt(x, path + ["stmts", k], loops, under_if, thread_loop)
        elif isinstance(s, N.For):
            expr(s.lo, path + ["lo"], loops, sp)
            expr(s.hi, path + ["hi"], loops, sp)
            R(path, s, "bound", loops, sp)
            R(path, s, "stride", loops, sp)
            tl = thread_loop or (s.binding is not None and not str(s.binding).startswith(("blockIdx", "cluster")))
            stmt(s.body, path + ["body"], loops + [s], under_if, tl)
        elif isinstance(s, N.CFor):
            if s.cond is not None:
                cond(s.cond, path + ["cond"], loops, sp)
            stmt(s.body, path + ["body"], loops, under_if, thread_loop)
        elif isinstance(s, N.While):
            cond(s.cond, path + ["cond"], loops, sp)
            stmt(s.body, path + ["body"], loops, under_if, thread_loop)
        elif isinstance(s, N.If):
            cond(s.cond, path + ["cond"], loops, sp)
            expr(s.cond, path + ["cond"], loops, sp)
            stmt(s.then, path + ["then"], loops, True, thread_loop)
            if s.else_ is not None:
                stmt(s.else_, path + ["else_"], loops, True, thread_loop)
        elif isinstance(s, N.Decl):
            if s.init is not None:
                if s.name in updated and isinstance(s.init, (N.Const, N.UnOp)) and isinstance(s.type, N.Scalar):
                    c = _const_of(s.init) if isinstance(s.init, N.Const) else \
                        (_const_of(s.init.operand) if s.init.op == "-" else None)
                    if c is not None:
                        R(path + ["init"] + ([] if isinstance(s.init, N.Const) else ["operand"]), c, "init", loops, sp)
                expr(s.init, path + ["init"], loops, sp)
        elif isinstance(s, N.Assign):
            if isinstance(s.target, (N.Var, N.Index)) and s.op == "=" and _base_name(s.target) in updated and \
                    isinstance(s.value, (N.Const, N.UnOp)):
                # a constant, or a negated one (``-3.4e38f`` parses as minus a constant)
                c = _const_of(s.value) if isinstance(s.value, N.Const) else \
                    (_const_of(s.value.operand) if s.value.op == "-" else None)
                if c is not None:
                    R(path + ["value"] + ([] if isinstance(s.value, N.Const) else ["operand"]), c, "init", loops, sp)
            expr(s.target, path + ["target"], loops, sp)
            expr(s.value, path + ["value"], loops, sp)
            if isinstance(s.value, N.Cond):
                cond(s.value.cond, path + ["value", "cond"], loops, sp)
        elif isinstance(s, N.ExprStmt):
            expr(s.expr, path + ["expr"], loops, sp)
        elif isinstance(s, N.Return) and s.value is not None:
            expr(s.value, path + ["value"], loops, sp)
        # ternaries in declarations (count - off < CHUNK ? ...)
        if isinstance(s, N.Decl) and isinstance(s.init, N.Cond):
            cond(s.init.cond, path + ["init", "cond"], loops, sp)

    stmt(func.body, ["items", fi, "body"], [], False, False)
    return out


def _const_of(e):
    if isinstance(e, N.Const) and not isinstance(e.value, (str, bool)) and e.value is not None:
        return e
    return None


def wrong_outputs(verdict) -> set:
    names = set()
    for f in getattr(verdict, "failures", []) or []:
        if f.arg:
            names.add(f.arg)
        m = re.search(r"output '([^']+)'", f.message or "")
        if m:
            names.add(m.group(1))
    return names


def _slice(func: N.Func, outs: set, param_names: list, start: set | None = None) -> dict:
    """ids of statements in the backward slice of the stores into ``outs``, each with its depth:
    0 for the stores into the outputs and the loops and conditions around them, k + 1 for the
    statements that define what a depth-k statement reads (breadth first). ``start``: ids of
    the store statements to start from instead (the stores a trace names)."""
    stmts = []   # (stmt, enclosing stmts)

    def go(s, encl):
        stmts.append((s, encl))
        for c in s.children():
            if isinstance(c, N.Stmt):
                go(c, encl + [s])
    go(func.body, [])
    leaf = [(s, e) for s, e in stmts if not isinstance(s, (N.Block, N.For, N.CFor, N.If, N.While))]

    def writes(s):
        w = set()
        if isinstance(s, N.Assign):
            b = _base_name(s.target)
            if b:
                w.add(b)
        if isinstance(s, N.Decl):
            w.add(s.name)
        for n in walk(s):
            if isinstance(n, N.Intrinsic) and n.args:
                b = _base_name(n.args[0])
                if b:
                    w.add(b)
            if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--"):
                b = _base_name(n.operand)
                if b:
                    w.add(b)
        return w

    def reads(s, encl):
        r = {n.name for n in walk(s) if isinstance(n, N.Var)}
        for e in encl:
            if isinstance(e, N.For):
                r |= {n.name for n in walk((e.lo, e.hi, e.step)) if isinstance(n, N.Var)} | {e.var}
            elif isinstance(e, (N.If, N.While)):
                r |= {n.name for n in walk(e.cond) if isinstance(n, N.Var)}
            elif isinstance(e, N.CFor):
                r |= {n.name for n in walk((e.init, e.cond, e.next)) if isinstance(n, N.Var)}
        return r

    if not outs:
        return {id(s): 0 for s, _ in stmts}
    outs = set(outs)
    # pointers into a wrong output are the output too (``float *c = C + i * N; c[j] = ...``)
    grew = True
    while grew:
        grew = False
        for s, _ in stmts:
            if isinstance(s, N.Decl) and isinstance(s.type, N.Pointer) and s.init is not None \
                    and s.name not in outs and _base_name(s.init) in outs:
                outs.add(s.name)
                grew = True
            elif isinstance(s, N.Assign) and s.op == "=" and isinstance(s.target, N.Var) \
                    and s.target.name not in outs and _base_name(s.value) in outs:
                outs.add(s.target.name)
                grew = True
    need: set = set(outs) if start is None else set()
    inslice: dict = {}
    depth = 0
    while True:
        if start is not None and depth == 0:
            added = [(s, encl) for s, encl in leaf if id(s) in start]
        else:
            added = [(s, encl) for s, encl in leaf if id(s) not in inslice and writes(s) & need]
        if not added:
            return inslice
        for s, encl in added:
            inslice[id(s)] = depth
            for e in encl:
                inslice.setdefault(id(e), depth)
        for s, encl in added:
            need |= reads(s, encl)
        depth += 1


_AT_LINE = re.compile(r"\bin [^\s:()]+\.(?:c|cc|cpp|cu|hip|mlu|h):(\d+)\b")


def hot_lines(verdict) -> set:
    """Source lines a failure names: AddressSanitizer reports the candidate's line of a bad
    access (``... in kernel.cu:21 (fn)``), a BANG copy check its call's line."""
    out = set()
    for f in getattr(verdict, "failures", None) or []:
        for m in _AT_LINE.finditer(f.message or ""):
            out.add(int(m.group(1)))
    return out


def _line(n):
    loc = getattr(n, "loc", None)
    return loc.line if loc is not None else None


def _admitting(func: N.Func, hot: set) -> set:
    """Lines of the nearest condition and the nearest loop around a statement on a hot line: a
    bad access is as often let through by its guard or its loop bound as caused by its index."""
    out = set()

    def go(s, near_if, near_for):
        if not isinstance(s, (N.Block, N.For, N.CFor, N.If, N.While)) and _line(s) in hot:
            out.update(x for x in (near_if, near_for) if x is not None)
        for c in s.children():
            if isinstance(c, N.Stmt):
                go(c, _line(s) if isinstance(s, (N.If, N.While)) else near_if,
                   _line(s) if isinstance(s, (N.For, N.CFor)) else near_for)
    go(func.body, None, None)
    return out


def _line_of(prog, r: Region):
    if r.line is not None:
        return r.line
    try:
        loc = getattr(get_at(prog, r.stmt_path), "loc", None)
        return loc.line if loc is not None else None
    except (AttributeError, IndexError, TypeError):
        return None


def localize(prog: N.Program, entry: str, dialect: str, verdict=None, stores=None,
             evidence=None) -> list[Region]:
    """The regions of the entry function, most likely first (see the module docstring).
    ``stores``: paths of the store statements a trace names (xpiler/repair/trace.py): the
    backward slice from those ranks before the rest of the static slice; ``evidence``: the
    failure kind the trace saw (``Trace.evidence``), which then orders the region kinds."""
    regs = regions(prog, entry, dialect)
    hot = hot_lines(verdict) if verdict is not None else set()
    if hot:
        hot |= _admitting(prog.func(entry), hot)
    func = prog.func(entry)
    outs = wrong_outputs(verdict) if verdict is not None else set()
    codes = [f.code for f in (getattr(verdict, "failures", None) or [])]
    prio = next((PRIORITY[c] for c in codes if c in PRIORITY), DEFAULT)
    if stores and evidence in PRIORITY and "XP2103" not in codes:
        prio = PRIORITY[evidence]
    sl = _slice(func, outs, [p.name for p in func.params])
    tsl = None
    if stores:
        ids = set()
        for p in stores:
            try:
                ids.add(id(get_at(prog, p)))
            except (AttributeError, IndexError, TypeError):
                pass
        tsl = _slice(func, outs, [p.name for p in func.params], start=ids) if ids else None

    def slice_depth(r: Region):
        try:
            st = get_at(prog, r.stmt_path)
        except (AttributeError, IndexError, TypeError):
            return 0
        if tsl is not None and id(st) in tsl:
            return tsl[id(st)]
        return sl.get(id(st))

    def traced(r: Region) -> bool:
        try:
            return tsl is not None and id(get_at(prog, r.stmt_path)) in tsl
        except (AttributeError, IndexError, TypeError):
            return False

    hang = "XP2103" in codes

    def open_ended(r: Region) -> bool:
        """The condition of a loop whose end is not evident (a C-style loop or a while): a
        canonical ``for`` with a positive step always ends, so a hang comes from one of these."""
        sp = tuple(r.stmt_path)
        if r.kind != "guard" or tuple(r.path[:len(sp) + 1]) != sp + ("cond",):
            return False
        try:
            return isinstance(get_at(prog, sp), (N.CFor, N.While))
        except (AttributeError, IndexError, TypeError):
            return False

    def tier(r: Region) -> int:
        # a region on a line a failure names (the bad access's line) first, then the slice
        if hot and _line_of(prog, r) in hot and r.kind in ("index", "divmod", "copy", "guard", "bound", "stride"):
            return 0
        if hang and open_ended(r):
            return 0
        if tsl is not None:
            # the slice from the stores the trace names, then the rest of the static slice
            return 1 if traced(r) else 2 if slice_depth(r) is not None else 3
        return 1 if slice_depth(r) is not None else 2

    # within a tier the kinds take turns (the first region of each kind, in the failure kind's
    # order, then the second of each...): the failure code is a weak hint, and a kind ranked
    # last must not wait behind every region of the kinds before it
    seen: dict = {}
    keyed = []
    # (within a kind, the regions nearer the wrong stores first: slice depth, then source order)
    for i, r in sorted(enumerate(regs), key=lambda t: (tier(t[1]), slice_depth(t[1]) or 0, t[0])):
        k = (tier(r), r.kind)
        n = seen[k] = seen.get(k, -1) + 1
        keyed.append((tier(r), n, prio.index(r.kind) if r.kind in prio else 99, i, r))
    keyed.sort(key=lambda t: t[:4])
    return [t[4] for t in keyed]
