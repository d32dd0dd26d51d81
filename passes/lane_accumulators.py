"""Contraction of a lane-array accumulator into one scalar reduction (``contraction(mode="lanes")``).

A detensorized vector kernel keeps a running reduction in a lane array: every lane starts from
one value, each vector iteration combines lane ``l`` with its own element, and after the loop
the lanes are combined horizontally (``_mm512_reduce_max_ps`` becomes a copy and a halving tree
over a second array). Before (``apply(p, entry="f", array="acc", mode="lanes")``)::

    float acc[16];
    for (int l = 0; l < 16; ++l) { acc[l] = 0.0f; }
    for (int c = 0; c < n; c += 16) {
        for (int l = 0; l < 16; ++l) { acc[l] = acc[l] + x[c + l]; }
    }
    float red[16];
    for (int i = 0; i < 16; ++i) { red[i] = acc[i]; }
    for (int w = 8; w > 0; w /= 2) {
        for (int i = 0; i < w; ++i) { red[i] = red[i] + red[i + w]; }
    }
    y[0] = red[0];

After::

    float acc = 0.0f;
    for (int c = 0; c < n; c += 16) {
        for (int l = 0; l < 16; ++l) { acc = acc + x[c + l]; }
    }
    y[0] = acc;

The result is the operator applied to the initial value and every element each lane saw: the
same multiset of operands, combined in another order.

Legality (:func:`plan`; every refusal a ``PassError`` XP4001 naming the statement):

* ``acc`` is declared once in the function, a 1-D local array of a scalar type with a constant
  length ``L``, without initializer; the statement after its declaration (in the same block)
  is the lane loop ``for (l = 0; l < L; ++l) acc[l] = v;`` with ``v`` free of ``l`` and of
  ``acc`` and without side effects: every lane starts from the same value;
* every later use of ``acc`` before the horizontal reduction is an update ``acc[l] = acc[l] OP
  f`` (or ``f OP acc[l]``, ``fmaxf/fminf``, the ``?:`` forms of max / min that
  ``phases.reduction_of`` knows, or ``acc[l] = c ? <update> : acc[l]``) in a loop ``l`` from 0
  by 1 below at most ``L`` (so it touches lane ``l`` only), directly or through a scalar
  declared just for it in that loop's body; ``f`` and ``c`` read no element of ``acc``. Any
  other read (the accumulator used for something else inside the loop) is refused;
* one operator for all updates: ``+ * max min & | ^`` (associative and commutative; ``-``
  accumulates ``-f`` with ``+`` as ``phases`` documents, ``f - acc[l]`` is refused). ``+`` and
  ``*`` regroup a float sum or product (docs/decisions.md, "Floating-point regrouping"); the
  result is still tested against the reference with the spec's tolerance;
* the initial value is the operator's identity (``0`` for ``+ ^``, ``1`` for ``*``), or the
  operator is idempotent (``max min & |``): ``L`` copies of ``v`` combine to ``v``;
* the horizontal reduction, a later statement of the declaration's block, is either the
  halving tree detensorize writes (``T red[L]; for (i < L) red[i] = acc[i]; for (w = L/2; w >
  0; w /= 2) for (i < w) red[i] = red[i] OP red[i + w];``, ``L`` a power of two, then only
  ``red[0]`` read) or one expression combining ``acc[0] .. acc[L-1]`` each once with ``OP``;
  it uses the same operator; nothing reads or writes ``acc`` after it.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from .base import PassError
from . import phases

NAME = "contraction"
OPS = {"+", "*", "max", "min", "&", "|", "^"}
IDENTITY = {"+": 0, "^": 0, "*": 1}


def _const(e):
    while isinstance(e, N.Cast):
        e = e.expr
    return e.value if isinstance(e, N.Const) and isinstance(e.value, (int, float)) and \
        not isinstance(e.value, bool) else None


def _int(e):
    v = _const(e)
    return v if isinstance(v, int) else None


def _uses(node, name) -> list:
    return [n for n in walk(node) if isinstance(n, N.Var) and n.name == name]


def _is_elem(e, name, idx=None) -> bool:
    return isinstance(e, N.Index) and isinstance(e.base, N.Var) and e.base.name == name and \
        (idx is None or e.index == idx)


def _body(s):
    b = s.body if isinstance(s.body, N.Block) else N.Block((s.body,))
    return [x for x in b.stmts if not isinstance(x, (N.Comment, N.Pragma))]


def _lane_for(lp, max_hi) -> bool:
    hi = _int(lp.hi)
    return isinstance(lp, N.For) and lp.binding is None and lp.cmp == "<" and _int(lp.lo) == 0 and \
        _int(lp.step) == 1 and hi is not None and 0 < hi <= max_hi


def _paths(node, path=()):
    """(path of enclosing statements, Index node) for each Index below ``node``."""
    out = []
    if isinstance(node, tuple):
        for x in node:
            out.extend(_paths(x, path))
        return out
    if not isinstance(node, N.Node):
        return out
    if isinstance(node, N.Index):
        out.append((path, node))
    p2 = path + (node,) if isinstance(node, N.Stmt) else path
    for c in node.children():
        out.extend(_paths(c, p2))
    return out


def _op_of_update(stmt, acc, lane):
    """(operator, the scalar statement replacing ``stmt``) for an update ``acc[lane] = V`` whose
    ``V`` has been resolved (temporaries substituted); None when it is no such update."""
    elem = N.Index(N.Var(acc), N.Var(lane))

    def scal(n):
        return N.Var(acc, loc=n.loc) if _is_elem(n, acc, elem.index) else n
    v = rewrite(stmt.value, scal)
    if any(_is_elem(n, acc) for n in walk(v)):
        return None            # another lane of acc is read
    if isinstance(v, N.Cond) and not _uses(v.cond, acc) and (isinstance(v.then, N.Var) and v.then.name == acc) != \
            (isinstance(v.else_, N.Var) and v.else_.name == acc):
        # acc = c ? <update> : acc  ->  if (c) acc = <update>;
        keep_then = isinstance(v.else_, N.Var) and v.else_.name == acc
        upd = v.then if keep_then else v.else_
        cond = v.cond if keep_then else N.UnOp("!", v.cond)
        inner = N.Assign(N.Var(acc), "=", upd, loc=stmt.loc)
        op = phases.reduction_of(inner, acc)
        if op is None:
            return None
        return op, N.If(cond, N.Block((inner,), loc=stmt.loc), None, loc=stmt.loc)
    new = N.Assign(N.Var(acc), "=", v, loc=stmt.loc)
    op = phases.reduction_of(new, acc)
    return (op, new) if op is not None else None


def _tree(block_stmts, h, acc, L, op):
    """The statements [h, h+3) forming detensorize's halving tree over ``acc`` into a new array,
    and that array's name; None when they do not."""
    if h + 2 >= len(block_stmts) or L & (L - 1):
        return None
    d, cp, tr = block_stmts[h], block_stmts[h + 1], block_stmts[h + 2]
    if not (isinstance(d, N.Decl) and isinstance(d.type, N.Array) and len(d.type.dims) == 1
            and _int(d.type.dims[0]) == L and d.init is None):
        return None
    red = d.name
    if not (isinstance(cp, N.For) and _lane_for(cp, L) and _int(cp.hi) == L):
        return None
    b = _body(cp)
    if not (len(b) == 1 and isinstance(b[0], N.Assign) and b[0].op == "=" and _is_elem(b[0].target, red, N.Var(cp.var))
            and _is_elem(b[0].value, acc, N.Var(cp.var))):
        return None
    if not (isinstance(tr, N.CFor) and isinstance(tr.init, N.Decl) and _int(tr.init.init) == L // 2):
        return None
    w = tr.init.name
    if not (tr.cond == N.BinOp(">", N.Var(w), N.Const(0, "int32", "0")) or
            isinstance(tr.cond, N.BinOp) and tr.cond.op == ">" and tr.cond.lhs == N.Var(w) and _int(tr.cond.rhs) == 0):
        return None
    nx = tr.next
    halves = (isinstance(nx, N.AssignExpr) and nx.target == N.Var(w) and
              (nx.op == "/=" and _int(nx.value) == 2 or nx.op == ">>=" and _int(nx.value) == 1))
    if not halves:
        return None
    tb = _body(tr)
    if not (len(tb) == 1 and isinstance(tb[0], N.For) and tb[0].binding is None and _int(tb[0].lo) == 0
            and _int(tb[0].step) == 1 and tb[0].cmp == "<" and tb[0].hi == N.Var(w)):
        return None
    i = tb[0].var
    ib = _body(tb[0])
    if not (len(ib) == 1 and isinstance(ib[0], N.Assign) and ib[0].op == "=" and _is_elem(ib[0].target, red, N.Var(i))):
        return None
    def scal(n):
        if _is_elem(n, red, N.Var(i)):
            return N.Var(red, loc=n.loc)
        if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name == red and \
                isinstance(n.index, N.BinOp) and n.index.op == "+" and n.index.lhs == N.Var(i) and n.index.rhs == N.Var(w):
            return N.Var("__xp_other", loc=n.loc)
        return n
    v = rewrite(ib[0].value, scal)
    if not _uses(v, "__xp_other") or any(_is_elem(n, red) for n in walk(v)):
        return None
    if isinstance(v, N.BinOp) and v.op == "-":      # red[i] - red[i + w] is no reduction tree
        return None
    if phases.reduction_of(N.Assign(N.Var(red), "=", v), red) != op:
        return None
    return red


def _chain_leaves(e, op):
    """The operands of a maximal ``op`` chain at ``e`` (max / min as calls or ``?:``)."""
    if op in ("+", "*", "&", "|", "^") and isinstance(e, N.BinOp) and e.op == op:
        return _chain_leaves(e.lhs, op) + _chain_leaves(e.rhs, op)
    name = phases._call_name(e)
    if op in ("max", "min") and name in (phases.MAX_FUNCS if op == "max" else phases.MIN_FUNCS) and len(e.args) == 2:
        return _chain_leaves(e.args[0], op) + _chain_leaves(e.args[1], op)
    return [e]


def _chain(stmt, acc, L, op):
    """The expression of ``stmt`` that combines acc[0..L-1] each once with ``op``, or None."""
    want = list(range(L))
    for n in walk(stmt):
        if not isinstance(n, N.Expr):
            continue
        leaves = _chain_leaves(n, op)
        if len(leaves) == L and all(_is_elem(x, acc) and _int(x.index) is not None for x in leaves) and \
                sorted(_int(x.index) for x in leaves) == want:
            return n
    return None


def plan(program, *, entry: str, array: str | None = None, **_):
    if array is None:
        raise PassError(NAME, "no array given (parameter 'array')", None, "XP4002")
    try:
        fn = program.func(entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}' with a body", None) from None
    decls = [n for n in walk(fn.body) if isinstance(n, N.Decl) and n.name == array]
    if not decls:
        raise PassError(NAME, f"no local array '{array}' in '{entry}'", fn, "XP4002")
    if len(decls) > 1:
        raise PassError(NAME, f"lanes: '{array}' is declared {len(decls)} times in '{entry}'", decls[1])
    d = decls[0]
    L = _int(d.type.dims[0]) if isinstance(d.type, N.Array) and len(d.type.dims) == 1 else None
    if d.scope != "local" or L is None or L <= 0 or not isinstance(d.type.elem, N.Scalar):
        raise PassError(NAME, f"lanes: '{array}' is not a 1-D local array of scalars with a constant length", d)
    if d.init is not None:
        raise PassError(NAME, f"lanes: '{array}' has an initializer; its lanes are expected to be set by a loop", d)
    blk = next(b for b in walk(fn.body) if isinstance(b, N.Block) and any(s is d for s in b.stmts))
    stmts = list(blk.stmts)
    k = next(i for i, s in enumerate(stmts) if s is d)
    rest = [i for i in range(k + 1, len(stmts)) if not isinstance(stmts[i], (N.Comment, N.Pragma))]
    # --- every lane starts from one value
    if not rest:
        raise PassError(NAME, f"lanes: '{array}' is never used", d, "XP4002")
    ini = stmts[rest[0]]
    ib = _body(ini) if isinstance(ini, N.For) else []
    if not (isinstance(ini, N.For) and _lane_for(ini, L) and _int(ini.hi) == L and len(ib) == 1
            and isinstance(ib[0], N.Assign) and ib[0].op == "=" and _is_elem(ib[0].target, array, N.Var(ini.var))):
        raise PassError(NAME, f"lanes: the statement after the declaration of '{array}' is not a loop setting "
                              f"every lane '{array}[l] = v'", ini)
    init = ib[0].value
    if _uses(init, ini.var) or _uses(init, array) or not phases._pure(init):
        raise PassError(NAME, f"lanes: the lanes of '{array}' start from different values (the initial value "
                              f"depends on the lane or has side effects)", ib[0])
    # --- updates up to the horizontal reduction
    updates, temps, ops, h = {}, set(), set(), None
    for i in rest[1:]:
        s = stmts[i]
        accs = [(p, n) for p, n in _paths(s) if _is_elem(n, array)]
        if not accs:
            continue
        if h is None:
            bad = _updates_in(s, array, L, accs, updates, temps, ops)
            if bad is None:
                continue
            if bad[1]:        # a statement with lane updates that also reads the lanes otherwise
                raise PassError(NAME, f"lanes: '{array}' is read here other than by a lane update "
                                      f"'{array}[l] = {array}[l] OP f' (f must not read '{array}')", bad[0])
            h = i
        if i != h:
            raise PassError(NAME, f"lanes: '{array}' is used again after its horizontal reduction", s)
    if h is None:
        raise PassError(NAME, f"lanes: '{array}' is never combined across its lanes after the loop", d)
    if not updates:
        raise PassError(NAME, f"lanes: '{array}' is never updated", d, "XP4002")
    if len(ops) != 1:
        raise PassError(NAME, f"lanes: '{array}' is updated with several operators ({', '.join(sorted(ops))})",
                        stmts[h])
    op = ops.pop()
    if op not in OPS:
        raise PassError(NAME, f"lanes: operator '{op}' is not associative and commutative", stmts[h])
    if op not in phases.IDEMPOTENT and _const(init) != IDENTITY.get(op):
        raise PassError(NAME, f"lanes: every lane of '{array}' starts from a value that is not the identity of "
                              f"'{op}'; one scalar would count it once, not {L} times", ib[0])
    # --- the horizontal reduction
    red = _tree(stmts, h - 1, array, L, op) if h - 1 > rest[0] else None
    if red is not None:
        h -= 1         # the tree's array is declared just before the copy that reads the lanes
    chain = None
    if red is not None:
        after = [stmts[i] for i in range(h + 3, len(stmts))]
        reads = [n for s in after for n in walk(s) if isinstance(n, N.Var) and n.name == red]
        elems = [n for s in after for n in walk(s) if _is_elem(n, red)]
        zero = [n for n in elems if _int(n.index) == 0]
        writes = [s2 for s in after for s2 in walk(s) if isinstance(s2, (N.Assign, N.AssignExpr)) and
                  _uses(s2.target, red)]
        if len(reads) != len(zero) or writes or any(n.name == red for s in after for n in walk(s)
                                                    if isinstance(n, N.Decl)):
            raise PassError(NAME, f"lanes: '{red}' (the horizontal reduction of '{array}') is used other than "
                                  f"as '{red}[0]'", stmts[h])
        if any(_uses(stmts[i], array) for i in range(h + 3, len(stmts))):
            raise PassError(NAME, f"lanes: '{array}' is used again after its horizontal reduction", stmts[h])
    else:
        chain = _chain(stmts[h], array, L, op)
        if chain is None or sum(1 for n in walk(stmts[h]) if _is_elem(n, array)) != L:
            raise PassError(NAME, f"lanes: '{array}' is read other than by its '{op}' updates and one horizontal "
                                  f"'{op}' reduction over its {L} lanes", stmts[h])
        if any(_uses(stmts[i], array) for i in range(h + 1, len(stmts))):
            raise PassError(NAME, f"lanes: '{array}' is used again after its horizontal reduction", stmts[h + 1])
    return {"fn": fn, "blk": blk, "decl": d, "k": k, "init_loop": ini, "init": init, "updates": updates,
            "temps": temps, "h": h, "red": red, "chain": chain, "op": op}


def _updates_in(s, array, L, accs, updates, temps, ops):
    """Record the updates of ``array`` in statement ``s``; None when every use of ``array`` in
    ``s`` is one, else ``(node, has_updates)``: the first other use and whether ``s`` holds lane
    updates (if not, ``s`` may start the horizontal reduction)."""
    found = {}
    for path, n in accs:
        stmt = path[-1] if path else None
        loops = [p for p in path if isinstance(p, (N.For, N.CFor, N.While))]
        lane = loops[-1] if loops else None
        if isinstance(stmt, N.Assign) and stmt.op == "=" and stmt.target is n and lane is not None \
                and _lane_for(lane, L) and n.index == N.Var(lane.var):
            found.setdefault(id(stmt), (stmt, lane, path))
    if not found:
        return accs[0][1], False
    mine = set()
    local = {}
    for stmt, lane, path in found.values():
        value = stmt.value
        tmp = None
        lb = lane.body
        if isinstance(value, N.Var):
            cand = [x for x in lb.stmts if isinstance(x, N.Decl) and x.name == value.name and x.init is not None
                    and isinstance(x.type, N.Scalar)]
            if len(cand) == 1 and len(_uses(lb, value.name)) == 1 and \
                    not any(isinstance(x, (N.Assign, N.AssignExpr)) and _uses(x.target, value.name) for x in walk(lb)):
                tmp = cand[0]
                pos = [j for j, x in enumerate(lb.stmts) if x is tmp or x is stmt]
                between = lb.stmts[pos[0] + 1:pos[1]] if len(pos) == 2 else ()
                if len(pos) != 2 or any(_uses(x, array) or _uses(x, value.name) for x in between):
                    tmp = None
                else:
                    value = tmp.init
        got = _op_of_update(stmt.with_(value=value), array, lane.var)
        if got is None:
            return stmt, True
        op, new = got
        # the update's own reads: acc[lane] in the statement (and its temporary)
        for x in walk(stmt):
            if _is_elem(x, array):
                mine.add(id(x))
        if tmp is not None:
            for x in walk(tmp):
                if _is_elem(x, array):
                    mine.add(id(x))
            temps.add(id(tmp))
        ops.add(op)
        local[id(stmt)] = new
    for path, n in accs:
        if id(n) not in mine:
            return (n if not path else path[-1]), True
    updates.update(local)
    return None


def apply(program, *, entry: str, array: str | None = None, **params):
    pl = plan(program, entry=entry, array=array, **params)
    fn, blk, d, k, h = pl["fn"], pl["blk"], pl["decl"], pl["k"], pl["h"]
    updates, temps = pl["updates"], pl["temps"]

    def upd(n):
        if isinstance(n, N.Block):
            kept = tuple(s for s in n.stmts if id(s) not in temps)
            return n.with_(stmts=kept) if len(kept) != len(n.stmts) else n
        if isinstance(n, N.Assign) and id(n) in updates:
            return updates[id(n)]
        return n
    stmts = list(blk.stmts)
    out = stmts[:k] + [N.Decl(array, d.type.elem, pl["init"], "local", loc=d.loc)]
    for i in range(k + 1, len(stmts)):
        s = stmts[i]
        if s is pl["init_loop"]:
            continue
        if i < h:
            out.append(rewrite(s, upd))
        elif pl["red"] is not None:
            if i in (h, h + 1, h + 2):
                continue
            red = pl["red"]
            out.append(rewrite(s, lambda n: N.Var(array, loc=n.loc) if _is_elem(n, red) else n))
        elif i == h:
            chain = pl["chain"]
            out.append(rewrite(s, lambda n: N.Var(array, loc=n.loc) if n is chain or n == chain else n))
        else:
            out.append(s)
    new_blk = blk.with_(stmts=tuple(out))
    new_fn = rewrite(fn, lambda n: new_blk if n is blk else n)
    return program.with_(items=tuple(new_fn if it is fn else it for it in program.items))


def candidates(program, target: str | None = None) -> list[dict]:
    """``{"entry", "array", "mode": "lanes"}`` for every lane array that :func:`plan` accepts."""
    out = []
    for fn in program.funcs:
        if fn.body is None:
            continue
        for n in walk(fn.body):
            if isinstance(n, N.Decl) and isinstance(n.type, N.Array) and n.scope == "local":
                try:
                    plan(program, entry=fn.name, array=n.name)
                except PassError:
                    continue
                except Exception:
                    continue
                out.append({"entry": fn.name, "array": n.name, "mode": "lanes"})
    return out
