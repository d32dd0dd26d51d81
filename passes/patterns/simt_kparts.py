"""Split an operand index of a contraction into a row part and a k part, for the loaders of the
wide register-blocked form (:func:`passes.patterns.simt_regtile.body_wide`, prefetch variant).

A convolution read as an implicit GEMM (M = Cout, N = Ho*Wo, K = Cin*KH*KW) indexes its operands
through the ``/`` and ``%`` that recompose the flattened loops (:func:`simt_tile._flatten`), e.g.
``input[((b*Cin + k/(KH*KW))*H + j/Wo*s)*W + (j%Wo*s + (k/KW%KH*W + k%KW))]``: every element a
thread stages paid several integer divisions. When the index ``f(b, r, k)`` (``r`` the row of A or
the column of B) is **separable**,

    f(b, r, k) == f(b, r, 0) + (f(b', r', k) - f(b', r', 0))      for all b, b', r, r', k in range,

the row part ``f(b, r, 0)`` is computed once per block (each thread's rows / column are fixed in
the prefetch loader) and the k part is either

* ``k`` itself when ``f(b, r, k) == f(b, r, 0) + k`` is proven (``unit``: the weight of a conv, whose
  mixed-radix recomposition ``(k/(KH*KW))*KH*KW + (k/KW%KH)*KW + k%KW`` is ``k``), or
* a per-block table of K entries in shared memory (``table``), filled once per block (K / threads
  divisions per thread), used while ``K <= TABLE_CAP``; a larger K keeps the old index.

Both identities are proven with Z3 (xpiler/ir/z3term.py, the C division encoding) under the
ranges ``0 <= k < K``, ``0 <= r < M`` (or N), ``0 <= b < batch``: nothing else is assumed (every
other name is any integer). The solver runs under a resource limit (deterministic), and
``unknown`` keeps the old loader. Only an index whose k part holds a ``/`` or ``%`` is split: the
gemm / bmm loaders (``A[i*K + k]``, ``B[k*N + j]``) are left as they were. cuda only
(:func:`applies`).
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from xpiler.ir import nodes as N
from xpiler.ir import z3term as T
from xpiler.ir.visit import substitute, walk

from . import simt_tile as ST

#: most k entries of the per-block k-offset table (18 KiB of int32: Cin 512 x 3 x 3)
TABLE_CAP = 4608
#: Z3 resource limit of one proof (deterministic, unlike a time limit)
RLIMIT = 5_000_000

P = ST.PREFIX


@dataclass(frozen=True)
class Split:
    which: str          # "A" or "B"
    kind: str           # "unit" (k part is k) or "table" (k part read from a shared table)
    rvar: str           # the placeholder of the row (A: xp_i) or column (B: xp_j)


def _has_divmod_of_k(idx) -> bool:
    return any(isinstance(n, N.BinOp) and n.op in ("/", "%") and ST.uses(n, {P + "k"}) for n in walk(idx))


class _Names(T.Terms):
    def __init__(self):
        super().__init__(policy=T.REFUSE)
        self.env = {}

    def name(self, e, depth):
        nm = getattr(e, "name", None)
        if not isinstance(e, N.Var) or not nm:
            return self.unknown(e, depth)
        if nm not in self.env:
            self.env[nm] = z3.Int(nm)
        return self.env[nm]


#: the answers of this process, by query text: the loader decisions of one kernel (simt_regtile's
#: b_by_k, the splits, the shared-memory count of cache.plan_wide) ask the same questions and
#: must get the same answers
_ANSWERS: dict = {}
#: random seeds tried in turn while the solver answers ``unknown``: on conv2d_nhwc's weight index
#: the same query took 0.3M resource units on most runs and exceeded RLIMIT on one (Z3's
#: nonlinear search depends on state left by earlier queries)
SEEDS = (0, 1, 2)


def _proven(hyps, goal) -> bool:
    key = (tuple(h.sexpr() for h in hyps), goal.sexpr())
    if key not in _ANSWERS:
        r = z3.unknown
        for seed in SEEDS:
            s = z3.Solver()
            s.set("rlimit", RLIMIT)
            s.set("random_seed", seed)
            s.add(*hyps)
            s.add(z3.Not(goal))
            r = s.check()
            if r != z3.unknown:
                break
        _ANSWERS[key] = r == z3.unsat
    return _ANSWERS[key]


_OWN = {"xp_kk", "xp_r", "xp_r2", "xp_bb", "xp_b2", "xp_q", "xp_q2"}


def _identities(ct, which: str):
    """(hypotheses, f(b, r, k), f(b, r, 0), f(b', r', k), f(b', r', 0), k, f(b, 0, k), r) of operand ``which``'s
    index as Z3 terms under the ranges of the loop variables, or None (untranslatable, or a
    placeholder the split does not bind). In the per-row form (``ct.per_row``, depthwise) B's
    index also uses the row i: it is bound with the column (``xp_q`` / ``xp_q2``, in [0, M)) and
    belongs to the row part."""
    idx = ct.a_idx if which == "A" else ct.b_idx
    rvar, rext = (P + "i", ct.M) if which == "A" else (P + "j", ct.N_)
    t = _Names()

    def f(b, r, k):
        m = {P + "k": k, rvar: N.Var(r) if isinstance(r, str) else r, P + "b": N.Var(b)}
        if ct.per_row and which == "B":
            m[P + "i"] = N.Var("xp_q" if r == "xp_r" else "xp_q2")
        return t.int(substitute(idx, m))
    zero = N.Const(0, "int32", "0")
    try:
        K, R = t.int(ct.K), t.int(rext)
        Q = t.int(ct.M) if ct.per_row and which == "B" else None
        Bx = t.int(ct.batch) if ct.batch is not None else None
        kk = N.Var("xp_kk")
        full, row = f("xp_bb", "xp_r", kk), f("xp_bb", "xp_r", zero)          # f(b, r, k), f(b, r, 0)
        other_k, other_0 = f("xp_b2", "xp_r2", kk), f("xp_b2", "xp_r2", zero)  # at another (b', r')
        first = f("xp_bb", zero, kk)                                           # f(b, 0, k)
    except T.Untranslatable:
        return None
    if any(nm.startswith(P) and nm not in _OWN for nm in t.env):
        return None                      # the index uses a placeholder the split does not bind
    e = t.env
    if "xp_kk" not in e:
        return None                      # the index does not use k
    hyps = [e["xp_kk"] >= 0, e["xp_kk"] < K]
    for r, b, q in (("xp_r", "xp_bb", "xp_q"), ("xp_r2", "xp_b2", "xp_q2")):
        if r in e:
            hyps += [e[r] >= 0, e[r] < R]
        if q in e:
            hyps += [e[q] >= 0, e[q] < Q]
        if b in e:
            hyps += [e[b] >= 0] + ([e[b] < Bx] if Bx is not None else [e[b] == 0])
    return hyps, full, row, other_k, other_0, e["xp_kk"], first, e.get("xp_r")


def split(ct, which: str) -> Split | None:
    """The split of operand ``which``'s index (None: keep the old loader)."""
    idx = ct.a_idx if which == "A" else ct.b_idx
    if not _has_divmod_of_k(idx):
        return None
    rvar = P + "i" if which == "A" else P + "j"
    ids = _identities(ct, which)
    if ids is None:
        return None
    hyps, full, row, other_k, other_0, k, _, _ = ids
    if _proven(hyps, full == row + k):
        return Split(which, "unit", rvar)
    if _proven(hyps, full == row + other_k - other_0):
        return Split(which, "table", rvar)
    return None


def k_contiguous(ct, which: str) -> bool:
    """Operand ``which``'s index is proven ``f(b, r, k) == f(b, r, 0) + k`` for every k in range:
    the K elements of one row (A) / column (B) are consecutive in memory, stride 1 along k (the
    weight [Cout][KH][KW][Cin] of conv2d_nhwc, a gemm B given transposed as ``B[j*K + k]``). Any
    index, with or without ``/`` and ``%``; ``unknown`` (the resource limit) is False."""
    ids = _identities(ct, which)
    if ids is None:
        return False
    hyps, full, row, _, _, k, _, _ = ids
    return _proven(hyps, full == row + k)


def r_contiguous(ct, which: str) -> bool:
    """Operand ``which``'s index is proven ``f(b, r, k) == f(b, 0, k) + r`` for every row (A) /
    column (B) r in range: stride 1 along r (an A stored transposed, ``A[k*M + i]``)."""
    ids = _identities(ct, which)
    if ids is None or ids[7] is None:
        return False
    hyps, full, _, _, _, _, first, r = ids
    return _proven(hyps, full == first + r)


def applies(dialect: str, prefetch: bool) -> bool:
    """The split loaders are for the cuda prefetch form only: on hip (gfx90a, clang 15) the
    conv2d_nchw split took 128 VGPRs and 152 bytes of scratch against 106 and none without it, and
    the default hip plans do not use the wide form; hip keeps the old loaders."""
    return bool(prefetch) and dialect == "cuda"


def splits(ct, BK: int, BN: int, NT: int, b_by_k: bool = False) -> dict:
    """{"A": Split, "B": Split} for the operands the prefetch loader can split: a thread's k of A
    (``(tid + u*NT) % BK``) and column of B (``(tid + u*NT) % BN``) must not change with u. With
    ``b_by_k`` (B is loaded k-fastest, like A: simt_regtile.b_by_k) B's k ``(tid + u*NT) % BK``
    is the one fixed, and each prefetched column has its own row-part register."""
    out = {}
    if NT % BK == 0:
        s = split(ct, "A")
        if s is not None:
            out["A"] = s
    if NT % (BK if b_by_k else BN) == 0:
        s = split(ct, "B")
        if s is not None:
            out["B"] = s
    return out


def table_bytes(sp: dict) -> int:
    return sum(4 * TABLE_CAP for s in sp.values() if s.kind == "table")


def row_part(E, ct, which, b, r, **more) -> str:
    """``f(b, r, 0)``: the index with k = 0 (printed; computed once per block). ``more``: the
    other placeholders of the index (the row ``i`` of the per-row form's B)."""
    idx = ct.a_idx if which == "A" else ct.b_idx
    rv = "i" if which == "A" else "j"
    return E.e(idx, b=b, **{rv: r, "k": N.Const(0, "int32", "0")}, **more)


def k_part(E, ct, which, b, r, k, **more) -> str:
    """``f(b, r, k) - f(b, r, 0)`` for a valid (b, r): the table entry of k."""
    idx = ct.a_idx if which == "A" else ct.b_idx
    rv = "i" if which == "A" else "j"
    return f"({E.e(idx, b=b, **{rv: r, 'k': k}, **more)}) - ({row_part(E, ct, which, b, r, **more)})"
