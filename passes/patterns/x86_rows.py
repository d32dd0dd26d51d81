"""Row dot products run several rows at a time (unroll-and-jam) before tensorize vectorizes them.

What it takes: a row loop of a c kernel (sequential or OpenMP-bound, unit step) whose body is

    D;                                  pure declarations (pointers, ints, the float accumulators)
    for (k = lo; k < hi; ++k) { s_1 += E_1; ... }    sums into accumulators that D declares
    T;                                  straight-line code (the stores of the results)

where every element ``E`` reads advances by one per ``k`` (a contiguous row), at least one read
depends on the row and at least one does not (the vector every row shares: gemv's ``x``).  That is
gemv's row loop after unthread (``acc = 0; for k acc += a[k] * x[k]; y[row] = acc``) and the
``__bang_mlp`` loop of a BANG source after detensorize.  It becomes

    r_end = lo + (hi - lo) / ROWS * ROWS
    for (r_b = lo; r_b < r_end; r_b += ROWS) {      (the loop's OpenMP binding, if any)
        D[r := r_b + 0] ... D[r := r_b + ROWS-1]     (names of each copy renamed)
        for (k = lo; k < hi; ++k) { s_1_0 += E_1[r := r_b]; ...; s_1_7 += E_1[r := r_b + 7]; ... }
        T[r := r_b + 0] ... T[r := r_b + ROWS-1]
    }
    for (r = r_end; r < hi; ++r) { D; for k ...; T }   (the last rows, as written)

so that x86_loops vectorizes the fused k loop with ROWS ``__m512`` accumulators: each shared load
is made once per 16 k for ROWS rows (the compiler keeps it in a register), and ROWS independent
chains of adds hide the add latency that bounds a single row's fold.

Legal because (all checked, the loop is left alone otherwise):

* the row loop carries no dependence (passes/dependence.py, Z3): no two rows touch one element
  with a write among them, so running parts of different rows in another order computes the same;
* the body assigns no variable it does not declare (besides memory), and ``r`` is not assigned;
* ``D``'s initializers have no effect (evaluating them earlier computes the same: by the point
  above, no other row writes what they read, and they come before ``F`` and ``T`` of their own row);
* the k loop's bounds read nothing the body declares or assigns, so every copy runs the same k;
  its body only updates accumulators (``s += E``, ``E`` without effect and reading no
  accumulator), so fusing the copies keeps each accumulator's sequence of additions, in order:
  each row's result is bit-identical to the single-row loop's, before and after vectorization.

No ``break`` / ``continue`` / ``return`` / loop in ``T``; nothing else nested in the k loop.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from . import common as U
from . import x86_vec as XV

#: rows computed together: 8 accumulators + a shared vector + 8 row loads fit the 32 zmm registers
ROWS = 8


class NoJam(Exception):
    """The loop is not this form (the message says why)."""


def _pure(e) -> bool:
    for n in walk(e):
        if isinstance(n, (N.AssignExpr, N.Comma)) or (isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--")):
            return False
        if isinstance(n, N.Call) and n.func not in XV.PURE_CALLS:
            return False
    return True


def _items(block):
    return [s for s in block.stmts if not isinstance(s, N.Comment)]


def _vars(e) -> set:
    return {n.name for n in walk(e) if isinstance(n, N.Var)}


def _sum(s, accs: set):
    """``(acc, E)`` when ``s`` is ``acc += E`` or ``acc = acc + E`` / ``E + acc``, acc in accs."""
    if not (isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name in accs):
        return None
    v = s.target.name
    if s.op == "+=":
        return v, s.value
    if s.op == "=" and isinstance(s.value, N.BinOp) and s.value.op == "+":
        if U.is_var(s.value.lhs, v):
            return v, s.value.rhs
        if U.is_var(s.value.rhs, v):
            return v, s.value.lhs
    return None


def match(program, func, loop):
    """``(D, F, T)`` of ``loop`` (see the module docstring), else NoJam."""
    if not isinstance(loop, N.For) or loop.binding not in (None, "omp") or loop.cmp != "<" \
            or not (isinstance(loop.step, N.Const) and loop.step.value == 1):
        raise NoJam("not a unit-step sequential or OpenMP loop")
    r = loop.var
    if not (_pure(loop.lo) and _pure(loop.hi)):
        raise NoJam(f"the bounds of '{r}' have an effect")
    items = _items(loop.body)
    fors = [k for k, s in enumerate(items) if isinstance(s, N.For)]
    if len(fors) != 1:
        raise NoJam(f"the body of '{r}' holds {len(fors)} loops, not one")
    f = fors[0]
    D, F, T = items[:f], items[f], items[f + 1:]
    declared = {n.name for n in walk(loop.body) if isinstance(n, N.Decl)}
    if r in declared or r in U.assigned_names(loop.body) - {F.var}:
        raise NoJam(f"'{r}' is declared or assigned in its loop")
    outside = U.assigned_names(loop.body) - declared - {F.var}
    if outside:
        raise NoJam(f"the body assigns '{sorted(outside)[0]}', declared outside it")
    for d in D:
        if not (isinstance(d, N.Decl) and isinstance(d.type, (N.Scalar, N.Pointer)) and d.init is not None
                and _pure(d.init)):
            raise NoJam("a statement before the k loop is not a pure scalar / pointer declaration")
    accs = {d.name for d in D if isinstance(d.type, N.Scalar) and d.type.dtype == "float32"}
    if F.binding is not None or F.cmp != "<" or not (isinstance(F.step, N.Const) and F.step.value == 1):
        raise NoJam(f"loop '{F.var}' is not a unit-step sequential loop")
    if (_vars(F.lo) | _vars(F.hi)) & (declared | U.assigned_names(loop.body) | {r}):
        raise NoJam(f"the bounds of '{F.var}' depend on the row")
    sums = []
    for s in _items(F.body):
        m = _sum(s, accs)
        if m is None or not _pure(m[1]) or _vars(m[1]) & accs:
            raise NoJam(f"the body of '{F.var}' is not sums into the row's accumulators")
        sums.append(m)
    if not sums or len({v for v, _ in sums}) != len(sums) or ROWS * len(sums) > 16:
        raise NoJam(f"the body of '{F.var}' is not one sum per accumulator (up to {16 // ROWS})")
    for s in T:
        if any(isinstance(n, (N.For, N.While, N.CFor, N.Break, N.Continue, N.Return)) for n in walk(s)) \
                or not isinstance(s, (N.Decl, N.Assign, N.ExprStmt, N.Block, N.If)):
            raise NoJam("the statements after the k loop are not straight-line code")
    _profitable(D, F, sums, r)
    from .. import dependence as DEP
    try:
        dep = DEP.check_parallel(program, func, loop)
    except Exception as e:                   # noqa: BLE001 - not proven: not jammed
        raise NoJam(f"the row loop's dependences were not analysed ({type(e).__name__})")
    if dep is not None:
        raise NoJam(f"the row loop carries a dependence: {dep}")
    return D, F, T


def _profitable(D, F, sums, r):
    """Every read of the sums contiguous in k; one read per row, one shared by the rows."""
    lets = {d.name: d.init for d in D if isinstance(d.type, N.Pointer)}
    ints = {d.name: d.init for d in D if isinstance(d.type, N.Scalar) and d.type.dtype in XV.INT_DTYPES}
    row_dep = {r}
    for d in D:
        if _vars(d.init) & row_dep:
            row_dep.add(d.name)
    shared = per_row = 0
    for _, e in sums:
        e = U.normalize_ptr_index(substitute(substitute(e, ints), {k: N.Cast(N.Pointer(N.Scalar("float32", "float")), v)
                                                                    for k, v in lets.items()}))
        for n in walk(e):
            if not isinstance(n, N.Index):
                continue
            if XV.coef(n.index, F.var) != 1:
                raise NoJam(f"a read in loop '{F.var}' does not advance by one element per iteration")
            if _vars(n) & row_dep:
                per_row += 1
            else:
                shared += 1
    if not (shared and per_row):
        raise NoJam("no read shared by the rows next to one per row")


def _rename(stmts, names: dict):
    """``stmts`` with every declaration / use of a name in ``names`` renamed."""
    def fn(n):
        if isinstance(n, N.Var) and n.name in names:
            return N.Var(names[n.name])
        if isinstance(n, N.Decl) and n.name in names:
            return n.with_(name=names[n.name])
        return n
    from xpiler.ir.visit import rewrite
    return [rewrite(s, fn) for s in stmts]


def jam(program, func, loop):
    """The statements replacing ``loop`` (scalar, for x86_loops to vectorize), else NoJam."""
    D, F, T = match(program, func, loop)
    r = loop.var
    used = {n.name for n in walk(func) if isinstance(n, (N.Var, N.Decl, N.Param))} | \
           {n.var for n in walk(func) if isinstance(n, N.For)}

    def new(base):
        name, k = base, 1
        while name in used:
            k += 1
            name = f"{base}{k}"
        used.add(name)
        return name

    rb, end = new(f"{r}_b"), new(f"{r}_end")
    own = [d.name for d in D] + [n.name for s in T for n in walk(s) if isinstance(n, N.Decl)]
    dd, sums, tt = [], [[] for _ in _items(F.body)], []
    for i in range(ROWS):
        names = {x: new(f"{x}_{i}") for x in own}
        at = {r: U.add(N.Var(rb), U.C(i)) if i else N.Var(rb)}
        dd += _rename([substitute(d, at) for d in D], names)
        for j, s in enumerate(_items(F.body)):
            sums[j] += _rename([substitute(s, at)], names)
        tt += _rename([substitute(s, at) for s in T], names)
    fused = F.with_(body=N.Block(tuple(col[i] for i in range(ROWS) for col in sums)))
    lo, hi = loop.lo, loop.hi
    span = N.Cond(N.BinOp(">", hi, lo),
                  N.BinOp("*", N.BinOp("/", hi if _zero(lo) else N.BinOp("-", hi, lo), U.C(ROWS)), U.C(ROWS)),
                  U.C(0))
    it = N.Scalar("int32", "int")
    main = N.For(rb, lo, N.Var(end), U.C(ROWS), N.Block(tuple(dd + [fused] + tt)), binding=loop.binding,
                 var_type=it, pragmas=loop.pragmas, cmp="<", loc=loop.loc)
    rest = loop.with_(lo=N.Var(end), binding=None, pragmas=())
    out = [N.Decl(end, N.Scalar("int32", "int", const=True), U.add(lo, span)), main, rest]
    return [N.Block(tuple(out), loc=loop.loc)]


def _zero(e):
    return isinstance(e, N.Const) and e.value == 0
