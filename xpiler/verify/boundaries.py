"""Boundary instances derived from a kernel's loops (docs/verification.md, "Derived boundary instances").

A hand-written spec lists a few instances; a loop that walks a size in steps of a tile, a
chunk, a run length or a block of threads is only tested at the remainders those instances
happen to leave. A bound that is off by one (``k0 < K - 1`` stepping by 16) is wrong only when
``K`` leaves a remainder of 1, and a reduction that forgets the last warp is wrong only when
the last warp holds data. ``derive(...)`` looks at the loops the kernel runs (and the conditions
it branches on) and adds at most ``MAX_DERIVED`` small instances that reach those boundaries:

* **tile** -- a loop whose start does not depend on the thread/task index and whose step is
  larger than 1 (``for (k0 = 0; k0 < K; k0 += BK)``): a size where the trip leaves exactly one
  element for the last step after at least one full step (``K = 33`` for a step of 16 when
  the spec's smallest K is 32). The bound is read without a small added constant (``K - 1``
  counts as ``K``), so an off-by-one bound is tested where it does harm.
* **warp** -- cuda/hip: a loop strided by the whole block (``for (j = threadIdx.x; j < S; j +=
  blockDim.x)``) followed by a warp collective (shuffle, vote; also inside a helper it calls):
  a size large enough that the last warp holds data (``S = 97`` for 4 warps of 32).
* **stride** -- a thread/task/grid-strided loop: a size just above a multiple of the stride
  (only when no instance already leaves a ragged last sweep).
* **residue** -- a loop whose start or bound divides an expression over the sizes (the kernel's
  scalar parameters; a local defined once is read through its definition) by a constant c >= 3:
  ``x / c``, ``x % c``, ``x >> k`` (c = 2^k), ``x & (c - 1)``, ``x & ~(c - 1)`` -- the whole
  float4 chunks ``i4 < n / 4`` of a vector loop and ``n / 4 * 4`` where its scalar tail starts:
  a size where x leaves the largest remainder, ``x % c == c - 1``, after at least one whole
  chunk (``n = 7`` for c = 4 when the smallest n is 5: a 3-element tail). Added constants of at
  most c are dropped from x first (``(n + 3) / 4`` and ``(cols + ALIGN - 1) / ALIGN`` read ``n``
  and ``cols``); when what is dropped is exactly c - 1 (a rounded-up count) the size is also
  sought at remainder 1, one past whole chunks, where the last chunk holds a single element
  (``(cols + 31) / 32`` at ``cols = 33``). Loops of the kernel function only (not of a helper it calls).
* **last** -- an ``if`` in a stepped loop's body that compares what is left for the last trip
  with a constant (``if (xg_mr > 3)``, ``xg_mr = xg_mc - xg_ir``): the loop's last trip is run
  as well as its first, and instances are sought where the compared value is at each side of
  the guard's edge there (3 and 4).
* **branch** -- an ``if`` on sizes only (no thread/task index) that every instance of the spec
  evaluates the same way (a BANG fallback past the NRAM buffer): an instance that takes the other
  branch, searched from every size at its smallest value, up to ``BRANCH_CAP_ELEMENTS``, an
  instance of its own; then the loops only that branch runs get their tile/stride boundary on it.

How: the kernel is parsed once; a small evaluator runs its scalar code for thread/task 0 of an
instance (sizes, scalars and launch dimensions bound, one pass through every loop body) and
records each loop's start, bound and step (and, for each division of a size by a constant in
them, the dividend and its remainder). Targets come from the spec's own instances; a target
that an instance of the spec already reaches adds nothing. For each other target, one size at a
time is moved on top of the smallest instance first (or on top of an instance derived for an
earlier target, so one instance can reach several boundaries): from the smallest value the spec
uses for that size, doubling and bisection find where the trip first exceeds a step, and a short
linear scan from there the congruence. The first value that reaches the boundary is taken,
provided the instance is valid for the spec (its expressions, launch and limits), keeps every
size a multiple of what all of the spec's instances are multiples of (a spec that only ever tests
K as a multiple of 16 is taken to require it), satisfies ``[test] constraints``, passes the
kernel's own asserts and traps for thread 0 (and reaches the loop: an early return stops the walk), and
stays small. Everything is a pure function of the kernel text and the spec, so the
same instances come back on every run (provenance replay re-derives them).
``[test] derive_boundaries = false`` in the spec turns it off.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..ir import nodes as N
from ..ir.intrinsics import REGISTRY
from ..ir.visit import walk

MAX_DERIVED = 4          # derived instances per kernel
EVAL_BUDGET = 4000       # kernel evaluations per derivation (deterministic bound on the search)
SCAN_MAX = 1 << 20       # largest size value tried (the element cap usually stops the scan first)
SCAN_LINEAR_MAX = 1 << 14   # up to here a scan that meets the element cap scans linearly below it
BRANCH_EVALS = 800       # kernel evaluations for all branch targets of one derivation
MIN_CAP_ELEMENTS = 1 << 16
BRANCH_CAP_ELEMENTS = 1 << 19   # element cap of an instance derived to take a branch no instance takes
MIN_CAP_THREADS = 1 << 16
CAPDIV_EVALS = 400       # kernel evaluations for the capacity targets of one derivation
CAPDIV_MAX = 2           # capacity instances per derivation (besides MAX_DERIVED)
CAP_MIN = 1024           # an integer literal at least this large divided by a size is a capacity (capdiv)
WARP = {"cuda": 32, "hip": 64}
#: calls that stop the kernel: reaching one means the kernel refuses the instance
_TRAPS = frozenset({"__trap", "__builtin_trap", "abort", "exit", "__assert_fail"})
_MINMAX = {"min": min, "max": max, "fminf": min, "fmaxf": max, "fmin": min, "fmax": max, "std::min": min,
           "std::max": max, "umin": min, "umax": max, "__min": min, "__max": max, "imin": min, "imax": max}
_INT = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "char", "bool"}


@dataclass
class Derived:
    """One derived instance: the full size binding, what it was scaled from and why."""
    name: str
    base: str
    sizes: dict
    changed: dict
    reasons: list = field(default_factory=list)
    targets: list = field(default_factory=list, repr=False)

    def describe(self) -> str:
        ch = ", ".join(f"{k}={v}" for k, v in self.changed.items())
        return f"{self.name} ({ch}, from '{self.base}'): " + "; ".join(self.reasons)

    def to_json(self) -> dict:
        return {"name": self.name, "base": self.base, "sizes": dict(self.sizes), "changed": dict(self.changed),
                "reasons": list(self.reasons)}


# ------------------------------------------------------------------------------ the evaluator
class _Ret(Exception):
    pass


def _tdiv(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _num(v):
    return v is not None and not isinstance(v, bool) and isinstance(v, (int, float))


def _assigned(node) -> set:
    out = set()
    for n in walk(node):
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            out.add(n.target.name)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
            out.add(n.operand.name)
        elif isinstance(n, N.For):
            out.add(n.var)
        elif isinstance(n, N.Decl):
            out.add(n.name)
    return out


class _Eval:
    """Runs the scalar code of one kernel for one thread/task of one instance."""

    def __init__(self, prog: N.Program, kernel: N.Func, dialect: str):
        self.prog, self.kernel, self.dialect = prog, kernel, dialect
        self.macros = prog.macro_table()
        self.funcs = {f.name: f for f in prog.funcs if f.body is not None}
        self.warp = WARP.get(dialect, 32)
        self._assigned_cache: dict = {}
        self.params = [p.name for p in kernel.params]
        self._defs = _single_defs(kernel.body, set(self.params))
        self._res_cache: dict = {}

    def assigned(self, node) -> set:
        r = self._assigned_cache.get(id(node))
        if r is None:
            r = self._assigned_cache[id(node)] = _assigned(node) if node is not None else set()
        return r

    def run(self, inst, index: int = 0) -> tuple[dict, bool]:
        """{id(loop): (loop, lo, hi, step)} for thread/task ``index`` (0 or 1) of ``inst``, and
        whether the kernel refused the instance (a failed assert)."""
        self.obs: dict = {}
        self.conds: dict = {}
        self.refused = False
        self.depth = 0
        self.unsure = 0
        self.last = None          # the tail guards of the loop whose last trip is being run
        self.b = self._builtins(inst, index)
        env: dict = {}
        scal = [a for a in inst.args]
        for p, a in zip(self.kernel.params, scal):
            env[p.name] = inst.scalars.get(a.name) if a.role == "scalar" else None
        self.penv = dict(env)
        try:
            self.stmt(self.kernel.body, env)
        except _Ret:
            pass
        except (RecursionError, ZeroDivisionError, OverflowError, ValueError):
            pass
        for key, (node, val) in self.conds.items():     # branches: ("if", id) -> (If, value, None, None)
            self.obs[("if", key)] = (node, val, None, None)
        return self.obs, self.refused

    def _builtins(self, inst, index) -> dict:
        b: dict = {"warpSize": self.warp}
        blk = inst.block or (1, 1, 1)
        grd = inst.grid or (1, 1, 1)
        for i, ax in enumerate("xyz"):
            b[f"threadIdx.{ax}"] = index if ax == "x" else 0
            b[f"blockIdx.{ax}"] = 0
            b[f"blockDim.{ax}"] = blk[i]
            b[f"gridDim.{ax}"] = grd[i]
        dim = inst.dim or (1, 1, 1)
        td = dim[0] * dim[1] * dim[2]
        core = 4 if inst.func_type and inst.func_type != "block" else 1
        b.update({"taskDim": td, "taskDimX": dim[0], "taskDimY": dim[1], "taskDimZ": dim[2], "coreDim": core,
                  "clusterDim": max(1, td // core), "taskId": index, "taskIdX": index, "taskIdY": 0, "taskIdZ": 0,
                  "coreId": index % core if core > 1 else 0, "clusterId": index // core if core > 1 else index})
        return b

    # -- expressions -----------------------------------------------------------------------
    def ev(self, e, env):
        if isinstance(e, N.Const):
            if isinstance(e.value, bool):
                return int(e.value)
            return e.value if isinstance(e.value, (int, float)) else None
        if isinstance(e, N.Var):
            if e.name in env:
                return env[e.name]
            m = self.macros.get(e.name)
            if m is not None and m.params is None and m.expr is not None and self.depth < 20:
                self.depth += 1
                try:
                    return self.ev(m.expr, env)
                finally:
                    self.depth -= 1
            return None
        if isinstance(e, N.Builtin):
            return self.b.get(e.name)
        if isinstance(e, N.BinOp):
            return self._bin(e, env)
        if isinstance(e, N.UnOp):
            if e.op in ("++", "--", "p++", "p--") and isinstance(e.operand, N.Var):
                old = env.get(e.operand.name)
                new = old + (1 if "+" in e.op else -1) if _num(old) else None
                env[e.operand.name] = new
                return old if e.op.startswith("p") else new
            v = self.ev(e.operand, env)
            if not _num(v):
                return None
            if e.op == "-":
                return -v
            if e.op == "+":
                return v
            if e.op == "!":
                return int(not v)
            if e.op == "~" and isinstance(v, int):
                return ~v
            return None
        if isinstance(e, N.Cond):
            c = self.ev(e.cond, env)
            if _num(c):
                return self.ev(e.then if c else e.else_, env)
            a, b = self.ev(e.then, env), self.ev(e.else_, env)
            return a if a == b else None
        if isinstance(e, N.Cast):
            v = self.ev(e.expr, env)
            if _num(v) and isinstance(e.type, N.Scalar):
                if e.type.dtype in _INT:
                    return int(v)
                if e.type.dtype.startswith("float") or e.type.dtype == "bfloat16":
                    return float(v)
            return None
        if isinstance(e, N.SizeOf):
            if isinstance(e.arg, N.Scalar):
                from ..dtypes import NUMPY
                import numpy as np
                d = e.arg.dtype
                if d in NUMPY:
                    return int(np.dtype(NUMPY[d]).itemsize)
                return {"float64": 8, "uint16": 2, "uint32": 4, "uint64": 8, "char": 1, "bool": 1}.get(d)
            return None
        if isinstance(e, N.AssignExpr) and isinstance(e.target, N.Var):
            self._assign(e.target.name, e.op, e.value, env)
            return env.get(e.target.name)
        if isinstance(e, N.Comma):
            r = None
            for x in e.exprs:
                r = self.ev(x, env)
            return r
        if isinstance(e, N.Call) and isinstance(e.func, str):
            return self._call(e, env)
        if isinstance(e, N.Intrinsic):
            if e.name in _MINMAX:
                vals = [self.ev(a, env) for a in e.args]
                return _MINMAX[e.name](vals) if vals and all(_num(v) for v in vals) else None
            if e.name == "__builtin_expect" and e.args:   # pragma: no cover - rare
                return self.ev(e.args[0], env)
        return None

    def _bin(self, e, env):
        op = e.op
        a = self.ev(e.lhs, env)
        if op in ("&&", "||"):
            if _num(a) and ((op == "&&" and not a) or (op == "||" and a)):
                return int(bool(a))
            b = self.ev(e.rhs, env)
            if _num(a) and _num(b):
                return int(bool(a and b) if op == "&&" else bool(a or b))
            if _num(b) and ((op == "&&" and not b) or (op == "||" and b)):
                return int(bool(b))
            return None
        b = self.ev(e.rhs, env)
        if not (_num(a) and _num(b)):
            return None
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op in ("/", "%") and isinstance(e.lhs, N.Const) and isinstance(a, int) and not isinstance(a, bool) \
                and a >= CAP_MIN and isinstance(b, int) and 0 < b and ("cap", id(e)) not in self.obs:
            self.obs[("cap", id(e))] = (e, a, b, None)    # a capacity divided by a size: rows that fit
        if op == "/":
            return None if b == 0 else _tdiv(a, b)
        if op == "%":
            if b == 0 or isinstance(a, float) or isinstance(b, float):
                return None
            return a - b * _tdiv(a, b)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return int({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op])
        if isinstance(a, int) and isinstance(b, int):
            if op == "<<" and 0 <= b < 64:
                return a << b
            if op == ">>" and 0 <= b < 64:
                return a >> b
            if op == "&":
                return a & b
            if op == "|":
                return a | b
            if op == "^":
                return a ^ b
        return None

    def _call(self, e: N.Call, env):
        name = e.func
        if name in _MINMAX:
            vals = [self.ev(a, env) for a in e.args]
            return _MINMAX[name](vals) if vals and all(_num(v) for v in vals) else None
        if name in ("abs", "fabsf", "fabs", "labs"):
            v = self.ev(e.args[0], env) if e.args else None
            return abs(v) if _num(v) else None
        if name == "assert" and e.args:
            v = self.ev(e.args[0], env)
            if _num(v) and not v and not self.unsure:
                self.refused = True
            return None
        if name in _TRAPS:
            # a trap reached for these sizes: the kernel refuses them, like a failed assert
            # (e.g. the capacity guard passes/runtime_arrays.py puts before a bounded array);
            # not one under a condition the sizes do not decide (`if (buf == 0) abort();` after a
            # malloc: the run itself shows whether it is reached)
            if not self.unsure:
                self.refused = True
            return None
        m = self.macros.get(name)
        if m is not None and m.params is not None and m.expr is not None and len(m.params) == len(e.args) \
                and self.depth < 20:
            from ..ir.visit import substitute
            self.depth += 1
            try:
                return self.ev(substitute(m.expr, dict(zip(m.params, e.args))), env)
            finally:
                self.depth -= 1
        f = self.funcs.get(name)
        if f is not None and f is not self.kernel and self.depth < 6 and len(f.params) == len(e.args):
            # a device helper: run its body (its loops count too) with the arguments bound
            callee = {p.name: self.ev(a, env) for p, a in zip(f.params, e.args)}
            self.depth += 1
            try:
                self.stmt(f.body, callee)
            except _Ret as r:
                return r.args[0] if r.args else None
            finally:
                self.depth -= 1
            return None
        for a in e.args:   # arguments may still have effects on locals (x++)
            if isinstance(a, (N.UnOp, N.AssignExpr)):
                self.ev(a, env)
        return None

    # -- statements ------------------------------------------------------------------------
    def _assign(self, name, op, value, env):
        v = self.ev(value, env)
        if op == "=":
            env[name] = v
            return
        old = env.get(name)
        binop = op[:-1]
        if _num(old) and _num(v):
            env[name] = self._bin(N.BinOp(binop, N.Const(old), N.Const(v)), {})
        else:
            env[name] = None

    def stmt(self, s, env) -> None:
        """Run ``s``; raise _Ret when it returns."""
        if isinstance(s, N.Block):
            for x in s.stmts:
                self.stmt(x, env)
        elif isinstance(s, N.Decl):
            v = self.ev(s.init, env) if s.init is not None and not isinstance(s.init, N.InitList) else None
            if isinstance(s.type, N.Scalar) and _num(v):
                v = int(v) if s.type.dtype in _INT else float(v)
            elif not isinstance(s.type, N.Scalar):
                v = None
            env[s.name] = v
        elif isinstance(s, N.Assign):
            if isinstance(s.target, N.Var):
                self._assign(s.target.name, s.op, s.value, env)
            else:
                self.ev(s.value, env)
        elif isinstance(s, N.ExprStmt):
            self.ev(s.expr, env)
        elif isinstance(s, N.If):
            c = self.ev(s.cond, env)
            if self.last is not None and id(s) in self.last[0]:
                a_side, op, k = self.last[0][id(s)]
                a = self.ev(a_side, env)
                if isinstance(a, int) and not isinstance(a, bool) and ("last", id(s)) not in self.obs:
                    self.obs[("last", id(s))] = (s, a, (op, k), self.last[1])
            if self.last is None and _num(c) and not any(isinstance(n, N.Builtin) for n in walk(s.cond)):
                old = self.conds.get(id(s))
                val = bool(c) if old is None or old[1] == bool(c) else None   # None: both ways in one run
                self.conds[id(s)] = (s, val)
            if _num(c):
                br = s.then if c else s.else_
                if br is not None:
                    self.stmt(br, env)
                return
            outs = []
            self.unsure += 1      # neither branch is known to run: a trap in one refuses nothing
            try:
                for br in (s.then, s.else_):
                    e2 = dict(env)
                    try:
                        if br is not None:
                            self.stmt(br, e2)
                        outs.append(e2)
                    except _Ret:
                        pass
            finally:
                self.unsure -= 1
            if not outs:
                raise _Ret(None)
            for k in set().union(*outs):
                vals = [o.get(k, None) for o in outs]
                env[k] = vals[0] if all(v == vals[0] for v in vals) and all(k in o for o in outs) else None
        elif isinstance(s, N.For):
            step = self.ev(s.step, env)
            lo_full = self.ev(s.lo, env)
            if id(s) not in self.obs:
                self.obs[id(s)] = (s, self.ev(_quantity(s.lo, step), env), self.ev(_quantity(s.hi, step), env), step)
                for j, (q, c, r) in enumerate(self.residues(s)):
                    v = self.ev(q, self.penv)
                    if isinstance(v, int) and not isinstance(v, bool):
                        self.obs[("res", id(s), j)] = (s, v % c, v, c, r)
            hi_full = self.ev(s.hi, env)
            tails = self.tail_guards(s) if self.last is None else {}
            ints = all(isinstance(x, int) and not isinstance(x, bool) for x in (step, lo_full, hi_full))
            if tails and ints and step >= 2 and hi_full > lo_full:
                # the last trip too: a guard on what is left (`if (mr > 3)`, mr = mc - ir) takes its
                # other value only there (a micro tile's remainder rows)
                last = lo_full + (hi_full - lo_full - 1) // step * step
                if last > lo_full:
                    self._loop_body(s.body, self.assigned(s.body) | {s.var}, env, {s.var: lo_full})
                self.last = (tails, step)
                try:
                    self._loop_body(s.body, self.assigned(s.body) | {s.var}, env, {s.var: last})
                finally:
                    self.last = None
            else:
                self._loop_body(s.body, self.assigned(s.body) | {s.var}, env, {s.var: lo_full})
        elif isinstance(s, N.CFor):
            if isinstance(s.init, N.Stmt):
                self.stmt(s.init, env)
            elif isinstance(s.init, N.Expr):
                self.ev(s.init, env)
            self._loop_body(s.body, self.assigned(s.body) | self.assigned(s.next), env, {})
        elif isinstance(s, N.While):
            self._loop_body(s.body, self.assigned(s.body) | self.assigned(s.cond), env, {})
        elif isinstance(s, N.Return):
            raise _Ret(self.ev(s.value, env) if s.value is not None else None)

    def tail_guards(self, loop: N.For) -> dict:
        """{id(If): (the side that varies, operator with it on the left, the constant)} for the
        ``if``s of the loop's body (not inside an inner loop) that compare what the body computes
        from the loop variable with a constant: ``if (xg_mr > 3)`` with ``xg_mr = xg_mc - xg_ir``.
        Loops of the kernel function only."""
        r = self._res_cache.get(("tail", id(loop)))
        if r is not None:
            return r
        out: dict = {}
        flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
        changing = self.assigned(loop.body) | {loop.var}

        def const(e):
            return not any(isinstance(n, N.Builtin) or (isinstance(n, N.Var) and n.name not in self.macros)
                           for n in walk(e)) and isinstance(self.ev(e, {}), int)

        def go(st):
            if isinstance(st, (N.For, N.CFor, N.While)):
                return
            if isinstance(st, N.If):
                c = st.cond
                if isinstance(c, N.BinOp) and c.op in flip:
                    for side, other, op in ((c.lhs, c.rhs, c.op), (c.rhs, c.lhs, flip[c.op])):
                        if const(other) and not const(side) and \
                                {n.name for n in walk(side) if isinstance(n, N.Var)} & changing:
                            out[id(st)] = (side, op, self.ev(other, {}))
                            break
            for ch in (st.children() if isinstance(st, N.Stmt) else ()):
                if isinstance(ch, N.Stmt):
                    go(ch)
        if any(loop is n for n in walk(self.kernel.body)):
            for st in (loop.body.stmts if isinstance(loop.body, N.Block) else (loop.body,)):
                go(st)
        self._res_cache[("tail", id(loop))] = out
        return out

    def residues(self, loop: N.For) -> list:
        """[(dividend, c, r)]: the divisions, modulos, shifts and masks by a constant c >= 3 in the
        loop's start and bound whose dividend is an expression over the kernel's scalar
        parameters (locals defined once are replaced by their definition; small added constants
        are dropped, ``(n + 3) / 4`` measures ``n``), and r the remainder sought: c - 1 (the
        largest tail); a rounded-up count -- the dropped constant is c - 1, ``(cols + 31) / 32``
        -- is sought at r = 1 as well (one element past whole chunks: its last chunk holds a
        single element). Only loops of the kernel itself."""
        r = self._res_cache.get(id(loop))
        if r is not None:
            return r
        out: list = []
        if any(loop is n for n in walk(self.kernel.body)):
            for part in (loop.lo, loop.hi):
                for n in walk(_inline_defs(part, self._defs)):
                    if not isinstance(n, N.BinOp):
                        continue
                    c = self._divisor(n)
                    if c is None or c < 3:
                        continue
                    q, dropped = self._strip_sum(n.lhs, c)
                    names = {v.name for v in walk(q) if isinstance(v, N.Var)}
                    if any(isinstance(v, N.Builtin) for v in walk(q)) or not names & set(self.params) \
                            or any(x not in self.params and x not in self.macros for x in names):
                        continue
                    for r in (c - 1, 1) if dropped == c - 1 else (c - 1,):
                        if all(_expr_key(q) != _expr_key(q2) or c != c2 or r != r2 for q2, c2, r2 in out):
                            out.append((q, c, r))
        self._res_cache[id(loop)] = out
        return out

    def _strip(self, e, c: int):
        """``e`` without added constant terms of at most ``c`` (literals or macros): ``cols + ALIGN
        - 1`` -> ``cols``, so the remainder is read from the size itself."""
        return self._strip_sum(e, c)[0]

    def _strip_sum(self, e, c: int):
        """(``_strip(e, c)``, the sum of the constants dropped)."""
        total = 0
        while isinstance(e, N.BinOp) and e.op in ("+", "-"):
            for keep, term in ((e.lhs, e.rhs), (e.rhs, e.lhs) if e.op == "+" else (None, None)):
                if term is None or any(isinstance(n, N.Builtin) or (isinstance(n, N.Var) and n.name not in self.macros)
                                       for n in walk(term)):
                    continue
                v = self.ev(term, {})
                if isinstance(v, int) and not isinstance(v, bool) and abs(v) <= c:
                    total += -v if e.op == "-" and term is e.rhs else v
                    e = keep
                    break
            else:
                break
        return e, total

    def _divisor(self, e: N.BinOp) -> Optional[int]:
        """c when ``e`` splits its left operand into whole chunks of a constant c and a remainder:
        ``x / c``, ``x % c``, ``x >> k`` (c = 2^k), ``x & (c - 1)``, ``x & ~(c - 1)`` (c a power of 2)."""
        if e.op not in ("/", "%", ">>", "&") or any(isinstance(n, (N.Builtin, N.Var)) and not (
                isinstance(n, N.Var) and n.name in self.macros) for n in walk(e.rhs)):
            return None
        v = self.ev(e.rhs, {})
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        if e.op in ("/", "%"):
            return v if v > 0 else None
        if e.op == ">>":
            return 1 << v if 0 < v < 31 else None
        for m in (v + 1, -v):          # x & (c - 1), x & ~(c - 1)
            if m > 1 and m & (m - 1) == 0:
                return m
        return None

    def _loop_body(self, body, changed, env, first):
        for v in changed:
            env[v] = None
        env.update(first)
        try:
            self.stmt(body, env)
        except _Ret:
            pass
        for v in changed:
            env[v] = None


def _single_defs(body, params: set) -> dict:
    """{name: init} for the locals of ``body`` that are declared once with an initializer and
    never assigned again (parameters too are never assigned, or they are left out)."""
    sites: dict = {}
    for n in walk(body):
        if isinstance(n, N.Decl):
            sites.setdefault(n.name, []).append(n.init if n.init is not None and not isinstance(n.init, N.InitList)
                                                else None)
        elif isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            sites.setdefault(n.target.name, []).append(None)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
            sites.setdefault(n.operand.name, []).append(None)
        elif isinstance(n, (N.For,)):
            sites.setdefault(n.var, []).append(None)
    out = {k: v[0] for k, v in sites.items() if len(v) == 1 and v[0] is not None and k not in params}
    for k in params:
        if k in sites:
            out[k] = None      # a parameter the kernel changes: no longer its launch value
    return out


def _inline_defs(e, defs: dict, depth: int = 0):
    """``e`` with the locals of ``defs`` replaced by their definitions (a few levels deep); a
    parameter the kernel assigns becomes an unknown (``Builtin('?')``), so nothing is read from it."""
    from ..ir.visit import substitute
    names = {n.name for n in walk(e) if isinstance(n, N.Var)} & set(defs)
    if not names or depth > 4:
        return e
    m = {k: (defs[k] if defs[k] is not None else N.Builtin("?")) for k in names}
    return _inline_defs(substitute(e, m), defs, depth + 1)


def _expr_key(e) -> str:
    return repr(e)


def _quantity(e, step):
    """The quantity a loop bound measures: ``e`` without an added constant smaller than the
    step (``K - 1`` -> ``K``, ``n + 1`` from ``i <= n`` -> ``n``). The boundary is where that
    quantity leaves a remainder of 1, so an off-by-one bound is tested where it does harm."""
    if not isinstance(step, int) or isinstance(step, bool) or step < 2:
        return e
    while isinstance(e, N.BinOp) and e.op in ("+", "-"):
        if isinstance(e.rhs, N.Const) and isinstance(e.rhs.value, int) and not isinstance(e.rhs.value, bool) \
                and abs(e.rhs.value) < step:
            e = e.lhs
        elif e.op == "+" and isinstance(e.lhs, N.Const) and isinstance(e.lhs.value, int) \
                and not isinstance(e.lhs.value, bool) and abs(e.lhs.value) < step:
            e = e.rhs
        else:
            break
    return e


# ------------------------------------------------------------------------------ targets
@dataclass
class _Target:
    kind: str           # tile | warp | stride | residue | last | branch | trip2 | capdiv
    key: object         # id() of the For node in its program; ("if", id()) of the If node (branch);
                        # ("res", id(), j) for the j-th division of that For's start/bound (residue)
    loop: N.Stmt        # the For node (the If node of a branch target)
    kernel: int         # index into the kernels list
    text: str           # how the loop reads: "for (k0 = 0; k0 < K; k0 += TILE)"
    warp: int = 32      # lanes per warp/wavefront of that kernel's dialect
    want: object = None           # branch: the value of the condition sought; last: the value compared
    quant: object = None          # residue: the dividend (an expression over the sizes)
    wide: bool = False            # stride: no instance of the spec runs a second sweep (the sweep grows
                                  # with the size until a capacity caps it): searched up to the branch cap

    def where(self) -> str:
        loc = self.loop.loc
        return f"{Path(loc.file).name}:{loc.line}" if loc is not None else "?"


def _reached(t: _Target, o, *, search: bool) -> bool:
    """Whether observation ``o`` = (loop, lo, hi, step) reaches the boundary of target ``t``.
    ``search``: the exact boundary sought for a new instance; else the looser test for whether
    an existing instance already covers it."""
    if o is None:
        return False
    if t.kind == "branch":
        return o[1] is not None and o[1] == t.want
    if t.kind == "residue":       # o = (loop, dividend % c, dividend, c): a whole chunk and c - 1 over
        return o[2] >= o[3] and o[1] == o[4]
    if t.kind == "last":          # o = (If, value on the last trip, (op, constant), step)
        return o[1] == t.want
    _, lo, hi, step = o
    if t.kind == "capdiv":        # o = (expr, C, divisor, None): one row of the divisor fills the buffer
        return isinstance(o[2], int) and o[1] // 2 < o[2] <= o[1]
    if t.kind == "trip2":         # a second trip: the step is taken at least once
        return all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi, step)) and step >= 1 \
            and hi - lo > step
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi, step)) or step < 2:
        return False
    n = hi - lo
    if t.kind == "tile":
        return n > step and n % step == 1
    if t.kind == "warp":
        return step > t.warp and n > step - t.warp
    # stride
    if search:
        return n > step and n % step == 1
    return n > step and n % step != 0



def _expr_text(e, dialect) -> str:
    try:
        from ..printers import printer_for
        return printer_for(dialect).expr(e)
    except Exception:  # noqa: BLE001 - only for a message
        return "?"


def _warp_node(n, warpy_funcs: set) -> bool:
    if isinstance(n, N.Intrinsic):
        d = REGISTRY.get(n.name)
        return d is not None and d.category == "warp"
    if isinstance(n, N.Call) and isinstance(n.func, str):
        return "shfl" in n.func or "ballot" in n.func or n.func in warpy_funcs
    return False


def _warpy_funcs(prog: N.Program) -> set:
    """Names of the functions that run a warp collective (shuffle, vote), directly or through
    a helper they call."""
    out: set = set()
    changed = True
    while changed:
        changed = False
        for f in prog.funcs:
            if f.body is not None and f.name not in out and any(_warp_node(n, out) for n in walk(f.body)):
                out.add(f.name)
                changed = True
    return out


def _feeds_warp_reduction(body: N.Block, loop: N.For, warpy: set) -> bool:
    """Whether a warp collective runs in ``loop`` or after it (in the statements that follow it
    in every enclosing block): the loop's per-thread results are then combined across warps."""
    def path(node, trail):
        if node is loop:
            return trail
        if isinstance(node, N.Block):
            for i, st in enumerate(node.stmts):
                r = path(st, trail + [(node, i)])
                if r is not None:
                    return r
            return None
        for c in node.children() if isinstance(node, N.Stmt) else ():
            if isinstance(c, N.Stmt):
                r = path(c, trail)
                if r is not None:
                    return r
        return None
    trail = path(body, [])
    if trail is None:
        return False
    if any(_warp_node(n, warpy) for n in walk(loop.body)):
        return True
    for blk, i in trail:
        for st in blk.stmts[i + 1:]:
            if any(_warp_node(n, warpy) for n in walk(st)):
                return True
    return False


# ------------------------------------------------------------------------------ derivation
class _Kernel:
    def __init__(self, prog, spec, idx):
        self.prog, self.spec, self.idx = prog, spec, idx
        self.kernel = prog.func(spec.entry)
        self.ev = _Eval(prog, self.kernel, spec.dialect)
        self.warpy = _warpy_funcs(prog) if spec.dialect in WARP else set()


def _elements(inst) -> int:
    return sum(inst.numel(a.name) for a in inst.spec.arrays)


def _threads(inst) -> int:
    if inst.grid and inst.block:
        return math.prod(inst.grid) * math.prod(inst.block)
    return math.prod(inst.dim) if inst.dim else 1


def _launch_ok(inst) -> bool:
    if inst.block is not None and (math.prod(inst.block) > 1024 or inst.block[2] > 64):
        return False
    if inst.grid is not None and (inst.grid[0] >= 1 << 31 or inst.grid[1] > 65535 or inst.grid[2] > 65535):
        return False
    if inst.dim is not None:
        td = math.prod(inst.dim)
        un = {"union1": 1, "union2": 2, "union4": 4, "union8": 8}.get(inst.func_type or "", 0)
        if td > 65536 or (un and td % (4 * un)):
            return False
    return True


def derive(kernels: list, *, max_new: int = MAX_DERIVED, budget: int = EVAL_BUDGET) -> list[Derived]:
    """Derived boundary instances for ``kernels`` = [(program, spec), ...] that share one set of
    sizes (the kernel under test first; in a migration, the source kernel second).

    Returns at most ``max_new`` ``Derived`` (possibly none). Deterministic."""
    if not kernels:
        return []
    spec0 = kernels[0][1]
    ks: list[_Kernel] = []
    for i, (prog, spec) in enumerate(kernels):
        try:
            ks.append(_Kernel(prog, spec, i))
        except KeyError:
            continue
    if not ks:
        return []
    existing = [spec0.instances()] + [k.spec.instances() for k in ks[1:]]
    base_insts = existing[0]
    if not base_insts or not spec0.sizes:
        return []
    state = {"evals": 0}

    def observe(k: _Kernel, inst, index=0):
        state["evals"] += 1
        return k.ev.run(inst, index)

    # 1. targets, from every kernel under every instance of its spec
    targets: list[_Target] = []
    seen: set = set()
    covered_obs: dict = {}   # (kernel, key) -> [observation per existing instance]
    for k in ks:
        per_inst = []
        for inst in k.spec.instances():
            o0, _ = observe(k, inst, 0)
            o1, _ = observe(k, inst, 1)
            per_inst.append((inst, o0, o1))
        for inst, o0, o1 in per_inst:
            for key, o in o0.items():
                loop, lo, hi, step = o[:4]
                covered_obs.setdefault((k.idx, key), [])
                if (k.idx, key) in seen or isinstance(key, tuple):
                    continue
                if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi, step)) or step < 2:
                    continue
                seen.add((k.idx, key))
                lo1 = o1.get(key, (None, None))[1]
                per_thread = lo1 is not None and lo1 != lo
                d = k.spec.dialect
                text = (f"for ({loop.var} = {_expr_text(loop.lo, d)}; {loop.var} < {_expr_text(loop.hi, d)}; "
                        f"{loop.var} += {_expr_text(loop.step, d)})")
                w = WARP.get(k.spec.dialect, 32)
                if not per_thread:
                    targets.append(_Target("tile", key, loop, k.idx, text, w))
                    continue
                nthreads = math.prod(inst.block) if inst.block else 0
                if step == nthreads and nthreads > w and k.warpy and \
                        _feeds_warp_reduction(k.kernel.body, loop, k.warpy):
                    targets.append(_Target("warp", key, loop, k.idx, text, w))
                else:
                    targets.append(_Target("stride", key, loop, k.idx, text, w))
        for key in list(covered_obs):
            if key[0] == k.idx:
                covered_obs[key] = [o0.get(key[1]) for _, o0, _ in per_inst]
        # residue targets: a division (modulo, shift, mask) of an expression over the sizes by a
        # constant c >= 3 in a loop's start or bound (the whole chunks of a vector loop and the
        # remainder its tail loop runs): a size that leaves the largest remainder, c - 1
        for inst, o0, o1 in per_inst:
            for key, o in o0.items():
                if isinstance(key, tuple) and key[0] == "res" and (k.idx, key) not in seen:
                    seen.add((k.idx, key))
                    loop = o[0]
                    q, c, _r = k.ev.residues(loop)[key[2]]
                    d = k.spec.dialect
                    text = (f"for ({loop.var} = {_expr_text(loop.lo, d)}; {loop.var} < {_expr_text(loop.hi, d)}; "
                            f"{loop.var} += {_expr_text(loop.step, d)})")
                    targets.append(_Target("residue", key, loop, k.idx, text, WARP.get(d, 32), quant=q))
        # last-trip targets: a guard in a stepped loop's body on what is left for the last trip
        # (`if (xg_mr > 3)`, the rows of a micro tile's remainder): an instance where the guarded
        # value is at each side of the guard's edge on the last trip (3 and 4 for `> 3`)
        for inst, o0, o1 in per_inst:
            for key, o in o0.items():
                if isinstance(key, tuple) and key[0] == "last" and (k.idx, key) not in seen:
                    seen.add((k.idx, key))
                    op, c = o[2]
                    wants = (c, c + 1) if op in (">", "<=") else (c - 1, c)
                    text = f"if ({_expr_text(o[0].cond, k.spec.dialect)})"
                    for w in wants:
                        if w >= 0:
                            targets.append(_Target("last", key, o[0], k.idx, text, WARP.get(k.spec.dialect, 32),
                                                   want=w))
        # capacity targets: an integer literal C >= CAP_MIN divided (or reduced) by a size, the rows
        # of that size a buffer holds (`16384 / r_pad`): an instance where one row fills more than
        # half of it, C / x == 1 and C % x is the largest, so a row count that overruns the buffer
        # (a remainder taken for the quotient, a quotient plus one) overruns it by a whole row
        for inst, o0, o1 in per_inst:
            for key, o in o0.items():
                if isinstance(key, tuple) and key[0] == "cap" and (k.idx, key) not in seen:
                    seen.add((k.idx, key))
                    covered_obs[(k.idx, key)] = [o0_.get(key) for _, o0_, _ in per_inst]
                    text = f"{_expr_text(o[0], k.spec.dialect)}"
                    targets.append(_Target("capdiv", key, o[0], k.idx, text, WARP.get(k.spec.dialect, 32)))
        # branch targets: a condition on sizes only (no thread/task index; the same for thread
        # 0 and 1) that every instance of the spec evaluates the same way; the other branch is
        # never run (a fallback for sizes past an NRAM or shared-memory limit, a tail path)
        conds: dict = {}
        for inst, o0, o1 in per_inst:
            for key, o in o0.items():
                if isinstance(key, tuple) and key[0] == "if":
                    other = o1.get(key)
                    same = other is None or other[1] == o[1]
                    conds.setdefault(key, []).append(o[1] if same else None)
        for key, vals in conds.items():
            if len(vals) == len(per_inst) and vals[0] is not None and all(v == vals[0] for v in vals):
                node = next(o0[key][0] for _, o0, _ in per_inst if key in o0)
                text = f"if ({_expr_text(node.cond, k.spec.dialect)})"
                targets.append(_Target("branch", key, node, k.idx, text, WARP.get(k.spec.dialect, 32),
                                       want=not vals[0]))
    order = {"tile": 0, "warp": 1, "stride": 2, "residue": 3, "last": 4, "branch": 5, "capdiv": 6}
    targets.sort(key=lambda t: (order[t.kind], t.kernel, t.loop.loc.line if t.loop.loc else 0))

    # 2. drop targets an instance of the spec already reaches, and duplicates (same bound and step)
    todo: list[_Target] = []
    sig_seen: set = set()
    for t in targets:
        obs = covered_obs.get((t.kernel, t.key), [])
        if any(_reached(t, o, search=False) for o in obs):
            continue
        if t.kind == "stride" and obs and all(o is not None and isinstance(o[2], int) and isinstance(o[1], int)
                                              and isinstance(o[3], int) and o[2] - o[1] <= o[3] for o in obs):
            t.wide = True     # every task/thread runs one sweep on every instance of the spec
        sig = (t.kind, t.kernel, tuple((o[1], o[2], o[3]) + ((o[4],) if t.kind == "residue" else ()) if o else None
                                       for o in obs),
               t.key if t.kind == "branch" else (t.key, t.want) if t.kind == "last" else None)
        if sig in sig_seen:
            continue
        sig_seen.add(sig)
        todo.append(t)
    cap_todo = [t for t in todo if t.kind == "capdiv"]     # searched last, with a budget of their own
    todo = [t for t in todo if t.kind != "capdiv"]
    if not todo and not cap_todo:
        return []

    # 3. limits: divisibility every instance shares, sizes, launch
    gcds = {x: 0 for x in spec0.sizes}
    for inst in base_insts:
        for x in gcds:
            gcds[x] = math.gcd(gcds[x], int(inst.sizes.get(x, 0)))
    cap_el = max(max(_elements(i) for i in base_insts), MIN_CAP_ELEMENTS)
    cap_th = max(max(_threads(i) for i in base_insts), MIN_CAP_THREADS)
    cap_sh = max(max(i.shared_bytes for i in base_insts), 48 * 1024)   # dynamic shared memory per block
    names = {i.name for i in base_insts}
    minv = {x: min(int(i.sizes.get(x, 1)) for i in base_insts) for x in spec0.sizes}

    lim = {"el": cap_el}

    def build(sizes: dict, name: str):
        """The instance of every kernel's spec for ``sizes``, or None when any is not valid."""
        for x, g in gcds.items():
            if g > 1 and sizes[x] % g:
                return None
        if not spec0.constraints_hold(sizes):
            return None
        out = []
        for k in ks:
            try:
                inst = k.spec.instance_with(name, sizes)
            except Exception:  # noqa: BLE001 - XPErrors: the sizes make a shape/launch invalid
                return None
            if not _launch_ok(inst) or inst.shared_bytes > cap_sh:
                return None
            out.append(inst)
        if _elements(out[0]) > lim["el"] or any(_threads(i) > cap_th for i in out):
            return "big"
        return out

    seen_obs: dict = {}

    def obs_for(insts, t: _Target):
        ck = (t.kernel, tuple(sorted(insts[0].sizes.items())))
        if ck not in seen_obs:
            if state["evals"] >= budget:
                return None, True
            seen_obs[ck] = observe(ks[t.kernel], insts[t.kernel])
        o, refused = seen_obs[ck]
        return o.get(t.key), refused

    derived: list[Derived] = []

    def above(t: _Target, o) -> bool:
        """The trip is long enough for the boundary: more than one step (tile, stride), or
        into the last warp of the block (warp); the branch is taken (branch)."""
        if t.kind == "branch":
            return _reached(t, o, search=True)
        if t.kind == "residue":
            return o is not None and o[2] >= o[3]
        if t.kind == "last":      # the guard is reached on a last trip; the scan then walks the remainders
            return o is not None
        if t.kind == "trip2":
            return _reached(t, o, search=True)
        if t.kind == "capdiv":
            return o is not None and isinstance(o[2], int) and o[2] > o[1] // 2
        if o is None or not all(isinstance(v, int) and not isinstance(v, bool) for v in o[1:]) or o[3] < 2:
            return False
        n = o[2] - o[1]
        return n > (o[3] - t.warp if t.kind == "warp" else o[3])

    def scan(t: _Target, base_sizes: dict, x: str, keep: list) -> Optional[tuple]:
        """The smallest value of size ``x`` (other sizes as in ``base_sizes``, never below the
        smallest value any instance of the spec gives ``x``) whose instance reaches ``t`` and
        still reaches the targets in ``keep``: (elements, sizes, x, v), or None. The trip
        usually grows with the size: the value where it first exceeds one step is found by
        doubling and bisection, and the congruence by a short linear scan from there."""
        memo: dict = {}

        def probe(v):
            if v not in memo:
                s2 = dict(base_sizes)
                s2[x] = v
                insts = build(s2, "probe")
                if isinstance(insts, list):
                    o, refused = obs_for(insts, t)
                    memo[v] = ("ok", insts, o, refused, s2)
                else:
                    memo[v] = (insts or "bad", None, None, True, s2)
            return memo[v]

        lo_v = max(1, minv[x])
        prev, v, start = None, lo_v, None
        while v <= SCAN_MAX and state["evals"] < budget:
            kind, _, o, _, _ = probe(v)
            if kind == "big" and v > SCAN_LINEAR_MAX and prev is not None:
                # past the old scan range: the largest value under the cap by bisection; the
                # trip grows with the size, so if that one is not long enough none is
                a, b = prev, v
                while b - a > 1 and state["evals"] < budget:
                    m = (a + b) // 2
                    if probe(m)[0] == "big":
                        b = m
                    else:
                        a = m
                ka, _, oa, _, _ = probe(a)
                if not (ka == "ok" and above(t, oa)):
                    return None
                v = a
                kind, o = ka, oa
            elif kind == "big":
                start = prev if prev is not None else lo_v
                break
            if kind == "ok" and above(t, o):
                a, b = (prev if prev is not None else lo_v - 1), v   # first "above" in (a, b]
                while b - a > 1 and state["evals"] < budget:
                    m = (a + b) // 2
                    km, _, om, _, _ = probe(m)
                    if km == "ok" and above(t, om):
                        b = m
                    else:
                        a = m
                start = b
                break
            prev, v = v, v * 2 if v > 0 else 1
        if start is None:
            return None
        kind, _, o, _, _ = probe(start)
        step = o[3] if kind == "ok" and o is not None and isinstance(o[3], int) else 64
        for v in range(start, min(SCAN_MAX, start + min(2 * max(step, 1) + 8, 1500)) + 1):
            if state["evals"] >= budget:
                return None
            kind, insts, o, refused, s2 = probe(v)
            if kind == "big" and v > start:
                return None
            if kind != "ok" or refused or not _reached(t, o, search=True):
                continue
            if any(not _reached(k, obs_for(insts, k)[0], search=True) for k in keep):
                continue
            return (_elements(insts[0]), s2, x, v)
        return None

    def try_base(t: _Target, base_sizes: dict, base_name: str, keep: list) -> Optional[tuple]:
        """Scan each size over ``base_sizes``; the smallest instance reaching ``t`` (and the
        targets in ``keep``), as (elements, sizes, X, v), or None."""
        best = None
        binst = build(base_sizes, "probe")
        if not isinstance(binst, list):
            return None
        o_base, _ = obs_for(binst, t)
        for x in spec0.sizes:
            cur = base_sizes[x]
            # does X move this loop at all?
            moved = t.kind == "branch"    # a condition flips far from the instance (an NRAM limit)
            for nv in () if moved else (cur + 1, cur + 2, cur - 1, cur - 2, 2 * cur, cur // 2):
                if nv < 1 or nv == cur:
                    continue
                s2 = dict(base_sizes)
                s2[x] = nv
                i2 = build(s2, "probe")
                if not isinstance(i2, list):
                    continue
                o2, _ = obs_for(i2, t)
                if o2 is not None and (o_base is None or o2[1:] != o_base[1:]):
                    moved = True
                    break
            if not moved:
                continue
            hit = scan(t, base_sizes, x, keep)
            if hit is not None and (best is None or hit[0] < best[0]):
                best = hit
        return best

    minimal = {x: max(1, g) for x, g in gcds.items()}   # every size at its smallest allowed value
    for t in todo:
        if state["evals"] >= budget:
            break
        lim["el"] = max(cap_el, BRANCH_CAP_ELEMENTS) if t.kind == "branch" else cap_el
        if t.kind == "branch":
            state.setdefault("branch0", state["evals"])
            if state["evals"] - state["branch0"] >= BRANCH_EVALS:
                break
        done = False
        # merge into an instance derived for an earlier target, when one size more reaches this one
        # (a branch target gets an instance of its own: moved onto a loop's boundary instance it
        # would make that one large, e.g. a long conv1d L with a wide filter)
        for d in reversed(derived if t.kind != "branch" else []):
            hit = try_base(t, d.sizes, d.name, d.targets)
            if hit is not None:
                _, sizes, x, v = hit
                d.sizes = sizes
                d.changed[x] = v
                d.targets.append(t)
                d.reasons.append(_reason(t, x, v, build(sizes, d.name), ks))
                done = True
                break
        if done or len(derived) >= max_new:
            continue
        order_b = sorted(base_insts, key=lambda i: (_elements(i), base_insts.index(i)))
        bases = [(dict(i.sizes), i, lim["el"]) for i in order_b]
        if t.kind == "branch":
            # other sizes at their smallest, so the one that flips the branch can grow the most;
            # then the smallest instance of the spec
            bases = ([(minimal, order_b[0], lim["el"])] if isinstance(build(minimal, "probe"), list) else []) \
                + bases[:1]
        if t.wide:      # then up to the branch cap: a second sweep may need a capacity (an NRAM row
            # count) to bind before the size does (gemv's `i_rows = min(131072 / K, ...)`)
            bases += [(dict(i.sizes), i, max(cap_el, BRANCH_CAP_ELEMENTS)) for i in order_b]
        for sizes0, binst, cap in bases:
            lim["el"] = cap
            hit = try_base(t, dict(sizes0), binst.name, [])
            if hit is not None:
                _, sizes, x, v = hit
                name = _fresh_name(names, len(derived) + 1)
                names.add(name)
                changed = {k: w for k, w in sizes.items() if binst.sizes.get(k) != w}
                d = Derived(name, binst.name, sizes, changed, [], [t])
                d.reasons.append(_reason(t, x, v, build(sizes, name), ks))
                derived.append(d)
                break
    # 4. loops that only a branch instance runs (a fallback's own row or chunk loop): their
    # boundary, reached on that instance by one size more, keeping the branch taken
    for d in [d for d in derived if any(t.kind == "branch" for t in d.targets)]:
        lim["el"] = max(cap_el, BRANCH_CAP_ELEMENTS)
        insts = build(d.sizes, d.name)
        if not isinstance(insts, list) or state["evals"] >= budget:
            continue
        inner: list[_Target] = []
        branch_sizes = dict(d.sizes)      # the branch's own instance, before its loops are moved
        origin = next((dict(i.sizes) for i in base_insts if i.name == d.base), {})
        bk = {t.kernel for t in d.targets if t.kind == "branch"}
        for k in ks:
            o0, _ = observe(k, insts[k.idx], 0)
            o1, _ = observe(k, insts[k.idx], 1)
            for key, o in o0.items():
                if isinstance(key, tuple) or (k.idx, key) in seen:
                    continue
                loop, lo, hi, step = o
                if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi, step)) or step < 1:
                    continue
                lo1 = o1.get(key, (None, None))[1]
                text = (f"for ({loop.var} = {_expr_text(loop.lo, k.spec.dialect)}; {loop.var} < "
                        f"{_expr_text(loop.hi, k.spec.dialect)}; {loop.var} += {_expr_text(loop.step, k.spec.dialect)})")
                if step == 1:   # a unit-step loop of the branch's kernel that runs one trip here: its step
                    if hi - lo == 1 and (lo1 is None or lo1 == lo) and k.idx in bk:   # is never taken
                        seen.add((k.idx, key))
                        inner.append(_Target("trip2", key, loop, k.idx, text, WARP.get(k.spec.dialect, 32)))
                    continue
                seen.add((k.idx, key))
                t = _Target("stride" if lo1 is not None and lo1 != lo else "tile", key, loop, k.idx, text,
                            WARP.get(k.spec.dialect, 32))
                if not _reached(t, o, search=False):
                    inner.append(t)
        for t in inner:
            if state["evals"] >= budget:
                break
            hit = try_base(t, d.sizes, d.name, d.targets)
            if hit is not None:
                _, sizes, x, v = hit
                d.sizes = sizes
                d.changed[x] = v
                d.targets.append(t)
            elif len(derived) < max_new and state["evals"] < budget:
                # not with the loops already moved there: a copy of the branch's own instance
                keep = [u for u in d.targets if u.kind == "branch"]
                hit = try_base(t, dict(branch_sizes), d.name, keep)
                if hit is not None:
                    _, sizes, x, v = hit
                    name = _fresh_name(names, len(derived) + 1)
                    names.add(name)
                    changed = {k2: w for k2, w in sizes.items() if origin.get(k2) != w}
                    derived.append(Derived(name, d.base, sizes, changed, [], keep + [t]))
    # 5. capacity targets: an instance of their own each (at most CAPDIV_MAX), up to the branch cap,
    # from the smallest instance of the spec that reaches one (its other sizes keep their rows per task)
    budget0 = state["evals"] + CAPDIV_EVALS     # the spec's instances as bases, for all targets together
    made = 0
    for t in cap_todo:
        if made >= CAPDIV_MAX:
            break
        lim["el"] = max(cap_el, BRANCH_CAP_ELEMENTS)
        order_c = sorted(base_insts, key=lambda i: (_elements(i), base_insts.index(i)))
        # then the same instances with one other size at its smallest value: a capacity that one size
        # reaches only while another is small (`32768 / N` under `K * N <= 131072`: N past 16384
        # needs K <= 8); the instance keeps its rows per task, so a row count that overruns shows
        second_kind = [({**i.sizes, y: minimal[y]}, i, 1) for i in order_c for y in spec0.sizes
                       if i.sizes.get(y) != minimal[y]]
        # smallest first, by the elements the instance has once the divisor (a size) reaches C / 2 + 1;
        # bases that are too large or invalid there are left out
        e = t.loop
        xname = e.rhs.name if isinstance(e, N.BinOp) and isinstance(e.rhs, N.Var) and e.rhs.name in spec0.sizes \
            else None
        cval = e.lhs.value if isinstance(e, N.BinOp) and isinstance(e.lhs, N.Const) else None

        def at_capacity(b):
            if xname is None or not isinstance(cval, int):
                return (0, math.prod(b[0].values()), order_c.index(b[1]))
            r = build({**b[0], xname: cval // 2 + 1}, "probe")
            return (0, _elements(r[0]), order_c.index(b[1])) if isinstance(r, list) else (1, 0, 0)
        second_kind = sorted((b for b in second_kind if at_capacity(b)[0] == 0), key=at_capacity)
        tries = [(dict(i.sizes), i, 0) for i in order_c] + second_kind
        cap2 = None
        for base_sizes, binst, second in tries:
            if second and cap2 is None:     # the second kind of base: a budget of its own per target
                cap2 = state["evals"] + 2 * CAPDIV_EVALS
            budget = cap2 if second else budget0    # (obs_for stops at `budget`)
            if state["evals"] >= budget:
                if second:
                    break
                continue
            hit = try_base(t, base_sizes, binst.name, [])
            if hit is not None:
                _, sizes, x, v = hit
                name = _fresh_name(names, len(derived) + 1)
                names.add(name)
                changed = {k2: w for k2, w in sizes.items() if binst.sizes.get(k2) != w}
                derived.append(Derived(name, binst.name, sizes, changed, [], [t]))
                made += 1
                break
    # a merge may have changed a size an earlier reason quoted: recompute every reason
    for d in derived:
        lim["el"] = max(cap_el, BRANCH_CAP_ELEMENTS) if any(t.kind in ("branch", "capdiv") or t.wide
                                                            for t in d.targets) \
            else cap_el
        insts = build(d.sizes, d.name)
        d.reasons = [_reason(t, None, None, insts, ks) for t in d.targets]
    return derived


def _fresh_name(names: set, i: int) -> str:
    n = f"boundary-{i}"
    while n in names:
        n += "b"
    return n


def _reason(t: _Target, x, v, insts, ks) -> str:
    o = None
    if isinstance(insts, list):
        o = ks[t.kernel].ev.run(insts[t.kernel])[0].get(t.key)
    if o is None:
        return f"loop `{t.text}` at {t.where()}" if t.kind != "branch" else f"`{t.text}` at {t.where()}"
    if t.kind == "branch":
        return (f"`{t.text}` at {t.where()} is {'true' if t.want else 'false'} here (every instance of the spec "
                f"takes the other branch)")
    if t.kind == "capdiv":
        _, c, b, _ = o
        return (f"{t.text} at {t.where()}: {b} > {c} / 2, one row of {b} fills the buffer of {c} "
                f"({c} / {b} = {c // b}, {c} % {b} = {c % b})")
    if t.kind == "trip2":
        _, lo, hi, step = o
        hi_txt = _expr_text(t.loop.hi, ks[t.kernel].spec.dialect)
        return (f"{hi_txt} = {hi}: loop `{t.text}` at {t.where()} runs a second trip (on the branch's instance "
                f"it ran one: its step was never taken)")
    if t.kind == "last":
        _, a, (op, c), step = o
        side = "true" if {">": a > c, ">=": a >= c, "<": a < c, "<=": a <= c}[op] else "false"
        return (f"`{t.text}` at {t.where()} is {side} on the last trip of its loop (step {step}): the value it "
                f"compares is {a} there, at the edge of `{op} {c}`")
    if t.kind == "residue":
        _, r, v, c, _want = o
        q = _expr_text(t.quant, ks[t.kernel].spec.dialect)
        q_s = q if q == str(v) else f"{q} = {v}"
        why = (f"the largest remainder after whole chunks of {c}" if r == c - 1 else
               f"one past whole chunks of {c}: a rounded-up count's last chunk holds one element")
        return (f"{q_s} ≡ {r} mod {c} ({why}): "
                f"loop `{t.loop.var} += {_expr_text(t.loop.step, ks[t.kernel].spec.dialect)}` at {t.where()}")
    _, lo, hi, step = o
    hi_txt = _expr_text(_quantity(t.loop.hi, step), ks[t.kernel].spec.dialect)
    st_txt = _expr_text(t.loop.step, ks[t.kernel].spec.dialect)
    lo_txt = _expr_text(_quantity(t.loop.lo, step), ks[t.kernel].spec.dialect)
    n = hi - lo
    step_s = st_txt if st_txt == str(step) else f"{st_txt} = {step}"
    span = hi_txt if lo == 0 else f"{hi_txt} - {lo_txt}"
    span_s = span if span == str(n) else f"{span} = {n}"
    loop = f"loop `{t.loop.var} += {st_txt}` at {t.where()}"
    if t.kind == "tile":
        return f"{span_s} ≡ 1 mod {step_s}: {loop}"
    if t.kind == "warp":
        w = t.warp
        return (f"the last warp holds data: {span_s} > {step - w} ({step // w} warps of {w}): "
                f"warp reduction after {loop}")
    return f"{span_s} ≡ 1 mod {step_s} (one element past a whole sweep): {loop}"


def derive_for_files(candidate: Path, spec, against: Optional[tuple] = None) -> list[Derived]:
    """``derive`` for a kernel file (and the source kernel of a migration); [] when the spec
    turns it off or a kernel cannot be parsed here."""
    if not spec.derive_boundaries:
        return []
    pairs = []
    for path, sp in [(Path(candidate), spec)] + ([against] if against else []):
        text = Path(path).read_text(errors="replace")
        prog = _parse_cached(text, sp.dialect, str(path))
        if prog is not None:
            pairs.append((prog, sp))
    if not pairs or pairs[0][1] is not spec:
        return []
    return derive(pairs)


_PARSED: dict = {}


def _parse_cached(text: str, dialect: str, file: str):
    from ..diagnostics import XPError
    from ..frontend import parse_text
    key = (text, dialect, file)
    if key not in _PARSED:
        try:
            _PARSED[key] = parse_text(text, dialect, file)
        except (XPError, RecursionError):
            _PARSED[key] = None
        if len(_PARSED) > 64:
            _PARSED.pop(next(iter(_PARSED)))
    return _PARSED[key]
