"""BANG convolution: a task-bound loop nest that computes a valid 2-D convolution over
channels-last data becomes NRAM input tiles + the filter in WRAM + ``__bang_conv``.

Recognised like the pools (:mod:`bang_pool`): scalar definitions, one ``taskId``-bound loop,
straight-line definitions and perfectly nested unit loops down to::

    acc = 0;
    for (kh < KH) for (kw < KW) { ...lets...; for (ci < CI) { ...lets...; acc += in[L] * w[F]; } }
    out[S] = acc;

(the ``ci`` loop may be absent: one channel, CI = 1 — depthwise planes).

Flat SIMT indices split by ``/`` and ``%`` are replaced by mixed-radix digits.  ``S``, ``L`` and
``F`` must be affine in the loop indices (``b_*`` output, ``a_*`` input, ``f_*`` filter
coefficients):

* output dense ``[rows...][ow][co]``: ``co`` (optional, else Cout = 1) has ``b_co = 1`` and no
  input term, ``b_ow = Cout``, and the remaining loops / digits ("rows": batch, oh, a depthwise
  channel, ...) have strides ``Wo*Cout``, then times each one's extent in turn — every element is
  written once, and a run of pixels of one row is one contiguous ``[run][Cout]`` block;
* input: ``a_ci = 1`` (channels contiguous), ``a_co = 0``, ``a_ow = sw * a_kw`` (the window of
  the next pixel starts ``sw`` pixels on); the row terms, ``a_kh``, ``a_kw`` and the constant are
  free (the copies use them as they are);
* filter: ``f_ci = 1``, ``f_kw = CI``, ``f_kh = KW * CI``, ``f_co = KH * KW * CI``, no ``ow``
  term — exactly the ``[Cout][KH][KW][Cin]`` layout ``__bang_conv`` reads.  Row terms are allowed
  (depthwise: one filter per channel plane); the filter is then copied per row, else once;
* the update is probed (:mod:`scalar_eval`) to be ``acc + x * y``; ``acc`` starts at 0 and is
  stored unchanged.  The instruction sums in the same order (kh, kw, ci, from 0).

Emitted (float32 only): the filter is copied into WRAM once per task (or per row when it moves
with the rows); per output row (its digits decoded from one flat row index dealt over tasks)
and run of at most ``run`` pixels, the KH input rows go into an NRAM tile ``[KH][cols][CI]``
(one strided ``__memcpy`` each), one ``__bang_conv`` with ``H = KH`` writes
``[run][Cout]`` which is copied back in one piece (dense output).  Guarded by all extents > 0,
the filter fitting WRAM and one window / one output pixel fitting NRAM; otherwise the original
loop runs.
"""
from __future__ import annotations

import numpy as np

from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir.visit import rewrite, walk

from . import common as U
from . import index_poly as A
from . import scalar_eval as SE
from .bang_pool import NotPool, _let, _pure, _resolve, _strip, _unit, descend_window

TILE_BYTES = 192 * 1024
OUT_BYTES = 64 * 1024
FILT_BYTES = 512 * 1024
PFX = "xp_c_"


class NotConv(NotPool):
    pass


def analyse(program: N.Program, func: N.Func) -> dict:
    ptrs, env, dims, cur, rest, root = descend_window(
        func, NotConv, "acc = 0; for kh { for kw { for ci } }; out[..] = acc")
    khl, store = rest
    khb = _strip(khl.body.stmts)
    if not khb or not _unit(khb[-1]):
        raise NotConv("the kh loop does not end with a unit kw loop", khl)
    kwl, pre = khb[-1], khb[:-1]
    kwb = _strip(kwl.body.stmts)
    if not kwb:
        raise NotConv("the kw loop is empty", kwl)
    if _unit(kwb[-1]):
        cil = kwb[-1]
        upd = _strip(cil.body.stmts)
        kwb = kwb[:-1]
    else:                       # no channel loop: one input channel per window pixel (depthwise)
        cil, upd, kwb = None, kwb, []
    last = upd[-1] if upd else None
    if not (isinstance(last, N.Assign) and isinstance(last.target, N.Var) and last.target.name in env):
        raise NotConv("the window loops do not end with an update of a scalar accumulator", kwl)
    acc = last.target.name
    env2 = dict(env)
    for s in pre + kwb + upd[:-1]:
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
    red = [khl, kwl] + ([cil] if cil is not None else [])
    ivars = [v for v, _ in dims] + [l.var for l in red]
    his = [_resolve(l.hi, env) for l in red] + ([] if cil is not None else [N.Const(1, "int32", "1")])
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
        top = A.quotient(sp_.to_poly(new[3]), A.prod(sp_.to_poly(d) for d in divs))
        if top is None:
            raise NotConv("the bound loop's trip count is not a multiple of its digit divisors", root)
        dim_ext = [(d, sp_.to_poly(x)) for d, x in zip(digits, divs)] + [(digits[-1], top)]
        dim_ext += [(v, sp_.to_poly(h)) for (v, _), h in zip(dims[1:], new[4:3 + nd])]
    else:
        sp_ = A.Space(set(ivars))
        dim_ext = [(v, sp_.to_poly(h)) for (v, _), h in zip(dims, new[3:3 + nd])]
    try:
        S, L0, L1 = (sp_.to_poly(new[j]) for j in range(3))
        KH, KW, CI = (sp_.to_poly(x) for x in new[3 + nd:6 + nd])
        kh, kw = khl.var, kwl.var
        ci = cil.var if cil is not None else None
        gens = [d for d, _ in dim_ext]
        allv = gens + [kh, kw] + ([ci] if ci is not None else [])
        b, b0 = A.coeffs(S, allv)
        cands = [(loads[0].base.name, A.coeffs(L0, allv), loads[1].base.name, A.coeffs(L1, allv)),
                 (loads[1].base.name, A.coeffs(L1, allv), loads[0].base.name, A.coeffs(L0, allv))]
    except A.NotAffine as e:
        raise NotConv(e.why, store)
    if any(b[v] for v in (kh, kw) + ((ci,) if ci is not None else ())):
        raise NotConv("the output index depends on the window loops", store)
    ext = dict(dim_ext)
    one = P.const(1)
    merged = None
    for inp, (a, a0), wgt, (fc, f0) in cands:
        fail = _roles(gens, ext, b, a, fc, kh, kw, ci, KH, KW, CI)
        if not isinstance(fail, str):
            break
    else:
        # channels first (conv2d NCHW, window loops ci, kh, kw): the (ci, kh) pairs are the rows of a
        # one-channel window, H = Cin*KH, the filter [Cout][Cin][KH][KW] read as [Cout][Cin*KH][KW][1];
        # the instruction then sums (ci, kh), kw in the nest's order
        if ci is None:
            raise NotConv("no operand is a channels-last input with a [Cout][KH][KW][Cin] filter over a dense "
                          "[..][oh][ow][co] output", store)
        rowsym = PFX + "m"
        for inp, (a, a0), wgt, (fc, f0) in cands:
            if not (A.equal(fc[kh], P.mul(KW, fc[kw])) and a[kh] and a[kw]):
                continue
            fc2, a2 = dict(fc), dict(a)
            fc2[rowsym], a2[rowsym] = fc[kw], a[kw]
            fail = _roles(gens, ext, b, a2, fc2, rowsym, ci, None, P.mul(KH, KW), CI, one)
            if not isinstance(fail, str):
                merged = (kh, kw, KW)
                KH, KW, CI = P.mul(KH, KW), CI, one
                a, fc, kw = a2, fc2, ci
                break
        else:
            raise NotConv("no operand is a channels-last input with a [Cout][KH][KW][Cin] filter (nor a "
                          "channels-first one with a [Cout][Cin][KH][KW] filter) over a dense output", store)
    co, ow, rows, sw = fail[1:]
    Co = ext[co] if co is not None else one
    tx = lambda e: A.c_text(e, sp_)
    digit = {g: f"{PFX}r{j}" for j, g in enumerate(rows)}
    def lin(const, coef, extra):
        terms = [(const, None)] + [(coef[g], digit[g]) for g in rows] + extra
        return " + ".join(tx(c) + (f" * {v}" if v else "") for c, v in terms if c) or "0"
    if merged:      # row m of the tile is (ci, kh) = (m / KH, m % KH) of the source window
        o_ci, o_kh, o_KH = merged
        in_base = lin(a0, a, [(a[ow], PFX + "ow0"), (a[o_ci], f"({PFX}kh / ({tx(o_KH)}))"),
                              (a[o_kh], f"({PFX}kh % ({tx(o_KH)}))")])
    else:
        in_base = lin(a0, a, [(a[ow], PFX + "ow0"), (a[kh], PFX + "kh")])
    out_base = lin(b0, b, [(b[ow], PFX + "ow0")])
    filt_base = lin(f0, fc, [])
    per_row = any(fc[g] for g in rows)
    # digits of the flat row index, innermost (smallest output stride) first
    split = []
    for j, g in enumerate(rows):
        q = PFX + "row" if j == 0 else f"{PFX}q{j}"
        if j + 1 < len(rows):
            split.append(f"int {digit[g]} = {q} % {tx(ext[g])};")
            split.append(f"int {PFX}q{j + 1} = {q} / {tx(ext[g])};")
        else:
            split.append(f"int {digit[g]} = {q};")
    nrows = " * ".join(tx(ext[g]) for g in rows) or "1"
    return {"root": root, "inp": inp, "wgt": wgt, "out": tgt.base.name,
            "Co": tx(Co), "Wo": tx(ext[ow]), "ROWS": nrows, "split": "\n".join(split),
            "pos": [tx(ext[g]) for g in rows],
            "KH": tx(KH), "KW": tx(KW), "CI": tx(CI), "sw": tx(sw), "a_kw": tx(a[kw]),
            "filt_base": filt_base, "per_row": per_row, "in_base": in_base, "out_base": out_base}


def _roles(gens, ext, b, a, fc, kh, kw, ci, KH, KW, CI):
    """(None, co, ow, rows, sw) when the coefficients are a dense [rows..][ow][co] output, an input
    with unit channel stride and pixel step sw * a_kw, and a [Cout][KH][KW][Cin] filter whose base
    may move with the rows (one filter per row: depthwise); else a reason string."""
    left = list(gens)
    if ci is not None and not (A.equal(a[ci], 1) and A.equal(fc[ci], 1)):
        return "channel stride"
    if not (A.equal(fc[kw], CI) and A.equal(fc[kh], P.mul(KW, CI))) or not a[kw]:
        return "window strides"
    cos = [g for g in left if A.equal(b[g], 1) and not a[g]]
    co = cos[0] if len(cos) == 1 else None
    if len(cos) > 1:
        return "two channel loops"
    if co is not None:
        left.remove(co)
        if not A.equal(fc[co], A.prod([KH, KW, CI])):
            return "filter stride"
    Co = ext[co] if co is not None else P.const(1)
    ows = [g for g in left if A.equal(b[g], Co) and not fc[g] and A.quotient(a[g], a[kw]) is not None]
    if len(ows) != 1:
        return "pixel loop"
    ow = ows[0]
    left.remove(ow)
    # dense: the rows' output strides are Wo*Co, then times each extent in turn
    rows, stride = [], P.mul(ext[ow], Co)
    while left:
        hit = [g for g in left if A.equal(b[g], stride)]
        if len(hit) != 1:
            return "dense"
        rows.append(hit[0])
        left.remove(hit[0])
        stride = P.mul(stride, ext[hit[0]])
    if co is None and fc[ow]:
        return "filter per pixel"
    return (None, co, ow, rows, A.quotient(a[ow], a[kw]))


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
    load_f = (f"__memcpy({p}filt, {c['wgt']} + {c['filt_base']}, "
              f"{p}Co * {p}KH * {p}KW * {p}CI * sizeof(float), GDRAM2WRAM);")
    pos = " && ".join(f"({e}) > 0" for e in c["pos"]) or "1"
    split = c["split"].replace("\n", "\n        ")
    fast = f"""
int {p}Co = {c['Co']};
int {p}Wo = {c['Wo']};
int {p}KH = {c['KH']};
int {p}KW = {c['KW']};
int {p}CI = {c['CI']};
int {p}sw = {c['sw']};
if ({p}Co > 0 && {p}Wo > 0 && {pos} && {p}KH > 0 && {p}KW > 0 && {p}CI > 0 && {p}sw > 0
    && {c['a_kw']} > 0 && {p}Co <= {outn} && {p}KH * {p}KW <= {tile} / {p}CI
    && {p}Co <= {filt} / ({p}KH * {p}KW * {p}CI)) {{
    int {p}run = ({tile} / ({p}KH * {p}CI) - {p}KW) / {p}sw + 1;
    if ({p}run > {outn} / {p}Co) {p}run = {outn} / {p}Co;
    if ({p}run > {p}Wo) {p}run = {p}Wo;
    {'' if c['per_row'] else load_f}
    for (int {p}row = taskId; {p}row < {c['ROWS']}; {p}row += taskDim) {{
        {split}
        {load_f if c['per_row'] else ''}
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
