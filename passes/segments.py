"""Segment delinearization for the dependence test (a helper of ``passes/dependence.py``).

A BANG kernel whose task loop was recovered and normalized copies each job's result out as
one contiguous segment of rows::

    for (job = 0; job < N * bands; ++job) {
        int n = job / bands, oh0 = (job % bands) * band;
        int rows = OH - oh0 < band ? OH - oh0 : band;
        for (j = 0; j < rows * OW * C; ++j)
            y[(n * OH + oh0) * OW * C + j] = ...;
    }

The subscript is ``K*R + j`` and the trip count of ``j`` is ``M*K``, with ``K = OW*C`` a
product of sizes that do not change between iterations while ``R`` and ``M`` do.  The plain
query (two iterations, equal subscripts) multiplies unknown sizes and Z3 answers "unknown";
the delinearization of :func:`passes.dependence.equal_subscripts` only splits a loop variable
whose trip count is the same number in both iterations.  Here ``j`` is read as a row ``u`` and
a column ``r`` of width ``K``: ``j = K*u + r`` with ``0 <= r < K`` and ``0 <= u < M``, so the
subscript is ``K*(R + u) + r``.  Two such subscripts are equal exactly when ``R_a + u_a ==
R_b + u_b`` and ``r_a == r_b``; :func:`split` hands the first equation on (the solver, and the
splits by base after it, work on the rows: ``n*OH + oh0 + u`` with ``oh0 + u < OH``).

Exact when ``K >= 1``.  **Assumption** (the one ``passes/digits.py`` makes for its radices,
stated in docs/passes/binding.md): the sizes whose product is ``K`` make ``K`` at least 1
whenever the loop runs, as tensor sizes do.  An integer factor of ``K`` needs no assumption.
Applied only when the trip count changes between iterations (otherwise the existing split by
the loop's trip count applies).
"""
from __future__ import annotations

from math import gcd

import z3

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk


def _names(e) -> set:
    return {n.name for n in walk(e) if isinstance(n, N.Var)}


def _invariant_atom(a, env) -> bool:
    if isinstance(a, N.Builtin):
        return True
    return isinstance(a, N.Var) and a.name not in env.loopvars and a.name not in env.varying and \
        a.name not in env.lets


def _common(monos, env):
    """(integer gcd, atoms with multiplicity) common to every monomial of ``monos``."""
    g, atoms = 0, None
    for m, c in monos:
        g = gcd(g, abs(c))
        inv = [a for a in m if _invariant_atom(a, env)]
        if atoms is None:
            atoms = inv
        else:
            rest, out = list(inv), []
            for a in atoms:
                if a in rest:
                    rest.remove(a)
                    out.append(a)
            atoms = out
    return g, atoms or []


def _divide(p, g, atoms):
    out = {}
    for m, c in p.items():
        lst = list(m)
        for a in atoms:
            lst.remove(a)
        key = tuple(lst)
        out[key] = out.get(key, 0) + c // g
    return {m: c for m, c in out.items() if c}


def _lane(p, loops, env, poly, expand):
    """(loop, its variable, trip-count polynomial) of the first loop from 0 with step 1 whose
    variable enters ``p`` only as ``+ v`` and whose trip count changes between iterations."""
    for lp in loops:
        if not (isinstance(lp.lo, N.Const) and lp.lo.value == 0 and isinstance(lp.step, N.Const)
                and lp.step.value == 1):
            continue
        v = N.Var(lp.var)
        if p.get((v,)) != 1 or any(v in m for m in p if m != (v,)):
            continue
        hi = expand(lp.hi, env)
        if not (_names(hi) & (env.loopvars | env.varying)):
            continue
        return lp, v, poly(hi, env)
    return None


def split(pa, pb, loops_a, loops_b, env, cons, *, poly, poly_expr, expand, to_z3):
    """``(pa, pb)`` with a segment lane read as row and column (see the module doc), adding the
    row/column constraints to ``cons``; unchanged when the form does not apply."""
    la = _lane(pa, loops_a, env, poly, expand)
    lb = _lane(pb, loops_b, env, poly, expand)
    if la is None or lb is None:
        return pa, pb
    (loop_a, va, ha), (loop_b, vb, hb) = la, lb
    monos = [(m, c) for m, c in pa.items() if m != (va,)] + [(m, c) for m, c in pb.items() if m != (vb,)]
    monos += list(ha.items()) + list(hb.items())
    if not ha or not hb:
        return pa, pb
    g, atoms = _common(monos, env)
    if g == 0 or (g == 1 and not atoms):
        return pa, pb
    k = z3.IntVal(g)
    for a in atoms:
        k = k * to_z3(a, "a", env, 1)
    if atoms:
        cons.append(k >= 1)             # the sizes' product is at least 1 (module doc)
    out = []
    for side, p, v, h, lp in (("a", pa, va, ha, loop_a), ("b", pb, vb, hb, loop_b)):
        u, r = f"{lp.var}__row", f"{lp.var}__col"
        env.loopvars |= {u, r}
        zu, zr = env.sym(u, side), env.sym(r, side)
        m = to_z3(poly_expr(_divide(h, g, atoms)), side, env, 1)
        cons += [env.sym(lp.var, side) == k * zu + zr, zr >= 0, zr < k, zu >= 0, zu < m]
        q = _divide({mm: c for mm, c in p.items() if mm != (v,)}, g, atoms)
        q[(N.Var(u),)] = q.get((N.Var(u),), 0) + 1
        out.append(q)
    return out[0], out[1]
