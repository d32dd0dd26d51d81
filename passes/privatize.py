"""Large per-iteration arrays of a bound SIMT loop move to device-global memory (a helper of
binding, not a pass of its own).

Why: binding maps a loop onto SIMT threads, and every array declared inside the loop body
becomes a per-thread local array.  Arrays that came from BANG NRAM/WRAM buffers are tens or
hundreds of KiB; a per-thread stack frame of that size is refused by the AMDGPU back end
(private segment limit) and overflows the stack of the SIMT emulator's fibers.  Such an
array is given file-scope storage in global memory instead, with one slice per iteration of
the bound loops around its declaration.

Before (a BANG kernel after loop recovery and binding, 4 tasks)::

    __global__ void k(...) {
        for (int task = blockIdx.x * blockDim.x + threadIdx.x; task < 4; task += gridDim.x * blockDim.x) {
            float buf[16384];
            ... buf[i] ... f(buf + j) ...
        }
    }

After::

    __device__ float xp_priv_buf[4][16384];
    __global__ void k(...) {
        for (int task = ...; task < 4; task += ...) {
            ... xp_priv_buf[task][i] ... f(xp_priv_buf[task] + j) ...
        }
    }

Rule: when the local arrays declared inside a bound loop nest total more than
``STACK_BUDGET`` bytes per thread (AMDGPU refuses frames above 128 KiB; the emulator's fiber
stacks are 128 KiB, 512 KiB under ASan), each array declaration ``T a[d1]...[dk];`` (no
initialiser, not ``static``, every dim a compile-time constant) inside a chain of bound loops
``L1 ... Lm`` (bindings ``global.x/y/z``, each with a compile-time-constant trip count ``Tj``,
loop variable ``vj`` not assigned in its body), of more than ``HOIST_BYTES`` bytes, is
removed; ``__device__ T g[T1*...*Tm][d1]...[dk]`` is declared at file scope before the
kernel; every use of ``a`` in the rest of the declaration's block becomes ``g[s]`` with
``s = idx1 * T2 *...* Tm + ... + idxm`` and ``idxj = (vj - loj) / stepj``.

A bound loop whose trip count is not a compile-time constant (a BANG task loop normalised by
loop recovery to run over rows, ``for (row = g; row < N * Ho; row += G)``) is first dealt out
cyclically over a fixed number ``S`` of slots (:func:`_distribute`): a bound loop over the
slots, each running its share of the iterations sequentially; the arrays then get ``S``
slices.  The launch's grid shrinks to ``ceil(S / block)`` blocks when that loop is the only
bound one.

Legality:

* ``g[s]`` has exactly the type of ``a`` (``T[d1]...[dk]``), so every use — indexing, decay
  to a pointer, ``&a``, ``sizeof a`` — means the same thing; only the storage moves.
* A ``global.*`` loop runs each of its iterations exactly once in the whole launch, in one
  thread (grid-stride); with several such loops (distinct axes) each tuple of iterations runs
  in one thread.  ``s`` is injective over those tuples (mixed radix, ``0 <= idxj < Tj``), so
  no two threads ever touch the same slice: the slice is as private as the local array was.
* The array is declared inside the iteration, so C gives it indeterminate contents at each
  entry of its declaration; a program cannot depend on what the slice held before (an earlier
  iteration, an earlier launch).  Reusing the slice across iterations run by the same thread,
  or across launches, is therefore unobservable.
* Not hoisted (kept local): arrays with an initialiser, ``static`` arrays, non-constant dims,
  a name declared again inside its scope (shadowing) or named in verbatim text or a macro
  body, a loop variable re-declared or assigned in the scope, a bound loop inside the scope
  (its threads would share one slice), bindings other than ``global.*`` (a ``threadIdx`` loop
  alone runs the same iteration in every block), and hoists whose total would exceed
  ``MAX_TOTAL_BYTES``.

Limit (documented in docs/decisions.md): the slices belong to the kernel, not to a launch, so
two launches of the same kernel running *concurrently* (different streams) would share them.
Launches in one stream, and the verification harness, run one after another.
"""
from __future__ import annotations

import re
from dataclasses import fields, replace
from typing import Optional

from xpiler.ir import nodes as N
from xpiler.ir.visit import substitute, walk

try:
    from .patterns import common as U
except ImportError:  # imported as a top-level package in a source checkout
    from xpiler.passes.patterns import common as U

STACK_BUDGET = 32 * 1024            # a bound loop nest whose local arrays stay within this keeps them
HOIST_BYTES = 1024                  # otherwise its arrays larger than this leave the stack
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # never reserve more device-global memory than this
MAX_SLOTS = 1024                    # slots of a distributed loop (threads that run it)
SLOT_BUDGET = 64 * 1024 * 1024      # bytes of large arrays x slots of a distributed loop
PREFIX = "xp_priv_"
GLOBAL_BINDINGS = ("global.x", "global.y", "global.z")


def hoist_private_arrays(program: N.Program, entry: str, launch: Optional[dict] = None, *,
                         limit: int = HOIST_BYTES):
    """Return ``(program, launch)`` with the large per-iteration arrays of ``entry``'s bound
    loops moved to file-scope ``__device__`` arrays (one slice per iteration), after dealing
    out a bound loop of unknown trip count over a fixed number of slots (:func:`_distribute`);
    both unchanged when no array qualifies."""
    try:
        func = program.func(entry)
    except KeyError:
        return program, launch
    macros = program.macro_table()
    taken = _names(program)
    func, slots = _distribute(func, macros, limit, taken)
    hoisted: list = []
    budget = [MAX_TOTAL_BYTES]

    def const(e) -> Optional[int]:
        return _const_int(e, macros)

    def chain_info(chain):
        """(slice index expr, slice count) for the bound loops around a declaration, or None."""
        if not chain or len({lp.binding for lp in chain}) != len(chain):
            return None
        idx, total = None, 1
        for lp in chain:
            lo, hi, step = const(lp.lo), const(lp.hi), const(lp.step)
            if lo is None or hi is None or step is None or step <= 0 or hi <= lo:
                return None
            trips = (hi - lo + step - 1) // step
            if U.assigned_names(lp.body) & {lp.var}:
                return None
            term = N.Var(lp.var)
            if lo != 0:
                term = N.BinOp("-", term, U.C(lo))
            if step != 1:
                term = N.BinOp("/", term, U.C(step))
            idx = term if idx is None else N.BinOp("+", N.BinOp("*", idx, U.C(trips)), term)
            total *= trips
        return idx, total

    def eligible(d: N.Decl, chain, rest) -> Optional[tuple]:
        size = _array_bytes(d, macros)
        if size is None or size <= limit or _local_bytes(chain[0].body, macros) <= STACK_BUDGET:
            return None
        info = chain_info(chain)
        if info is None:
            return None
        idx, trips = info
        if size * trips > budget[0]:
            return None
        shadow = {n.name for n in walk(rest) if isinstance(n, N.Decl)} | \
            {n.var for n in walk(rest) if isinstance(n, N.For)}
        if d.name in shadow or shadow & {lp.var for lp in chain}:
            return None
        if any(isinstance(n, N.For) and n.binding is not None for n in walk(rest)):
            return None                 # uses under a deeper bound loop: several threads per slice
        if any(isinstance(n, N.Raw) for n in walk(rest)) or \
                any(re.search(rf"\b{re.escape(d.name)}\b", m.body or "") for m in macros.values()):
            return None                 # a use the IR cannot see (verbatim text, a macro body)
        return idx, trips, size * trips

    def fresh(base: str) -> str:
        name, k = PREFIX + base, 1
        while name in taken:
            k += 1
            name = f"{PREFIX}{base}{k}"
        taken.add(name)
        return name

    def block(b: N.Block, chain) -> N.Block:
        stmts = list(b.stmts)
        out = []
        k = 0
        while k < len(stmts):
            s = stmts[k]
            got = eligible(s, chain, tuple(stmts[k + 1:])) if isinstance(s, N.Decl) and chain else None
            if got is None:
                out.append(stmt(s, chain))
                k += 1
                continue
            idx, trips, nbytes = got
            budget[0] -= nbytes
            g = fresh(s.name)
            hoisted.append(N.Decl(name=g, type=N.Array(s.type.elem, (U.C(trips),) + tuple(s.type.dims)),
                                  scope="global", attrs=s.attrs, loc=s.loc))
            stmts[k + 1:] = list(substitute(tuple(stmts[k + 1:]), {s.name: N.Index(N.Var(g), idx)}))
            k += 1
        return b.with_(stmts=tuple(out)) if any(a is not c for a, c in zip(out, b.stmts)) or \
            len(out) != len(b.stmts) else b

    def stmt(s, chain):
        if isinstance(s, N.Block):
            return block(s, chain)
        if isinstance(s, N.For):
            inner = chain + [s] if s.binding in GLOBAL_BINDINGS else chain
            nb = block(s.body, inner)
            return s if nb is s.body else s.with_(body=nb)
        if isinstance(s, N.Stmt) and not isinstance(s, N.Decl):
            ch = {}
            for f in fields(s):
                v = getattr(s, f.name)
                if f.name != "loc" and isinstance(v, N.Stmt):
                    nv = stmt(v, chain) if not isinstance(v, N.Block) else block(v, chain)
                    if nv is not v:
                        ch[f.name] = nv
            return replace(s, **ch) if ch else s
        return s

    body = block(func.body, [])
    if not hoisted:
        return program, launch
    old = program.func(entry)
    items = []
    for it in program.items:
        if it is old:
            items.extend(hoisted)
            items.append(func.with_(body=body))
        else:
            items.append(it)
    bound = [n for n in walk(body) if isinstance(n, N.For) and n.binding is not None]
    if launch and slots and len(bound) == 1 and bound[0].binding == "global.x" and \
            list(launch.get("grid", ())[1:]) == [1, 1] and isinstance(launch["block"][0], int):
        # one bound loop, now over a fixed number of slots: one thread per slot is enough
        # (any grid stays correct: the loop is grid-stride)
        b = launch["block"][0]
        launch = dict(launch, grid=[max(1, (slots[0] + b - 1) // b), 1, 1])
    return program.with_(items=tuple(items)), launch


def _array_bytes(d: N.Decl, macros: dict) -> Optional[int]:
    """Bytes of a hoistable array declaration (no initialiser, local, not static, constant
    dims), else None."""
    if not isinstance(d, N.Decl) or not isinstance(d.type, N.Array) or d.init is not None or \
            d.scope != "local" or d.storage:
        return None
    count = 1
    for dim in d.type.dims:
        v = _const_int(dim, macros) if dim is not None else None
        if v is None or v <= 0:
            return None
        count *= v
    return count * _elem_bytes(d.type.elem)


def _local_bytes(body, macros: dict) -> int:
    """Bytes of the constant-size local arrays declared anywhere in ``body``."""
    sizes = (_array_bytes(d, macros) for d in walk(body) if isinstance(d, N.Decl))
    return sum(b for b in sizes if b is not None)


def _distribute(func: N.Func, macros: dict, limit: int, taken: set):
    """A ``global.*`` loop with a trip count unknown at compile time (or too large for one slice
    per iteration), outside any other bound
    loop and with none inside, whose body declares arrays larger than ``limit``, is dealt out
    cyclically over ``S`` slots::

        for (i = lo + g; i < hi; i += G*step)            // g = global thread index, G threads
      ->
        for (xp_slot = g; xp_slot < S; xp_slot += G)     // bound, constant trip count S
            for (i = lo + xp_slot*step; i < hi; i += S*step)

    Slot ``s`` runs iterations ``lo + (s + k*S)*step``: every iteration exactly once, the
    same set as before.  The loop was proven free of carried dependences by binding, so any
    order and any grouping of its iterations is legal; each slot runs its group sequentially
    in one thread.  ``S`` (a power of two <= ``MAX_SLOTS``) keeps ``S`` x the bytes of the
    large arrays within ``SLOT_BUDGET``.  The bounds and step must not be assigned in the
    body (they are re-evaluated per slot).  Returns the new function and the list of ``S``."""
    slots = []

    def big_bytes(body) -> int:
        sizes = (_array_bytes(d, macros) for d in walk(body) if isinstance(d, N.Decl))
        return sum(b for b in sizes if b is not None and b > limit)

    def visit(s):
        if isinstance(s, N.For) and s.binding in GLOBAL_BINDINGS:
            lo, hi, step = (_const_int(e, macros) for e in (s.lo, s.hi, s.step))
            nested = any(isinstance(n, N.For) and n.binding is not None for n in walk(s.body))
            used = {n.name for e in (s.lo, s.hi, s.step) for n in walk(e) if isinstance(n, N.Var)}
            need = big_bytes(s.body)
            if nested or not need or _local_bytes(s.body, macros) <= STACK_BUDGET or \
                    U.assigned_names(s.body) & (used | {s.var}):
                return s
            if None not in (lo, hi, step) and step > 0 and (hi - lo + step - 1) // step * need <= SLOT_BUDGET:
                return s                              # few enough iterations: one slice each
            cap = min(MAX_SLOTS, SLOT_BUDGET // need)
            if cap < 1:
                return s
            count = 1
            while count * 2 <= cap:
                count *= 2
            name, k = "xp_slot", 1
            while name in taken:
                k += 1
                name = f"xp_slot{k}"
            taken.add(name)
            slot = N.Var(name)
            inner = s.with_(lo=U.add(s.lo, U.mul(slot, s.step)), step=U.mul(s.step, U.C(count)),
                            binding=None, pragmas=())
            slots.append(count)
            return N.For(var=name, lo=U.C(0), hi=U.C(count), step=U.C(1), body=N.Block((inner,)),
                         binding=s.binding, var_type=N.Scalar("int32", "int"), loc=s.loc)
        if isinstance(s, N.For) and s.binding is not None:
            return s                                  # inside another bound loop: left alone
        if isinstance(s, N.Block):
            new = tuple(visit(x) for x in s.stmts)
            return s.with_(stmts=new) if any(a is not b for a, b in zip(new, s.stmts)) else s
        if isinstance(s, N.Stmt) and not isinstance(s, N.Decl):
            ch = {}
            for f in fields(s):
                v = getattr(s, f.name)
                if f.name != "loc" and isinstance(v, N.Stmt):
                    nv = visit(v)
                    if nv is not v:
                        ch[f.name] = nv
            return replace(s, **ch) if ch else s
        return s

    body = visit(func.body)
    return (func if body is func.body else func.with_(body=body)), slots


def _names(program: N.Program) -> set:
    out = {m.name for m in program.macros}
    for n in walk(program.items):
        if isinstance(n, (N.Var, N.Decl, N.Param, N.Func, N.Typedef)):
            out.add(n.name)
        elif isinstance(n, N.For):
            out.add(n.var)
    return out


def _elem_bytes(t) -> int:
    """Bytes of one element (a conservative 1 when unknown: the estimate only decides whether
    hoisting is worth it; it is legal at any size)."""
    while isinstance(t, N.Named) and t.target is not None:
        t = t.target
    if isinstance(t, N.Scalar):
        return U.ELEM_BYTES.get(t.dtype, 1)
    if isinstance(t, N.Vector):
        return t.n * U.ELEM_BYTES.get(t.elem.dtype, 1)
    if isinstance(t, N.Array):
        n = 1
        for d in t.dims:
            v = _const_int(d, {}) if d is not None else None
            n *= v if v else 1
        return n * _elem_bytes(t.elem)
    return 1


def _const_int(e, macros: dict, depth: int = 0) -> Optional[int]:
    """Value of an integer constant expression (literals, object-like macros, + - * / % with C
    truncation, min/max), else None."""
    if e is None or depth > 20:
        return None
    if isinstance(e, N.Const):
        return e.value if isinstance(e.value, int) and not isinstance(e.value, bool) else None
    if isinstance(e, N.Cast):
        return _const_int(e.expr, macros, depth + 1)
    if isinstance(e, N.Var):
        m = macros.get(e.name)
        return _const_int(m.expr, macros, depth + 1) if m is not None and m.params is None else None
    if isinstance(e, N.UnOp) and e.op in ("-", "+"):
        v = _const_int(e.operand, macros, depth + 1)
        return None if v is None else (-v if e.op == "-" else v)
    if isinstance(e, N.BinOp) and e.op in ("+", "-", "*", "/", "%"):
        a, b = _const_int(e.lhs, macros, depth + 1), _const_int(e.rhs, macros, depth + 1)
        if a is None or b is None or (e.op in "/%" and b == 0):
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return q if e.op == "/" else a - q * b
    if isinstance(e, N.SizeOf) and isinstance(e.arg, N.Scalar) and e.arg.dtype in U.ELEM_BYTES and \
            e.arg.dtype != "bool":
        return U.ELEM_BYTES[e.arg.dtype]        # sizeof(float) in `#define SEG (BYTES / sizeof(float))`
    if isinstance(e, N.Call) and e.func in ("min", "max") and len(e.args) == 2:
        a, b = (_const_int(x, macros, depth + 1) for x in e.args)
        if a is None or b is None:
            return None
        return min(a, b) if e.func == "min" else max(a, b)
    return None
