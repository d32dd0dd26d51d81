"""Local arrays sized at run time get a compile-time size for SIMT targets (a helper of
binding, not a pass of its own).

Why: BANG C accepts an NRAM array whose length is a run-time value
(``__nram__ float row[padded];`` with ``padded`` computed from a kernel argument), and so do
C and the CPU emulators (a VLA). After loop recovery and binding such an array is a local array
of a cuda/hip kernel, and nvcc ("expression must have a constant value") and clang's HIP mode
refuse a variable-length local array in device code.

Rewrite (cuda/hip targets, inside ``entry``)::

    int padded = (cols + 31) / 32 * 32;          // cols: a kernel parameter
    ...
        float row[padded];
  ->
        if (padded > 1024) __trap();             // 1024: the largest padded over the instances
        float row[1024];

The size ``M`` is the largest value the extent takes over the instances the caller gives (the
kernel spec's instances: the sizes the migration is verified on). The guard stops the kernel
(a device trap, ``__trap()`` in cuda, ``__builtin_trap()`` in hip: the launch fails with an
error, on the GPU and in the emulator) at a size that
would not fit, so a larger input can never run past the array; every size up to ``M`` runs
exactly as the source did, because only the array's capacity changes, never the elements the
program reads or writes. Once the size is constant, ``passes/privatize.py`` can move a large
array to device memory like any other.

Legality (otherwise the declaration is left alone and the real-compile gate reports it):

* the array is local (no initialiser, not ``static``), every non-constant dimension is an
  expression over integer literals, object-like macros, kernel parameters and local integer
  scalars, each of which is declared once in the kernel with an initialiser and never assigned
  afterwards (so the value at the declaration is the value of the resolved expression), with
  no call, memory read or side effect;
* the resolved extent evaluates, with C integer semantics, for every instance (each names every
  parameter it uses); ``sizeof`` of the array is never taken (it would change with ``M``).

``M`` depends on the instances, so the rewritten kernel is specialised to sizes up to the
largest one tested; the migration report says so (XP4050).
"""
from __future__ import annotations

from typing import Optional

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

from .patterns.common import assigned_names

INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
_OPS = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", "<=", ">", ">=", "==", "!=", "&&", "||")
TRAP = {"cuda": "__trap", "hip": "__builtin_trap"}     # the device trap each dialect spells


class Unresolved(Exception):
    """The extent is not a function of the kernel's parameters alone."""


def bound_runtime_arrays(program: N.Program, entry: str, instances, target: str = "cuda") -> tuple[N.Program, list]:
    """``(program, notes)``: every run-time sized local array of ``entry`` that qualifies gets
    the largest size it takes over ``instances`` (dicts parameter name -> value) and a guard.
    ``notes`` lists ``(name, extent text, size)`` per array rewritten; unchanged program when none."""
    if not instances:
        return program, []
    try:
        func = program.func(entry)
    except KeyError:
        return program, []
    if func.body is None:
        return program, []
    macros = program.macro_table()
    lets = _single_assignment_lets(func)
    params = {p.name for p in func.params}
    assigned = assigned_names(func.body)
    sized = {n.arg.name for n in walk(func.body) if isinstance(n, N.SizeOf) and isinstance(n.arg, N.Var)}
    notes: list = []

    def size_of(dim) -> Optional[int]:
        best = None
        for inst in instances:
            try:
                v = _eval(dim, inst, lets, macros, params - assigned, 0)
            except (Unresolved, ZeroDivisionError):
                return None
            best = v if best is None else max(best, v)
        return None if best is None else max(best, 1)

    def rewrite_decl(d: N.Decl):
        if not isinstance(d.type, N.Array) or d.init is not None or d.storage or d.scope not in ("local",) \
                or d.name in sized:
            return None
        dims, guards = [], []
        for dim in d.type.dims:
            if dim is None:
                return None
            if _const(dim, macros) is not None:
                dims.append(dim)
                continue
            m = size_of(dim)
            if m is None:
                return None
            dims.append(N.Const(m, "int32", str(m)))
            guards.append(N.If(N.BinOp(">", dim, N.Const(m, "int32", str(m))),
                               N.ExprStmt(N.Call(TRAP.get(target, "__builtin_trap"), ()), loc=d.loc), loc=d.loc))
            notes.append((d.name, dim, m))
        if not guards:
            return None
        return guards + [d.with_(type=d.type.with_(dims=tuple(dims)))]

    def block(b: N.Block) -> N.Block:
        out, changed = [], False
        for s in b.stmts:
            new = rewrite_decl(s) if isinstance(s, N.Decl) else None
            if new is not None:
                out.extend(new)
                changed = True
                continue
            ns = stmt(s)
            changed |= ns is not s
            out.append(ns)
        return b.with_(stmts=tuple(out)) if changed else b

    def stmt(s):
        if isinstance(s, N.Block):
            return block(s)
        if isinstance(s, N.Stmt) and not isinstance(s, N.Decl):
            ch = {}
            for name in ("body", "then", "else_"):
                v = getattr(s, name, None)
                if isinstance(v, N.Stmt):
                    nv = stmt(v)
                    if nv is not v:
                        ch[name] = nv
            return s.with_(**ch) if ch else s
        return s

    body = block(func.body)
    if body is func.body:
        return program, []
    new_func = func.with_(body=body)
    return program.with_(items=tuple(new_func if it is func else it for it in program.items)), notes


# ---------------------------------------------------------------------------- analysis helpers
def _single_assignment_lets(func: N.Func) -> dict:
    """Integer scalars declared exactly once in ``func`` with an initialiser and never written
    afterwards: name -> initialiser."""
    decls: dict = {}
    for n in walk(func.body):
        if isinstance(n, N.Decl):
            decls.setdefault(n.name, []).append(n)
    written = assigned_names(func.body)
    params = {p.name for p in func.params}
    lets = {}
    for name, ds in decls.items():
        d = ds[0]
        if len(ds) != 1 or name in written or name in params or d.init is None:
            continue
        if isinstance(d.type, N.Scalar) and d.type.dtype in INT_DTYPES:
            lets[name] = d.init
    return lets


def _const(e, macros) -> Optional[int]:
    try:
        return _eval(e, {}, {}, macros, set(), 0)
    except (Unresolved, ZeroDivisionError):
        return None


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _eval(e, env: dict, lets: dict, macros: dict, params: set, depth: int) -> int:
    """Value of ``e`` with C integer semantics; parameters from ``env``, local scalars through
    their single initialiser, object-like macros through their text. Raises Unresolved."""
    if depth > 40:
        raise Unresolved("too deep")
    rec = lambda x: _eval(x, env, lets, macros, params, depth + 1)  # noqa: E731
    if isinstance(e, N.Const):
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            raise Unresolved("not an integer literal")
        return e.value
    if isinstance(e, N.Cast):
        if not (isinstance(e.type, N.Scalar) and e.type.dtype in INT_DTYPES):
            raise Unresolved("non-integer cast")
        return rec(e.expr)
    if isinstance(e, N.Var):
        if e.name in params and e.name in env:
            v = env[e.name]
            if isinstance(v, bool) or not isinstance(v, int):
                raise Unresolved(f"{e.name} is not an integer")
            return v
        if e.name in lets:
            return rec(lets[e.name])
        m = macros.get(e.name)
        if m is not None and m.params is None and m.expr is not None:
            return rec(m.expr)
        raise Unresolved(e.name)
    if isinstance(e, N.UnOp) and e.op in ("-", "+", "~", "!"):
        v = rec(e.operand)
        return {"-": -v, "+": v, "~": ~v, "!": int(not v)}[e.op]
    if isinstance(e, N.BinOp) and e.op in _OPS:
        a, b = rec(e.lhs), rec(e.rhs)
        if e.op == "/":
            return _trunc_div(a, b)
        if e.op == "%":
            return a - _trunc_div(a, b) * b
        return int({"+": a + b, "-": a - b, "*": a * b, "<<": a << b, ">>": a >> b, "&": a & b, "|": a | b,
                    "^": a ^ b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                    "!=": a != b, "&&": bool(a and b), "||": bool(a or b)}[e.op])
    if isinstance(e, N.Cond):
        return rec(e.then) if rec(e.cond) else rec(e.else_)
    raise Unresolved(type(e).__name__)
