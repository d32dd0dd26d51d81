"""BANG convolution: a task-bound loop nest that computes a valid 2-D convolution over
channels-last data becomes NRAM input tiles + the filter in WRAM + ``__bang_conv``.

Recognised like the pools (:mod:`bang_pool`): scalar definitions, one ``taskId``-bound loop,
straight-line definitions and perfectly nested unit loops down to::

    acc = 0;
    for (kh < KH) for (kw < KW) { ...lets...; for (ci < CI) { ...lets...; acc += in[L] * w[F]; } }
    out[S] = acc;

Flat SIMT indices split by ``/`` and ``%`` are replaced by mixed-radix digits.  ``S``, ``L`` and
``F`` must be affine in the loop indices (``b_*`` output, ``a_*`` input, ``f_*`` filter
coefficients):

* output ``[n][oh][ow][co]`` dense: ``b_co = 1``, ``b_ow = ext(co)``, ``b_oh = ext(ow) ext(co)``,
  ``b_n = ext(oh) b_oh`` (optional), no window term — every element written once;
* input: ``a_ci = 1`` (channels contiguous), ``a_co = 0``, ``a_ow = sw * a_kw`` (the window of
  the next pixel starts ``sw`` pixels on); ``a_n, a_oh, a_kh, a_kw`` and the constant are free
  (the copies use them as they are);
* filter: ``f_ci = 1``, ``f_kw = CI``, ``f_kh = KW * CI``, ``f_co = KH * KW * CI`` and no term in
  ``n, oh, ow`` — exactly the ``[Cout][KH][KW][Cin]`` layout ``__bang_conv`` reads; its constant
  term is the filter's base;
* the update is probed (:mod:`scalar_eval`) to be ``acc + x * y``; ``acc`` starts at 0 and is
  stored unchanged.  The instruction sums in the same order (kh, kw, ci, from 0).

Emitted (float32 only): the filter is copied once per task into WRAM; per output row ``(n, oh)``
(rows dealt over tasks) and run of at most ``run`` pixels, the KH input rows go into an NRAM tile
``[KH][cols][CI]`` (one strided ``__memcpy`` each), one ``__bang_conv`` with ``H = KH`` writes
``[run][Cout]`` which is copied back in one piece (dense output).  Guarded by all extents > 0,
the filter fitting WRAM and one window / one output pixel fitting NRAM; otherwise the original
loop runs.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk

from . import common as U
from . import affine_sym as A
from . import scalar_eval as SE
from .bang_pool import NotPool, _let, _pure, _resolve, _strip, _unit

TILE_BYTES = 192 * 1024
OUT_BYTES = 64 * 1024
FILT_BYTES = 512 * 1024
PFX = "xp_c_"


class NotConv(NotPool):
    pass


def analyse(program: N.Program, func: N.Func) -> dict:
    ptrs = U.pointer_params(func)
    stmts = _strip(func.body.stmts)
    roots = [s for s in stmts if isinstance(s, N.For) and s.binding == "taskId"]
    if len(roots) != 1:
        raise NotConv("no single taskId-bound loop", func)
    root = roots[0]
    k = stmts.index(root)
    env = {}
    for s in stmts[:k]:
        if not (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None and _pure(s.init)
                and not any(isinstance(n, N.Index) for n in walk(s.init))):
            raise NotConv("a statement before the bound loop is not a scalar definition", s)
        env[s.name] = _resolve(s.init, env)
    if any(not (isinstance(s, N.Return) and s.value is None) for s in stmts[k + 1:]):
        raise NotConv("statements after the bound loop", stmts[k + 1])
    if not (isinstance(root.lo, N.Const) and root.lo.value == 0 and isinstance(root.step, N.Const)
            and root.step.value == 1):
        raise NotConv("the bound loop does not start at 0 with step 1", root)
    dims = [(root.var, _resolve(root.hi, env))]
    body, cur = _strip(root.body.stmts), root
    while True:
        rest = []
        for s in body:
            if rest or not _let(s, env, ptrs):
                rest.append(s)
        if len(rest) == 1 and _unit(rest[0]):
            cur = rest[0]
            dims.append((cur.var, _resolve(cur.hi, env)))
            body = _strip(cur.body.stmts)
            continue
        break
    if len(rest) != 2 or not _unit(rest[0]):
        raise NotConv("the innermost output loop is not 'acc = 0; for kh { for kw { for ci } }; out[..] = acc'", cur)
    khl, store = rest
    khb = _strip(khl.body.stmts)
    if len(khb) != 1 or not _unit(khb[0]):
        raise NotConv("the kh loop does not hold exactly one unit kw loop", khl)
    kwl = khb[0]
    kwb = _strip(kwl.body.stmts)
    if not kwb or not _unit(kwb[-1]):
        raise NotConv("the kw loop does not end with a unit channel loop", kwl)
    cil = kwb[-1]
    upd = _strip(cil.body.stmts)
    last = upd[-1] if upd else None
    if not (isinstance(last, N.Assign) and isinstance(last.target, N.Var) and last.target.name in env):
        raise NotConv("the channel loop does not end with an update of a scalar accumulator", cil)
    acc = last.target.name
    env2 = dict(env)
    for s in kwb[:-1] + upd[:-1]:
        if not _let(s, env2, ptrs, protected=(acc,)):
            raise NotConv("the window loops hold more than definitions and one accumulator update", s)
    ph = N.Var(PFX + "ACC")
    env2[acc] = ph
    if last.op == "=":
        f = _resolve(last.value, env2)
    elif last.op == "+=":
        f = N.BinOp("+", ph, _resolve(last.value, env2))
    else:
        raise NotConv(f"accumulator update '{last.op}'", last)
    init = U.strip_casts(env[acc])
    if not (isinstance(init, N.Const) and init.value == 0):
        raise NotConv("the accumulator does not start at 0", store)
    if not (isinstance(store, N.Assign) and store.op == "=" and isinstance(store.target, N.Index)):
        raise NotConv("the reduction is not followed by one store", store)
    tgt = _resolve(store.target, env)
    g = _resolve(store.value, {**env, acc: ph})
    if U.strip_casts(g) != ph:
        raise NotConv("the sum is transformed before the store", store)
    loads = [n for n in walk(f) if isinstance(n, N.Index)]
    if len(loads) != 2 or not all(isinstance(x.base, N.Var) and x.base.name in ptrs for x in loads) \
            or loads[0].base.name == loads[1].base.name:
        raise NotConv("the update does not read two different pointer parameters", last)
    if not (isinstance(tgt.base, N.Var) and tgt.base.name in ptrs) or tgt.base.name in {x.base.name for x in loads}:
        raise NotConv("the result is not stored into a separate pointer parameter", store)
    if {ptrs[x.base.name] for x in loads} | {ptrs[tgt.base.name]} != {"float32"}:
        raise NotConv("only float32 convolutions are mapped", store)
    if not _pure(f) or not _is_fma(f, ph, loads):
        raise NotConv("the accumulator update is not acc + x * y", last)
    # ---- indices as polynomials
    ivars = [v for v, _ in dims] + [khl.var, kwl.var, cil.var]
    his = [_resolve(l.hi, env) for l in (khl, kwl, cil)]
    exprs = [tgt.index, loads[0].index, loads[1].index] + [hi for _, hi in dims] + his
    nd = len(dims)
    for e in exprs[3:]:
        if any(isinstance(n, N.Var) and n.name in ivars for n in walk(e)):
            raise NotConv("a trip count depends on another loop of the nest", cur)
    params = {q.name for q in func.params}
    free = {n.name for e in exprs for n in walk(e) if isinstance(n, N.Var)} - set(ivars)
    if free - params or free & U.assigned_names(func):
        bad = sorted(free - params or free & U.assigned_names(func))[0]
        raise NotConv(f"'{bad}' in an index or bound is not an unmodified kernel parameter", store)
    new, divs = A.mixed_radix(exprs, root.var, PFX + "d")
    if divs:
        digits = [PFX + f"d{j}" for j in range(len(divs) + 1)]
        sp_ = A.Space(set(ivars) | set(digits))
        top = A.quotient(sp_.to_poly(new[3]), sp.Mul(*[sp_.to_poly(d) for d in divs]))
        if top is None:
            raise NotConv("the bound loop's trip count is not a multiple of its digit divisors", root)
        dim_ext = [(sp_.sym(d), sp_.to_poly(x)) for d, x in zip(digits, divs)] + [(sp_.sym(digits[-1]), top)]
        dim_ext += [(sp_.sym(v), sp_.to_poly(h)) for (v, _), h in zip(dims[1:], new[4:3 + nd])]
    else:
        sp_ = A.Space(set(ivars))
        dim_ext = [(sp_.sym(v), sp_.to_poly(h)) for (v, _), h in zip(dims, new[3:3 + nd])]
    try:
        S, L0, L1 = (sp_.to_poly(new[j]) for j in range(3))
        KH, KW, CI = (sp_.to_poly(x) for x in new[3 + nd:6 + nd])
        kh, kw, ci = sp_.sym(khl.var), sp_.sym(kwl.var), sp_.sym(cil.var)
        gens = [d for d, _ in dim_ext]
        allv = gens + [kh, kw, ci]
        b, b0 = A.coeffs(S, allv)
        cands = [(loads[0].base.name, A.coeffs(L0, allv), loads[1].base.name, A.coeffs(L1, allv)),
                 (loads[1].base.name, A.coeffs(L1, allv), loads[0].base.name, A.coeffs(L0, allv))]
    except A.NotAffine as e:
        raise NotConv(e.why, store)
    if any(b[v] != 0 for v in (kh, kw, ci)):
        raise NotConv("the output index depends on the window loops", store)
    ext = dict(dim_ext)
    roles, left = {}, list(gens)

    def take(role, want_b):
        hit = [x for x in left if A.equal(b[x], want_b)]
        if len(hit) != 1:
            return None
        left.remove(hit[0])
        roles[role] = hit[0]
        return hit[0]
    co = take("co", sp.Integer(1))
    ow = take("ow", ext[co]) if co is not None else None
    oh = take("oh", ext[ow] * ext[co]) if ow is not None else None
    if oh is None:
        raise NotConv("the output is not a dense [..][oh][ow][co] array over the nest's loops", store)
    n = take("n", ext[oh] * ext[ow] * ext[co])
    if left:
        raise NotConv(f"loop '{left[0]}' has no role in a [n][oh][ow][co] convolution", store)
    for inp, (a, a0), wgt, (fc, f0) in cands:
        if not (A.equal(a[ci], 1) and a[co] == 0 and a[kw] != 0):
            continue
        if not (A.equal(fc[ci], 1) and A.equal(fc[kw], CI) and A.equal(fc[kh], KW * CI)
                and A.equal(fc[co], KH * KW * CI) and all(fc[x] == 0 for x in (ow, oh) + ((n,) if n else ()))):
            continue
        sw = A.quotient(a[ow], a[kw])
        if sw is None:
            raise NotConv("the window step between output pixels is not a multiple of the kw stride", store)
        break
    else:
        raise NotConv("no operand is a channels-last input with a [Cout][KH][KW][Cin] filter", store)
    tx = lambda e: A.c_text(e, sp_)
    terms = [(a0, None)] + ([(a[n], "n")] if n is not None else []) + [(a[oh], "oh"), (a[ow], "ow0"), (a[kh], "kh")]
    in_base = " + ".join(tx(c) + (f" * {PFX}{v}" if v else "") for c, v in terms if c != 0) or "0"
    out_base = (f"{tx(b0)} + " if b0 != 0 else "") + f"({PFX}row * {PFX}Wo + {PFX}ow0) * {PFX}Co"
    return {"root": root, "inp": inp, "wgt": wgt, "out": tgt.base.name,
            "Co": tx(ext[co]), "Wo": tx(ext[ow]), "Ho": tx(ext[oh]), "NB": tx(ext[n]) if n is not None else "1",
            "KH": tx(KH), "KW": tx(KW), "CI": tx(CI), "sw": tx(sw), "a_kw": tx(a[kw]),
            "f0": tx(f0) if f0 != 0 else "0", "in_base": in_base, "out_base": out_base}


def _is_fma(f, ph, loads) -> bool:
    xs = [N.Var(PFX + "X"), N.Var(PFX + "Y")]
    fx = rewrite(f, lambda m: xs[0] if m == loads[0] else (xs[1] if m == loads[1] else m))
    a = SE.probes()
    x, y = np.roll(a, 3), np.roll(a, 11)
    try:
        got = SE.evaluate(fx, {ph.name: a, xs[0].name: x, xs[1].name: y})
    except SE.NotEvaluable:
        return False
    with np.errstate(all="ignore"):
        want = a + x * y
    return bool(np.array_equal(np.asarray(got, np.float64), want, equal_nan=True))


def emit(c: dict, func: N.Func) -> list:
    from xpiler.frontend import parse_text
    tile, outn, filt = TILE_BYTES // 4, OUT_BYTES // 4, FILT_BYTES // 4
    p = PFX
    fast = f"""
int {p}Co = {c['Co']};
int {p}Wo = {c['Wo']};
int {p}Ho = {c['Ho']};
int {p}NB = {c['NB']};
int {p}KH = {c['KH']};
int {p}KW = {c['KW']};
int {p}CI = {c['CI']};
int {p}sw = {c['sw']};
if ({p}Co > 0 && {p}Wo > 0 && {p}Ho > 0 && {p}NB > 0 && {p}KH > 0 && {p}KW > 0 && {p}CI > 0 && {p}sw > 0
    && {c['a_kw']} > 0 && {p}Co <= {outn} && {p}KH * {p}KW <= {tile} / {p}CI
    && {p}Co <= {filt} / ({p}KH * {p}KW * {p}CI)) {{
    int {p}run = ({tile} / ({p}KH * {p}CI) - {p}KW) / {p}sw + 1;
    if ({p}run > {outn} / {p}Co) {p}run = {outn} / {p}Co;
    if ({p}run > {p}Wo) {p}run = {p}Wo;
    __memcpy({p}filt, {c['wgt']} + {c['f0']}, {p}Co * {p}KH * {p}KW * {p}CI * sizeof(float), GDRAM2WRAM);
    for (int {p}row = taskId; {p}row < {p}NB * {p}Ho; {p}row += taskDim) {{
        int {p}n = {p}row / {p}Ho;
        int {p}oh = {p}row % {p}Ho;
        for (int {p}ow0 = 0; {p}ow0 < {p}Wo; {p}ow0 += {p}run) {{
            int {p}outs = {p}Wo - {p}ow0 < {p}run ? {p}Wo - {p}ow0 : {p}run;
            int {p}cols = ({p}outs - 1) * {p}sw + {p}KW;
            for (int {p}kh = 0; {p}kh < {p}KH; {p}kh++) {{
                __memcpy({p}in + {p}kh * {p}cols * {p}CI, {c['inp']} + {c['in_base']}, {p}CI * sizeof(float),
                         GDRAM2NRAM, {p}CI * sizeof(float), {c['a_kw']} * sizeof(float), {p}cols - 1);
            }}
            __bang_conv({p}out, {p}in, {p}filt, {p}CI, {p}KH, {p}cols, {p}KH, {p}KW, {p}sw, 1, {p}Co);
            __memcpy({c['out']} + {c['out_base']}, {p}out, {p}outs * {p}Co * sizeof(float), NRAM2GDRAM);
        }}
    }}
}} else {{
    {p}FALLBACK();
}}
"""
    names = {d.name for d in walk(func) if isinstance(d, N.Decl)} | {q.name for q in func.params}
    if any(x.startswith(PFX) for x in names):
        raise NotConv("the kernel already uses names of the conv emitter", func)
    src = (f"__mlu_global__ void {p}k() {{\n__nram__ float {p}in[{tile}];\n__nram__ float {p}out[{outn}];\n"
           f"__wram__ float {p}filt[{filt}];\n{fast}\n}}\n")
    prog = parse_text(src, "bang", "<conv>")
    stmts = list(prog.func(f"{p}k").body.stmts)

    def fallback(m):
        if isinstance(m, N.Block) and any(isinstance(s, N.ExprStmt) and isinstance(s.expr, (N.Call, N.Intrinsic))
                                          and str(getattr(s.expr, "func", getattr(s.expr, "name", ""))) ==
                                          f"{p}FALLBACK" for s in m.stmts):
            return m.with_(stmts=(c["root"],))
        return m
    return [rewrite(s, fallback) for s in stmts]


def conv_sites(program, func, ops=None):
    """[(bound loop, replacement statements)] — at most one (the kernel's whole bound nest)."""
    if ops and "__bang_conv" not in ops:
        return []
    try:
        c = analyse(program, func)
    except (NotPool, A.NotAffine):
        return []
    if U.static_bytes(program, func, "nram") + TILE_BYTES + OUT_BYTES > U.NRAM_BYTES:
        return []
    if U.static_bytes(program, func, "wram") + FILT_BYTES > U.WRAM_BYTES:
        return []
    try:
        return [(c["root"], emit(c, func))]
    except NotPool:
        return []
