"""A bound row's elements in registers: ``row_registers`` (an expansion into registers, cuda / hip).

A row kernel bound one block per row (``binding(rows="block")``, ``passes/block_rows.py``) walks
its row once per column loop: softmax reads ``x`` for the maximum, again for the exponentials
(storing them in ``y``), then reads ``y`` back to scale it. When the row is short enough that each
thread holds its share of it, the expert form reads the row once into registers and writes the
result once. For a block of ``B`` threads and ``K`` slots (``slots``) this step rewrites the
bound row loop ``R`` into::

    if (H <= K * B) {
        for r ... [blockIdx.x] {                     (R's body, with:)
            T v_x[K];  T v_y[K];                     one register array per cached row access
            for (i = 0; i < K; i++) { c = tid + i * B; if (c < H) v_x[i] = xr[c]; }   (a read row)
            ...
            #pragma unroll
            for (i = 0; i < K; i++) {                every column loop [threadIdx.x] of R becomes
                int c = tid + i * B;                 this slot loop; xr[c] -> v_x[i], yr[c] -> v_y[i]
                if (c >= L && c < H) BODY
            }
            ...
            for (i = 0; i < K; i++) { c = tid + i * B; if (c < H) yr[c] = v_y[i]; }   (a written row)
        }
    } else R                                         (the bound loop as it was)

``H`` is the column loops' common bound, ``L`` each loop's own start. In the fast version every
column loop gives column ``c`` to thread ``c % B`` (slot ``c / B``), whatever its start, so the
thread that holds ``v[i]`` is the only one that touches element ``c`` of a cached row.

Legality (:func:`check`; ``PassError`` XP4002 where there is nothing to do, XP4001 naming what
stands in the way):

* the entry has one top-level row loop bound to ``blockIdx.x`` whose column loops (bound to
  ``threadIdx.x``, each a statement of the row body or of a block there, never under a condition:
  binding's spread form, which already established that their iterations are
  independent except for the reductions it folded) all have step 1, a constant start, no nested
  loop, and one bound ``H`` made of parameters the function never assigns; the launch's block is
  a constant;
* a cached access is ``p[c]`` or ``p[f + c]`` inside a column loop, with ``p`` and ``f`` fixed for
  the row (parameters, the row variable, and declarations made in the row body before the first
  column loop and never assigned); buffers are told apart by their root parameter through local
  pointer aliases (differently named buffers are distinct, as in the dependence test); a row
  alias ``p = q + g`` (:func:`_row_aliases`) is keyed as its base, ``p[f + c]`` as
  ``q[(g + f) + c]``, so both spellings of one element are one access (offsets compared as text);
* a buffer the function never stores to is *read*: its accesses of that form are cached when
  some column loop that starts at 0 reads ``p[f + c]`` at the top level of its body (so loading
  ``[0, H)`` reads only what the source reads); other reads of it stay memory reads;
* a buffer that is stored to is cached only when every access to it in the function is that one
  form inside the column loops, and the first column loop touching it starts at 0 and stores
  ``p[f + c] = e`` first, at the top level of its body, unconditionally, with ``e`` not reading
  it (so every element of ``[0, H)`` is written before any is read, and the final store writes
  exactly what the source wrote); otherwise the step refuses (a buffer other threads can see
  stays in memory, so the step never has to move a barrier);
* only an access used by two or more column loops is cached (one loop moves each element once
  anyway); at least one is, and at most :data:`MAX_ROWS`.

Why it keeps the meaning: when ``H <= K * B`` the slot loop visits every ``c`` in ``[L, H)``
exactly once per thread set, as the block-stride loop did, so each reduction sees the same
elements (folded in another order, as the block's partials already were). A read row is loaded
before its first use, and no store can change it. A stored row's element lives in one thread's
register from its first store to the final store, and no other statement touches it. Otherwise
the original loop runs.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import AlternativeRefused, PassError
from . import dependence as D

NAME = "row_registers"
SIMT = ("cuda", "hip")
#: slots per thread offered to the search (``slots * block`` columns fit in registers)
SLOTS = (4, 8, 16)
#: the most row accesses held in registers at once (each is ``slots`` registers per thread)
MAX_ROWS = 4
_TID = N.Builtin("threadIdx.x")


def _int(v) -> N.Const:
    return N.Const(int(v), "int32", str(int(v)))


def _text(e) -> str:
    from xpiler.printers import printer_for
    return printer_for("cuda").expr(e)


def _row_loop(func: N.Func) -> N.For:
    rows = [s for s in func.body.stmts if isinstance(s, N.For) and s.binding == "blockIdx.x"]
    if len(rows) != 1:
        raise AlternativeRefused(NAME, f"{func.name} has no single row loop bound to blockIdx.x (binding's "
                                       f"rows='block' form)", func)
    return rows[0]


def _column_loops(row: N.For) -> list:
    """(top-level statement of the row body, column loop) pairs, in order."""
    out = []
    for s in row.body.stmts:
        for n in walk(s):
            if isinstance(n, N.For) and n.binding == "threadIdx.x":
                out.append((s, n))
    return out


def _root_table(func: N.Func) -> dict:
    """local pointer alias -> the parameter it points into (through aliases of aliases)."""
    table = D.alias_table(func)
    params = {p.name for p in func.params}

    def root(name, depth=0):
        if name in params:
            return name
        if name in table and depth < 8:
            b, _ = D._split_ptr(table[name])
            if isinstance(b, str):
                return root(b, depth + 1)
        return None
    return {n: root(n) for n in set(table) | params}


def _split_index(e: N.Expr, var: str):
    """``f`` when ``e`` is ``var``, ``f + var`` or ``var + f`` with ``f`` free of ``var`` (None for
    ``var`` alone), else ``False``."""
    if isinstance(e, N.Var) and e.name == var:
        return None
    if isinstance(e, N.BinOp) and e.op == "+":
        for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(b, N.Var) and b.name == var and not any(
                    isinstance(n, N.Var) and n.name == var for n in walk(a)):
                return a
    return False


def _stores(func: N.Func, roots: dict) -> set:
    """Root parameters stored through anywhere in ``func``; PassError for a store whose buffer is
    not known."""
    out = set()
    arrays = {d.name for d in walk(func.body) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}
    for n in walk(func.body):
        t = n.target if isinstance(n, (N.Assign, N.AssignExpr)) else \
            n.operand if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") else None
        if t is None or isinstance(t, N.Var):
            continue
        base = t.base if isinstance(t, N.Index) else None
        while isinstance(base, N.Index):
            base = base.base
        if isinstance(base, N.Var) and base.name in arrays:
            continue                      # a local (or shared) array: no parameter's buffer
        r = roots.get(base.name) if isinstance(base, N.Var) else None
        if r is None:
            raise PassError(NAME, f"a store through '{_text(t)}' whose buffer is not a parameter's", n)
        out.add(r)
    return out


def _conditional(stmt, node) -> bool:
    """``node`` (inside the top-level loop-body statement ``stmt``) may be skipped: it sits under
    a branch, a ternary or a short-circuit operator."""
    def inside(n, found=False):
        if n is node:
            return found
        kids = n.children() if isinstance(n, N.Node) else []
        guard = isinstance(n, (N.If, N.Cond)) or isinstance(n, N.BinOp) and n.op in ("&&", "||")
        for k in kids:
            r = inside(k, found or guard)
            if r is not None:
                return r
        return None
    return bool(inside(stmt))


def check(program: N.Program, *, entry: str, target: str = "cuda", slots: int = 8, **_) -> dict:
    if target not in SIMT or program.dialect not in SIMT:
        raise AlternativeRefused(NAME, f"row_registers is a cuda/hip step, not {target}")
    if int(slots) < 1:
        raise PassError(NAME, f"slots={slots}: at least one slot per thread")
    func = program.func(entry)
    row = _row_loop(func)
    launch = program.launch_of(entry) or {}
    block = (launch.get("block") or [None])[0]
    if not isinstance(block, int):
        raise AlternativeRefused(NAME, f"the launch's block ({block!r}) is not a constant", row)
    cols = _column_loops(row)
    if not cols:
        raise AlternativeRefused(NAME, f"row loop '{row.var}' has no column loop bound to threadIdx.x", row)
    for top, c in cols:
        if not (top is c or isinstance(top, N.Block) and any(x is c for x in top.stmts)):
            raise AlternativeRefused(NAME, f"column loop '{c.var}' runs under a condition or another loop of the "
                                           f"row body (binding's spread form has it at the top)", c)
    hi = None
    for _, c in cols:
        if not (isinstance(c.step, N.Const) and c.step.value == 1 and isinstance(c.lo, N.Const)
                and isinstance(c.lo.value, int) and c.lo.value >= 0):
            raise AlternativeRefused(NAME, f"column loop '{c.var}' is not 'for (c = L; c < H; c++)' with a "
                                           f"constant L >= 0", c)
        if any(isinstance(n, (N.For, N.CFor, N.While)) for n in walk(c.body)):
            raise AlternativeRefused(NAME, f"column loop '{c.var}' nests a loop", c)
        if hi is None:
            hi = c.hi
        elif _text(c.hi) != _text(hi):
            raise AlternativeRefused(NAME, f"column loops end at '{_text(hi)}' and '{_text(c.hi)}'", c)
    params = {p.name for p in func.params}
    assigned = D.assigned_names(func.body)
    free = {n.name for n in walk(hi) if isinstance(n, N.Var)}
    if not free <= params or free & assigned:
        raise AlternativeRefused(NAME, f"the column bound '{_text(hi)}' is not made of parameters the kernel "
                                       f"never assigns", row)
    # names fixed for the row: declared in the row body before its first column loop, never assigned
    first = next(i for i, s in enumerate(row.body.stmts) if any(s is t for t, _ in cols))
    fixed = {row.var} | (params - assigned)
    for s in row.body.stmts[:first]:
        if isinstance(s, N.Decl) and s.name not in assigned and not isinstance(s.type, N.Array):
            fixed.add(s.name)
    roots = _root_table(func)
    stored = _stores(func, roots)
    canon = _row_aliases(func, fixed, roots)
    # every access p[f + c] of every column loop, by (pointer, offset text), a row alias's access
    # by its base pointer's (:func:`_row_aliases`)
    sites: dict = {}
    for k, (top, c) in enumerate(cols):
        for n in walk(c.body):
            if not (isinstance(n, N.Index) and isinstance(n.base, N.Var)):
                continue
            f = _split_index(n.index, c.var)
            if f is False:
                continue
            if f is not None and not {v.name for v in walk(f) if isinstance(v, N.Var)} <= fixed:
                continue
            if n.base.name not in fixed or roots.get(n.base.name) is None:
                continue
            key = _key(n.base.name, f, canon)
            sites.setdefault(key, {"ptr": n.base.name, "off": f, "root": roots[n.base.name], "loops": []})
            if k not in sites[key]["loops"]:
                sites[key]["loops"].append(k)
    rows_ = {}
    for key, site in sites.items():
        if len(site["loops"]) < 2:
            continue                      # used by one column loop: each element is moved once anyway
        r = site["root"]
        if r not in stored:
            if any(cols[k][1].lo.value == 0 and _top_read(cols[k][1], key, canon) for k in site["loops"]):
                rows_[key] = dict(site, kind="read")
            continue
        why = _written_ok(func, row, cols, key, site, roots, canon)
        if why:
            raise PassError(NAME, f"row '{key[0]}' is stored to, but {why}", row)
        rows_[key] = dict(site, kind="write")
    if not rows_:
        raise AlternativeRefused(NAME, f"no row access of loop '{row.var}' that two column loops use can be held "
                                       f"in registers", row)
    if len(rows_) > MAX_ROWS:
        raise AlternativeRefused(NAME, f"{len(rows_)} row accesses; at most {MAX_ROWS} are held in registers", row)
    for key, site in rows_.items():
        t = _elem(func, site["ptr"])
        if t is None:
            raise AlternativeRefused(NAME, f"'{site['ptr']}' is not a pointer to a scalar", row)
        site["elem"] = t
    return {"func": func, "row": row, "cols": cols, "hi": hi, "block": block, "slots": int(slots),
            "rows": rows_, "canon": canon}


def _row_aliases(func: N.Func, fixed: set, roots: dict) -> dict:
    """Row aliases: a local pointer ``p = q + g`` (``D.alias_table``: declared once, never
    assigned) fixed for the row, with ``q`` a fixed pointer into a parameter's buffer and ``g``
    made of names fixed for the row -> ``(q, g)``. Its element ``p[f + c]`` is ``q[(g + f) + c]``
    (the same address), so both accesses are one row access (an inlined helper's ``row[j]`` and
    the caller's ``x[base + j]``)."""
    out = {}
    for name, init in D.alias_table(func).items():
        if name not in fixed:
            continue
        q, g = D._split_ptr(init)
        if not isinstance(q, str) or g is None or q not in fixed or roots.get(q) is None or q == name:
            continue
        if {v.name for v in walk(g) if isinstance(v, N.Var)} <= fixed:
            out[name] = (q, g)
    return out


def _key(ptr: str, f, canon: dict) -> tuple:
    """The row access ``ptr[f + c]`` as (pointer, offset text), through a row alias (canon)."""
    if ptr in canon:
        q, g = canon[ptr]
        return q, _text(g if f is None else N.BinOp("+", g, f))
    return ptr, "" if f is None else _text(f)


def _matches(n, key, var, canon=None) -> bool:
    if not (isinstance(n, N.Index) and isinstance(n.base, N.Var)):
        return False
    f = _split_index(n.index, var)
    return f is not False and _key(n.base.name, f, canon or {}) == key


def _top_read(loop: N.For, key, canon=None) -> bool:
    """A top-level statement of ``loop`` reads the row access ``key`` unconditionally."""
    for s in loop.body.stmts:
        reads = [s.init] if isinstance(s, N.Decl) else [s.value] if isinstance(s, N.Assign) else \
            [s.expr] if isinstance(s, N.ExprStmt) else []
        if isinstance(s, N.Assign) and s.op != "=":
            reads.append(s.target)
        for e in reads:
            if e is None:
                continue
            for n in walk(e):
                if _matches(n, key, loop.var, canon) and not _conditional(e, n):
                    return True
    return False


def _written_ok(func, row, cols, key, site, roots, canon=None) -> str:
    """'' when the stored row ``key`` can live in registers (module doc), else why not."""
    ptrs = {p for p, r in roots.items() if r == site["root"]}
    col_nodes = {}
    for k, (_, c) in enumerate(cols):
        for n in walk(c.body):
            col_nodes[id(n)] = c
    for n in walk(func.body):
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name in ptrs:
            c = col_nodes.get(id(n))
            if c is None or not _matches(n, key, c.var, canon):
                return f"'{_text(n)}' is not the row's own element in a column loop"
    # a pointer of that buffer used other than as p[..] (passed on, its address taken) escapes
    bases = {id(n.base) for n in walk(func.body) if isinstance(n, N.Index)}
    decl_inits = {id(v) for d in walk(func.body) if isinstance(d, N.Decl) and d.init is not None
                  for v in walk(d.init) if isinstance(v, N.Var) and d.name in ptrs}
    for n in walk(func.body):
        if isinstance(n, N.Var) and n.name in ptrs and id(n) not in bases and id(n) not in decl_inits:
            return f"'{n.name}' is used other than as an element access"
    first = cols[site["loops"][0]][1]
    if first.lo.value != 0:
        return f"its first column loop '{first.var}' starts at {first.lo.value}, not 0"
    for s in first.body.stmts:
        touches = any(_matches(n, key, first.var, canon) for n in walk(s))
        if not touches:
            continue
        if isinstance(s, N.Assign) and s.op == "=" and _matches(s.target, key, first.var, canon) and \
                not any(_matches(n, key, first.var, canon) for n in walk(s.value)):
            return ""
        return f"column loop '{first.var}' does not store it first, unconditionally"
    return "its first column loop does not store it"


def _elem(func: N.Func, ptr: str):
    types = {p.name: p.type for p in func.params}
    types.update({d.name: d.type for d in walk(func.body) if isinstance(d, N.Decl)})
    t = types.get(ptr)
    if not isinstance(t, N.Pointer) or not isinstance(t.elem, N.Scalar):
        return None
    e = t.elem
    return e.with_(const=False) if getattr(e, "const", False) else e


def apply(program: N.Program, *, entry: str, target: str = "cuda", slots: int = 8, **_):
    pl = check(program, entry=entry, target=target, slots=slots)
    func, row, K, B, hi = pl["func"], pl["row"], pl["slots"], pl["block"], pl["hi"]
    from .binding import _fresh_name
    taken = set()

    def fresh(base):
        name, k = _fresh_name(func, base), 0
        while name in taken:
            k += 1
            name = _fresh_name(func, f"{base}_{k}")
        taken.add(name)
        return name
    int_t = N.Scalar("int32", "int")
    reg = {key: fresh(f"xp_reg_{site['ptr']}") for key, site in pl["rows"].items()}

    def slot_loop(body_of):
        i, c = fresh("xp_s"), fresh("xp_c")
        col = N.BinOp("+", _TID, N.BinOp("*", N.Var(i), _int(B)))
        body = N.Block((N.Decl(c, int_t, col), N.If(N.BinOp("<", N.Var(c), hi), N.Block(tuple(body_of(i, c))))))
        return N.For(i, _int(0), _int(K), _int(1), body, var_type=int_t, pragmas=("unroll",))

    def elem(key, site, c):
        idx = N.Var(c) if site["off"] is None else N.BinOp("+", site["off"], N.Var(c))
        return N.Index(N.Var(site["ptr"]), idx)

    def column(loop: N.For) -> N.For:
        i, c = fresh("xp_s"), loop.var
        col = N.BinOp("+", _TID, N.BinOp("*", N.Var(i), _int(B)))
        cond = N.BinOp("<", N.Var(c), hi)
        if loop.lo.value:
            cond = N.BinOp("&&", N.BinOp(">=", N.Var(c), loop.lo), cond)

        def fn(n):
            if isinstance(n, N.Index):
                for key in reg:
                    if _matches(n, key, c, pl["canon"]):
                        return N.Index(N.Var(reg[key]), N.Var(i))
            return n
        body = N.Block((N.Decl(c, loop.var_type or int_t, col), N.If(cond, rewrite(loop.body, fn))))
        return N.For(i, _int(0), _int(K), _int(1), body, var_type=int_t, pragmas=("unroll",), loc=loop.loc)

    loops = {id(c): k for k, (_, c) in enumerate(pl["cols"])}
    first_use = {key: site["loops"][0] for key, site in pl["rows"].items()}
    last_use = {key: site["loops"][-1] for key, site in pl["rows"].items()}
    tops = [t for t, _ in pl["cols"]]
    out = [N.Decl(reg[key], N.Array(site["elem"], (_int(K),))) for key, site in pl["rows"].items()]
    for s in row.body.stmts:
        ks = [k for k, t in enumerate(tops) if t is s]
        for key, site in pl["rows"].items():
            if site["kind"] == "read" and ks and first_use[key] in ks:
                out.append(slot_loop(lambda i, c, key=key, site=site: [
                    N.Assign(N.Index(N.Var(reg[key]), N.Var(i)), "=", elem(key, site, c))]))
        out.append(rewrite(s, lambda n: column(n) if isinstance(n, N.For) and id(n) in loops else n)
                   if ks else s)
        for key, site in pl["rows"].items():
            if site["kind"] == "write" and ks and last_use[key] in ks:
                out.append(slot_loop(lambda i, c, key=key, site=site: [
                    N.Assign(elem(key, site, c), "=", N.Index(N.Var(reg[key]), N.Var(i)))]))
    fast = row.with_(body=row.body.with_(stmts=tuple(out)))
    guard = N.If(N.BinOp("<=", hi, _int(K * B)), N.Block((fast,)), N.Block((row,)), loc=row.loc)
    new_func = func.with_(body=D.replace_node(func.body, row, guard))
    return program.with_(items=tuple(new_func if it is func else it for it in program.items))


def candidates(program: N.Program, target: str) -> list:
    """``slots`` in :data:`SLOTS` for the bound row loop of a cuda/hip kernel."""
    if target not in SIMT or program.dialect != target:
        return []
    from .base import checked_kernels
    return [{"entry": name, "target": target, "slots": k}
            for name in checked_kernels(program, check, target=target) for k in SLOTS]
