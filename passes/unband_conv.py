"""Un-banding a BANG 2-D convolution staged through channel-padded, transposed NRAM / WRAM copies
(conv2d_nchw.mlu): a step of loop recovery's un-staging, tried by :func:`passes.unband.unband`
in place of the one-gather form of conv1d.mlu when loop recovery is asked for ``staged_conv``
(the bang → cuda / hip plans only: on c the staged form is faster; docs/decisions.md).

After detensorize and loop recovery the task reads (abridged)::

    for (c0 = 0; c0 < CoutP; c0 += ALIGN) {               // the filter, ALIGN filters a group
        int count = ...;
        fill chan_major, chan_last;  copy weight -> chan_major (count segments);
        for (j < count) transpose chan_major + j*slot -> chan_last + j*slot;
        copy chan_last -> wram_filter + c0*slot;
    }
    int r = row_begin;
    while (r < row_end) {                                   // bands of output rows (n, ho)
        int n = r / Ho;  int ho = r % Ho;  int band = ...;  ...
        fill in_chw; copy input -> in_chw (Cin segments); transpose in_chw -> in_hwc;
        { for (oh) for (ow) for (co < CoutP) { acc = 0; for (p) for (q) for (ci < CinP)
              acc += in_hwc[...] * wram_filter[...];  out_hwc[...] = acc; } }
        transpose out_hwc -> out_chw;  copy out_chw -> output (Cout segments);
        r += band;
    }

:func:`lift` makes it::

    for (row = row_begin; row < row_end; ++row) {
        int n = row / Ho;  int ho = row % Ho;
        for (wo < Wo) for (co < Cout) {
            float acc = 0.0f;
            for (p < KH) for (q < KW) for (ci < Cin) acc += input[...] * weight[...];
            output[...] = acc;
        }
    }

How: every element the band copies out is followed back through the statements before it.
A read ``A[e]`` of a private array is matched against the last store to ``A`` that covers
``e``: for a store nest ``A[f(i_1..i_m)]`` with ``f`` affine in its loop indices, the indices
that store ``e`` are read off ``e`` (the terms of ``e`` divisible by each index's coefficient,
largest first: the inverse of a segment copy, a transpose or a row-major nest), and then

* the witness is proved to lie in the nest's box (Z3) and ``f(witness) == e`` (a polynomial
  identity of :mod:`xpiler.ir.poly`), and no other iteration of the nest stores ``e`` (Z3): the value is the
  store's right-hand side at the witness, followed back in turn;
* or no iteration of the nest stores ``e`` (Z3): the store is passed over;
* or neither is proved: the step refuses, naming the store.

A read that no store of the band covers refuses (the value would come from an earlier band);
the WRAM filter, which no statement of the band stores, is followed into the filter loop (a
store of iteration ``c0`` read back: every store of that loop, in any iteration, is covering or
proved not to cover). The padded channels: the first bound of the reduction that the input side
cannot prove (``ci < Cin``) splits the sum; under it both factors must follow back to the
parameter arrays, outside it both must be a zero fill (``0 * 0`` adds ``+0`` to an accumulator
that starts at ``+0``: the sum is unchanged), else the step refuses. The rows: the band walk of
:mod:`passes.unband` (step = band's row count, every row of a band has its quotient and
remainder) is proved again here, the copied-out elements are decomposed as
``j = oh * Wo + wo`` (``opix == band * Wo``, proved), and the lifted row loop must carry no
dependence (``dependence.check_parallel``).

The sum keeps the source's order (p, q, ci) with the zero terms left out. Every refusal raises
:class:`passes.unband.Refused` with its reason; the caller keeps the task as recovered.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir import horner, poly
from xpiler.ir.visit import substitute, walk

from . import dependence as D
from .decache import _flatten, _pure
from .task_slices import _drop_dead
from .unband import INT, Refused, _Band, _add, _c, _drop_comments, _is_zero, _mul, _stmts, _strip, _sub

LONG = N.Scalar("int64", "long")


class _Undecided(Refused):
    """Neither covering nor proved disjoint; ``cond`` is the first bound of the witness that was
    not proved (the caller may split on it)."""

    def __init__(self, msg, cond=None):
        super().__init__(msg)
        self.cond = cond


# ---------------------------------------------------------------------- polynomials of IR
class _Poly(poly.Reader):
    """IR integer expressions as polynomials of the model (:mod:`xpiler.ir.poly`) over names:
    +, -, * and constants are kept, lets are expanded, every other node (/, %, ?:) is an opaque
    atom ``_a<n>`` keyed by its let-expanded IR. Back to IR by :meth:`ir` (expanded) and
    :func:`_horner` (nested over the sizes), both through :mod:`xpiler.ir.horner`."""

    def __init__(self, lets, macros):
        self.lets, self.macros = lets, macros
        self.atoms = {}          # expanded IR -> atom name
        self.back = {}           # atom name -> IR

    def with_lets(self, extra):
        """The same atoms, more lets."""
        p = _Poly(dict(self.lets, **extra), self.macros)
        p.atoms, p.back = self.atoms, self.back
        return p

    def expand_ir(self, e, depth=0):
        if depth > 40:
            raise Refused("declarations refer to each other too deeply")
        return substitute(e, self.lets) if not any(
            isinstance(n, N.Var) and n.name in self.lets for n in walk(e)) else self.expand_ir(
            substitute(e, self.lets), depth + 1)

    def atom(self, e):
        key = _strip_int_casts(self.expand_ir(e))
        s = self.atoms.get(key)
        if s is None:
            s = f"_a{len(self.atoms)}"
            self.atoms[key] = s
            # a let's atom reads back as the let's name
            self.back[s] = e if isinstance(e, N.Var) and e.name in self.lets else key
        return s

    # ---- the reader's hooks: float casts and integer casts read through, an expression already
    # met as an atom is that atom (looked up at every cast it is read through)
    def known(self, e):
        while True:
            e = _strip(e)
            if self.atoms and not isinstance(e, N.Const):
                hit = self.atoms.get(_strip_int_casts(self.expand_ir(e)))
                if hit is not None:
                    return {(hit,): 1}
            if not _int_cast(e):
                return None
            e = e.expr

    def strip(self, e):
        e = _strip(e)
        while _int_cast(e):
            e = _strip(e.expr)
        return e

    def leaf(self, e):
        if isinstance(e, N.Var):
            if e.name in self.lets:
                v = self.lets[e.name]
                # a let of +, -, * is expanded; any other is one atom (equal values, one atom)
                return self(v) if _polynomial(v) else {(self.atom(e),): 1}
            m = self.macros.get(e.name)
            if m is not None and m.params is None and isinstance(m.expr, N.Const) and isinstance(m.expr.value, int):
                return poly.const(m.expr.value)
            return {(e.name,): 1}
        return {(self.atom(e),): 1}

    def other(self, e, depth):
        if e.op == "%" and isinstance(e.rhs, N.Const):
            # a % b == a - (a / b) * b in C for b != 0: one atom (the quotient) for both forms
            b = e.rhs.value
            if isinstance(b, int) and b != 0:
                return poly.add(self.read(e.lhs, depth + 1), {(self.atom(N.BinOp("/", e.lhs, e.rhs)),): b}, -1)
        return None

    def ir(self, p):
        """polynomial -> IR, expanded (:func:`xpiler.ir.horner.to_ir`: coefficients first, simpler
        terms first); an atom becomes its let-expanded IR."""
        return horner.to_ir(horner.expanded(p), self.leaf_ir, coeff_first=True, deep_first=False)

    def leaf_ir(self, a, names=None):
        """The IR of an atom: ``names[a]``, else an atom's (let-expanded) IR, else the name."""
        if names and a in names:
            return names[a]
        if a in self.back:
            return self.back[a]
        return N.Var(a)


def _strip_int_casts(e):
    from xpiler.ir.visit import rewrite
    return rewrite(e, lambda n: n.expr if isinstance(n, N.Cast) and isinstance(n.type, N.Scalar)
                   and n.type.dtype in D.INT_DTYPES else n)


def _int_cast(e) -> bool:
    return isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in D.INT_DTYPES


def _polynomial(e) -> bool:
    for n in walk(e):
        if isinstance(n, N.BinOp) and n.op not in ("+", "-", "*"):
            return False
        if not isinstance(n, (N.BinOp, N.Var, N.Const, N.Cast, N.UnOp)):
            return False
        if isinstance(n, N.UnOp) and n.op not in ("-", "+"):
            return False
    return True


# ---------------------------------------------------------------------- store nests
class _Store:
    """``A[f(i)] = v`` under perfect loops ``[(var, lo, hi, step)]``; ``kind`` zero | copy | sum."""

    def __init__(self, root, off, loops, kind, src=None, red=None, lets=None, what=""):
        self.root, self.off, self.loops, self.kind = root, off, loops, kind
        self.src, self.red, self.lets, self.what = src, red, dict(lets or {}), what


class _Conv(_Band):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.memo = {}

    def cint(self, e):
        """The integer value of a constant or an object-like macro naming one, else None."""
        e = _strip(e)
        if isinstance(e, N.Var):
            m = self.macros.get(e.name)
            e = m.expr if m is not None and m.params is None else e
        if isinstance(e, N.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return e.value
        return None

    # ------------------------------------------------------------------ proofs
    def holds(self, hyps, goal, lets=None) -> bool:
        # a goal proved under fewer hypotheses (same lets) holds under more
        key = (goal, tuple(sorted((lets or {}).items(), key=lambda kv: kv[0])))
        hs = frozenset(hyps)
        seen = self.memo.setdefault(key, [])
        for ok_, h_ in seen:
            if (ok_ and h_ <= hs) or (not ok_ and h_ == hs):
                return ok_
        try:
            self.prove(hyps, goal, lets, "")
            ok = True
        except Refused:
            ok = False
        seen.append((ok, hs))
        return ok

    def box(self, loops, vals=None):
        out = []
        for v, lo, hi, step in loops:
            x = vals[v] if vals else N.Var(v)
            out += [N.BinOp(">=", x, lo), N.BinOp("<", x, hi)]
            if not (isinstance(step, N.Const) and step.value == 1):
                out.append(N.BinOp("==", N.BinOp("%", _sub(x, lo), step), _c(0)))
        return out

    # ------------------------------------------------------------------ reading nests
    def nest(self, s, lets, what):
        """A perfect nest of counted loops ending in one store (const int declarations of a block
        join ``lets``): its :class:`_Store`."""
        loops = []
        node = s
        while True:
            if isinstance(node, N.Block):
                body = _drop_comments(_flatten(node.stmts))
                while body and isinstance(body[0], N.Decl) and isinstance(body[0].type, N.Scalar) \
                        and body[0].init is not None and _pure(body[0].init) and len(body) > 1:
                    lets[body[0].name] = body[0].init
                    body = body[1:]
                if len(body) != 1:
                    raise Refused(f"{what} is not a perfect loop nest")
                node = body[0]
                continue
            if isinstance(node, N.For):
                if not (_pure(node.lo) and _pure(node.hi) and (self.cint(node.step) or 0) >= 1):
                    raise Refused(f"{what}: loop '{node.var}' is not counted up by a constant")
                loops.append((node.var, node.lo, node.hi, _c(self.cint(node.step))))
                body = _drop_comments(_flatten(_stmts(node.body)))
                if len(body) == 1:
                    node = body[0]
                    continue
                return loops, body
            return loops, [node]

    def store(self, loops, body, lets, ptrs, what):
        if len(body) == 1 and isinstance(body[0], N.Assign) and body[0].op == "=" \
                and isinstance(body[0].target, N.Index):
            a = body[0]
            root, off = self.addr(a.target.base, a.target.index, ptrs=ptrs)
            if _is_zero(a.value):
                return _Store(root, off, loops, "zero", lets=lets, what=what)
            v = _strip(a.value)
            if isinstance(v, N.Index):
                return _Store(root, off, loops, "copy", src=self.addr(v.base, v.index, ptrs=ptrs),
                              lets=lets, what=what)
            raise Refused(f"{what} stores neither a copy nor a zero")
        # float acc = 0; for ... acc += x * y; A[f] = acc;
        if len(body) == 3 and isinstance(body[0], N.Decl) and isinstance(body[0].type, N.Scalar) \
                and body[0].type.dtype == "float32" and body[0].init is not None and _is_zero(body[0].init):
            acc = body[0].name
            rl, rb = self.nest(body[1], lets, what)
            if len(rb) != 1 or not (isinstance(rb[0], N.Assign) and rb[0].op == "+="
                                    and isinstance(rb[0].target, N.Var) and rb[0].target.name == acc):
                raise Refused(f"{what}: the reduction is not 'acc += x * y'")
            prod = _strip(rb[0].value)
            if not (isinstance(prod, N.BinOp) and prod.op == "*" and isinstance(_strip(prod.lhs), N.Index)
                    and isinstance(_strip(prod.rhs), N.Index)):
                raise Refused(f"{what}: the reduction does not multiply two loads")
            for v, lo, hi, step in rl:
                if not (self.cint(lo) == 0 and step.value == 1):
                    raise Refused(f"{what}: reduction loop '{v}' does not run from 0 by 1")
            x, y = _strip(prod.lhs), _strip(prod.rhs)
            st = body[2]
            if not (isinstance(st, N.Assign) and st.op == "=" and isinstance(st.target, N.Index)
                    and isinstance(_strip(st.value), N.Var) and _strip(st.value).name == acc):
                raise Refused(f"{what}: the accumulator is not stored once after its sum")
            root, off = self.addr(st.target.base, st.target.index, ptrs=ptrs)
            red = (rl, self.addr(x.base, x.index, ptrs=ptrs), self.addr(y.base, y.index, ptrs=ptrs))
            return _Store(root, off, loops, "sum", red=red, lets=lets, what=what)
        raise Refused(f"{what} is not one store")

    # ------------------------------------------------------------------ witnesses
    def witness(self, st, e, P):
        """Loop values at which ``st`` stores offset ``e`` (IR per loop var), or None."""
        P = P.with_lets(st.lets)
        f = P(st.off)
        vars_ = [v for v, *_ in st.loops]
        coef, f0 = {}, {}
        for m, c in f.items():
            hit = [v for v in vars_ if v in m]
            if not hit:
                f0 = poly.add(f0, {m: c})
                continue
            if len(hit) > 1 or m.count(hit[0]) != 1:
                raise Refused(f"{st.what}: its index is not affine in its loops")
            coef[hit[0]] = poly.add(coef.get(hit[0], {}), poly.coeff({m: c}, hit[0]))
        for v in vars_:
            if coef.get(v) is None:
                raise Refused(f"{st.what}: loop '{v}' is not in its index")
        rest = poly.add(P(e), f0, -1)
        order = sorted(vars_, key=lambda v: (-_size(coef[v]), vars_.index(v)))
        out = {}
        for v in order:
            c = coef[v]
            q = {}
            if len(c) == 1:
                ct = next(iter(c.items()))
                for t in rest.items():
                    d = poly.divide_monomial(t, ct)
                    if d is not None:
                        q = poly.add(q, {d[0]: d[1]})
            elif rest:
                # a coefficient of several terms (a let such as pix = in_rows * W expanded):
                # polynomial division, its atoms leading; the result is checked below
                gens = sorted(poly.atoms(c)) + sorted(poly.atoms(rest) - poly.atoms(c))
                q, _ = poly.divide(rest, c, gens)
                if any(x.denominator != 1 for x in q.values()):
                    q = {}
                q = {m: int(x) for m, x in q.items()}
            rest = poly.add(rest, poly.mul(q, c), -1)
            step = dict((x, (lo, s)) for x, lo, _, s in st.loops)[v]
            qi = P.ir(q)
            lo, s = step
            if not (isinstance(s, N.Const) and s.value == 1):
                if not (isinstance(lo, N.Const) and lo.value == 0):
                    raise Refused(f"{st.what}: a stepped loop that does not start at 0")
                qi = _mul(N.BinOp("/", qi, s), s)
                rest = poly.add(rest, poly.mul(poly.add(q, P(qi), -1), c))
            out[v] = qi
        if rest:
            return None
        # f(witness) == e, as polynomials
        if poly.add(P(substitute(st.off, out)), P(e), -1):
            return None
        return out

    def covers(self, st, e, hyps, lets, P):
        """True: ``st`` stores ``e`` once (returns the witness); False: never; else _Undecided."""
        w = self.witness(st, e, P)
        box_w = self.box(st.loops, w) if w is not None else None
        lets_ = dict(lets, **st.lets)
        if w is not None:
            unproved = [b for b in box_w if not self.holds(hyps, b, lets_)]
            if not unproved:
                # the only iteration that stores e
                fresh = {v: N.Var(v + "__o") for v, *_ in st.loops}
                other = [substitute(b, fresh) for b in self.box(st.loops)]
                same = N.BinOp("==", substitute(st.off, fresh), e)
                eq = None
                for v, *_ in st.loops:
                    d = N.BinOp("==", fresh[v], w[v])
                    eq = d if eq is None else N.BinOp("&&", eq, d)
                if eq is not None and not self.holds(hyps + other + [same], eq, lets_):
                    raise _Undecided(f"{st.what}: not proved that one iteration stores each element")
                return w
        # no iteration stores e
        fresh = {v: N.Var(v + "__n") for v, *_ in st.loops}
        other = [substitute(b, fresh) for b in self.box(st.loops)]
        if w is not None and self.apart(st, e, w, hyps, lets_, fresh, other, P):
            return False
        if self.holds(hyps + other, N.BinOp("!=", substitute(st.off, fresh), e), lets_):
            return False
        cond = unproved[0] if w is not None else None
        raise _Undecided(f"not proved whether {st.what} stores the element read", cond)

    def apart(self, st, e, w, hyps, lets, fresh, other, P) -> bool:
        """No iteration stores ``e``, by the outermost index: with ``C`` its coefficient, the rest
        of the store's index and of ``e`` both lie in ``[0, C)`` (so equal offsets have equal
        outer indices), and with the outer index at the witness no iteration stores ``e``."""
        P = P.with_lets(st.lets)
        f = P(st.off)
        vars_ = [v for v, *_ in st.loops]
        coef = {v: poly.coeff(f, v) for v in vars_}
        o = sorted(vars_, key=lambda v: (-_size(coef[v]), vars_.index(v)))[0]
        C = P.ir(coef[o])
        io = fresh[o]
        rest_i = _sub(substitute(st.off, fresh), _mul(io, C))
        rest_e = _sub(e, _mul(w[o], C))
        return (self.holds(hyps, N.BinOp(">=", C, _c(1)), lets)
                and self.holds(hyps + other, N.BinOp("&&", N.BinOp(">=", rest_i, _c(0)), N.BinOp("<", rest_i, C)), lets)
                and self.holds(hyps, N.BinOp("&&", N.BinOp(">=", rest_e, _c(0)), N.BinOp("<", rest_e, C)), lets)
                and self.holds(hyps + other + [N.BinOp("==", io, w[o])],
                               N.BinOp("!=", substitute(st.off, fresh), e), lets))

    # ------------------------------------------------------------------ following values back
    def value(self, root, e, hyps, seq, pos, lets, P, depth=0):
        """The value of ``root[e]`` before ``seq[pos]``: ('global', param, offset) | ('zero',)
        | ('sum', loops, x, y) (x, y values of the reduction's loads)."""
        if depth > 12:
            raise Refused("values staged too deeply")
        if root in self.params:
            if root in self.stored_params or "?" in self.stored_params:
                raise Refused(f"'{root}' is read and stored to")
            return ("global", root, e)
        for k in range(pos - 1, -1, -1):
            item = seq[k]
            if isinstance(item, _Group):
                got = self.group_value(item, root, e, hyps, lets, P, depth)
                if got is not None:
                    return got
                continue
            if item.root != root:
                continue
            w = self.covers(item, e, hyps, lets, P)
            if w is False:
                continue
            lets_ = dict(lets, **item.lets)
            if item.kind == "zero":
                return ("zero",)
            if item.kind == "copy":
                sroot, soff = item.src
                return self.value(sroot, substitute(soff, w), hyps, seq, k, lets_, P, depth + 1)
            rl, x, y = item.red
            return ("sum", rl, (x[0], substitute(x[1], w)), (y[0], substitute(y[1], w)), k, lets_)
        if getattr(seq, "outer", None) is not None:
            if any(isinstance(s, _Store) and s.root == root for s in seq):
                raise Refused(f"a read of '{root}' in the band is not stored earlier in the same band")
            outer, opos = seq.outer
            return self.value(root, e, hyps, outer, opos, lets, P, depth + 1)
        raise Refused(f"a read of '{root}' is stored by no statement before it")

    def group_value(self, g, root, e, hyps, lets, P, depth):
        """A read of a store inside the filter loop ``g`` (any iteration)."""
        mine = [s for s in g.stores if s.root == root]
        if not mine:
            return None
        found = None
        for s in mine:
            whole = _Store(s.root, s.off, [g.loop] + s.loops, s.kind, s.src, s.red, dict(g.lets, **s.lets), s.what)
            w = self.covers(whole, e, hyps, lets, P)
            if w is False:
                continue
            if found is not None:
                raise Refused(f"two stores of the filter loop write the element read ({found[0].what}, {s.what})")
            found = (s, w)
        if found is None:
            return None
        s, w = found
        if s.kind != "copy":
            raise Refused(f"{s.what}: a filter store read back is not a copy")
        c0 = g.loop[0]
        body = _Seq(substitute_store(x, {c0: w[c0]}) for x in g.stores)
        k = [i for i, x in enumerate(g.stores) if x is s][0]
        inner = {v: w[v] for v, *_ in s.loops}
        inner[c0] = w[c0]
        glets = {n: substitute(v, {c0: w[c0]}) for n, v in g.lets.items()}
        P2 = P.with_lets(glets)
        sroot, soff = s.src
        ih = hyps + self.box([g.loop], {c0: w[c0]})
        return self.value(sroot, substitute(soff, inner), ih, body, k, dict(lets, **glets), P2, depth + 1)

    # ------------------------------------------------------------------ the task
    def run(self, task):
        stmts = _drop_comments(_flatten(task.body.stmts))
        ws = [k for k, s in enumerate(stmts) if isinstance(s, N.While)]
        if len(ws) != 1 or stmts[ws[0] + 1:]:
            raise Refused("no single band loop ending the task")
        w = ws[0]
        rdecl = stmts[w - 1] if w else None
        if not (isinstance(rdecl, N.Decl) and isinstance(rdecl.type, N.Scalar) and rdecl.init is not None
                and _pure(rdecl.init)):
            raise Refused("the band counter is not declared right before the band loop")
        r = rdecl.name
        kept, prologue = [], _Seq()
        k = 0
        while k < w - 1:
            s = stmts[k]
            k2 = self.task_decl(stmts, k, kept)
            if k2 is not None:
                k = k2
            elif isinstance(s, N.For) and self.cint(s.step) != 1:
                prologue.append(self.group(s))
                k += 1
            elif isinstance(s, N.For):
                loops, body = self.nest(s, {}, f"loop '{s.var}' before the band loop")
                prologue.append(self.store(loops, body, {}, self.ptrs, f"loop '{s.var}'"))
                k += 1
            else:
                raise Refused(f"a {type(s).__name__} statement in the task before the band loop")
        loop = stmts[w]
        if not (isinstance(loop.cond, N.BinOp) and loop.cond.op == "<" and isinstance(loop.cond.lhs, N.Var)
                and loop.cond.lhs.name == r and _pure(loop.cond.rhs)) or loop.do:
            raise Refused("the band loop is not 'while (r < end)'")
        row = self.band(loop, r, rdecl.init, loop.cond.rhs, task, prologue, rdecl.type)
        new_body = list(kept) + [row]
        new_body = _drop_dead(new_body, {d.name for d in new_body if isinstance(d, N.Decl)})
        new_task = task.with_(body=task.body.with_(stmts=tuple(new_body)))
        fn2 = self.fn.with_(body=self.fn.body.with_(stmts=tuple(
            new_task if s is task else s for s in self.fn.body.stmts)))
        loop_node = next(x for x in walk(fn2) if isinstance(x, N.For) and x.var == row.var)
        dep = None if getattr(self, "digits_ok", False) else D.check_parallel(self.program, fn2, loop_node)
        if dep is not None:
            raise Refused(f"the rows of a task are not independent: {dep}")
        return new_task

    def group(self, s):
        """The filter loop: ``for (c0 = 0; c0 < E; c0 += A)`` of declarations and store nests."""
        if not (self.cint(s.lo) == 0 and (self.cint(s.step) or 0) >= 1 and _pure(s.hi)):
            raise Refused(f"the staging loop '{s.var}' does not count from 0 by a constant")
        body = _drop_comments(_flatten(_stmts(s.body)))
        glets, stores = {}, []
        k = 0
        while k < len(body):
            x = body[k]
            if isinstance(x, N.Decl) and isinstance(x.type, N.Scalar) and x.init is not None and _pure(x.init):
                k2 = self.chain(body, k, glets)
                k = k2
                continue
            if not isinstance(x, (N.For, N.Block)):
                raise Refused(f"a {type(x).__name__} statement in the staging loop '{s.var}'")
            loops, b = self.nest(x, glets, f"a nest of the staging loop '{s.var}'")
            stores.append(self.store(loops, b, {}, self.ptrs, f"nest '{loops[0][0] if loops else '?'}' of the staging loop"))
            k += 1
        return _Group((s.var, _c(0), s.hi, _c(self.cint(s.step))), stores, glets)

    def band(self, loop, r, r_begin, r_end, task, prologue, rtype):
        body = _drop_comments(_flatten(_stmts(loop.body)))
        if not (body and isinstance(body[-1], N.Assign) and isinstance(body[-1].target, N.Var)
                and body[-1].target.name == r and body[-1].op == "+="):
            raise Refused("the band loop does not end by advancing its counter")
        step = body[-1].value
        blets, ptrs = {}, dict(self.ptrs)
        seq = _Seq()
        k = 0
        decls = []
        while k < len(body) - 1:
            x = body[k]
            if isinstance(x, N.Decl) and isinstance(x.type, N.Scalar) and x.init is not None and _pure(x.init):
                decls.append(x)
                k = self.chain(body, k, blets)
                continue
            if isinstance(x, N.Decl) and isinstance(x.type, N.Pointer) and x.init is not None:
                ptrs[x.name] = self.addr(x.init, ptrs=ptrs)
                k += 1
                continue
            if not isinstance(x, (N.For, N.Block)):
                raise Refused(f"a {type(x).__name__} statement in the band")
            slets = {}
            loops, b = self.nest(x, slets, "a nest of the band")
            seq.append(self.store(loops, b, slets, ptrs, f"band nest '{loops[0][0] if loops else '?'}'"))
            k += 1
        seq.outer = (prologue, len(prologue))
        outs = [s for s in seq if s.root in self.params]
        if len(outs) != 1 or seq[-1] is not outs[0] or outs[0].kind != "copy" or len(outs[0].loops) != 2:
            raise Refused("the band does not end with one copy-out of two loops to a parameter array")
        out = outs[0]
        # quotient and remainder of the band's first row
        qd = [d for d in decls if isinstance(_strip(d.init), N.BinOp) and _strip(d.init).op == "/"
              and _strip(_strip(d.init).lhs) == N.Var(r)]
        rd = [d for d in decls if isinstance(_strip(d.init), N.BinOp) and _strip(d.init).op == "%"
              and _strip(_strip(d.init).lhs) == N.Var(r)]
        if len(qd) != 1 or len(rd) != 1 or _strip(qd[0].init).rhs != _strip(rd[0].init).rhs:
            raise Refused("the band does not split its first row as r / D and r % D")
        Dv = _strip(qd[0].init).rhs
        nname, hname = qd[0].name, rd[0].name
        task_range = [N.BinOp(">=", N.Var(task.var), _c(0)), N.BinOp("<", N.Var(task.var), task.hi)]
        inband = task_range + [N.BinOp(">=", N.Var(r), r_begin), N.BinOp("<", N.Var(r), r_end)]
        self.prove(inband, N.BinOp(">=", step, _c(1)), blets, "a band holds at least one row")
        inband.append(N.BinOp(">=", step, _c(1)))
        self.prove(inband, N.BinOp("<=", _add(N.Var(r), step), r_end), blets, "a band ends inside the task's rows")
        oh = N.Var(self.name("oh"))
        in_rows = inband + [N.BinOp(">=", oh, _c(0)), N.BinOp("<", oh, step)]
        self.prove(in_rows, N.BinOp("==", N.BinOp("/", _add(N.Var(r), oh), Dv), N.Var(nname)), blets,
                   "every row of a band has the band's quotient")
        self.prove(in_rows, N.BinOp("==", N.BinOp("%", _add(N.Var(r), oh), Dv), _add(N.Var(hname), oh)), blets,
                   "the rows of a band are consecutive remainders")
        # the copy-out: two loops, one over the channels and one over the band's pixels
        # j = oh * Wv + wo with opix == band * Wv: (channel, pixel) for a channel-major copy-out
        # (conv2d_nchw.mlu), (pixel, channel) for a channel-last one (conv2d_nhwc.mlu)
        (s0, lo0, hi0, _), (s1, lo1, hi1, _) = out.loops
        if not (lo0 == _c(0) and lo1 == _c(0)):
            raise Refused("the copy-out loops do not start at 0")
        Wv = None
        for (sv, shi), (jv, jhi) in (((s0, hi0), (s1, hi1)), ((s1, hi1), (s0, hi0))):
            for name in [d.name for d in task.body.stmts if isinstance(d, N.Decl)]:
                if name in self.lets and self.holds(inband, N.BinOp("==", jhi, _mul(step, N.Var(name))), blets):
                    Wv = N.Var(name)
                    break
            if Wv is not None:
                break
        if Wv is None:
            raise Refused("the copied-out pixels of a band are not its rows times a width")
        wo, co = N.Var(self.name("wo")), N.Var(self.name("co"))
        el = in_rows + [N.BinOp(">=", wo, _c(0)), N.BinOp("<", wo, Wv), N.BinOp(">=", co, _c(0)),
                        N.BinOp("<", co, shi), N.BinOp(">=", _mul(Wv, _c(1)), _c(1))]
        lets = dict(self.lets, **blets)
        P = _Poly(lets, self.macros)
        at = {sv: co, jv: _add(_mul(oh, Wv), wo)}
        # the lifted element's value: follow the copy-out's read back
        sroot, soff = out.src
        val = self.value(sroot, substitute(soff, at), el, seq, len(seq) - 1, lets, P)
        if val[0] != "sum":
            raise Refused("the copied-out value is not a sum of products")
        _, rl, x, y, kpos, slets = val
        lets2 = dict(lets, **slets)
        P2 = P.with_lets(slets)
        red_h = el + self.box(rl)
        xs, ys, lo_var, hi_new = self.split_sum(x, y, red_h, seq, kpos, lets2, P2, rl)
        # global offsets in terms of the lifted row: ho_band = ho - oh, r = row - oh
        hoL, nL = "__hoL", "__nL"
        rowv = N.Var(self.name("row"))
        names = {hoL: N.Var(hname), nL: N.Var(nname)}
        ho_atom, n_atom = P2.atom(N.Var(hname)) if hname in lets2 else None, P2.atom(N.Var(nname))

        def lifted(e):
            p = P2(e)
            if ho_atom is not None:
                p = poly.subst(p, ho_atom, {(hoL,): 1, (oh.name,): -1})
            p = poly.subst(p, n_atom, {(nL,): 1})
            bad = poly.atoms(p) & ({oh.name, r, step.name if isinstance(step, N.Var) else ""}
                                   | set(blets) - {nname, hname})
            if bad or any(s in P2.back and (set(x.name for x in walk(P2.back[s]) if isinstance(x, N.Var))
                                           & ({r, oh.name} | set(blets)))
                          for s in poly.atoms(p) if s not in (hoL, nL)):
                raise Refused("an address depends on the band other than through its row")
            return _horner(P2, p, names, {hoL, nL, wo.name, co.name} | {v for v, *_ in rl})
        kept = set(self.lets) | {nname, hname}

        def declared(e):
            """``e`` naming only lets the lifted program declares: a band's let (a detensorized
            __bang_conv's own output width) becomes a task let of the same value (``Wo``), else
            its definition."""
            for _ in range(40):
                hidden = sorted({n.name for n in walk(e) if isinstance(n, N.Var) and n.name in lets2
                                 and n.name not in kept})
                if not hidden:
                    return e
                to = {}
                for h in hidden:
                    key = _strip_int_casts(P2.expand_ir(N.Var(h)))
                    same = [k for k in sorted(self.lets) if _strip_int_casts(P2.expand_ir(N.Var(k))) == key]
                    to[h] = N.Var(same[0]) if same else lets2[h]
                e = substitute(e, to)
            raise Refused("a lifted index names declarations of the band too deeply")
        _lifted = lifted

        def lifted(e):
            return declared(_lifted(e))
        out_idx = lifted(substitute(out.off, at))
        self.digits_ok = self.distinct_rows(out_idx, rowv, nname, hname, Dv, [(wo, Wv), (co, shi)],
                                            [N.BinOp(">=", rowv, r_begin), N.BinOp("<", rowv, r_end)] + task_range)
        x_idx, y_idx = lifted(xs[2]), lifted(ys[2])
        for p_ in (xs[1], ys[1], out.root):
            t = self.params.get(p_)
            if not (isinstance(t, N.Pointer) and isinstance(t.elem, N.Scalar) and t.elem.dtype == "float32"):
                raise Refused(f"'{p_}' is not a float array")
        acc = self.name("acc")
        inner = N.Assign(N.Var(acc), "+=", N.BinOp("*", N.Index(N.Var(xs[1]), x_idx), N.Index(N.Var(ys[1]), y_idx)))
        for v, lo, hi, st in reversed(rl):
            inner = N.For(v, _c(0), hi_new if v == lo_var else hi, _c(1), N.Block((inner,)), None, INT)
        elem = N.Block((N.Decl(acc, N.Scalar("float32", "float"), N.Const(0.0, "float32", "0.0f")), inner,
                        N.Assign(N.Index(N.Var(out.root), out_idx), "=", N.Var(acc))))
        colloop = N.For(co.name, _c(0), shi, _c(1), elem, None, INT)
        woloop = N.For(wo.name, _c(0), Wv, _c(1), N.Block((colloop,)), None, INT)
        n_decl = N.Decl(nname, qd[0].type, N.BinOp("/", rowv, Dv))
        h_decl = N.Decl(hname, rd[0].type, N.BinOp("%", rowv, Dv))
        return N.For(rowv.name, r_begin, r_end, _c(1), N.Block((n_decl, h_decl, woloop)), None, rtype, loc=loop.loc)

    def distinct_rows(self, idx, rowv, nname, hname, Dv, cols, hyps) -> bool:
        """The lifted store ``output[idx]`` writes each element once over all rows and columns:
        ``idx`` is ``d_0 + S_0 * (d_1 + S_1 * (... + S_k * top))`` with every digit ``d`` a column
        loop or the row's remainder ``ho`` in ``[0, S)`` (Z3) and ``top`` the row's quotient
        ``n``; as ``row == n * D + ho``, two rows differ in ``n`` or ``ho``, and a mixed-radix
        number with digits in range is unique. (dependence.check_parallel cannot see this through
        the division of the row.) False when the shape differs (check_parallel is then asked)."""
        digits = []
        e = idx
        while True:
            e = _strip(e)
            if isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in D.INT_DTYPES:
                e = e.expr
                continue
            if isinstance(e, N.BinOp) and e.op == "+":
                a, b = _uncast(e.lhs), _uncast(e.rhs)
                if isinstance(a, N.BinOp) and a.op == "*":
                    a, b = b, a
                if not (isinstance(a, N.Var) and isinstance(b, N.BinOp) and b.op == "*"):
                    return False
                x, y = _uncast(b.lhs), _uncast(b.rhs)
                if isinstance(y, N.BinOp) and y.op == "+":
                    x, y = y, x
                if not (isinstance(x, N.BinOp) and x.op == "+"):
                    if isinstance(y, N.Var) and y.name == nname:
                        x, y = y, x
                    if not (isinstance(x, N.Var) and x.name == nname):
                        return False
                digits.append((a.name, y))
                e = x
                continue
            if isinstance(e, N.BinOp) and e.op == "*":
                x, y = _uncast(e.lhs), _uncast(e.rhs)
                if isinstance(y, N.Var) and y.name == nname:
                    x, y = y, x
                if isinstance(x, N.Var) and x.name == nname:
                    digits.append((None, y))
                    break
                return False
            if isinstance(e, N.Var) and e.name == nname:
                break
            return False
        names = [d for d, _ in digits if d is not None]
        colnames = [c.name for c, _ in cols]
        if sorted(names) != sorted(colnames + [hname]):
            return False
        lets = {nname: N.BinOp("/", rowv, Dv), hname: N.BinOp("%", rowv, Dv)}
        h = list(hyps) + [x for c, hi in cols for x in (N.BinOp(">=", c, _c(0)), N.BinOp("<", c, hi))]
        for d, S in digits:
            if d is None:
                continue
            if not self.holds(h, N.BinOp("&&", N.BinOp(">=", N.Var(d), _c(0)), N.BinOp("<", N.Var(d), S)), lets):
                return False
        return True

    def split_sum(self, x, y, hyps, seq, kpos, lets, P, rl):
        """Both loads of the reduction followed back; a padded reduction loop cut at the bound the
        input side splits on (both sides zero beyond it)."""
        try:
            vx = self.value(x[0], x[1], hyps, seq, kpos, lets, P)
            vy = self.value(y[0], y[1], hyps, seq, kpos, lets, P)
            cond = None
        except _Undecided as u:
            cond = u.cond
            if cond is None:
                raise
        if cond is None:
            if vx[0] != "global" or vy[0] != "global":
                raise Refused("a factor of the sum is not read from a parameter array")
            return vx, vy, None, None
        c = cond
        if not (isinstance(c, N.BinOp) and c.op == "<" and isinstance(c.lhs, N.Var)
                and c.lhs.name in [v for v, *_ in rl] and not ({n.name for n in walk(c.rhs) if isinstance(n, N.Var)}
                                                             & {v for v, *_ in rl})):
            from xpiler.printers import CPrinter
            raise Refused(f"the sum splits on a bound that is not a reduction loop's: {CPrinter().expr(c)}")
        v = c.lhs.name
        hi = dict((a, h) for a, _, h, _ in rl)[v]
        self.prove(hyps, N.BinOp("<=", c.rhs, hi), lets, "the real channels are a prefix of the padded ones")
        inside, outside = hyps + [c], hyps + [N.BinOp(">=", c.lhs, c.rhs)]
        vx = self.value(x[0], x[1], inside, seq, kpos, lets, P)
        vy = self.value(y[0], y[1], inside, seq, kpos, lets, P)
        if vx[0] != "global" or vy[0] != "global":
            raise Refused("inside the real channels a factor is not read from a parameter array")
        zx = self.value(x[0], x[1], outside, seq, kpos, lets, P)
        zy = self.value(y[0], y[1], outside, seq, kpos, lets, P)
        if zx[0] != "zero" or zy[0] != "zero":
            raise Refused("a padded term of the sum does not read a zero on both sides")
        return vx, vy, v, c.rhs


def _horner(P, p, names, loopvars):
    """The index as nested products over the sizes (``((n * Cin + ci) * H + ...) * W + ...``): of
    the Horner forms over each order of the sizes (the atoms not in ``loopvars``), the one of
    fewest operations (:func:`xpiler.ir.horner.fewest_ops`), printed with the nested sum first in
    a sum and in a product, loop counters before sizes (the spelling the suite's C sources use);
    the leftmost operand in ``long``."""
    form = horner.fewest_ops(p, loopvars)
    return _long_first(horner.to_ir(form, lambda a: P.leaf_ir(a, names), loopvars))


def _uncast(e):
    e = _strip(e)
    while isinstance(e, N.Cast) and isinstance(e.type, N.Scalar) and e.type.dtype in D.INT_DTYPES:
        e = _strip(e.expr)
    return e


def _long_first(e):
    """The leftmost operand of the index cast to ``long``: C evaluates the outer products and
    sums in ``long`` from there (the source computed its offsets in ``long``)."""
    if isinstance(e, N.BinOp) and e.op in ("+", "-", "*"):
        return N.BinOp(e.op, _long_first(e.lhs), e.rhs)
    return N.Cast(LONG, e)


def _size(c):
    """How many atoms a loop's coefficient multiplies (with repeats): a one-term coefficient's,
    else 1 (a sum counts as one factor); the outermost loop has the largest."""
    if len(c) == 1:
        return len(next(iter(c)))
    return 1 if c else 0


class _Seq(list):
    outer = None


class _Group:
    def __init__(self, loop, stores, lets):
        self.loop, self.stores, self.lets = loop, stores, lets


def substitute_store(s, m):
    return _Store(s.root, substitute(s.off, m), [(v, substitute(lo, m), substitute(hi, m), st) for v, lo, hi, st in s.loops],
                  s.kind, (s.src[0], substitute(s.src[1], m)) if s.src else None, s.red,
                  {n: substitute(v, m) for n, v in s.lets.items()}, s.what)


_MEMO: dict = {}


def lift(fn, program, task, assume=()):
    """The un-banded task (a ``For``) or :class:`Refused`. Results are kept per (function, task,
    preconditions, macros): loop recovery's alternatives ask for the same task several times and
    each answer costs many Z3 proofs."""
    return memo_run(_Conv, fn, program, task, assume)


def memo_run(cls, fn, program, task, assume=()):
    """``cls(fn, program, assume).run(task)`` (a lifter of this module's kind), its answer or its
    :class:`Refused` kept per (lifter, function, task, preconditions, macros)."""
    macros = tuple(program.macros) if program is not None else ()
    key = (cls, fn, task, tuple(assume), macros)
    hit = _MEMO.get(key)
    if hit is None:
        try:
            hit = ("ok", cls(fn, program, assume).run(task))
        except Refused as e:
            hit = ("no", e)
        if len(_MEMO) > 64:
            _MEMO.clear()
        _MEMO[key] = hit
    if hit[0] == "no":
        raise hit[1]
    return hit[1]
