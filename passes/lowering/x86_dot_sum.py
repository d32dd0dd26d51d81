"""A VNNI accumulator whose lanes are only ever summed, as one integer sum.

An int8 dot product written with VNNI keeps 16 int32 partial sums in one vector and adds them at
the end (examples/conv2d_nhwc/conv2d_nhwc_vnni.c)::

    __m512i acc = _mm512_setzero_si512();
    for (...) {
        __m512i a = _mm512_loadu_si512(px + 64 * c);
        __m512i b = _mm512_loadu_si512(pw + 64 * c);
        acc = _mm512_dpbusd_epi32(acc, a, b);
    }
    out[co] = _mm512_reduce_add_epi32(acc);

Only the total of the lanes is observed, and int32 additions that wrap modulo 2^32 are
associative and commutative, so one ``uint32_t`` holds that total exactly, with the 64 byte
products of each step added one by one::

    uint32_t acc = 0u;
    for (...)
        for (int l = 0; l < 64; ++l)
            acc += (uint32_t)((int32_t)px[64 * c + l] * (int32_t)pw[64 * c + l]);
    out[co] = (int32_t)acc;

(unsigned, so that the wrap-around the source defines stays defined; each product of a u8 and an
s8 fits an int32). A byte-masked operand (``_mm512_maskz_loadu_epi8(m, p)``) contributes 0 in
the lanes it masks off; when both operands have the same mask the update runs only for the
selected lanes (``if (l < k) acc += ...`` for the mask of the first k lanes), since adding the
product 0 changes nothing.

Conditions (else the vector keeps its 16 lanes, the lowering of ``lowering/x86.py``):

* the accumulator is declared once as ``_mm512_setzero_si512()`` / ``_mm512_setzero_epi32()``;
* every use is an update ``acc = _mm512_dpbusd_epi32(acc, X, Y)`` (the non-saturating form;
  ``X``, ``Y`` do not read ``acc``) or the operand of ``_mm512_reduce_add_epi32(acc)``.

An operand variable declared as a byte load (``_mm512_loadu_si512``, ``_mm512_loadu_epi8``,
``_mm512_maskz_loadu_epi8``) that is never assigned, used only in one such update and declared in
the update's statement list with only other such declarations between, is read in place: its
bytes become the loads themselves (``px[64 * c + l]``) and its declaration is dropped. Nothing
runs between the load and its use, so it reads the same memory.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .common import b, cast, loop, scalar
from .common import call_name as _name

U32, I32, U8, I8 = scalar("uint32"), scalar("int32"), scalar("uint8"), scalar("int8")
ZERO = ("_mm512_setzero_si512", "_mm512_setzero_epi32")
LOADS = ("_mm512_loadu_si512", "_mm512_loadu_epi8", "_mm512_maskz_loadu_epi8")


def update_operands(s, acc):
    """(X, Y) of ``acc = _mm512_dpbusd_epi32(acc, X, Y)`` with X, Y not reading acc, else None."""
    if not (isinstance(s, N.Assign) and s.op == "=" and isinstance(s.target, N.Var) and s.target.name == acc):
        return None
    v = s.value
    if _name(v) != "_mm512_dpbusd_epi32" or len(v.args) != 3:
        return None
    src, x, y = v.args
    if not (isinstance(src, N.Var) and src.name == acc):
        return None
    if any(isinstance(n, N.Var) and n.name == acc for n in walk((x, y))):
        return None
    return x, y


def _assigned(stmts) -> set:
    out = set()
    for n in walk(tuple(stmts)):
        t = n.target if isinstance(n, (N.Assign, N.AssignExpr)) else \
            n.operand if isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") else None
        while isinstance(t, (N.Index, N.Member)):
            t = t.base
        if isinstance(t, N.Var):
            out.add(t.name)
    return out


def plan(body, decls, dup, uses):
    """(accumulators, forwarded operands) of ``body``: the second maps ``id`` of an update to
    ``{operand name: its load}`` and ``id`` of each forwarded declaration to None (the lowering
    sees the same statement objects)."""
    accs = {name for name, d in decls.items()
            if name not in dup and d.init is not None and _name(d.init) in ZERO and not d.init.args}
    seen = {a: 0 for a in accs}
    bad = set()
    for n in walk(body):
        if isinstance(n, N.Assign) and isinstance(n.target, N.Var) and n.target.name in accs:
            if update_operands(n, n.target.name) is None:
                bad.add(n.target.name)
            else:
                seen[n.target.name] += 2
        if _name(n) == "_mm512_reduce_add_epi32" and len(n.args) == 1 and isinstance(n.args[0], N.Var) \
                and n.args[0].name in accs:
            seen[n.args[0].name] += 1
    accs = {a for a in accs if a not in bad and seen[a] == uses.get(a, 0)}
    fwd = {}                    # id(update) -> {operand name: load}; id(declaration) -> None
    for blk in walk(body):
        if not isinstance(blk, N.Block):
            continue
        stmts = blk.stmts
        for pos, s in enumerate(stmts):
            if not (isinstance(s, N.Assign) and isinstance(s.target, N.Var) and s.target.name in accs):
                continue
            for x in update_operands(s, s.target.name):
                if not isinstance(x, N.Var):
                    continue
                # the nearest declaration of the name before the update, in the same list (a name
                # may be declared again in another block: the main loop's and the tail's operands)
                at = next((i for i in range(pos - 1, -1, -1) if isinstance(stmts[i], N.Decl)
                           and stmts[i].name == x.name), None)
                if at is None:
                    continue
                d = stmts[at]
                if d.init is None or _name(d.init) not in LOADS:
                    continue
                scope = stmts[at + 1:]
                n_uses = sum(1 for n in walk(tuple(scope)) if isinstance(n, N.Var) and n.name == x.name)
                if n_uses != 1 or x.name in _assigned(scope):
                    continue
                between = stmts[at + 1:pos]
                if all(isinstance(t, N.Decl) and t.init is not None and _name(t.init) in LOADS for t in between):
                    fwd.setdefault(id(s), {})[x.name] = d.init
                    fwd[id(d)] = None
    return accs, fwd


def _mask_and_pointer(e):
    """(mask or None, pointer) of a byte load, else None."""
    nm = _name(e)
    if nm == "_mm512_maskz_loadu_epi8":
        return e.args[0], e.args[1]
    if nm in ("_mm512_loadu_si512", "_mm512_loadu_epi8"):
        return None, e.args[0]
    return None


def lower_update(x, s, out):
    """The lane loop adding the 64 byte products of one update of an accumulator (``x``: the
    ``X86`` lowering, whose ``fwd`` / ``elem_at`` / ``lane`` / ``mbit`` are used)."""
    acc = s.target.name
    own = x.fwd.get(id(s), {})
    ops = [own.get(o.name, o) if isinstance(o, N.Var) else o for o in update_operands(s, acc)]
    l = x.ctx.fresh("l")
    Vl = N.Var(l)
    body = []
    loads = [_mask_and_pointer(o) for o in ops]
    guard = None
    if all(ld is not None for ld in loads) and loads[0][0] == loads[1][0]:
        if loads[0][0] is not None:
            guard = x.mbit(loads[0][0], Vl, body)
        xa = x.elem_at(loads[0][1], Vl, U8, const=True)
        ya = x.elem_at(loads[1][1], Vl, I8, const=True)
    else:
        xa = x.lane(ops[0], Vl, "u8", body)
        ya = x.lane(ops[1], Vl, "i8", body)
    upd = N.Assign(N.Var(acc), "+=", cast(U32, b("*", cast(I32, xa), cast(I32, ya))), loc=s.loc)
    if guard is not None:
        upd = N.If(guard, N.Block((upd,)))
    out.append(loop(l, 0, 64, body + [upd]))
