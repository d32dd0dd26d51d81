"""Thread phases that pass a per-thread accumulator merged into one (a normalization step of loop
recovery, after ``passes/unshare.py``).

A block whose threads accumulate across a loop with a barrier in it (one input channel staged per
iteration) recovers as three phases over the same thread loops, the accumulator an array indexed
by the thread::

    float sum[256];
    for (ty < 16) for (tx < 16) sum[ty * 16 + tx] = 0.0f;                       // INIT
    for (ci = 0; ci < Cin; ++ci) {                                               // a sequential loop
        const float *src = input + ...;                                          //   (thread-invariant lets)
        for (ty < 16) for (tx < 16) { int ho = ...; if (ho < Ho && ...) { ... sum[ty * 16 + tx] += ...; } }
    }
    for (ty < 16) for (tx < 16) { int ho = ...; if (ho < Ho && ...) out[...] = sum[ty * 16 + tx]; }

Once :func:`passes.unshare.unshare` has removed the shared tile, nothing but ``sum`` passes
between threads' phases, so :func:`merge_phases` runs each thread's phases one after the other::

    for (ty < 16) for (tx < 16) {
        int ho = ...;
        if (ho < Ho && ...) {
            float sum_t = 0.0f;
            for (ci = 0; ci < Cin; ++ci) { const float *src = input + ...; ... sum_t += ...; }
            out[...] = sum_t;
        }
    }

which loop recovery's partition normalization then collapses like any one-phase block.

Legality (all must hold, else the block is kept and a note says why):

* the phases are consecutive statements of one block: thread nests (one or two loops from 0 by 1
  to a constant, the same variables and extents in every phase) or sequential loops ``for (c ...)``
  whose body is pure scalar / pointer declarations that do not name the thread variables, then
  one thread nest; the loop variable and the bounds of such a loop are not assigned in it;
* the accumulator ``A`` is a one-dimensional array declared (without initializer) before the
  phases, named only in them, always as ``A[f]`` with one index expression ``f`` of the thread
  variables alone, which Z3 proves injective over the thread loops: each thread owns one element;
* the first phase is the nest ``A[f] = v;`` with ``v`` pure (no memory, not the threads);
* every other phase's thread body is the same pure scalar declarations followed by one
  ``if (G) { ... }`` without ``else`` (the same ``G`` everywhere, naming neither a sequential
  loop's variable nor its declarations); the declarations' names are assigned nowhere in the
  function and their values do not depend on memory;
* the phases read memory only through pointer parameters the function never stores through (and
  ``A``); they store to memory (``A`` aside) in one phase only, through pointer parameters the
  phases never read; they assign no scalar declared outside a thread body; no barrier, ``break``,
  ``continue``, ``return`` or call other than to math functions.

Why the result is the same: two threads share no memory the phases read (``A[f]`` is each
thread's own, the other stores go to memory no phase reads), so running all phases of thread 0,
then all of thread 1, ... gives each element the values it had when every thread ran a phase
before the next phase began; within a thread the phases keep their order, and the sequential
loop its iterations. ``G`` and the declarations before it are the same values in every phase (pure,
of names nothing assigns), so testing ``G`` once before the phases is testing it in each; where
``G`` fails, the thread only initialized its own element, which nothing reads.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir import smt
from xpiler.ir.intrinsics import REGISTRY
from xpiler.ir.visit import rewrite, walk

from . import dependence as D
from .decache import _is_int, _pure, _vars
from .unshare import _factors, _terms

NAME = "merge_phases"


class Refused(Exception):
    """This block is not merged; the message says why."""


def _real(stmts) -> list:
    return [s for s in stmts if not isinstance(s, N.Comment)]


def _nest(s):
    """(thread loops [(var, extent)], innermost body statements) of a nest of one or two loops
    from 0 by 1 to a positive constant, or None."""
    loops, cur = [], s
    while isinstance(cur, N.For) and len(loops) < 2 and _is_int(cur.lo, 0) and _is_int(cur.step, 1) and \
            _is_int(cur.hi) and cur.hi.value > 0 and cur.var_type is not None:
        loops.append((cur.var, cur.hi.value))
        inner = _real(cur.body.stmts)
        if len(inner) == 1 and isinstance(inner[0], N.For) and len(loops) < 2:
            nxt = inner[0]
            if _is_int(nxt.lo, 0) and _is_int(nxt.step, 1) and _is_int(nxt.hi) and nxt.var_type is not None:
                cur = nxt
                continue
        return loops, list(cur.body.stmts)
    return None


class _Phase:
    def __init__(self, stmt, wrapper=None, lets=(), loops=(), body=()):
        self.stmt = stmt            # the statement in the block
        self.wrapper = wrapper      # the sequential loop around the nest, or None
        self.lets = list(lets)      # the wrapper's declarations before the nest
        self.loops = list(loops)
        self.body = list(body)


def _phase(s):
    n = _nest(s)
    if n is not None:
        return _Phase(s, loops=n[0], body=n[1])
    if isinstance(s, N.For) and s.var_type is not None:
        inner = _real(s.body.stmts)
        if inner and all(isinstance(x, N.Decl) for x in inner[:-1]):
            n = _nest(inner[-1])
            if n is not None:
                return _Phase(s, wrapper=s, lets=inner[:-1], loops=n[0], body=n[1])
    return None


def _refs(node, name) -> list:
    return [n for n in walk(node) if isinstance(n, N.Var) and n.name == name]


class _Check:
    def __init__(self, fn: N.Func, program=None):
        from .unshare import _Ctx
        self.ctx = _Ctx(fn, program)
        self.fn = fn

    def roots(self, e) -> set:
        """The pointer parameters the base of a memory access may point into ({'?'} if unknown)."""
        ptr_params = {p for p, t in self.ctx.params.items() if isinstance(t, N.Pointer)}
        out = set()
        for v in _vars(e):
            t = self.ctx.params.get(v) if v not in self.ctx.decls else self.ctx.decls[v][0].type
            if isinstance(t, (N.Pointer, N.Array)):
                if v in self.ctx.decls and (len(self.ctx.decls[v]) != 1 or isinstance(self.ctx.decls[v][0].type, N.Array)):
                    out.add("?")
                out |= self.ctx.roots(v, ptr_params) or {"?"}
        return out or {"?"}


def _injective(f, loops) -> bool:
    env = D.Z3Env(loopvars=set(), lets={}, macros={}, int_params=set(), varying=set())
    a = {v: z3.Int(v + "__a") for v, _ in loops}
    b = {v: z3.Int(v + "__b") for v, _ in loops}
    from xpiler.ir.visit import substitute
    fa = D.to_z3(substitute(f, {v: N.Var(v + "__a") for v, _ in loops}), "a", env)
    fb = D.to_z3(substitute(f, {v: N.Var(v + "__b") for v, _ in loops}), "a", env)
    s = smt.solver(D.TIMEOUT_MS)
    s.add(*env.cons)
    for v, ext in loops:
        s.add(a[v] >= 0, a[v] < ext, b[v] >= 0, b[v] < ext)
    s.add(fa == fb, z3.Or(*[a[v] != b[v] for v, _ in loops]))
    return s.check() == z3.unsat


# ---------------------------------------------------------------------------- combined indices
def _rebase(stmts, decls, lets: dict, loops, macros: dict):
    """Index expressions of ``stmts`` written over the combined indices the guard's declarations
    define (``ho = by * 16 + ty`` with ``ty < 16``): each index that names ``by`` (after the pure
    declarations of the block are written out) is rewritten, with ``by = (ho - ty) / 16``, as a
    polynomial of ``ho``; kept when ``by`` or ``ty`` remain or a coefficient is not an integer.
    The rewritten index is the same integer wherever ``ho = 16 * by + ty`` (a polynomial identity)."""
    from fractions import Fraction
    from xpiler.ir import poly as P
    from xpiler.ir.visit import substitute
    from .patterns import index_poly as A
    ext = dict(loops)
    mac = {k: m.expr for k, m in macros.items() if m.params is None and m.expr is not None}

    def expand(e, names):
        for _ in range(8):
            y = substitute(e, {k: v for k, v in {**mac, **names}.items()})
            if y == e:
                break
            e = y
        return e
    pairs = []          # (combined, outer, thread, extent)
    for d in decls:
        init = expand(d.init, {})
        terms = _terms_lin(init)
        if terms is None:
            continue
        t = [v for v, c in terms if v in ext and c == 1]
        o = [(v, c) for v, c in terms if v not in ext]
        if len(terms) == 2 and len(t) == 1 and len(o) == 1 and o[0][1] == ext[t[0]]:
            pairs.append((d.name, o[0][0], t[0], o[0][1]))
    if not pairs:
        return stmts
    outer = {p[1] for p in pairs}
    # the block's declarations that (through each other) name an outer variable
    dep = dict(lets)
    via = {k for k, v in dep.items() if _vars(expand(v, {})) & outer}
    changed = True
    while changed:
        changed = False
        for k, v in dep.items():
            if k not in via and _vars(v) & via:
                via.add(k)
                changed = True
    sub = {k: dep[k] for k in via}
    gone = outer | {p[2] for p in pairs}

    def fix(n):
        if not isinstance(n, N.Index):
            return n
        e = expand(n.index, sub)
        if not (_vars(e) & outer):
            return n
        try:
            sp_ = A.Space(set(gone))
            poly = sp_.to_poly(e)
        except Exception:
            return n
        for name, o, t, c in pairs:
            if not (isinstance(c, int) and c):
                return n
            poly = P.subst(poly, o, {(name,): Fraction(1, c), (t,): Fraction(-1, c)})
        if P.atoms(poly) & gone or any(Fraction(c).denominator != 1 for c in poly.values()):
            return n
        return n.with_(index=A.ir({m: int(c) for m, c in poly.items()}, sp_, sp_.nodes))
    return [rewrite(st, fix) for st in stmts]


def _terms_lin(e):
    """[(variable, integer coefficient)] of ``v1 * c1 + v2 * c2 ...`` (constants first or last),
    None for anything else."""
    out = []
    for sg, t in _terms(e):
        fs = _factors(t)
        vs = [f for f in fs if isinstance(f, N.Var)]
        cs = [f for f in fs if _is_int(f)]
        if len(vs) != 1 or len(vs) + len(cs) != len(fs):
            return None
        c = sg
        for f in cs:
            c *= f.value
        out.append((vs[0].name, c))
    return out


def _drop_unused(stmts):
    """``stmts`` without the pure scalar declarations nothing reads (an un-shared tile's offset)."""
    while True:
        decls = [d for d in walk(tuple(stmts)) if isinstance(d, N.Decl) and isinstance(d.type, N.Scalar)
                 and d.init is not None and _pure(d.init) and
                 not any(isinstance(n, (N.Call, N.AssignExpr)) for n in walk(d.init))]
        dead = {d.name for d in decls if sum(1 for n in walk(tuple(stmts)) if isinstance(n, N.Decl)
                                             and n.name == d.name) == 1 and not _refs(tuple(stmts), d.name)}
        if not dead:
            return stmts

        def strip(st):
            if isinstance(st, N.Block):
                return st.with_(stmts=tuple(x for x in (strip(y) for y in st.stmts) if x is not None))
            if isinstance(st, N.Decl):
                return None if st.name in dead else st
            if isinstance(st, N.For):
                return st.with_(body=strip(st.body))
            if isinstance(st, N.If):
                return st.with_(then=strip(st.then) if isinstance(st.then, N.Block) else st.then,
                                else_=strip(st.else_) if isinstance(st.else_, N.Block) else st.else_)
            return st
        stmts = [x for x in (strip(y) for y in stmts) if x is not None]


def _merge_run(block: list, k: int, m: int, arr: N.Decl, chk: _Check):
    """The block's statements with phases ``block[k:k+m]`` merged (accumulator ``arr``), or Refused."""
    phases = [_phase(s) for s in block[k:k + m]]
    loops = phases[0].loops
    if any(p.loops != loops for p in phases):
        raise Refused("the phases do not run over the same thread loops")
    tvars = {v for v, _ in loops}
    name = arr.name
    run = tuple(block[k:k + m])
    # the accumulator: named in the run only, as A[f] with one f of the thread variables
    if len(_refs(tuple(block), name)) != len(_refs(run, name)):
        raise Refused(f"'{name}' is used outside its phases")
    idx = [n for n in walk(run) if isinstance(n, N.Index) and isinstance(n.base, N.Var) and n.base.name == name]
    if len(idx) != len(_refs(run, name)):
        raise Refused(f"'{name}' is used other than as an element")
    f = idx[0].index
    if any(i.index != f for i in idx) or not _vars(f) <= tvars or not _pure(f):
        raise Refused(f"'{name}' is not indexed by one expression of the thread variables")
    if not _injective(f, loops):
        raise Refused(f"two threads may share an element of '{name}'")
    # the first phase: A[f] = v
    p0 = phases[0]
    b0 = _real(p0.body)
    if p0.wrapper is not None or len(b0) != 1 or not (
            isinstance(b0[0], N.Assign) and b0[0].op == "=" and isinstance(b0[0].target, N.Index) and
            isinstance(b0[0].target.base, N.Var) and b0[0].target.base.name == name):
        raise Refused(f"the first phase does not only initialize '{name}'")
    init = b0[0].value
    if not _pure(init) or _vars(init) & tvars or any(isinstance(n, (N.Index, N.Call)) for n in walk(init)):
        raise Refused(f"'{name}' is not initialized to a value fixed for the block")
    # the other phases: the same declarations, then if (G) { ... }
    shape = None
    for p in phases[1:]:
        body = _real(p.body)
        if not body or not isinstance(body[-1], N.If) or body[-1].else_ is not None:
            raise Refused("a phase does not end in one guarded statement")
        decls, g = body[:-1], body[-1].cond
        if not all(isinstance(d, N.Decl) and isinstance(d.type, N.Scalar) and d.init is not None and _pure(d.init)
                   for d in decls):
            raise Refused("a phase declares more than scalars before its guard")
        if shape is None:
            shape = (decls, g)
        elif (decls, g) != shape:
            raise Refused("the phases test different guards")
        if p.wrapper is not None:
            wnames = {p.wrapper.var} | {d.name for d in p.lets}
            if _vars(g) & wnames or any(_vars(d.init) & wnames for d in decls):
                raise Refused(f"the guard depends on the sequential loop '{p.wrapper.var}'")
            if not all(isinstance(d.type, (N.Scalar, N.Pointer)) and d.init is not None and _pure(d.init) and
                       not (_vars(d.init) & tvars) for d in p.lets):
                raise Refused(f"loop '{p.wrapper.var}' declares more than thread-invariant values")
            if {p.wrapper.var} & D.assigned_names(p.wrapper.body) or \
                    _vars((p.wrapper.lo, p.wrapper.hi, p.wrapper.step)) & D.assigned_names(run):
                raise Refused(f"loop '{p.wrapper.var}' changes its own bounds")
    decls, g = shape
    dnames = {d.name for d in decls}
    if dnames & chk.ctx.assigned or any(_vars(d.init) & chk.ctx.assigned for d in decls) or \
            _vars(g) & chk.ctx.assigned or any(isinstance(n, (N.Index, N.Call)) or (isinstance(n, N.UnOp) and n.op == "*")
                                               for n in walk((tuple(decls), g))):
        raise Refused("the guard's values change")
    # memory: reads through read-only parameters (and A), stores in one phase to memory no phase reads
    stored_by, read_roots = {}, set()
    for x, p in enumerate(phases):
        for n in walk(p.stmt):
            if isinstance(n, (N.Barrier, N.Break, N.Continue, N.Return, N.Raw, N.AssignExpr)):
                raise Refused(f"a {type(n).__name__} in the phases")
            if isinstance(n, N.Call) or (isinstance(n, N.Intrinsic) and (
                    REGISTRY.get(n.name) is None or REGISTRY[n.name].category != "math")):
                raise Refused("a call in the phases")
            if isinstance(n, N.UnOp) and n.op in ("&",):
                raise Refused("an address is taken in the phases")
            if isinstance(n, N.Assign) and not isinstance(n.target, N.Var):
                base = n.target.base if isinstance(n.target, N.Index) else n.target
                if isinstance(base, N.Var) and base.name == name:
                    continue
                for r in chk.roots(base):
                    stored_by.setdefault(r, set()).add(x)
        for n in walk(p.stmt):
            if isinstance(n, N.Index) or (isinstance(n, N.UnOp) and n.op == "*"):
                base = n.base if isinstance(n, N.Index) else n.operand
                if isinstance(base, N.Var) and base.name == name:
                    continue
                stores = [t for t in walk(p.stmt) if isinstance(t, N.Assign) and t.target is n and t.op == "="]
                if not stores:
                    read_roots |= chk.roots(base)
    if "?" in stored_by or "?" in read_roots:
        raise Refused("the phases touch memory that is not a pointer parameter")
    if any(len(v) > 1 for v in stored_by.values()):
        raise Refused("two phases store to the same buffer")
    if set(stored_by) & read_roots:
        raise Refused("a phase reads a buffer the phases store to")
    if read_roots & chk.ctx.stored:
        raise Refused("the phases read a buffer the kernel writes")
    # scalars: assigned only where declared inside a thread body
    inner_decls = {d.name for p in phases for d in walk(tuple(p.body)) if isinstance(d, N.Decl)}
    inner_decls |= {l.var for p in phases for l in walk(tuple(p.body)) if isinstance(l, N.For)}
    if D.assigned_names(run) - inner_decls - tvars - {p.wrapper.var for p in phases if p.wrapper is not None}:
        raise Refused("the phases assign a scalar of the block")
    # build
    taken = {n.name for n in walk(chk.fn) if isinstance(n, N.Var)} | set(chk.ctx.decls)
    acc = name + "_t"
    while acc in taken:
        acc += "_"
    elem = arr.type.elem.with_(const=False) if arr.type.elem.const else arr.type.elem

    def to_scalar(st):
        return rewrite(st, lambda n: N.Var(acc, loc=n.loc) if isinstance(n, N.Index) and isinstance(n.base, N.Var)
                       and n.base.name == name else n)
    work = [N.Decl(acc, elem, init, loc=arr.loc)]
    for p in phases[1:]:
        then = p.body[-1] if not isinstance(p.body[-1], N.Comment) else _real(p.body)[-1]
        inner = list(then.then.stmts) if isinstance(then.then, N.Block) else [then.then]
        inner = [to_scalar(x) for x in inner]
        if p.wrapper is not None:
            work.append(p.wrapper.with_(body=N.Block(tuple(p.lets) + tuple(inner), loc=p.wrapper.body.loc)))
        elif any(isinstance(x, N.Decl) for x in inner):
            work.append(N.Block(tuple(inner)))
        else:
            work.extend(inner)
    g_if = _real(phases[1].body)[-1]
    # the guard as its value (a bool declared for it is read by loop recovery as its bounds)
    gd = next((d for d in decls if isinstance(g, N.Var) and d.name == g.name), None)
    if gd is not None:
        g_if = g_if.with_(cond=gd.init)
    lets = {d.name: d.init for d in block[:k] if isinstance(d, N.Decl) and isinstance(d.type, N.Scalar)
            and d.init is not None and _pure(d.init) and d.name not in chk.ctx.assigned
            and len(chk.ctx.decls.get(d.name, [])) == 1}
    work = _drop_unused(_rebase(work, decls, lets, loops, chk.ctx.macros))
    body = list(decls) + [g_if.with_(then=N.Block(tuple(work), loc=g_if.then.loc))]
    nest = N.Block(tuple(body))
    for v, ext in reversed(loops):
        tmpl = next(l for l in walk(phases[-1].stmt) if isinstance(l, N.For) and l.var == v)
        nest = tmpl.with_(body=nest if isinstance(nest, N.Block) else N.Block((nest,)))
    out = [s for s in block[:k] if s is not arr] + [nest] + block[k + m:]
    return out


def _merge_block(stmts: list, chk: _Check):
    """New statements with one run of phases merged, None when there is none, or Refused."""
    arrays = [s for s in stmts if isinstance(s, N.Decl) and isinstance(s.type, N.Array) and s.init is None
              and len(s.type.dims) == 1 and isinstance(s.type.elem, N.Scalar)]
    why = None
    for arr in arrays:
        k0 = stmts.index(arr)
        for k in range(k0 + 1, len(stmts)):
            if _phase(stmts[k]) is None:
                continue
            m = 0
            while k + m < len(stmts) and _phase(stmts[k + m]) is not None:
                m += 1
            if m < 2 or not _refs(stmts[k], arr.name):
                continue
            # the run: as long as the phases name the accumulator, up to its last use
            last = max(x for x in range(k, k + m) if _refs(stmts[x], arr.name))
            try:
                return _merge_run(list(stmts), k, last - k + 1, arr, chk)
            except Refused as e:
                why = why or e
            break
    if why is not None:
        raise why
    return None


def merge_phases(fn: N.Func, program=None):
    """``fn`` with every mergeable run of thread phases merged: (new function, notes). A note is
    ``(array, None)`` for a merged run, ``(None, why)`` for a block that was kept."""
    notes = []
    refused = set()
    for _ in range(8):
        chk = _Check(fn, program)
        done = []

        def visit(blk: N.Block):
            for x, st in enumerate(blk.stmts):
                sub = None
                if isinstance(st, N.Block):
                    sub = visit(st)
                elif isinstance(st, N.For):
                    b = visit(st.body)
                    sub = None if b is None else st.with_(body=b)
                elif isinstance(st, N.If):
                    t = visit(st.then) if isinstance(st.then, N.Block) else None
                    sub = None if t is None else st.with_(then=t)
                if sub is not None:
                    return blk.with_(stmts=blk.stmts[:x] + (sub,) + blk.stmts[x + 1:])
            if id(blk) in refused:
                return None
            try:
                res = _merge_block(list(blk.stmts), chk)
            except Refused as e:
                notes.append((None, str(e)))
                refused.add(id(blk))
                return None
            if res is None:
                return None
            done.append(True)
            return blk.with_(stmts=tuple(res))

        body = visit(fn.body)
        if body is None:
            break
        fn = fn.with_(body=body)
        notes.append(("merged", None))
        refused = set()
    return fn, notes
