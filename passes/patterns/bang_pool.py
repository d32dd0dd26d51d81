"""BANG pooling: a task-bound loop nest that computes a 2-D pool over channels-last data becomes
NRAM tiles + ``__bang_maxpool`` / ``__bang_minpool`` / ``__bang_sumpool`` / ``__bang_avgpool``.

What is recognised is the *function* of the nest, not a spelling.  The kernel body must be
scalar declarations, then one ``taskId``-bound loop; inside it, straight-line scalar / pointer
definitions (re-assignments allowed: they are executed symbolically), perfectly nested unit
loops, and at the bottom::

    acc = INIT;
    for (kh = 0; kh < KH; ++kh) for (kw = 0; kw < KW; ++kw) { ... acc = f(acc, in[L]); }
    out[S] = g(acc);

A flat bound index split by ``/`` and ``%`` (the SIMT spelling) is replaced by its mixed-radix
digits (:func:`index_poly.mixed_radix`).  The store index ``S`` and the load index ``L`` must be
affine in the loop indices; the roles are read off the coefficients (``b_*`` output, ``a_*``
input):

* channel ``c``: ``b_c = a_c = 1``; pixel ``ow``: ``b_ow = extent(c)``; row ``oh``:
  ``b_oh = extent(ow) * extent(c)``; batch ``n`` (optional): ``b_n = extent(oh) * b_oh`` — a dense
  ``[n][oh][ow][c]`` output, so every output element is written exactly once;
* ``kw`` is the inner reduction loop and ``a_ow = sw * a_kw`` for a polynomial ``sw`` (the
  window of output pixel ``ow`` starts ``sw`` pixels further on); ``kh`` is the outer one.
  ``a_n``, ``a_oh``, ``a_kh`` and the constant terms are free: the emitted copies use them as
  they are, so the staged tile holds exactly the elements the nest reads (plus, when ``sw > KW``,
  the unread pixels between two read ones, which lie between two addresses the nest reads);
* the function: ``f`` is probed (:mod:`scalar_eval`) against max, min and +. max/min need
  ``INIT`` = the load at ``kh = kw = 0`` and ``g(acc) = acc``; + needs ``INIT = 0`` and
  ``g(acc) = acc`` (sumpool) or ``acc / (float)(E)`` with ``E == KH * KW`` (avgpool, the
  instruction divides the float sum by ``kh*kw`` exactly like that).  The instruction sums in the
  same order (kh outer, kw inner, from 0), so sum/avg results are bit-identical; max/min agree
  on every non-NaN input (``fmaxf`` drops a NaN, the instruction's compare keeps the running value).

Emitted (float32 only): per output row ``(n, oh)`` (rows dealt over tasks) and run of at most
``run`` pixels, the KH input rows are copied into an NRAM tile ``[KH][cols][Cp]`` with one strided
``__memcpy`` each (``Cp`` = channels rounded up to 64 bytes, padding lanes zeroed once), one pool
call with ``H = KH`` produces the run, and a strided ``__memcpy`` writes its ``C`` valid channels
back.  The whole thing is guarded by ``C, Wo, Ho, batch, KH, KW, sw, a_kw > 0`` and one window
fitting the tile; otherwise the original loop runs (``else`` branch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir.visit import substitute, walk

from . import common as U
from . import index_poly as A
from . import scalar_eval as SE

OPS = {"max": "__bang_maxpool", "min": "__bang_minpool", "sum": "__bang_sumpool", "avg": "__bang_avgpool"}
TILE_BYTES = 192 * 1024
OUT_BYTES = 64 * 1024
CH_BYTES = 64
PFX = "xp_p_"


class NotPool(Exception):
    def __init__(self, why, node=None):
        super().__init__(why)
        self.why, self.node = why, node


@dataclass
class Pool:
    root: N.For
    kind: str
    inp: str
    out: str
    dtype: str
    text: dict            # C texts: C, Wo, Ho, NB, KH, KW, sw, a_kw, b_ow, in_base, out_base


def _strip(stmts):
    return [s for s in stmts if not isinstance(s, (N.Comment, N.Pragma))]


def _unit(loop):
    return isinstance(loop, N.For) and loop.binding is None and isinstance(loop.lo, N.Const) \
        and loop.lo.value == 0 and isinstance(loop.step, N.Const) and loop.step.value == 1


def _resolve(e, env):
    return U.normalize_ptr_index(substitute(e, env))


def _let(s, env, ptrs, protected=()):
    """Execute a scalar/pointer definition symbolically; False if ``s`` is not one."""
    if isinstance(s, N.Decl) and s.scope == "local" and isinstance(s.type, (N.Scalar, N.Pointer)) \
            and s.init is not None and s.name not in protected:
        env[s.name] = _resolve(s.init, env)
        return True
    if isinstance(s, N.Assign) and s.op == "=" and isinstance(s.target, N.Var) and s.target.name in env \
            and s.target.name not in protected and s.target.name not in ptrs:
        env[s.target.name] = _resolve(s.value, env)
        return True
    return False


def _pure(e):
    return not any(isinstance(n, (N.AssignExpr, N.Comma)) or (isinstance(n, N.UnOp) and n.op in
                   ("++", "--", "p++", "p--")) or (isinstance(n, N.Call) and not _math_call(n)) for n in walk(e))


def _math_call(n):
    from xpiler.ir.intrinsics import REGISTRY
    d = REGISTRY.get(n.func) if isinstance(n.func, str) else None
    return d is not None and d.category == "math"


def descend_window(func: N.Func, err, shape: str):
    """Shared front of the whole-nest BANG recognisers (pools, convolutions): the kernel is scalar
    definitions, one ``taskId``-bound loop from 0 with step 1, and nothing after it but ``return``;
    below it, lets and unit dimension loops lead to an innermost body of exactly two statements,
    ``for kh {...}`` and the store. Raises ``err(msg, node)`` otherwise (``shape`` names the
    expected innermost form). Returns (pointer params, let environment, [(dim var, extent)],
    innermost dimension loop, the two statements, the bound loop)."""
    ptrs = U.pointer_params(func)
    stmts = _strip(func.body.stmts)
    roots = [s for s in stmts if isinstance(s, N.For) and s.binding == "taskId"]
    if len(roots) != 1:
        raise err("no single taskId-bound loop", func)
    root = roots[0]
    k = stmts.index(root)
    env = {}
    for s in stmts[:k]:
        if not (isinstance(s, N.Decl) and isinstance(s.type, N.Scalar) and s.init is not None and _pure(s.init)
                and not any(isinstance(n, N.Index) for n in walk(s.init))):
            raise err("a statement before the bound loop is not a scalar definition", s)
        env[s.name] = _resolve(s.init, env)
    if any(not (isinstance(s, N.Return) and s.value is None) for s in stmts[k + 1:]):
        raise err("statements after the bound loop", stmts[k + 1])
    if not (isinstance(root.lo, N.Const) and root.lo.value == 0 and isinstance(root.step, N.Const)
            and root.step.value == 1):
        raise err("the bound loop does not start at 0 with step 1", root)
    # descend: lets and dimension loops down to the innermost output body
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
        raise err(f"the innermost output loop is not '{shape}'", cur)
    return ptrs, env, dims, cur, rest, root


def analyse(program: N.Program, func: N.Func) -> Pool:
    ptrs, env, dims, cur, rest, root = descend_window(
        func, NotPool, "acc = init; for kh { for kw }; out[..] = g(acc)")
    khl, store = rest
    # the accumulator: the scalar the reduction updates
    kwb = _strip(khl.body.stmts)
    if len(kwb) != 1 or not _unit(kwb[0]):
        raise NotPool("the window loop is not two perfectly nested unit loops", khl)
    kwl = kwb[0]
    upd = [s for s in _strip(kwl.body.stmts)]
    env2 = dict(env)
    lets, last = upd[:-1], upd[-1] if upd else None
    if not (isinstance(last, N.Assign) and isinstance(last.target, N.Var) and last.target.name in env):
        raise NotPool("the window body does not end with an update of a scalar accumulator", kwl)
    acc = last.target.name
    for s in lets:
        if not _let(s, env2, ptrs, protected=(acc,)):
            raise NotPool("the window body holds more than definitions and one accumulator update", s)
    ph = N.Var(PFX + "ACC")
    env2[acc] = ph
    if last.op == "=":
        f = _resolve(last.value, env2)
    elif last.op in ("+=",):
        f = N.BinOp("+", ph, _resolve(last.value, env2))
    else:
        raise NotPool(f"accumulator update '{last.op}'", last)
    init = env[acc]
    if not (isinstance(store, N.Assign) and store.op == "=" and isinstance(store.target, N.Index)):
        raise NotPool("the reduction is not followed by one store", store)
    tgt = _resolve(store.target, env)
    g = _resolve(store.value, {**env, acc: ph})
    # ---- loads and stores
    loads = [n for n in walk(f) if isinstance(n, N.Index)]
    if len(loads) != 1 or not isinstance(loads[0].base, N.Var) or loads[0].base.name not in ptrs:
        raise NotPool("the accumulated value is not one load from a pointer parameter", last)
    ld = loads[0]
    if not (isinstance(tgt.base, N.Var) and tgt.base.name in ptrs) or tgt.base.name == ld.base.name:
        raise NotPool("the result is not stored into a separate pointer parameter", store)
    inp, out = ld.base.name, tgt.base.name
    if ptrs[inp] != "float32" or ptrs[out] != "float32":
        raise NotPool(f"pool over {ptrs[inp]} -> {ptrs[out]}: only float32 is mapped", store)
    if not all(_pure(e) for e in (f, g, init)) or any(isinstance(n, N.Index) for n in walk(g)):
        raise NotPool("the reduction has side effects or reads memory after the window", store)
    # ---- indices as polynomials
    ivars = [v for v, _ in dims] + [khl.var, kwl.var]
    hi_kh, hi_kw = _resolve(khl.hi, env), _resolve(kwl.hi, env)
    exprs = [tgt.index, ld.index] + [hi for _, hi in dims] + [hi_kh, hi_kw]
    if isinstance(init, N.Index):
        exprs.append(init.index)
    for e in exprs[2:2 + len(dims)] + [hi_kh, hi_kw]:
        if any(isinstance(n, N.Var) and n.name in ivars for n in walk(e)):
            raise NotPool("a trip count depends on another loop of the nest", cur)
    params = {q.name for q in func.params}
    free = {n.name for e in exprs + [f, g] for n in walk(e) if isinstance(n, N.Var)} - set(ivars) - {ph.name}
    if free - params or free & U.assigned_names(func):
        bad = sorted(free - params or free & U.assigned_names(func))[0]
        raise NotPool(f"'{bad}' in an index or bound is not an unmodified kernel parameter", store)
    flat = root.var
    new, divs = A.mixed_radix(exprs, flat, PFX + "d")
    if divs:
        digits = [PFX + f"d{k}" for k in range(len(divs) + 1)]
        sp_ = A.Space(set(ivars) | set(digits))
        top = A.quotient(sp_.to_poly(new[2]), A.prod(sp_.to_poly(d) for d in divs))
        if top is None:
            raise NotPool("the bound loop's trip count is not a multiple of its digit divisors", root)
        dim_ext = [(d, sp_.to_poly(x)) for d, x in zip(digits, divs)] + [(digits[-1], top)]
        dim_ext += [(v, sp_.to_poly(h)) for (v, _), h in zip(dims[1:], new[3:2 + len(dims)])]
    else:
        sp_ = A.Space(set(ivars))
        dim_ext = [(v, sp_.to_poly(h)) for (v, _), h in zip(dims, new[2:2 + len(dims)])]
    try:
        S, L = sp_.to_poly(new[0]), sp_.to_poly(new[1])
        KH, KW = sp_.to_poly(new[2 + len(dims)]), sp_.to_poly(new[3 + len(dims)])
        kh, kw = khl.var, kwl.var
        gens = [d for d, _ in dim_ext]
        b, b0 = A.coeffs(S, gens + [kh, kw])
        a, a0 = A.coeffs(L, gens + [kh, kw])
    except A.NotAffine as e:
        raise NotPool(e.why, store)
    if b[kh] or b[kw]:
        raise NotPool("the output index depends on the window loops", store)
    ext = dict(dim_ext)
    roles, left = {}, list(gens)

    def take(role, want_b, cond=lambda g: True):
        hit = [g for g in left if A.equal(b[g], want_b) and cond(g)]
        if len(hit) != 1:
            return None
        left.remove(hit[0])
        roles[role] = hit[0]
        return hit[0]
    c = take("c", 1, lambda g: A.equal(a[g], 1))
    if c is None:
        raise NotPool("no channel loop with unit stride in both the input and the output", store)
    ow = take("ow", ext[c])
    oh = take("oh", P.mul(ext[ow], ext[c])) if ow is not None else None
    if ow is None or oh is None:
        raise NotPool("the output is not a dense [.. ][oh][ow][c] array over the nest's loops", store)
    n = take("n", A.prod([ext[oh], ext[ow], ext[c]]))
    if left:
        raise NotPool(f"loop '{left[0]}' has no role in a [n][oh][ow][c] pool", store)
    sw = A.quotient(a[ow], a[kw])
    if sw is None:
        raise NotPool("the window step between output pixels is not a multiple of the inner window loop's "
                      "stride", store)
    # ---- the function
    init_at = sp_.to_poly(new[-1]) if isinstance(init, N.Index) else None     # digits, like L
    kind = _kind(f, ph, ld, init, init_at, g, L, sp_, kh, kw, P.mul(KH, KW), store)
    # ---- C texts for the emitter (digits / loop variables replaced by the emitter's own)
    tx = lambda e: A.c_text(e, sp_)
    terms = [(a0, None)] + ([(a[n], "n")] if n is not None else []) + [(a[oh], "oh"), (a[ow], "ow0"), (a[kh], "kh")]
    in_base = " + ".join(tx(co) + (f" * {PFX}{v}" if v else "") for co, v in terms if co) or "0"
    # dense output: b_oh = Wo * C and b_n = Ho * Wo * C, so the run starts at b0 + (row * Wo + ow0) * C
    out_base = (f"{tx(b0)} + " if b0 else "") + f"({PFX}row * {PFX}Wo + {PFX}ow0) * {PFX}C"
    text = {"C": tx(ext[c]), "Wo": tx(ext[ow]), "Ho": tx(ext[oh]), "NB": tx(ext[n]) if n is not None else "1",
            "KH": tx(KH), "KW": tx(KW), "sw": tx(sw), "a_kw": tx(a[kw]), "b_ow": tx(b[ow]),
            "in_base": in_base, "out_base": out_base}
    return Pool(root, kind, inp, out, "float32", text)


def _kind(f, ph, ld, init, init_at, g, L, sp_, kh, kw, KHKW, node) -> str:
    lp = N.Var(PFX + "LOAD")
    from xpiler.ir.visit import rewrite
    fx = rewrite(f, lambda n: lp if n == ld else n)
    x = SE.probes()
    y = np.roll(x, 7)
    try:
        got = SE.evaluate(fx, {ph.name: x, lp.name: y})
    except SE.NotEvaluable as e:
        raise NotPool(f"the accumulator update is not a scalar function ({e})", node)
    g_plain = U.strip_casts(g) == ph
    for kind, want in (("max", np.maximum(x, y)), ("min", np.minimum(x, y)), ("sum", x + y)):
        if np.array_equal(np.asarray(got, np.float64), want):
            break
    else:
        raise NotPool("the accumulator update is not max, min or +", node)
    if kind in ("max", "min"):
        first = P.subst(P.subst(L, kh, {}), kw, {})
        if not (isinstance(init, N.Index) and init.base == ld.base and A.equal(init_at, first)):
            raise NotPool(f"a {kind} reduction must start from the window's first element", node)
        if not g_plain:
            raise NotPool(f"the {kind} result is transformed before the store", node)
        return kind
    if not (isinstance(U.strip_casts(init), N.Const) and U.strip_casts(init).value == 0):
        raise NotPool("a sum must start from 0", node)
    if g_plain:
        return "sum"
    if isinstance(g, N.BinOp) and g.op == "/" and g.lhs == ph and isinstance(g.rhs, N.Cast) \
            and isinstance(g.rhs.type, N.Scalar) and g.rhs.type.dtype == "float32":
        try:
            if A.equal(sp_.to_poly(g.rhs.expr), KHKW):
                return "avg"
        except A.NotAffine:
            pass
    raise NotPool("the sum is stored other than as 'acc' or 'acc / (float)(KH * KW)'", node)


def emit(pool: Pool, func: N.Func) -> list:
    """The statements replacing the bound loop: NRAM tiles + guarded pool path, else the loop."""
    from xpiler.frontend import parse_text
    T, t = pool.text, "float"
    tile, outn, unit = TILE_BYTES // 4, OUT_BYTES // 4, CH_BYTES // 4
    p = PFX
    fast = f"""
int {p}C = {T['C']};
int {p}Wo = {T['Wo']};
int {p}Ho = {T['Ho']};
int {p}NB = {T['NB']};
int {p}KH = {T['KH']};
int {p}KW = {T['KW']};
int {p}sw = {T['sw']};
int {p}cp = ({p}C + {unit - 1}) / {unit} * {unit};
if ({p}C > 0 && {p}Wo > 0 && {p}Ho > 0 && {p}NB > 0 && {p}KH > 0 && {p}KW > 0 && {p}sw > 0 && {T['a_kw']} > 0
    && {p}cp <= {outn} && {p}KH * {p}KW <= {tile} / {p}cp) {{
    int {p}run = ({tile} / ({p}KH * {p}cp) - {p}KW) / {p}sw + 1;
    if ({p}run > {outn} / {p}cp) {p}run = {outn} / {p}cp;
    if ({p}run > {p}Wo) {p}run = {p}Wo;
    if ({p}cp != {p}C) __bang_write_zero({p}in, {tile});
    for (int {p}row = taskId; {p}row < {p}NB * {p}Ho; {p}row += taskDim) {{
        int {p}n = {p}row / {p}Ho;
        int {p}oh = {p}row % {p}Ho;
        for (int {p}ow0 = 0; {p}ow0 < {p}Wo; {p}ow0 += {p}run) {{
            int {p}outs = {p}Wo - {p}ow0 < {p}run ? {p}Wo - {p}ow0 : {p}run;
            int {p}cols = ({p}outs - 1) * {p}sw + {p}KW;
            for (int {p}kh = 0; {p}kh < {p}KH; {p}kh++) {{
                __memcpy({p}in + {p}kh * {p}cols * {p}cp, {pool.inp} + {T['in_base']}, {p}C * sizeof({t}), GDRAM2NRAM,
                         {p}cp * sizeof({t}), {T['a_kw']} * sizeof({t}), {p}cols - 1);
            }}
            {OPS[pool.kind]}({p}out, {p}in, {p}cp, {p}KH, {p}cols, {p}KH, {p}KW, 1, {p}sw);
            __memcpy({pool.out} + {T['out_base']}, {p}out, {p}C * sizeof({t}), NRAM2GDRAM,
                     {T['b_ow']} * sizeof({t}), {p}cp * sizeof({t}), {p}outs - 1);
        }}
    }}
}} else {{
    {p}FALLBACK();
}}
"""
    names = {d.name for d in walk(func) if isinstance(d, N.Decl)} | {p.name for p in func.params}
    if any(x.startswith(PFX) for x in names):
        raise NotPool("the kernel already uses names of the pool emitter", func)
    src = f"__mlu_global__ void {p}k() {{\n__nram__ {t} {p}in[{tile}];\n__nram__ {t} {p}out[{outn}];\n{fast}\n}}\n"
    prog = parse_text(src, "bang", "<pool>")
    stmts = list(prog.func(f"{p}k").body.stmts)

    def fallback(n):
        if isinstance(n, N.Block) and any(isinstance(s, N.ExprStmt) and isinstance(s.expr, (N.Call, N.Intrinsic))
                                          and str(getattr(s.expr, "func", getattr(s.expr, "name", ""))) ==
                                          f"{p}FALLBACK" for s in n.stmts):
            return n.with_(stmts=(pool.root,))
        return n
    from xpiler.ir.visit import rewrite
    return [rewrite(s, fallback) for s in stmts]


def pool_sites(program, func, ops=None):
    """[(bound loop, replacement statements)] — at most one (the kernel's whole bound nest)."""
    try:
        pool = analyse(program, func)
    except (NotPool, A.NotAffine):
        return []
    if ops and OPS[pool.kind] not in ops:
        return []
    if U.static_bytes(program, func, "nram") + TILE_BYTES + OUT_BYTES > U.NRAM_BYTES:
        return []
    try:
        return [(pool.root, emit(pool, func))]
    except NotPool:
        return []
