"""CUDA WMMA (nvcuda::wmma) as plain loops: every fragment is a per-thread array holding the
WHOLE tile, and every lane runs the full fill / load / store / mma loop nest.  Exact (float
accumulation of the products, as the tensor cores do) and layout-free; the speed comes back
later from tensorize."""
from __future__ import annotations

from xpiler.ir import nodes as N

from .common import FLOAT, add, assign, b, cast, decl, ix, loop, mul, tofloat

NAMES = frozenset({"wmma::fill_fragment", "wmma::load_matrix_sync", "wmma::store_matrix_sync", "wmma::mma_sync",
                   "fill_fragment", "load_matrix_sync", "store_matrix_sync", "mma_sync",
                   "nvcuda::wmma::fill_fragment", "nvcuda::wmma::load_matrix_sync",
                   "nvcuda::wmma::store_matrix_sync", "nvcuda::wmma::mma_sync"})


def short(name: str) -> str:
    return name.rsplit("::", 1)[-1]


def frag_shape(t: N.Fragment):
    """(rows, cols) of the tile a fragment holds."""
    if t.kind == "matrix_a":
        return t.m, t.k
    if t.kind == "matrix_b":
        return t.k, t.n
    return t.m, t.n


def frag_array(t: N.Fragment) -> N.Array:
    r, c_ = frag_shape(t)
    return N.Array(t.elem, (mul(r, c_),))


def _is_col(layout) -> bool:
    txt = layout.name if isinstance(layout, N.Var) else str(getattr(layout, "value", layout))
    return txt.endswith("col_major")


def lower(ctx, name, args, frags: dict):
    op = short(name)

    def frag(e):
        if not isinstance(e, N.Var) or e.name not in frags:
            ctx.refuse(f"{name}: fragment argument must be a fragment variable of this function")
        return e.name, frags[e.name]

    if op == "fill_fragment":
        f, t = frag(args[0])
        r, c_ = frag_shape(t)
        i = ctx.fresh("i")
        return [loop(i, 0, mul(r, c_), assign(ix(f, N.Var(i)), cast(t.elem, args[1])))]
    if op in ("load_matrix_sync", "store_matrix_sync"):
        if op == "load_matrix_sync":
            f, t = frag(args[0])
            p, ldm = args[1], args[2]
            col = _is_col(args[3]) if len(args) > 3 else (t.layout or "row_major").endswith("col_major")
        else:
            p, (f, t), ldm = args[0], frag(args[1]), args[2]
            col = _is_col(args[3])
        r, c_ = frag_shape(t)
        i, j = ctx.fresh("r"), ctx.fresh("c")
        Vi, Vj = N.Var(i), N.Var(j)
        mem = ix(p, add(mul(Vj, ldm), Vi)) if col else ix(p, add(mul(Vi, ldm), Vj))
        reg = ix(f, add(mul(Vi, c_), Vj))
        body = assign(reg, mem) if op == "load_matrix_sync" else assign(mem, reg)
        return [loop(i, 0, r, loop(j, 0, c_, body))]
    if op == "mma_sync":
        (d, td), (a, ta), (bb, tb), (cc, tc) = (frag(x) for x in args)
        M, K = frag_shape(ta)
        Nn = frag_shape(tb)[1]
        i, j, k, s = ctx.fresh("r"), ctx.fresh("c"), ctx.fresh("k"), ctx.fresh("acc")
        Vi, Vj, Vk = N.Var(i), N.Var(j), N.Var(k)
        mac = assign(s, b("*", tofloat(ix(a, add(mul(Vi, K), Vk))), tofloat(ix(bb, add(mul(Vk, Nn), Vj)))), "+=")
        return [loop(i, 0, M, loop(j, 0, Nn, [
            decl(s, FLOAT, tofloat(ix(cc, add(mul(Vi, Nn), Vj)))),
            loop(k, 0, K, mac),
            assign(ix(d, add(mul(Vi, Nn), Vj)), N.Var(s))]))]
    ctx.refuse(f"no lowering for {name}")
