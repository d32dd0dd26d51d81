"""Blocks of staged rows -> one staged row per iteration (the block half of
``passes/unstage_rows.py``).

A BANG row kernel that stages a *block* of rows at once (layernorm.mlu) walks its rows as::

    for (int r0 = L; r0 < H; r0 += B) {
        int nb = H - r0 < B ? H - r0 : B;                      // rows in this block
        int nb_padded = (nb + ALIGN - 1) / ALIGN * ALIGN;
        for (i < nb * padded) x_buf[i] = 0;                    // flat over the block
        for (seg < nb) for (j < cols) x_buf[seg * padded + j] = (x + (long)r0 * cols)[seg * cols + j];
        for (k < nb_padded) stats[k] = 1.0f;                   // lanes k >= nb are never used
        for (k < nb) { float *row = x_buf + k * padded; ... stats[k] = ...; }
        for (i < nb * padded) x_buf[i] = x_buf[i] * gamma_buf[i % padded];
        for (seg < nb) for (j < cols) (y + (long)r0 * cols)[seg * cols + j] = x_buf[seg * padded + j];
    }

:func:`rows_of_block` turns the block body into the body of *one row* ``K`` (``K`` = the row's
index in the block): every statement above is a loop over the block's rows (a *row statement*);
its body for row ``K`` is kept, with each buffer access ``b[K * S_b + col]`` (``S_b``: the buffer's
row stride, ``padded`` for ``x_buf``, 1 for ``stats``, 0 for ``gamma_buf``) written ``b[col]``: the
buffer seen as the row's own slice. A flat loop ``for (i < nb * W)`` is the row statement
``for (c < W)`` with ``b[i]`` -> ``b[c]`` (stride W) and ``b[i % W]`` -> ``b[c]`` (stride 0).
The rows are then *fused*: row ``K`` runs all its statements before row ``K + 1`` starts.
:func:`merge` finally writes ``for (r0 = L; r0 < H; ++r0) ROW(r0)`` (global addresses made
``g[(long)r0 * W + col]``).

Blocks dealt to the tasks in turn (``r0 = taskId * B; r0 += taskDim * B``) are proven and merged
by ``passes/round_robin_rows.py`` (XP4287), and a sum-pool of the block read back as row sums by
``passes/sumpool_rows.py`` (XP4288) before the rows are taken apart.

Obligations (each refusal an XP4281 naming it; Z3 with the kernel's integer declarations, the
block's ``nb``, and the facts ``r0 < H``, ``B >= 1``):

* **the block**: ``nb == min(H - r0, B)`` and the loop's step is ``B``; ``L``, ``H``, ``B`` are not
  assigned in the loop. With ``B >= 1`` the blocks visit the rows ``L .. H-1`` in order, each once,
  row ``r0 + K`` as row ``K`` of its block; with ``B <= 0`` the loop, once entered, never ends
  (``r0`` never grows; a loop that never ends without I/O, volatile or atomic accesses is
  undefined behaviour in C++, [intro.progress]), so the source defines nothing to keep there;
* **row statements**: a loop ``for (k = 0; k < T; ++k)`` with ``T == nb`` or ``T >= nb``, or a flat
  loop ``for (i = 0; i < nb * W; ++i)`` whose body uses ``i`` only as ``b[i]`` / ``b[i % W]``
  (``[0, nb*W)`` is rows ``[0, nb)`` of ``W`` lanes, in order, since ``nb >= 1``; ``(K*W + c) % W ==
  c`` for ``0 <= c < W``). A loop with ``T > nb`` may only write buffers (its rows past ``nb`` are
  never read by a row below ``nb``: every access is to the row's own slice);
* **slices**: every access to a buffer with a row stride is ``K * S_b + col`` (Z3 identity), the
  same ``S_b`` everywhere, and ``0 <= col < S_b`` for every lane it is read or written at, so the
  rows' slices are disjoint;
* **fusion**: a buffer without a row stride (``sq_buf``, a scratch row) that the block writes is
  used by one row statement only (else one row would read what another row left there); no
  row statement assigns a scalar declared outside it; global memory that is written is never
  read (pointer parameters are distinct). So each row's statements touch only that row's
  slices, its own scratch and its own global elements, and running them row by row gives the
  block's result.
"""
from __future__ import annotations

import z3

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, substitute, walk

from . import dependence as D
from .decache import _flatten, _is_int, _pure, _vars

KVAR = "xp__row"           # the row's index in its block, in the fused body
ROWV = "xp__r"             # the row (block start + index) while merge rewrites addresses


class Refused(Exception):
    def __init__(self, why: str, code: str = "XP4281", node=None):
        super().__init__(why)
        self.code, self.node = code, node


def block_rows(loop: N.For, stmts: list, z):
    """``(nb declaration, B)`` when ``loop``'s body (``stmts``) is a block of rows: it declares
    ``nb == min(H - r0, B)``; else None."""
    H = loop.hi
    r0 = N.Var(loop.var)
    for s in stmts:
        if not (isinstance(s, N.Decl) and isinstance(s.init, N.Cond) and isinstance(s.type, N.Scalar)):
            continue
        c = s.init
        for B in (c.else_, c.then):
            if not _pure(B) or loop.var in _vars(B):
                continue
            want = N.Cond(N.BinOp("<", N.BinOp("-", H, r0), B), N.BinOp("-", H, r0), B)
            if z.valid(lambda t: t(s.init) == t(want)):
                return s, B
    return None


def _min_ok(z, loop, B):
    return z.valid(lambda t: t(loop.step) == t(B))


class _Block:
    def __init__(self, loop, stmts, nb_decl, B, buffers, z, fn):
        self.loop, self.stmts, self.nb, self.B = loop, stmts, nb_decl, B
        self.buffers, self.z, self.fn = buffers, z, fn
        self.stride = {}            # buffer -> stride Expr (Const 0: shared)
        self.shared_owner = {}      # shared buffer written in the block -> row statement number

    def nbv(self):
        return N.Var(self.nb.name)

    # --------------------------------------------------------------------------- strides
    def _set_stride(self, b, S, node):
        old = self.stride.get(b)
        if old is None:
            self.stride[b] = S
        elif not self.z.valid(lambda t: t(old) == t(S)):
            raise Refused(f"'{b}' is used with two row strides in the block", node=node)

    def _access(self, e, v):
        """``b[...]`` / ``(b + off)[...]`` of a staged buffer with row variable ``v``: the access
        rewritten as ``b[col]``, stride recorded; other expressions unchanged."""
        if not isinstance(e, N.Index):
            return e
        b, off = D._split_ptr(e.base)
        if b not in self.buffers:
            return e
        full = e.index if off is None else N.BinOp("+", off, e.index)
        col = substitute(full, {v: N.Const(0, "int32", "0")})
        at1 = substitute(full, {v: N.Const(1, "int32", "1")})
        S = N.BinOp("-", at1, col)
        if not self.z.valid(lambda t: t(full) == t(N.Var(v)) * t(S) + t(col)):
            raise Refused(f"'{b}' is read or written at an index that is not row * stride + column", node=e)
        if self.z.valid(lambda t: t(S) == 0):
            S = N.Const(0, "int32", "0")
        else:
            # a readable stride: the block's own names when one of them equals it
            for cand in [N.Var(x) for x in sorted(self.z.lets)] + [N.Const(1, "int32", "1")]:
                if self.z.valid(lambda t: t(cand) == t(S)):
                    S = cand
                    break
        self._set_stride(b, S, e)
        return N.Index(N.Var(b), _fold0(col), loc=e.loc)

    # --------------------------------------------------------------------------- statements
    def row_statements(self) -> list:
        fused = []
        for no, s in enumerate(self.stmts):
            if isinstance(s, N.Comment) or s is self.nb:
                continue
            if isinstance(s, N.Decl):
                if not (isinstance(s.type, N.Scalar) and s.init is not None and _pure(s.init)) or \
                        _vars(s.init) & set(self.buffers):
                    raise Refused(f"the block declares '{s.name}' that is not a pure scalar", node=s)
                # a block-level scalar (nb_padded, a detensorized operand): pure and the same for every
                # row of the block, so each row may compute it where it stands
                fused.append(s)
                continue
            if not isinstance(s, N.For):
                raise Refused(f"a {type(s).__name__} statement in the block of rows (only loops over its rows)",
                              node=s)
            fused.extend(self._row_statement(s, no))
        self._check_columns(fused)
        return fused

    def _row_statement(self, lp: N.For, no: int) -> list:
        if not (_is_int(lp.lo, 0) and _is_int(lp.step, 1) and lp.binding is None and lp.var_type is not None):
            raise Refused(f"loop '{lp.var}' of the block does not run over its rows from 0", node=lp)
        nb = self.nbv()
        if self.z.valid(lambda t: t(lp.hi) == t(nb)):
            exact = True
        else:
            flat = self._flat(lp)
            if flat is not None:
                return [self._shared_check(flat, no)]
            if not self.z.valid(lambda t: t(lp.hi) >= t(nb)):
                raise Refused(f"loop '{lp.var}' of the block may not cover its rows [0, {self.nb.name})", node=lp)
            exact = False
        body = _flatten(lp.body.stmts)
        # row pointers (float *row = x_buf + k * padded) are read through their value
        ptrs = {}
        rest = []
        for s in body:
            if isinstance(s, N.Decl) and isinstance(s.type, N.Pointer) and s.init is not None and \
                    D._split_ptr(s.init)[0] in self.buffers and s.name not in D.assigned_names(self.fn.body):
                ptrs[s.name] = substitute(s.init, ptrs)
                continue
            rest.append(s)
        body = [substitute(s, ptrs) for s in rest]
        v = lp.var
        body = [rewrite(s, lambda n: self._access(n, v)) for s in body]
        body = [substitute(s, {v: N.Var(KVAR)}) for s in body]
        outer = {n.target.name for n in walk(tuple(body)) if isinstance(n, N.Assign) and isinstance(n.target, N.Var)}
        own = {d.name for d in walk(tuple(body)) if isinstance(d, N.Decl)}
        if outer - own:
            raise Refused(f"loop '{lp.var}' assigns '{sorted(outer - own)[0]}' across the rows of the block", node=lp)
        if not exact:
            if any(isinstance(n, N.Assign) and _root(n.target) is not None and _root(n.target) not in self.buffers
                   for n in walk(tuple(body))):
                raise Refused(f"loop '{lp.var}' runs past the block's rows and stores to global memory", node=lp)
        out = []
        for s in body:
            out.append(self._shared_check(s, no))
        return out

    def _flat(self, lp: N.For):
        """A flat loop over ``nb * W`` lanes whose body uses its counter only as ``b[i]`` / ``b[i % W]``:
        the row statement ``for (i = 0; i < W; ++i)``, else None."""
        hi = lp.hi
        if not (isinstance(hi, N.BinOp) and hi.op == "*"):
            return None
        nb = self.nbv()
        for A, W in ((hi.lhs, hi.rhs), (hi.rhs, hi.lhs)):
            if not (_pure(W) and self.z.valid(lambda t: t(A) == t(nb))):
                continue
            v = lp.var
            ok = True

            def fn(n):
                nonlocal ok
                if isinstance(n, N.Index):
                    b, off = D._split_ptr(n.base)
                    if b in self.buffers and off is None:
                        if isinstance(n.index, N.Var) and n.index.name == v:
                            self._set_stride(b, W, n)
                            return n
                        if isinstance(n.index, N.BinOp) and n.index.op == "%" and isinstance(n.index.lhs, N.Var) \
                                and n.index.lhs.name == v and self.z.valid(lambda t: t(n.index.rhs) == t(W)):
                            self._set_stride(b, N.Const(0, "int32", "0"), n)
                            return N.Index(n.base, N.Var(v), loc=n.loc)
                return n
            new_body = rewrite(lp.body, fn)
            left = sum(1 for n in walk(new_body) if isinstance(n, N.Var) and n.name == v)
            elems = sum(1 for n in walk(new_body) if isinstance(n, N.Index) and isinstance(n.index, N.Var)
                        and n.index.name == v and D._split_ptr(n.base)[0] in self.buffers)
            if left != elems:
                raise Refused(f"flat loop '{v}' over the block uses its counter other than as a buffer lane", node=lp)
            return lp.with_(hi=W, body=new_body)
        return None

    def _shared_check(self, s, no):
        """A buffer without row stride that the block writes is used by one row statement only."""
        for n in walk(s):
            if isinstance(n, N.Assign) and _root(n.target) in self.buffers:
                b = _root(n.target)
                S = self.stride.get(b)
                if S is not None and _is_int(S, 0):
                    if self.shared_owner.setdefault(b, no) != no:
                        raise Refused(f"scratch buffer '{b}' is written by two loops of the block (a value "
                                      "one row leaves for another)", node=n)
        for b, owner in self.shared_owner.items():
            if owner != no and b in _vars(s):
                raise Refused(f"scratch buffer '{b}' is written in one loop of the block and used in another",
                              node=s)
        return s

    def _check_columns(self, fused):
        """``0 <= col < S_b`` for every access to a buffer with a row stride."""
        def visit(node, loops):
            if isinstance(node, N.For):
                loops = loops + [node]
            if isinstance(node, N.Index) and isinstance(node.base, N.Var) and node.base.name in self.stride:
                S = self.stride[node.base.name]
                if not _is_int(S, 0):
                    col = node.index
                    lp = next((l for l in reversed(loops) if isinstance(col, N.Var) and col.name == l.var), None)
                    if lp is not None:
                        # a lane below 0 is below the buffer for row 0 (every row statement runs for
                        # row 0, nb >= 1): out of bounds, undefined in the source, so lo >= 0 is assumed
                        # for a loop whose bounds are the same in every row
                        ok = KVAR not in _vars(lp.lo) | _vars(lp.hi) and self.z.valid(
                            lambda t: z3.Or(t(lp.lo) >= t(lp.hi), t(lp.lo) < 0, t(lp.hi) <= t(S)))
                    else:
                        ok = _pure(col) and not (_vars(col) & {l.var for l in loops}) and \
                            self.z.valid(lambda t: z3.And(t(col) >= 0, t(col) < t(S)))
                    if not ok:
                        raise Refused(f"an access to '{node.base.name}' may leave its row's slice "
                                      f"(stride {_c(S)})", node=node)
            for c in node.children():
                visit(c, loops)
        for s in fused:
            visit(s, [])


def _root(e):
    if isinstance(e, N.Index):
        return D._split_ptr(e.base)[0]
    return None


def _fold0(e):
    """``x * 0`` / ``0 * x`` -> 0, then loop recovery's constant folding (``+ 0``, ``* 1``)."""
    from .loop_recovery import _fold

    def fn(n):
        if isinstance(n, N.BinOp) and n.op == "*" and (_is_int(n.lhs, 0) or _is_int(n.rhs, 0)):
            return N.Const(0, "int32", "0")
        if isinstance(n, N.Cast) and isinstance(n.type, N.Scalar) and _is_int(n.expr):
            return n.expr
        return n
    return _fold(rewrite(e, fn))


def _c(e) -> str:
    from .unstage_rows import _c as show
    return show(e)


def rows_of_block(loop, stmts, buffers, z, fn):
    """``(nb declaration, B, fused row statements over KVAR)`` for a block-of-rows loop, None when
    ``loop`` is no such loop; raises Refused when it is one but an obligation fails."""
    hit = block_rows(loop, stmts, z)
    if hit is None:
        return None
    nb_decl, B = hit
    in_turn = False
    if not _min_ok(z, loop, B):
        from .round_robin_rows import dealt_in_turn, shaped_in_turn
        in_turn = dealt_in_turn(loop, B, z)
        if not in_turn and shaped_in_turn(loop, B, z):
            raise Refused(f"the blocks of loop '{loop.var}' are dealt to the tasks in turn, but Z3 did not prove "
                          "that they cover every row once", "XP4287", node=loop)
    if not in_turn and not _min_ok(z, loop, B):
        raise Refused(f"the blocks of loop '{loop.var}' are not contiguous: its step {_c(loop.step)} is not the "
                      f"block size {_c(B)} (rows dealt to tasks block by block)", node=loop)
    changed = D.assigned_names(loop.body) & (_vars(loop.hi) | _vars(B) | _vars(loop.lo) | {loop.var})
    if changed:
        raise Refused(f"loop '{loop.var}' assigns '{sorted(changed)[0]}', which defines its blocks", node=loop)
    from . import sumpool_rows
    try:
        stmts = sumpool_rows.rewrite(stmts, buffers, z, N.Var(nb_decl.name))
    except sumpool_rows.Refused as e:
        raise Refused(str(e), e.code, e.node) from None
    blk = _Block(loop, stmts, nb_decl, B, buffers, z, fn)
    return nb_decl, B, blk.row_statements(), in_turn


def merge(loop: N.For, fused: list, fn, z, int_params, in_turn: bool = False) -> N.For:
    """``for (r0 = L; r0 < H; ++r0) ROW(r0)``: every global address of ``fused`` that names the block
    start ``r0`` or the row ``KVAR`` is ``(r0 + KVAR) * W + col`` (Z3 identity), written
    ``g[(long)r0 * W + col]``; no other use of them may be left."""
    r0 = loop.var

    def fn_(n):
        if not isinstance(n, N.Index):
            return n
        g, off = D._split_ptr(n.base)
        if g is None or not ({r0, KVAR} & _vars(n)):
            return n
        full = n.index if off is None else N.BinOp("+", off, n.index)
        zero = {r0: N.Const(0, "int32", "0"), KVAR: N.Const(0, "int32", "0")}
        col = _fold0(substitute(full, zero))
        for W in [N.Var(p) for p in int_params] + [None]:
            if W is None:
                break
            want = N.BinOp("+", N.BinOp("*", N.BinOp("+", N.Var(r0), N.Var(KVAR)), W), col)
            if z.valid(lambda t: t(full) == t(want)):
                idx = N.BinOp("+", N.BinOp("*", N.Cast(N.Scalar("int64", "long"), N.Var(ROWV)), W), col)
                return N.Index(N.Var(g), _fold0(idx), loc=n.loc)
        raise Refused(f"global access to '{g}' is not row * width + column", node=n)
    body = [rewrite(s, fn_) for s in fused]
    if _vars(tuple(body)) & {KVAR, r0}:
        raise Refused(f"the row's body uses the block start '{r0}' or its row in the block other than in "
                      "a global address", node=loop)
    body = [substitute(s, {ROWV: N.Var(r0)}) for s in body]
    from .task_slices import ROWS_PRAGMA
    if in_turn:
        # blocks dealt to the tasks in turn (round_robin_rows): the same rows, one at a time; the caller
        # proves the rows independent
        from .round_robin_rows import TASK_ID, TASK_DIM
        return loop.with_(lo=TASK_ID, step=TASK_DIM, body=loop.body.with_(stmts=tuple(body)),
                          var_type=N.Scalar("int64", "long"))
    # the row counter is a long: the addresses were (long)r0 * W + col, and the task slices write
    # the collapsed row in the counter's type
    return loop.with_(step=N.Const(1, "int32", "1"), body=loop.body.with_(stmts=tuple(body)), pragmas=(ROWS_PRAGMA,),
                      var_type=N.Scalar("int64", "long"))
