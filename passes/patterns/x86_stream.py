"""Non-temporal stores for a large elementwise AVX-512 loop (tensorize on ``c``, parameter ``stream``).

A memory-bound elementwise loop (``y[i] = f(x[i], ...)``) that writes an output much larger than
the caches pays for reading every output line before it is overwritten (write-allocate). A
non-temporal store (``_mm512_stream_ps``) writes the whole 64-byte line without that read; it
needs a 64-byte aligned address. ``build`` writes, in place of the 16-lane main loop of
:func:`x86_loops.vectorize`::

    {
        const int j_p = hi > lo ? (int)(((64u - ((unsigned)(uintptr_t)&y[lo] & 63u)) & 63u) / 4u) : 0;
        const int j_a = j_p < hi - lo ? lo + j_p : (hi > lo ? hi : lo);
        if (lo < j_a) { const int j = lo; mask = (1u << (j_a - j)) - 1u; <masked body> }  // peel
        const int j_end = j_a + (hi > j_a ? (hi - j_a) / 16 * 16 : 0);
        const int j_nt = hi - lo >= STREAM_MIN;
        for (int j_c = j_a; j_c < j_end; j_c += CHUNK) {         // the loop's omp binding, if any
            const int j_ce = j_end - j_c > CHUNK ? j_c + CHUNK : j_end;
            if (j_nt) {
                for (int j = j_c; j < j_ce; j += 16) <body, _mm512_stream_ps>
            } else {
                for (int j = j_c; j < j_ce; j += 16) <body, _mm512_store_ps>
            }
            _mm_sfence();
        }
        if (j_end < hi) { const int j = j_end; mask = (1u << (hi - j)) - 1u; <masked body> }
    }

The two inner loops are the same loop over the same chunk, and differ in the store instruction
only; the peel, the chunking and the tail are shared. The verifier's instances are all below the
threshold (it is far above the sizes a test can afford), so they run every part of the code except
the one ``_mm512_stream_ps``, whose effect on memory is that of the aligned store it replaces (the
fence orders it before any later read). The store below the threshold is the *aligned*
``_mm512_store_ps``, which faults on an address that is not 64-byte aligned: every test instance
therefore also checks that the peel aligns the output, and that peel, chunks and tail cover the
loop once. tests/test_x86_stream.py runs the streamed side too (threshold 16, n across several
chunks, misaligned outputs).
A float pointer is 4-byte aligned in C, so the peel of at most 15 elements reaches a 64-byte
boundary. Each thread's stream stores are fenced (``_mm_sfence``) at the end of its chunk, before
any other thread or the caller can read them.

Where (:func:`refusal`): one store ``T[idx] = E`` in a loop without reductions, inner loops or
branches; ``T`` a pointer parameter (a local array stays in cache) that the loop does not read
(an in-place ``y[i] = y[i] * 2`` reads each output line anyway; ``+=`` likewise). Distinct pointer
parameters are distinct buffers, as for the vectorizer itself (docs/passes/tensorize.md). The
default threshold (``stream`` not given) also leaves loops that call a vector-math helper (exp, erf,
tanh) to normal stores (x86_loops.vectorize): they are compute-bound, and gelu ran slower streamed.

The threshold (:data:`STREAM_MIN`, output elements) was measured on this CPU (docs/decisions.md,
2026-12-05 "Non-temporal stores for large elementwise c outputs"): below it the output stays in
the caches between calls and the normal store is faster.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from . import common as U
from .x86_vec import MASK, _I

#: output elements from which the main loop stores with _mm512_stream_ps (8 MiB of float32)
STREAM_MIN = 1 << 21
#: elements per chunk of the streamed main loop: one _mm_sfence per chunk (256 KiB; a fence every
#: 64 KiB cost up to 0.1 ms of 0.6 ms on a 4 M relu in a probe, every 256 KiB nothing measurable)
CHUNK = 65536

INT = N.Scalar("int32", "int")
CINT = N.Scalar("int32", "int", const=True)


def refusal(facts, lanes, func, body, reds) -> str | None:
    """Why this loop may not store with non-temporal stores; None when it may."""
    if reds:
        return "the loop folds a reduction"
    if any(isinstance(n, (N.For, N.If, N.CFor, N.While)) for st in body for n in walk(st)):
        return "the loop body has inner loops or branches"
    stores = [n for st in body for n in walk(st) if isinstance(n, (N.Assign, N.AssignExpr))
              and isinstance(n.target, N.Index)]
    if len(stores) != 1:
        return f"the loop stores {len(stores)} times, not once"
    st = stores[0]
    name = facts.base_var(st.target)
    if st.op != "=":
        return f"'{name}[...] {st.op} ...' reads the output it stores"
    root = facts.root.get(name)
    params = {p.name for p in func.params if isinstance(p.type, N.Pointer)}
    if root not in params:
        return f"'{name}' is not a pointer parameter"
    if any(r == root and acc is not st.target for r, acc in lanes.accesses):
        return f"the loop reads '{root}', the buffer it stores to"
    if any(isinstance(n, N.Var) and (n.name in lanes.local_ints or n.name in lanes.vecs) for n in walk(st.target)):
        return "the store's address uses a local of the loop body"
    return None


def store_target(body):
    return next(n.target for st in body for n in walk(st) if isinstance(n, N.Assign) and isinstance(n.target, N.Index))


def trip_bound(func, lo, hi):
    """A constant upper bound of the trip count (constants, ``min``, let-bound locals:
    ``common.upper_bound``) when the start is a constant; None when unknown."""
    lo = U.strip_casts(lo)
    ub = U.upper_bound(hi, U.decl_lets(func))
    if isinstance(lo, N.Const) and isinstance(lo.value, int) and ub is not None:
        return ub - lo.value
    return None


def _with_store(stmts, name):
    def fn(n):
        if isinstance(n, N.Intrinsic) and n.name == "_mm512_storeu_ps":
            return N.Intrinsic(name, n.args, loc=n.loc)
        return n
    return [rewrite(s, fn) for s in stmts]


def build(func, loop, target, main_body, tail_body, mvar, threshold):
    """The statements of the peeled, chunked main loop and its tail (module docstring)."""
    j, lo, hi = loop.var, loop.lo, loop.hi
    c = U.C
    b = N.BinOp
    names = {k: U.fresh(func, f"{j}_{k}") for k in ("p", "a", "end", "nt", "c", "ce", "lo", "hi")}
    out = []
    # bounds that are not a name or a constant are computed once (they do not change in the loop:
    # x86_loops.vectorize checked that)
    if not isinstance(U.strip_casts(lo), (N.Var, N.Const)):
        out.append(N.Decl(names["lo"], CINT, lo))
        lo = N.Var(names["lo"])
    if not isinstance(U.strip_casts(hi), (N.Var, N.Const)):
        out.append(N.Decl(names["hi"], CINT, hi))
        hi = N.Var(names["hi"])
    jp, ja, end, nt, jc, jce = (N.Var(names[k]) for k in ("p", "a", "end", "nt", "c", "ce"))
    u = lambda v: N.Const(v, "uint32", f"{v}u")          # noqa: E731
    trip = hi if isinstance(lo, N.Const) and lo.value == 0 else b("-", hi, lo)
    addr = N.Cast(N.Scalar("uint32", "unsigned"), N.Cast(N.Named("uintptr_t"),
                                                         substitute(N.UnOp("&", target), {j: lo})))
    peel = N.Cast(INT, b("/", b("&", b("-", u(64), b("&", addr, u(63))), u(63)), u(4)))
    out += [N.Decl(jp.name, CINT, N.Cond(b(">", hi, lo), peel, c(0))),
            N.Decl(ja.name, CINT, N.Cond(b("<", jp, trip), U.add(lo, jp), N.Cond(b(">", hi, lo), hi, lo)))]

    def masked(start, stop):
        m = N.Cast(MASK, b("-", b("<<", u(1), b("-", stop, N.Var(j))), u(1)))
        return [N.Decl(j, CINT, start), N.Decl(mvar.name, MASK, m)] + list(tail_body)

    out.append(N.If(b("<", lo, ja), N.Block(tuple(masked(lo, ja)))))
    out.append(N.Decl(end.name, CINT, U.add(ja, N.Cond(b(">", hi, ja), b("*", b("/", b("-", hi, ja), c(16)), c(16)),
                                                       c(0)))))
    out.append(N.Decl(nt.name, CINT, b(">=", trip, c(threshold))))

    def inner(store):
        return N.For(j, jc, jce, c(16), N.Block(tuple(_with_store(main_body, store))), var_type=INT, cmp="<")
    chunk = [N.Decl(jce.name, CINT, N.Cond(b(">", b("-", end, jc), c(CHUNK)), b("+", jc, c(CHUNK)), end)),
             N.If(nt, N.Block((inner("_mm512_stream_ps"),)), N.Block((inner("_mm512_store_ps"),))),
             N.ExprStmt(_I("_mm_sfence"))]
    out.append(N.For(jc.name, ja, end, c(CHUNK), N.Block(tuple(chunk)), binding=loop.binding, var_type=INT,
                     pragmas=loop.pragmas, cmp="<", loc=loop.loc))
    out.append(N.If(b("<", end, hi), N.Block(tuple(masked(end, hi)))))
    return out
