"""tensorize: replace loop nests by the target's vector / matrix instructions.

Each instruction is described once by what it computes (``xpiler.ir.intrinsics.REGISTRY``
semantics, plus the loop-nest descriptions in ``passes/patterns``); a loop nest is replaced
when its structure matches the description and its scalar body computes the same function.

BANG, elementwise loop over staged NRAM chunks (what the cache pass produces)::

    for (int i = 0; i < i_len; ++i) {            // i_len = min(8192, n - i_c) <= 8192
        float v = x_nram[i];
        y_nram[i] = v > 0.0f ? v : 0.0f;
    }
  ->
    __bang_active_relu(y_nram, x_nram, (i_len + 31) / 32 * 32);

(the vector-length rule: n * sizeof(float) % 128 == 0, so n is rounded up inside the padded
8192-element buffers; the copy back moves only the valid elements).  Binary bodies
(``c[i] = a[i] + b[i]``) select ``__bang_add`` / ``sub`` / ``mul`` / ``maxequal`` / ``minequal`` /
``div``.

BANG, matmul / matrix-vector nests over staged buffers (rows of A in NRAM, B in WRAM) ->
``__bang_matmul`` / ``__bang_mlp``: see :mod:`passes.patterns.rows`.

C, float elementwise loop -> AVX-512 with a masked tail::

    for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
  ->
    int i = 0;
    for (; i + 16 <= n; i += 16)  _mm512_storeu_ps(c + i, _mm512_add_ps(_mm512_loadu_ps(a + i), ...));
    if (i < n) { __mmask16 m = (__mmask16)((1u << (n - i)) - 1u); ... maskz_loadu / mask_storeu ... }

Legality: XP4002 when no loop matches a description (nothing to do); XP4001 when a loop
matches but the instruction's rules cannot be met (buffer too small for the padded length,
operands in the wrong memory, float32 numerics that the instruction would change).
Parameters: ``target`` (the dialect), ``ops`` (restrict to these instruction names).
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .base import PassError
from .patterns import common as U
from .patterns import bang as PB

NAME = "tensorize"


# ------------------------------------------------------------------------------ BANG elementwise
def _bang_elementwise_sites(program, func, ops=None, strict=False):
    """[(loop, replacement stmt)] for every elementwise loop over NRAM buffers."""
    bufs = U.buffer_decls(func, program)
    macros = program.macro_table()
    lets = U.decl_lets(func)
    sites = []
    for loop in [n for n in walk(func.body) if isinstance(n, N.For)]:
        if loop.binding is not None or not _is_zero(loop.lo) or not _is_one(loop.step):
            continue
        if any(isinstance(n, (N.For, N.CFor, N.While, N.Barrier, N.If)) for n in walk(loop.body)):
            continue
        stmts = [s for s in U.inline_lets(loop.body.stmts) if not isinstance(s, N.Comment)]
        if len(stmts) != 1 or not isinstance(stmts[0], N.Assign) or stmts[0].op != "=":
            continue
        st = stmts[0]
        tgt = st.target
        if not (isinstance(tgt, N.Index) and isinstance(tgt.base, N.Var) and U.is_var(tgt.index, loop.var)):
            continue
        dst = tgt.base.name
        if dst not in bufs or bufs[dst].scope != "nram":
            continue
        loads, ok = [], True
        for n in walk(st.value):
            if isinstance(n, N.Index):
                if not (isinstance(n.base, N.Var) and U.is_var(n.index, loop.var) and n.base.name in bufs
                        and bufs[n.base.name].scope == "nram"):
                    ok = False
                    break
                if n.base.name not in loads:
                    loads.append(n.base.name)
            elif isinstance(n, N.Var) and n.name == loop.var:
                pass
        if not ok or not loads:
            continue
        # the loop variable may appear only as the index of the accesses
        n_idx = sum(1 for n in walk(st.value) if isinstance(n, N.Index))
        n_var = sum(1 for n in walk(st.value) if isinstance(n, N.Var) and n.name == loop.var)
        if n_var != n_idx:
            continue
        dts = {U.scalar_dtype(bufs[b].type.elem) for b in [dst] + loads}
        if len(dts) != 1 or next(iter(dts)) not in PB.VECTOR_DTYPES:
            continue
        dt = next(iter(dts))
        m = PB.match_elementwise(st.value, loads)
        if m is None or (ops and m[0] not in ops):
            continue
        name, order = m
        unit = U.VECTOR_RULE_BYTES // U.ELEM_BYTES[dt]
        bound = U.upper_bound(loop.hi, lets)
        caps = {b: U.const_size(bufs[b], macros) for b in [dst] + list(order)}
        if bound is None:
            if strict:
                raise PassError(NAME, f"loop '{loop.var}' matches {name} but its trip count has no known bound "
                                      f"within the NRAM buffers", loop)
            continue
        padded = -(-bound // unit) * unit
        small = [b for b, c in caps.items() if c is None or c < padded]
        if small:
            raise PassError(NAME, f"NRAM buffer '{small[0]}' holds {caps[small[0]]} elements, fewer than the "
                                  f"padded vector length {padded} that {name} needs", bufs[small[0]]
                            if bufs[small[0]].loc else loop)
        n_expr = U.round_up(loop.hi, unit)
        call = U.call(name, N.Var(dst), *[N.Var(b) for b in order], n_expr)
        sites.append((loop, call.with_(loc=loop.loc)))
    return sites


def _is_zero(e):
    return isinstance(e, N.Const) and e.value == 0


def _is_one(e):
    return isinstance(e, N.Const) and e.value == 1


# ------------------------------------------------------------------------------ dispatch
def _sites(program, entry, target=None, ops=None, **_):
    if target is not None and target != program.dialect:
        raise PassError(NAME, f"program is {program.dialect}, not yet {target}", None, "XP4002")
    try:
        func = U.kernel_func(program, entry)
    except KeyError:
        raise PassError(NAME, f"no function '{entry}'", None, "XP4002")
    if program.dialect == "bang":
        from .patterns import rows as R
        sites = _bang_elementwise_sites(program, func, ops) + R.matmul_sites(program, func, ops)
    elif program.dialect == "c":
        from .patterns import x86 as PX
        sites = PX.sites(program, func, ops)
    else:
        sites = []
    if not sites:
        raise PassError(NAME, f"no loop nest of '{entry}' matches a {program.dialect} instruction", func, "XP4002")
    return func, sites


def check(program: N.Program, *, entry: str, **params) -> None:
    _sites(program, entry, **params)


def apply(program: N.Program, *, entry: str, **params) -> N.Program:
    func, sites = _sites(program, entry, **params)
    body = func.body
    for loop, repl in sites:
        body = U.replace_stmt(body, loop, list(repl) if isinstance(repl, (list, tuple)) else [repl])
    out = U.replace_func(program, func, func.with_(body=body))
    if program.dialect == "c" and not any(isinstance(it, N.Directive) and "immintrin.h" in it.text
                                          for it in program.items):
        out = out.with_(items=(N.Directive("#include <immintrin.h>", "include"),) + out.items)
    return out


def applied_ops(program: N.Program, entry: str, **params) -> list[str]:
    """Names of the instructions apply() would introduce (for reports and tests)."""
    _, sites = _sites(program, entry, **params)
    out = []
    for _, r in sites:
        for n in walk(r if not isinstance(r, list) else N.Block(tuple(r))):
            if isinstance(n, N.Intrinsic) and (n.name.startswith("__bang") or n.name.startswith("_mm512")):
                out.append(n.name)
    return sorted(set(out))


def candidates(program: N.Program, target: str) -> list[dict]:
    out = []
    for f in program.kernels or program.funcs:
        try:
            check(program, entry=f.name, target=target)
            out.append({"target": target})
        except PassError:
            pass
        break
    return out
