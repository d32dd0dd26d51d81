"""Which loops of a c kernel tensorize vectorizes with AVX-512, and the code that replaces them.

``sites(program, func, ops)`` first forwards staged copies into their reads (:mod:`x86_staged`,
outermost loop first), then takes row dot products eight rows at a time (:mod:`x86_rows`), then
tries every other loop innermost first (a loop whose descendant was vectorized is not tried
again) with :class:`x86_vec.Lanes`; ``vectorize`` writes::

    {
        const int j_end = lo + (hi > lo ? (hi - lo) / 16 * 16 : 0);
        __m512 s_acc = <identity>;                         // one per reduction
        for (int j = lo; j < j_end; j += 16) { <body, 16 lanes> }
        if (j_end < hi) {                                  // one masked tail: no element
            const int j = j_end;                           // outside [lo, hi) is touched
            __mmask16 m = (__mmask16)((1u << (hi - j)) - 1u);
            <body with maskz_loadu / mask_storeu / mask_add>
        }
        if (lo < hi) { s += _mm512_reduce_add_ps(s_acc); } // or s = fmaxf(s, reduce_max(...))
    }

With ``stream`` (tensorize's parameter), an elementwise loop's main loop is peeled to a 64-byte
aligned output, chunked, and stores with ``_mm512_stream_ps`` from that trip count on
(:mod:`x86_stream`).

Reductions change the order of a float sum (16 partial sums, then a tree): results differ from
the scalar loop by rounding only, inside the float32 tolerances (docs/decisions.md).
Max / min reductions are exact.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

from . import common as U
from . import x86_delin
from . import x86_vec as XV
from .x86_vec import NoVec, _I

RED = {"+": ("_mm512_add_ps", "_mm512_reduce_add_ps"), "-": ("_mm512_add_ps", "_mm512_reduce_add_ps"),
       "max": ("_mm512_max_ps", "_mm512_reduce_max_ps"), "min": ("_mm512_min_ps", "_mm512_reduce_min_ps")}


def _c(v):
    return U.C(v)


def _zero(e):
    return isinstance(e, N.Const) and e.value == 0


def _inline_lane_ints(stmts, j):
    """Substitute int lets whose value depends on ``j``, and pointer lets (``const float *w =
    x + off;``), into the statements after them.  Only when neither the let nor any variable
    of its value is assigned afterwards (so the substituted value is the one the let held),
    and the value has no side effects."""
    stmts = list(stmts)
    k = 0
    while k < len(stmts):
        s = stmts[k]
        is_int = isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.type.dtype in XV.INT_DTYPES
        is_ptr = isinstance(s, N.Decl) and isinstance(s.type, N.Pointer)
        if (is_int or is_ptr) and s.init is not None:
            rest = N.Block(tuple(stmts[k + 1:]))
            uses_j = any(isinstance(n, N.Var) and n.name == j for n in walk(s.init))
            later = U.assigned_names(rest)
            init_vars = {n.name for n in walk(s.init) if isinstance(n, N.Var)}
            pure = not any(isinstance(n, (N.Call, N.AssignExpr, N.Comma)) or (
                isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--")) for n in walk(s.init))
            if (uses_j or is_ptr) and pure and s.name not in later and not (init_vars & later):
                val = N.Cast(s.type, s.init) if is_ptr else s.init
                stmts = stmts[:k] + list(substitute(rest, {s.name: val}).stmts)
                continue
        k += 1
    return stmts


def _reduction(s, facts, body_stmts):
    """(var, kind, E) when ``s`` folds a float scalar declared outside the loop; else None."""
    if not (isinstance(s, N.Assign) and isinstance(s.target, N.Var)):
        return None
    v = s.target.name
    if facts.scalar.get(v) != "float32":
        return None
    tv = N.Var(v)
    kind = e = None
    if s.op in ("+=", "-="):
        kind, e = s.op[0], s.value
    elif s.op == "=" and isinstance(s.value, N.BinOp) and s.value.op == "+":
        if s.value.lhs == tv:
            kind, e = "+", s.value.rhs
        elif s.value.rhs == tv:
            kind, e = "+", s.value.lhs
    elif s.op == "=" and isinstance(s.value, N.BinOp) and s.value.op == "-" and s.value.lhs == tv:
        kind, e = "-", s.value.rhs
    elif s.op == "=" and isinstance(s.value, (N.Call, N.Intrinsic)) and len(s.value.args) == 2:
        name = s.value.func if isinstance(s.value, N.Call) else s.value.name
        if name in XV.MAXMIN:
            a, b = s.value.args
            if a == tv:
                kind, e = XV.MAXMIN[name], b
            elif b == tv:
                kind, e = XV.MAXMIN[name], a
    if kind is None:
        raise NoVec(f"'{v}' is updated in a form that is not a sum, max or min")
    uses = sum(1 for st in body_stmts for n in walk(st) if isinstance(n, N.Var) and n.name == v)
    if any(isinstance(n, N.Var) and n.name == v for n in walk(e)) or uses != 1 + (s.op == "="):
        raise NoVec(f"the running value of '{v}' is read inside the loop")
    return v, kind, e


def vectorize(func, facts, loop, stream=0, notes=None, stream_default=False):
    """The statements replacing ``loop``; raises NoVec when the loop has no lane-wise meaning.
    ``stream`` > 0: the main loop stores with non-temporal stores when the loop runs at least that
    many iterations (:mod:`x86_stream`), where the loop allows it; ``notes`` (a list) then gets
    ``("stream", loop var)`` or ``("refused", reason)``. ``stream_default``: the threshold is the
    default, which leaves loops that call vector-math helpers (exp, erf, tanh) to normal stores."""
    if loop.binding not in (None, "omp") or not (isinstance(loop.step, N.Const) and loop.step.value == 1):
        raise NoVec("not a unit-step sequential or OpenMP loop")
    j = loop.var
    body = _inline_lane_ints(loop.body.stmts, j)
    body = [U.normalize_ptr_index(s) for s in body]
    nested = any(isinstance(n, (N.For, N.If)) for st in body for n in walk(st))
    reds, plain = {}, []
    for k, s in enumerate(body):
        r = _reduction(s, facts, body) if isinstance(s, N.Assign) and isinstance(s.target, N.Var) \
            and s.target.name not in {d.name for st in body for d in walk(st) if isinstance(d, N.Decl)} else None
        if r is not None:
            if nested or loop.binding is not None:
                raise NoVec(f"reduction into '{r[0]}' next to inner loops or in a parallel loop")
            reds[k] = r
    lanes = XV.Lanes(facts, loop, body)
    for e in (loop.lo, loop.hi):
        if lanes.depends(e) or not lanes.uniform_ok(e) or any(
                isinstance(n, N.Var) and n.name in U.assigned_names(loop.body) for n in walk(e)):
            raise NoVec(f"bounds of loop '{j}' change inside it")
    accs = {v: U.fresh(func, f"{v}_acc") for v, _, _ in reds.values()}

    def translate(mask):
        out = []
        for k, s in enumerate(body):
            if k in reds:
                v, kind, e = reds[k]
                op = RED[kind][0]
                acc = N.Var(accs[v])
                ve = lanes.value(e, mask)
                if mask is None:
                    new = _I(op, ve, acc) if kind in ("max", "min") else _I(op, acc, ve)
                else:
                    new = _I(op.replace("_mm512_", "_mm512_mask_"), acc, mask,
                             *((ve, acc) if kind in ("max", "min") else (acc, ve)))
                out.append(N.Assign(acc, "=", new, loc=s.loc))
            else:
                out.extend(lanes.stmt(s, mask))
        return out

    main_body = translate(None)
    mvar = N.Var(U.fresh(func, "tail_mask"))
    tail_body = translate(mvar)
    for scal, vect, leaves in lanes.checks:
        if not XV.same_function(scal, vect, leaves):
            raise NoVec("the vector expression does not compute the loop's value on the probes")

    lo, hi = loop.lo, loop.hi
    if stream:
        from . import x86_stream as XS
        why = XS.refusal(facts, lanes, func, body, reds)
        if why is None and stream_default and lanes.helpers:
            why = f"the default leaves a loop that calls {', '.join(sorted(lanes.helpers))} to normal stores"
        trip = XS.trip_bound(func, lo, hi)
        if why is None and trip is not None and trip < stream:
            why = f"the loop runs at most {trip} iterations, fewer than the threshold {stream}"
        if notes is not None:
            notes.append(("stream", j) if why is None else ("refused", f"loop '{j}': {why}"))
        if why is None:
            out = XS.build(func, loop, XS.store_target(body), main_body, tail_body, mvar, stream)
            if loop.var_type is None:
                out.append(N.Assign(N.Var(j), "=", N.Cond(N.BinOp(">", hi, lo), hi, lo)))
            return [N.Block(tuple(out), loc=loop.loc)], lanes.helpers, False
    end = N.Var(U.fresh(func, f"{j}_end"))
    it = N.Scalar("int32", "int")
    span = N.Cond(N.BinOp(">", hi, lo), N.BinOp("*", N.BinOp("/", hi if _zero(lo) else N.BinOp("-", hi, lo), _c(16)), _c(16)), _c(0))
    out = [N.Decl(end.name, N.Scalar("int32", "int", const=True), U.add(lo, span))]
    for v, kind, _ in reds.values():
        ident = {"+": _I("_mm512_setzero_ps"), "-": _I("_mm512_setzero_ps"),
                 "max": _I("_mm512_set1_ps", N.UnOp("-", N.Var("INFINITY"))),
                 "min": _I("_mm512_set1_ps", N.Var("INFINITY"))}[kind]
        out.append(N.Decl(accs[v], XV.M512, ident))
    out.append(N.For(j, lo, end, _c(16), N.Block(tuple(main_body)), binding=loop.binding,
                     var_type=loop.var_type, pragmas=loop.pragmas, cmp="<", loc=loop.loc))
    mexpr = N.Cast(XV.MASK, N.BinOp("-", N.BinOp("<<", N.Const(1, "uint32", "1u"), N.BinOp("-", hi, N.Var(j))),
                                    N.Const(1, "uint32", "1u")))
    tail = [N.Decl(j, N.Scalar("int32", "int", const=True), end), N.Decl(mvar.name, XV.MASK, mexpr)] + tail_body
    out.append(N.If(N.BinOp("<", end, hi), N.Block(tuple(tail))))
    fin = []
    for v, kind, _ in reds.values():
        r = _I(RED[kind][1], N.Var(accs[v]))
        if kind in ("+", "-"):
            fin.append(N.Assign(N.Var(v), kind + "=", r))
        else:
            fin.append(N.Assign(N.Var(v), "=", N.Call("fmaxf" if kind == "max" else "fminf", (N.Var(v), r))))
    if fin:
        out.append(N.If(N.BinOp("<", lo, hi), N.Block(tuple(fin))))
    if loop.var_type is None:       # the variable outlives the loop: leave it where the loop would
        out.append(N.Assign(N.Var(j), "=", N.Cond(N.BinOp(">", hi, lo), hi, lo)))
    return [N.Block(tuple(out), loc=loop.loc)], lanes.helpers, bool(reds)


def _vectorize_or_split(func, facts, loop, stream=0, notes=None, stream_default=False):
    """``vectorize(loop)``; failing that, a flat output loop split into (outer, channel) loops
    (:mod:`x86_delin`) with the channel loop vectorized."""
    try:
        repl, hs, _ = vectorize(func, facts, loop, stream, notes, stream_default)
        return repl, hs
    except NoVec as why:
        sp = x86_delin.split(func, loop)
        if sp is None:
            raise why
    stmts, inner = sp
    repl, hs, _ = vectorize(func, facts, inner, stream, notes, stream_default)
    return [U.replace_stmt(N.Block(tuple(stmts)), inner, repl).stmts[0]], hs


def sites(program, func, ops=None, stream=0, notes=None, stream_default=False):
    """[(loop, replacement statements)], plus the helper functions they call. ``stream``,
    ``notes``, ``stream_default``: :func:`vectorize`."""
    facts = XV.Facts(func)
    out, helpers, done = [], set(), []
    loops = [n for n in walk(func.body) if isinstance(n, N.For)]

    def take(loop, repl, hs):
        names = {n.name for n in walk(N.Block(tuple(repl))) if isinstance(n, N.Intrinsic)}
        if ops and not (names & set(ops)):
            return
        out.append((loop, repl))
        helpers.update(hs)
        done.append(loop)

    for loop in loops:                  # staged copies forwarded into their reads (x86_staged)
        r = None if _near(loop, done) else _forwarded(program, func, loop, ops, stream, notes, stream_default)
        if r is not None:
            take(loop, *r)
    for loop in loops:                  # row dot products, several rows at a time (x86_rows)
        r = None if _near(loop, done) else _jammed(program, func, loop)
        if r is not None:
            take(loop, *r)
    for loop in reversed(loops):        # walk is pre-order: reversed visits inner loops first
        if _near(loop, done):
            continue
        try:
            U.replace_stmt(func.body, loop, [])     # reachable by the statement rewriter at all?
            repl, hs = _vectorize_or_split(func, facts, loop, stream, notes, stream_default)
        except (NoVec, KeyError):
            continue
        take(loop, repl, hs)
    return out, helpers


def _jammed(program, func, loop):
    """``(replacement, helpers)`` for a row loop of dot products taken several rows at a time
    (:mod:`x86_rows`) with its k loops vectorized, else None (the loop is then tried as usual)."""
    from . import x86_rows
    try:
        U.replace_stmt(func.body, loop, [])
        stmts = x86_rows.jam(program, func, loop)
    except (x86_rows.NoJam, KeyError):
        return None
    # vectorize the k loops of the new statements in a function that declares their names
    f2 = func.with_(body=U.replace_stmt(func.body, loop, stmts))
    facts = XV.Facts(f2)
    block, hs = N.Block(tuple(stmts)), set()
    inner = [n for n in walk(block) if isinstance(n, N.For) and not any(isinstance(m, N.For) for m in walk(n.body))]
    for k in inner:
        try:
            repl, h, red = vectorize(f2, facts, k)
        except NoVec:
            return None
        if not red:
            return None
        block = U.replace_stmt(block, k, repl)
        hs |= h
    return list(block.stmts), hs


def _near(loop, done) -> bool:
    """``loop`` is, holds or lies in a loop already replaced."""
    return any(d is loop or any(d is x for x in walk(loop.body)) or any(loop is x for x in walk(d)) for d in done)


def _forwarded(program, func, loop, ops, stream=0, notes=None, stream_default=False):
    """``(replacement, helpers)`` for a loop whose body copies into a local buffer that is then only
    read (:mod:`x86_staged`: the copy goes, the reads take the copied element), with the loops
    inside it tensorized as usual; else None."""
    from . import x86_staged
    try:
        U.replace_stmt(func.body, loop, [])
        new = x86_staged.forward_loop(func, loop)
    except (x86_staged.NoForward, KeyError):
        return None
    if new is None:
        return None
    f2 = func.with_(body=U.replace_stmt(func.body, loop, [new]))
    inner, hs = sites(program, f2, ops, stream, notes, stream_default)
    block = N.Block((new,))
    for lp, repl in inner:
        if not any(lp is x for x in walk(new)):
            continue
        try:
            block = U.replace_stmt(block, lp, list(repl) if isinstance(repl, (list, tuple)) else [repl])
        except KeyError:
            continue
    return list(block.stmts), hs
