"""Un-staging a BANG depthwise convolution that works plane by plane in NRAM (depthwise_conv2d.mlu):
a step of loop recovery's un-staging, tried by :func:`passes.unband.unband` beside the staged 2-D
convolution lift (:mod:`passes.unband_conv`) when loop recovery is asked for ``staged_conv`` (the
bang → cuda / hip plans only).

After detensorize and loop recovery the task reads (abridged)::

    float nram_buf[...];  float taps[...];  float *plane = nram_buf; float *phases = plane + L; ...
    for (p = p_begin; p < p_end; ++p) {                      // the task's planes
        int c = p % C;
        copy weight + c*KH*KW -> taps;  zero plane;  copy input plane -> plane (rows at a pitch);
        float *src = plane;
        if (stride > 1) { transpose plane -> phases; src = phases; }
        zero acc; zero win;
        for (kh) for (kw) {                                   // the tap loop
            float *first = src + ...;
            copy first (rows at a pitch) -> win;
            { const float s = taps[kh*KW + kw]; for (i < L) win[i] = win[i] * s; }
            for (i < L) acc[i] = acc[i] + win[i];
        }
        copy acc -> output + p*Ho*Wo (j < Ho * Wo);
    }

:func:`lift` makes the plain nest over the task's planes::

    for (p = p_begin; p < p_end; ++p) {
        int c = p % C;
        for (ho < Ho) for (wo < Wo) {
            float acc = 0.0f;
            for (kh < KH) for (kw < KW) acc += input[...] * weight[...];
            output[...] = acc;
        }
    }

How: the copied-out element ``acc[ho * Wo + wo]`` is followed back with the store-nest machinery of
:mod:`passes.unband_conv` (witnesses read off the index, proved in the nest's box and unique by Z3;
a store proved never to write the element is passed over). New here:

* **the tap loop** (:class:`_Taps`): an element of the accumulator that the loop's add nest covers
  (its own index, proved) is ``before + sum over (kh, kw) of win * s`` when the accumulator starts
  as a zero fill, the window element the add reads is written in the same iteration by the gather
  copy (covered: witness proved in its box) and scaled in place by the tap weight, no store of the
  loop (any iteration) writes the accumulator element other than the add, the window element other
  than the gather, scale and add, or the element the gather reads or the weight (Z3), so the
  gather and the weight read what was stored before the loop;
* **the phase branch**: ``T *src = a; if (cond) { nests; src = b; }`` is followed as two cases,
  one under ``cond`` and one under ``!cond``; where a case's hypotheses fix an integer parameter
  to a constant (``stride <= 1`` with ``stride >= 1``: proved), the case is read with that value.
  Both cases must reach parameter arrays; the lifted index is the first case's (its ``a % b`` and
  ``(a / b) * b`` terms joined to ``a``: ``b != 0`` proved), and it is proved equal (Z3) to every
  case's index under that case's hypotheses;
* the copy-out's ``j < X * Y`` is read as ``j = ho * Y + wo`` (``X, Y >= 0`` proved), and the
  output's index must name the plane, ``ho`` and ``wo`` as distinct digits (the dependence test is
  asked about the plane loop after the lift).

Every refusal raises :class:`passes.unband.Refused` with its reason; the caller keeps the task.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir import poly
from xpiler.ir.visit import substitute, walk

from . import dependence as D
from .decache import _flatten, _pure
from .task_slices import _drop_dead
from .unband import INT, Refused, _c, _drop_comments, _stmts, _strip
from .unband_conv import _Conv, _Group, _horner, _Poly, _Seq, _Store, _Undecided, memo_run

_FLOAT = N.Scalar("float32", "float")


# the polynomials of unband_conv's _Poly are xpiler/ir/poly.py dicts
_padd, _pmul, _patoms, _psubst = poly.add, poly.mul, poly.atoms, poly.subst


class _Taps(_Group):
    """The tap loop: ``loops`` (kh, kw), the gather ``copy`` into the window, the in-place
    ``scale`` of the window by the load ``weight`` (an (array, offset) address), the ``add`` of the
    window into the accumulator; ``seq`` / ``pos``: where the loop stands in its sequence."""

    def __init__(self, loops, copy, scale, weight, add, seq, pos):
        super().__init__(loops[0], [copy, scale, add], {})
        self.loops, self.copy, self.scale, self.weight, self.add = loops, copy, scale, weight, add
        self.seq, self.pos = seq, pos


def _whole(t, s):
    return _Store(s.root, s.off, list(t.loops) + list(s.loops), s.kind, s.src, s.red, s.lets, s.what)


class _Planes(_Conv):
    # ------------------------------------------------------------------ values
    def group_value(self, g, root, e, hyps, lets, P, depth):
        if not isinstance(g, _Taps):
            return super().group_value(g, root, e, hyps, lets, P, depth)
        hit = [s for s in g.stores if s.root == root]
        if not hit:
            return None
        if all(self.never(_whole(g, s), e, hyps, lets) for s in hit):
            return None
        if root != g.add.root:
            raise Refused("a read of the tap loop's window after the loop")
        # the accumulator: its own element in every iteration
        w = self.covers(g.add, e, hyps, lets, P)
        if w is False:
            raise Refused("the tap loop stores the element read other than by its add")
        for s in (g.copy, g.scale):
            if not self.never(_whole(g, s), e, hyps, lets):
                raise Refused(f"{s.what} may store the accumulator element")
        ih = hyps + self.box(g.loops)
        ew = substitute(g.add.src[1], w)                      # the window element the add reads
        wc = self.covers(g.copy, ew, ih, lets, P)
        if wc is False:
            raise Refused("the window element added is not gathered in the same iteration")
        if self.covers(g.scale, ew, ih, lets, P) is False:
            raise Refused("the window element added is not scaled")
        if not self.never(_whole(g, g.add), ew, ih, lets):
            raise Refused("the tap loop's add may store the window element")
        sroot, soff = g.copy.src
        soff = substitute(soff, wc)
        for s in g.stores:
            if s.root == sroot and not self.never(_whole(g, s), soff, ih, lets):
                raise Refused(f"{s.what} may store the element the gather reads")
            if s.root == g.weight[0] and not self.never(_whole(g, s), g.weight[1], ih, lets):
                raise Refused(f"{s.what} may store the tap weight")
        before = self.value(root, e, hyps, g.seq, g.pos, lets, P, depth + 1)
        if before[0] != "zero":
            raise Refused("the accumulator does not start as a zero fill")
        x = self.value(sroot, soff, ih, g.seq, g.pos, lets, P, depth + 1)
        y = self.value(g.weight[0], g.weight[1], ih, g.seq, g.pos, lets, P, depth + 1)
        if x[0] != "global" or y[0] != "global":
            raise Refused("a factor of a tap is not read from a parameter array")
        return ("taps", x, y)

    def never(self, st, e, hyps, lets) -> bool:
        """Proved: no iteration of ``st`` (any values of its loops, fresh names) stores ``e``."""
        fresh = {v: N.Var(v + "__t") for v, *_ in st.loops}
        box = [substitute(b, fresh) for b in self.box(st.loops)]
        return self.holds(hyps + box, N.BinOp("!=", substitute(st.off, fresh), e), dict(lets, **st.lets))

    # ------------------------------------------------------------------ reading the plane loop
    def taps(self, s, ptrs, seq, pos):
        """``for (kh) for (kw) { T *first = ...; gather; { const float s = w[..]; scale }; add }``."""
        loops = []
        node = s
        while isinstance(node, N.For):
            if not (self.cint(node.lo) == 0 and self.cint(node.step) == 1 and _pure(node.hi)):
                raise Refused(f"tap loop '{node.var}' does not count from 0 by 1")
            loops.append((node.var, node.lo, node.hi, _c(1)))
            body = _drop_comments(_flatten(_stmts(node.body)))
            node = body[0] if len(body) == 1 else None
        if len(loops) < 1:
            raise Refused("no tap loop")
        ptrs = dict(ptrs)
        k = 0
        while k < len(body) and isinstance(body[k], N.Decl) and isinstance(body[k].type, N.Pointer):
            ptrs[body[k].name] = self.addr(body[k].init, ptrs=ptrs)
            k += 1
        rest = body[k:]
        if len(rest) != 3:
            raise Refused("the tap loop is not a gather, a scale and an add")
        gl, gb = self.nest(rest[0], {}, "the tap loop's gather")
        copy = self.store(gl, gb, {}, ptrs, "the tap loop's gather")
        if copy.kind != "copy":
            raise Refused("the tap loop's gather is not a copy")
        # { const float s = A[k]; for (i) W[i] = W[i] * s; }
        sb = _drop_comments(_stmts(rest[1]))
        if not (len(sb) == 2 and isinstance(sb[0], N.Decl) and isinstance(sb[0].type, N.Scalar)
                and sb[0].type.dtype == "float32" and sb[0].init is not None
                and isinstance(_strip(sb[0].init), N.Index)):
            raise Refused("the tap loop's scale does not load one weight")
        wl = _strip(sb[0].init)
        weight = self.addr(wl.base, wl.index, ptrs=ptrs)
        scl, sbody = self.nest(sb[1], {}, "the tap loop's scale")
        scale = self.elementwise(scl, sbody, ptrs, "the tap loop's scale",
                                 lambda v: v.op == "*" and isinstance(_strip(v.rhs), N.Var)
                                 and _strip(v.rhs).name == sb[0].name, 0)
        al, abody = self.nest(rest[2], {}, "the tap loop's add")
        add = self.elementwise(al, abody, ptrs, "the tap loop's add", lambda v: v.op == "+", None)
        # scale and add: the same window element the gather writes (one index per loop)
        P = _Poly(self.lets, self.macros)
        if add.src[0] != copy.root or scale.root != copy.root:
            raise Refused("the tap loop's scale and add do not use the gathered window")
        if [lo for _, lo, _, _ in scale.loops] != [lo for _, lo, _, _ in add.loops] or \
                len(scale.loops) != len(add.loops) or any(
                    _padd(P(a), P(b), -1) for (_, _, a, _), (_, _, b, _) in zip(scale.loops, add.loops)):
            raise Refused("the tap loop's scale and add run over different elements")
        ren = {v: N.Var(u) for (v, *_), (u, *_) in zip(add.loops, scale.loops)}
        if _padd(P(substitute(add.src[1], ren)), P(scale.off), -1):
            raise Refused("the tap loop's add reads another window element than the scale writes")
        return _Taps(loops, copy, scale, weight, add, seq, pos)

    def elementwise(self, loops, body, ptrs, what, op_ok, keep):
        """``A[i] = A[i] op B[i]`` (``keep``: the operand that must be the target, the other the
        source) as a _Store of kind ``rmw`` whose ``src`` is the other operand (or None)."""
        if not (len(body) == 1 and isinstance(body[0], N.Assign) and body[0].op == "="
                and isinstance(body[0].target, N.Index)):
            raise Refused(f"{what} is not one store")
        a = body[0]
        v = _strip(a.value)
        if not (isinstance(v, N.BinOp) and op_ok(v)):
            raise Refused(f"{what} is not the expected element-wise operation")
        root, off = self.addr(a.target.base, a.target.index, ptrs=ptrs)
        ops = [_strip(v.lhs), _strip(v.rhs)]
        P = _Poly(self.lets, self.macros)
        same = [k for k, o in enumerate(ops) if isinstance(o, N.Index)
                and (lambda r: r[0] == root and not _padd(P(r[1]), P(off), -1))(self.addr(o.base, o.index, ptrs=ptrs))]
        if not same or (keep is not None and keep not in same):
            raise Refused(f"{what} does not update its own element")
        k = keep if keep is not None else same[0]
        other = ops[1 - k]
        src = self.addr(other.base, other.index, ptrs=ptrs) if isinstance(other, N.Index) else None
        if keep is None and src is None:
            raise Refused(f"{what} does not add an array element")
        return _Store(root, off, loops, "rmw", src=src, what=what)

    def plane_seq(self, body, ptrs, lets, case):
        """The plane loop's statements as a store sequence, with the phase branch taken
        (``case`` True) or not."""
        seq = _Seq()
        ptrs = dict(ptrs)
        k = 0
        copyout = None
        while k < len(body):
            x = body[k]
            if isinstance(x, N.Decl) and isinstance(x.type, N.Scalar) and x.init is not None and _pure(x.init):
                k = self.chain(body, k, lets)
                continue
            if isinstance(x, N.Decl) and isinstance(x.type, N.Pointer) and x.init is not None:
                ptrs[x.name] = self.addr(x.init, ptrs=ptrs)
                k += 1
                continue
            if isinstance(x, N.If):
                then = _drop_comments(_flatten(_stmts(x.then)))
                if x.else_ is not None or not _pure(x.cond) or not then:
                    raise Refused("a branch of the plane loop other than 'if (c) { nests; p = q; }'")
                last = then[-1]
                if not (isinstance(last, N.Assign) and last.op == "=" and isinstance(last.target, N.Var)
                        and last.target.name in ptrs):
                    raise Refused("the plane loop's branch does not end by choosing a pointer")
                if case:
                    for y in then[:-1]:
                        loops, b = self.nest(y, {}, "a nest of the phase branch")
                        seq.append(self.store(loops, b, {}, ptrs, f"branch nest '{loops[0][0] if loops else '?'}'"))
                    ptrs[last.target.name] = self.addr(last.value, ptrs=ptrs)
                k += 1
                continue
            if isinstance(x, N.For) and any(isinstance(d, N.Decl) and isinstance(d.type, N.Pointer)
                                            for d in walk(x.body)):
                seq.append(self.taps(x, ptrs, seq, len(seq)))
                k += 1
                continue
            if not isinstance(x, (N.For, N.Block)):
                raise Refused(f"a {type(x).__name__} statement in the plane loop")
            slets = {}
            loops, b = self.nest(x, slets, "a nest of the plane loop")
            st = self.store(loops, b, slets, ptrs, f"plane nest '{loops[0][0] if loops else '?'}'")
            seq.append(st)
            k += 1
        outs = [s for s in seq if isinstance(s, _Store) and s.root in self.params]
        if len(outs) != 1 or seq[-1] is not outs[0] or outs[0].kind != "copy" or len(outs[0].loops) != 1:
            raise Refused("the plane loop does not end with one copy-out of one loop to a parameter array")
        copyout = outs[0]
        return seq, copyout

    # ------------------------------------------------------------------ the task
    def run(self, task):
        stmts = _drop_comments(_flatten(task.body.stmts))
        if not stmts or not isinstance(stmts[-1], N.For):
            raise Refused("no plane loop ending the task")
        kept = []
        k = 0
        while k < len(stmts) - 1:
            k2 = self.task_decl(stmts, k, kept)
            if k2 is None:
                raise Refused(f"a {type(stmts[k]).__name__} statement in the task before the plane loop")
            k = k2
        loop = stmts[-1]
        if not (self.cint(loop.step) == 1 and _pure(loop.lo) and _pure(loop.hi)):
            raise Refused("the plane loop is not counted up by 1")
        pv = loop.var
        body = _drop_comments(_flatten(_stmts(loop.body)))
        branches = [x for x in body if isinstance(x, N.If)]
        if len(branches) > 1:
            raise Refused("more than one branch in the plane loop")
        task_range = [N.BinOp(">=", N.Var(task.var), _c(0)), N.BinOp("<", N.Var(task.var), task.hi)]
        inplane = task_range + [N.BinOp(">=", N.Var(pv), loop.lo), N.BinOp("<", N.Var(pv), loop.hi)]
        cases = [(True, [branches[0].cond] if branches else [])]
        if branches:
            cases.append((False, [N.UnOp("!", branches[0].cond)]))
        got = []
        hw = (N.Var(self.name("ho")), N.Var(self.name("wo")))
        for take, hyp in cases:
            fix = self.fixed(inplane + hyp, hyp)
            b = [substitute(x, fix) for x in body] if fix else body
            saved = self.lets
            self.lets = {n: substitute(v, fix) for n, v in saved.items()} if fix else saved
            try:
                got.append((hyp, fix, self.plane_case(b, inplane + hyp, take, hw)))
            finally:
                self.lets = saved
        # the lifted indices: the first case's, proved equal to every case's under its hypotheses
        (hyp0, _, (x0, y0, out0, P0, plets0, el0, names0)) = got[0]
        idx = {}
        for key, k_ in (("x", 0), ("y", 1)):
            root, e = got[0][2][k_][1], got[0][2][k_][2]
            e = self.join_mod(e, P0, el0, plets0)
            for hyp, fix, r in got:
                r_root, r_e = r[k_][1], r[k_][2]
                if r_root != root:
                    raise Refused("the cases of the phase branch read different arrays")
                if not self.holds(r[5] + hyp, N.BinOp("==", substitute(e, fix) if fix else e, r_e),
                                  dict(self.lets, **r[4])):
                    raise Refused("not proved: the cases of the phase branch read the same element")
            idx[key] = (root, e)
        out_root, out_idx, ho, wo, X, Y = out0
        for p_ in (idx["x"][0], idx["y"][0], out_root):
            t = self.params.get(p_)
            if not (isinstance(t, N.Pointer) and isinstance(t.elem, N.Scalar) and t.elem.dtype == "float32"):
                raise Refused(f"'{p_}' is not a float array")
        taps = next(s for s in got[0][2][6] if isinstance(s, _Taps)).loops
        loopvars = {v for v, *_ in taps} | {ho.name, wo.name, pv}

        def show(e):
            P = P0
            return _horner(P, P(e), {}, loopvars)
        acc = self.name("acc")
        inner = N.Assign(N.Var(acc), "+=", N.BinOp("*", N.Index(N.Var(idx["x"][0]), show(idx["x"][1])),
                                                    N.Index(N.Var(idx["y"][0]), show(idx["y"][1]))))
        for v, lo, hi, _ in reversed(taps):
            inner = N.For(v, _c(0), hi, _c(1), N.Block((inner,)), None, INT)
        elem = N.Block((N.Decl(acc, _FLOAT, N.Const(0.0, "float32", "0.0f")), inner,
                        N.Assign(N.Index(N.Var(out_root), show(out_idx)), "=", N.Var(acc))))
        woloop = N.For(wo.name, _c(0), Y, _c(1), elem, None, INT)
        holoop = N.For(ho.name, _c(0), X, _c(1), N.Block((woloop,)), None, INT)
        decls = [x for x in body if isinstance(x, N.Decl) and isinstance(x.type, N.Scalar)
                 and x.init is not None and _pure(x.init)]
        pbody = _drop_dead(decls + [holoop], {d.name for d in decls})
        # a row loop (task_slices.ROWS_PRAGMA): its elements are the counter's values, the slices'
        # tiling and independence are proved by the collapse as for any element loop
        from .task_slices import ROWS_PRAGMA
        new_loop = loop.with_(body=N.Block(tuple(pbody)),
                              pragmas=tuple(loop.pragmas) + ((ROWS_PRAGMA,) if ROWS_PRAGMA not in loop.pragmas else ()))
        new_body = _drop_dead(list(kept) + [new_loop], {d.name for d in kept})
        new_task = task.with_(body=task.body.with_(stmts=tuple(new_body)))
        fn2 = self.fn.with_(body=self.fn.body.with_(stmts=tuple(
            new_task if s is task else s for s in self.fn.body.stmts)))
        loop_node = next(x for x in walk(fn2) if isinstance(x, N.For) and x.var == pv)
        dep = D.check_parallel(self.program, fn2, loop_node)
        if dep is not None:
            raise Refused(f"the planes of a task are not independent: {dep}")
        return new_task

    def fixed(self, hyps, case_hyp):
        """{parameter: constant} for every integer parameter of the case's condition that its
        hypotheses (and the preconditions) fix to one value (proved)."""
        fix = {}
        for h in case_hyp:
            for n in walk(h):
                if isinstance(n, N.Var) and isinstance(self.params.get(n.name), N.Scalar) and n.name not in fix:
                    for b in walk(h):
                        if isinstance(b, N.Const) and isinstance(b.value, int):
                            for cand in (b.value - 1, b.value, b.value + 1):
                                if self.holds(hyps, N.BinOp("==", N.Var(n.name), _c(cand))):
                                    fix[n.name] = _c(cand)
                                    break
        return fix

    def plane_case(self, body, hyps, take, hw):
        lets = {}
        seq, out = self.plane_seq(body, dict(self.ptrs), lets, take)
        (jv, lo, hi, _) = out.loops[0]
        hi = _strip(hi)
        if not (self.cint(lo) == 0 and isinstance(hi, N.BinOp) and hi.op == "*"):
            raise Refused("the copy-out does not run over rows times columns from 0")
        X, Y = hi.lhs, hi.rhs
        alllets = dict(self.lets, **lets)
        for v in (X, Y):
            self.prove(hyps, N.BinOp(">=", v, _c(0)), alllets, "the copied-out rows and columns are not negative")
        ho, wo = hw
        el = hyps + [N.BinOp(">=", ho, _c(0)), N.BinOp("<", ho, X), N.BinOp(">=", wo, _c(0)), N.BinOp("<", wo, Y)]
        P = _Poly(alllets, self.macros)
        at = {jv: N.BinOp("+", N.BinOp("*", ho, Y), wo)}
        sroot, soff = out.src
        try:
            val = self.value(sroot, substitute(soff, at), el, seq, len(seq) - 1, alllets, P)
        except _Undecided as u:
            raise Refused(str(u))
        if val[0] != "taps":
            raise Refused("the copied-out value is not a sum over the tap loop")
        _, x, y = val
        out_idx = substitute(out.off, at)
        return x, y, (out.root, out_idx, ho, wo, X, Y), P, lets, el, seq

    def join_mod(self, e, P, hyps, lets):
        """``e`` with every ``(a / b) * b + a % b`` of its polynomial joined to ``a`` (``b != 0``
        proved; C's division identity)."""
        p = P(e)
        changed = False
        for s in sorted(_patoms(p), key=str):
            node = P.back.get(s)
            if isinstance(node, N.Var) and node.name in P.lets:
                node = P.expand_ir(node)
            node = _strip(node) if node is not None else None
            if not (isinstance(node, N.BinOp) and node.op == "%"):
                continue
            if not self.holds(hyps, N.BinOp("!=", node.rhs, _c(0)), dict(self.lets, **lets)):
                continue
            q = N.BinOp("/", node.lhs, node.rhs)
            rep = _padd(P(node.lhs), _pmul(P(q), P(node.rhs)), -1)
            p2 = _psubst(p, s, rep)
            if len(_patoms(p2)) < len(_patoms(p)):         # only where the quotient cancels
                p, changed = p2, True
        if not changed:
            return e
        out = P.ir(p)
        if not self.holds(hyps, N.BinOp("==", out, e), dict(self.lets, **lets)):
            raise Refused("not proved: the joined index equals the followed one")
        return out


def lift(fn, program, task, assume=()):
    """The un-staged task (a ``For``) or :class:`Refused`; answers kept per (function, task,
    preconditions, macros) as in :func:`passes.unband_conv.lift`."""
    return memo_run(_Planes, fn, program, task, assume)
