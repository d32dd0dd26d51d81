"""Legality questions the loop passes share (binding, split, fuse, reorder), answered exactly:
the project's one dependence module.

Kernels written in plain C index through *pointer aliases* (``float *c = C + (long)i * N; c[j] = ...``) and *size products*
(``i * N + j``, ``t / M``) that are not affine.  This module builds an *analysis view* of a
function and hands the questions to Z3 over the integers, with non-linear terms allowed:

* pointer aliases that are never reassigned are inlined (``c[j]`` becomes ``C[(long)i*N + j]``),
  so writes through a local pointer are seen as writes to the buffer it points into;
* single-assignment scalars declared *inside* the loop are substituted (they vary per
  iteration); those declared outside are loop-invariant symbols shared by both iterations;
* an access through a pointer cast to another element type (``float4 *c4 = (float4 *)c;
  c4[i]``) stays in the view as written; :func:`collect` counts it in the buffer's elements,
  covering ``lanes`` of them (``c[4*i] .. c[4*i + 3]``), or as an unknown element where the lane
  count is not known (:mod:`xpiler.ir.lanes`);
* ``/`` and ``%`` become exact truncated-division constraints (``x = d*q + r``); anything else
  that does not translate (a ternary, a value loaded from memory) becomes a fresh unknown
  integer, which can only make the answer more conservative, never wrong.

A query whose solver result is ``unknown`` counts as a dependence (refuse rather than guess).

Questions: :func:`carried` (dependences carried by a loop), :func:`interchange_violation`
(direction vector ``(<, >)`` between two nested loops), :func:`fusion_violation` (a backward
dependence between two adjacent loops), :func:`privatizable` (local arrays whose every read is
covered by an earlier write in the same iteration).  Loop references (:func:`find_loop`) name a
loop by its variable, ``var#k`` (k-th loop with that variable, 1-based, pre-order) or
``line:N``.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Optional

import z3

from xpiler.ir import nodes as N
from xpiler.ir import poly as P
from xpiler.ir import smt
from xpiler.ir import z3term as T
from xpiler.ir import lanes as L
from xpiler.ir.affine import Context, accesses
from xpiler.ir.visit import rewrite, substitute, walk

from .dependence_idioms import lane_bit, low_bits

INT_DTYPES = T.INT_DTYPES
TIMEOUT_MS = 2000


# ----------------------------------------------------------------------------- loop references
def loop_ref(func: N.Func, loop: N.For) -> str:
    """The shortest reference that finds ``loop`` again with :func:`find_loop`."""
    same = [l for l in walk(func) if isinstance(l, N.For) and l.var == loop.var]
    if len(same) == 1:
        return loop.var
    for k, l in enumerate(same, 1):
        if l is loop:
            return f"{loop.var}#{k}"
    raise KeyError(loop.var)


def find_loop(func: N.Func, ref) -> Optional[N.For]:
    """The canonical loop named by ``ref`` (var, ``var#k``, ``line:N``, or a For node), or None."""
    if isinstance(ref, N.For):
        return next((l for l in walk(func) if l is ref), None)
    ref = str(ref)
    loops = [l for l in walk(func) if isinstance(l, N.For)]
    if ref.startswith("line:"):
        line = int(ref[5:])
        return next((l for l in loops if l.loc is not None and l.loc.line == line), None)
    if "#" in ref:
        var, k = ref.split("#", 1)
        same = [l for l in loops if l.var == var]
        k = int(k)
        return same[k - 1] if 1 <= k <= len(same) else None
    same = [l for l in loops if l.var == ref]
    return same[0] if len(same) == 1 else None


def is_ambiguous(func: N.Func, ref) -> bool:
    return isinstance(ref, str) and "#" not in ref and not ref.startswith("line:") and \
        sum(1 for l in walk(func) if isinstance(l, N.For) and l.var == ref) > 1


def replace_node(root, old, new):
    """``root`` with the node ``old`` (by identity) replaced by ``new`` (a node or a tuple of
    statements spliced into the enclosing block)."""
    return _rewrite_identity(root, old, new)


def _rewrite_identity(node, old, new):
    if node is old:
        return new
    if isinstance(node, tuple):
        out, changed = [], False
        for x in node:
            if x is old and isinstance(new, tuple) and isinstance(x, N.Stmt):
                out.extend(new)
                changed = True
                continue
            y = _rewrite_identity(x, old, new)
            changed |= y is not x
            out.append(y)
        return tuple(out) if changed else node
    if not isinstance(node, N.Node):
        return node
    from dataclasses import fields, replace
    ch = {}
    for f in fields(node):
        if f.name == "loc":
            continue
        v = getattr(node, f.name)
        if isinstance(v, (N.Node, tuple)):
            nv = _rewrite_identity(v, old, new)
            if nv is not v:
                ch[f.name] = nv
    return replace(node, **ch) if ch else node


def parent_block(root, target) -> Optional[N.Block]:
    for n in walk(root):
        if isinstance(n, N.Block) and any(s is target for s in n.stmts):
            return n
    return None


def enclosing_loops(root, target) -> list:
    """Loops enclosing ``target`` (outermost first), not including it."""
    path = []

    def go(n, stack):
        if n is target:
            path.extend(stack)
            return True
        if not isinstance(n, N.Node):
            return False
        st = stack + [n] if isinstance(n, N.For) else stack
        return any(go(c, st) for c in n.children())
    go(root, [])
    return path


def strip_comments(stmts) -> list:
    return [s for s in stmts if not isinstance(s, (N.Comment, N.Pragma))]


# ----------------------------------------------------------------------------- analysis view
def _split_ptr(e):
    """pointer expression -> (buffer name, offset Expr or None for 0), or (None, None)."""
    if isinstance(e, N.Var):
        return e.name, None
    if isinstance(e, N.Cast) and isinstance(e.type, N.Pointer):
        return _split_ptr(e.expr)
    if isinstance(e, N.BinOp) and e.op in ("+", "-"):
        b, off = _split_ptr(e.lhs)
        if b is not None:
            rhs = e.rhs if e.op == "+" else N.UnOp("-", e.rhs)
            return b, rhs if off is None else N.BinOp("+", off, rhs)
    if isinstance(e, N.UnOp) and e.op == "&" and isinstance(e.operand, N.Index) and \
            isinstance(e.operand.base, N.Var):
        return e.operand.base.name, e.operand.index
    return None, None


def split_ptr_uncast(e):
    """:func:`_split_ptr` for a matcher that rebuilds the address as ``buffer[offset + i]``:
    (None, None) where the expression casts a pointer on the way (``((float4 *)p + k)[j]`` is not
    ``p[k + j]``: its elements may be wider than the buffer's)."""
    if any(isinstance(n, N.Cast) and isinstance(n.type, N.Pointer) for n in walk(e)):
        return None, None
    return _split_ptr(e)


def pointer_names(func: N.Func) -> set:
    """Parameters and locals of pointer or array type (the names of ``lanes.pointer_types``)."""
    return set(L.pointer_types(func))


def assigned_names(node) -> set:
    out = set()
    for n in walk(node):
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            out.add(n.target.name)
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
            out.add(n.operand.name)
        elif isinstance(n, N.For):
            out.add(n.var)
        elif isinstance(n, N.CFor) and n.init is not None:
            out |= {d.name for d in walk(n.init) if isinstance(d, N.Decl)}
    return out


def alias_table(func: N.Func) -> dict:
    """Local pointers initialised once from another pointer and never reassigned."""
    assigned = assigned_names(func.body)
    count: dict = {}
    for d in walk(func.body):
        if isinstance(d, N.Decl):
            count[d.name] = count.get(d.name, 0) + 1
    table = {}
    types = L.pointer_types(func)
    for d in walk(func.body):
        if isinstance(d, N.Decl) and isinstance(d.type, N.Pointer) and d.init is not None and \
                d.name not in assigned and count[d.name] == 1:
            b, _ = _split_ptr(d.init)
            # also a pointer into a multi-dimensional array (``(float2 *)&s[1][0]``): lanes.py
            # knows its buffer, not its offset, and collect reads its elements as unknown
            if b is not None or L.pointer_target(d.init, types) is not None:
                table[d.name] = d.init
    return table


def unique_decls(func: N.Func) -> N.Func:
    """Alpha-rename declarations so that every declared name is unique in the function (two
    ``const int row = ...`` in sibling blocks become ``row`` and ``row__2``); lets and aliases
    are then recognised by name."""
    used = {p.name for p in func.params}
    counter: dict = {}

    def fresh(name):
        if name not in used:
            used.add(name)
            return name
        k = counter.get(name, 1)
        while f"{name}__{k + 1}" in used:
            k += 1
        counter[name] = k + 1
        new = f"{name}__{k + 1}"
        used.add(new)
        return new

    def ex(e, env):
        m = {k: N.Var(v) for k, v in env.items() if k != v}
        return substitute(e, m) if (m and e is not None) else e

    def st(s, env):
        if isinstance(s, N.Decl):
            init = ex(s.init, env)
            new = fresh(s.name)
            env = dict(env)
            env[s.name] = new
            return s.with_(name=new, init=init), env
        if isinstance(s, N.Block):
            cur, out = dict(env), []
            for x in s.stmts:
                y, cur = st(x, cur)
                out.append(y)
            return s.with_(stmts=tuple(out)), env
        if isinstance(s, N.For):
            if s.var_type is not None:
                # ``for (int j ...)`` then ``int j = 0;`` later (C++ scoping): the later
                # declaration must not share the loop variable's name in the view
                used.add(s.var)
            inner = {k: v for k, v in env.items() if k != s.var}
            body, _ = st(s.body, inner)
            return s.with_(lo=ex(s.lo, env), hi=ex(s.hi, env), step=ex(s.step, env), body=body), env
        if isinstance(s, N.If):
            then, _ = st(s.then, env)
            els = st(s.else_, env)[0] if s.else_ is not None else None
            return s.with_(cond=ex(s.cond, env), then=then, else_=els), env
        return ex(s, env), env

    body, _ = st(func.body, {})
    return func.with_(body=body)


def _pure_value(e) -> bool:
    """No call (other than the pure math functions), memory read or assignment in ``e``."""
    return not any(isinstance(n, (N.Index, N.AssignExpr, N.Intrinsic, N.Member)) or
                   isinstance(n, N.Call) and not (isinstance(n.func, str) and n.func in PURE_CALLS) or
                   isinstance(n, N.UnOp) and n.op in ("*", "&", "++", "--", "p++", "p--") for n in walk(e))


def fold_clamps(func: N.Func) -> N.Func:
    """``T v = E; if (C) v = X;`` (adjacent; ``v`` an integer scalar declared once and assigned
    nowhere else; ``E``, ``C``, ``X`` pure, ``X`` not reading ``v``) -> ``T v = C[v:=E] ? X : E;``
    with the ``if`` left as a comment (the statement positions stay).  The tail length of a chunk
    loop, ``int len = n - base; if (len > CHUNK) len = CHUNK;``, becomes ``min(n - base, CHUNK)``
    exactly, so the dependence test sees ``len <= CHUNK``."""
    counts: dict = {}
    for n in walk(func.body):
        t = None
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            t = n.target.name
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--", "&") and isinstance(n.operand, N.Var):
            t = n.operand.name
        elif isinstance(n, N.Decl):
            t = ("decl", n.name)
        elif isinstance(n, N.For):
            t = n.var
        if t is not None:
            counts[t] = counts.get(t, 0) + 1

    def clamp(d, s):
        if not (isinstance(d, N.Decl) and isinstance(d.type, N.Scalar) and d.type.dtype in INT_DTYPES
                and d.init is not None and counts.get(("decl", d.name)) == 1 and counts.get(d.name) == 1):
            return None
        if not (isinstance(s, N.If) and s.else_ is None):
            return None
        body = strip_comments(s.then.stmts if isinstance(s.then, N.Block) else (s.then,))
        if len(body) != 1 or not isinstance(body[0], N.Assign) or body[0].op != "=" or \
                not isinstance(body[0].target, N.Var) or body[0].target.name != d.name:
            return None
        x = body[0].value
        if not (_pure_value(d.init) and _pure_value(s.cond) and _pure_value(x)) or \
                any(isinstance(n, N.Var) and n.name == d.name for n in walk(x)):
            return None
        cond = substitute(s.cond, {d.name: d.init})
        return d.with_(init=N.Cond(cond, x, d.init)), N.Comment("/* clamp folded */")

    def fn(n):
        if isinstance(n, N.Block):
            out = list(n.stmts)
            for k in range(len(out) - 1):
                r = clamp(out[k], out[k + 1])
                if r is not None:
                    out[k], out[k + 1] = r
            if out != list(n.stmts):
                return n.with_(stmts=tuple(out))
        return n
    return func.with_(body=rewrite(func.body, fn))


def analysis_view(func: N.Func) -> N.Func:
    """``func`` with unique declaration names, pointer aliases inlined and subscripts rebased
    on the real buffer."""
    func = fold_clamps(unique_decls(func))
    table = alias_table(func)
    for _ in range(8):   # aliases of aliases
        changed = False
        for k, v in list(table.items()):
            nv = substitute(v, {a: table[a] for a in table if a != k})
            if nv != v:
                table[k] = nv
                changed = True
        if not changed:
            break

    def fn(n):
        if isinstance(n, N.Decl) and n.name in table:
            return n.with_(init=None)           # keep the declaration, drop the alias use
        if isinstance(n, N.Var) and n.name in table:
            return table[n.name]
        if isinstance(n, N.Index) and not isinstance(n.base, (N.Var, N.Index)):
            b, off = _split_ptr(n.base)
            if b is not None:
                return N.Index(N.Var(b), n.index if off is None else N.BinOp("+", off, n.index), loc=n.loc)
        if isinstance(n, N.UnOp) and n.op == "*":
            b, off = _split_ptr(n.operand)
            if b is not None:
                return N.Index(N.Var(b), off if off is not None else N.Const(0), loc=n.loc)
        return n
    types = L.pointer_types(func)

    def retyped(ptr):
        t = L.pointer_target(ptr, types)
        return t is not None and t.retyped

    def keep_cast(n):
        # an element of a pointer cast to another element type is not one element of the buffer:
        # left as written (aliases inlined) for collect to read through its lanes
        if isinstance(n, N.Index) and not isinstance(n.base, (N.Var, N.Index)) and retyped(n.base):
            return n
        if isinstance(n, N.UnOp) and n.op == "*" and retyped(n.operand):
            return n
        return fn(n)
    body = rewrite(func.body, keep_cast)
    return func.with_(body=body)


# ----------------------------------------------------------------------------- accesses
@dataclass
class Acc:
    buffer: str
    index: Optional[N.Expr]      # flat index (None: unknown element)
    mode: str                    # r | w | rw
    stmt: object
    loops: tuple                 # enclosing For nodes (outermost first) in the analysed tree
    extent: Optional[N.Expr] = None   # elements touched from index on (intrinsics), None = 1
    conditional: bool = False    # under an if / while / non-canonical loop inside the analysed region
    guards: tuple = ()           # (condition Expr, holds?) of the enclosing ifs inside the region


PURE_CALLS = {"min", "max", "fminf", "fmaxf", "fabsf", "fabs", "abs", "sqrtf", "sqrt", "expf", "exp", "logf",
              "log", "tanhf", "tanh", "erff", "erf", "powf", "pow", "floorf", "floor", "ceilf", "ceil", "rsqrtf",
              "sinf", "cosf", "fmin", "fmax", "roundf", "truncf", "__expf", "__logf", "exp2f", "log2f",
              "fmaf", "fma", "ldexpf", "ldexp", "nearbyintf", "nearbyint"}


#: C library functions whose listed pointer arguments are only read (the standard declares them
#: ``const``): memcpy(dst, src, n) writes dst and only reads src
LIBC_READ_ARGS = {"memcpy": (1,), "memmove": (1,), "memcmp": (0, 1), "strlen": (0,)}


def _flat(idx: tuple):
    """multi-dimensional subscripts of a local array: flatten when dims are known (row-major)."""
    return idx[0] if len(idx) == 1 else None


def _reads_only(callee, k) -> bool:
    """Parameter k of ``callee`` is only read: a pointer to const, or a body that never writes
    through it nor hands it on."""
    if callee is None or k >= len(callee.params):
        return False
    t = callee.params[k].type
    if not isinstance(t, N.Pointer):
        return False
    if getattr(t.elem, "const", False):
        return True
    if callee.body is None:
        return False
    name = callee.params[k].name
    view = analysis_view(callee)
    if any(a.buffer == name and a.mode != "r" for a in accesses(view.body)):
        return False
    for n in walk(view.body):
        if isinstance(n, N.Call) and any(_split_ptr(a)[0] == name for a in n.args):
            return False
        if isinstance(n, N.Decl) and n.init is not None and _split_ptr(n.init)[0] == name:
            return False
    return True


def collect(region, func: N.Func, program=None) -> list:
    """Buffer accesses under ``region`` (a statement of the analysis view of ``func``)."""
    ptrs = pointer_names(func)
    arrays = {d.name: d.type for d in walk(func) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}
    out = []
    types = L.pointer_types(func)
    for a in accesses(region, Context(types=types)):
        idx = a.exprs
        if a.buffer in arrays and len(idx) > 1:
            dims = arrays[a.buffer].dims
            flat = None
            if len(dims) == len(idx) and all(d is not None for d in dims):
                flat = idx[0]
                for d, i in zip(dims[1:], idx[1:]):
                    flat = N.BinOp("+", N.BinOp("*", flat, d), i)
            index = flat
        elif a.extent is not None:
            t = L.pointer_target(idx[0], types) if idx else None
            if t is not None and t.retyped:   # the start in the buffer's elements (affine.accesses)
                index = t.offset if a.indices[0] is not None else None
            else:
                _, off = _split_ptr(idx[0]) if idx else (None, None)
                index = off if off is not None else N.Const(0)
        else:
            index = _flat(idx) if idx else None
        extent = None
        if a.extent is not None:
            extent = _extent_expr(a.extent)
        elif a.lanes != 1:              # an element of a cast pointer: lanes elements of the buffer
            extent = N.Const(a.lanes, "int32", str(a.lanes))
        out.append(Acc(a.buffer, index, a.mode, a.stmt, a.loops, extent))
        if a.extent is not None and extent is None:
            out[-1].index = None
    # calls that receive a buffer pointer: unknown element, read+write unless the callee only
    # reads through that parameter
    callees = {f.name: f for f in program.funcs} if program is not None else {}
    for n in walk(region):
        if isinstance(n, N.Call) and isinstance(n.func, str) and n.func not in PURE_CALLS:
            for k, arg in enumerate(n.args):
                b, _ = _split_ptr(arg)
                if b is not None and b in ptrs:
                    reads = n.func not in callees and k in LIBC_READ_ARGS.get(n.func, ())
                    mode = "r" if reads or _reads_only(callees.get(n.func), k) else "rw"
                    out.append(Acc(b, None, mode, _stmt_of(region, n), ()))
    _mark(region, out)
    return out


def _extent_expr(ext):
    text, env, unit = ext
    if unit != "elem":
        return None
    e = None
    for part in str(text).split("*"):
        part = part.strip()
        if part.isdigit():
            t = N.Const(int(part))
        elif part in env and env[part] is not None:
            t = env[part]
        else:
            return None
        e = t if e is None else N.BinOp("*", e, t)
    return e


def _stmt_of(region, node):
    best = None
    for s in walk(region):
        if isinstance(s, (N.Assign, N.ExprStmt, N.Decl, N.Return, N.If)) and any(x is node for x in walk(s)):
            best = s
    return best


def _mark(region, accs):
    """Set ``loops`` (canonical For nodes between region and the access), ``conditional`` and
    ``guards`` (the if conditions the access executes under)."""
    info = {}

    def go(n, loops, cond, guards):
        if isinstance(n, (N.Assign, N.ExprStmt, N.Decl, N.Return)):
            info[id(n)] = (loops, cond, guards)
        if isinstance(n, N.If):
            info[id(n)] = (loops, cond, guards)
            go(n.then, loops, True, guards + ((n.cond, True),))
            if n.else_ is not None:
                go(n.else_, loops, True, guards + ((n.cond, False),))
            return
        if isinstance(n, N.For):
            go(n.body, loops + (n,), cond, guards)
            return
        if isinstance(n, N.CFor) and _invariant_cond(n):
            # for (; j + 16 <= N; j += 16) { body }: the body runs only while the condition
            # holds, and the body changes nothing the condition reads
            for c in n.children():
                go(c, loops, True, guards + ((n.cond, True),) if c is n.body else guards)
            return
        if isinstance(n, (N.While, N.CFor)):
            for c in n.children():
                go(c, loops, True, guards)
            return
        if isinstance(n, N.Block):
            for c in n.stmts:
                go(c, loops, cond, guards)
                if _is_exit_guard(c):      # if (c) continue;  -> the rest runs only when !c
                    guards = guards + ((c.cond, False),)
            return
    go(region, (), False, ())
    for a in accs:
        if id(a.stmt) in info:
            a.loops, a.conditional, a.guards = info[id(a.stmt)]


def _invariant_cond(loop: N.CFor) -> bool:
    """The condition of ``loop`` reads only scalars its body never assigns (no memory, no call),
    so it holds everywhere in the body."""
    if loop.cond is None or loop.body is None:
        return False
    if any(isinstance(n, (N.Index, N.Call, N.Intrinsic, N.AssignExpr, N.Member)) or
           isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--") for n in walk(loop.cond)):
        return False
    if any(isinstance(n, N.Call) for n in walk(loop.body)):
        return False        # a called function might change a file-scope variable the condition reads
    used = {n.name for n in walk(loop.cond) if isinstance(n, N.Var)}
    return not (used & assigned_names(loop.body))


def _rising(func: N.Func) -> dict:
    """{name: c} for signed integer scalars declared once as ``int j = c0`` (a constant) whose
    every other assignment adds a positive constant (``j += 16``, ``++j``) or stores a constant
    (``for (j = 0; ...)`` restarting a walk): their value is >= c, the least of those constants."""
    decls: dict = {}
    for d in walk(func.body):
        if isinstance(d, N.Decl):
            # signed only: a signed overflow is undefined, an unsigned one wraps below c0
            ok = isinstance(d.type, N.Scalar) and d.type.dtype in ("int8", "int16", "int32", "int64") \
                and isinstance(d.init, N.Const) \
                and isinstance(d.init.value, int) and not isinstance(d.init.value, bool)
            decls[d.name] = None if d.name in decls or not ok else d.init.value
    out = {k: v for k, v in decls.items() if v is not None}
    for n in walk(func.body):
        t = None
        if isinstance(n, (N.Assign, N.AssignExpr)):
            t = n.target
            const = isinstance(n.value, N.Const) and isinstance(n.value.value, int) \
                and not isinstance(n.value.value, bool)
            if isinstance(t, N.Var) and n.op == "=" and const and t.name in out:
                out[t.name] = min(out[t.name], n.value.value)     # a restart at a constant
            elif isinstance(t, N.Var) and not (n.op == "+=" and const and n.value.value > 0):
                out.pop(t.name, None)
        elif isinstance(n, N.UnOp) and isinstance(n.operand, N.Var) and n.op in ("--", "p--", "&"):
            out.pop(n.operand.name, None)
        elif isinstance(n, N.For):
            out.pop(n.var, None)
    return out


def _is_exit_guard(s) -> bool:
    if not isinstance(s, N.If) or s.else_ is not None:
        return False
    body = s.then.stmts if isinstance(s.then, N.Block) else (s.then,)
    body = strip_comments(body)
    return len(body) == 1 and isinstance(body[0], (N.Continue, N.Break, N.Return))


def guard_constraints(acc, side, env) -> list:
    return [to_z3_bool(c, side, env) if holds else z3.Not(to_z3_bool(c, side, env)) for c, holds in acc.guards]


# ----------------------------------------------------------------------------- Z3 translation
@dataclass
class Z3Env:
    loopvars: set                     # variables that differ between the two iterations
    lets: dict                        # name -> Expr substituted (per-iteration values)
    macros: dict
    int_params: set
    varying: set                      # scalars assigned inside the region (unknown per side)
    cache: dict = field(default_factory=dict)
    cons: list = field(default_factory=list)
    fresh: itertools.count = field(default_factory=itertools.count)
    divs: dict = field(default_factory=dict)
    dividends: dict = field(default_factory=dict)   # division key -> Z3 terms (dividend, divisor)
    lower: dict = field(default_factory=dict)     # name -> a constant lower bound of its value

    def sym(self, name, side):
        key = (name, side if (name in self.loopvars or name in self.varying) else None)
        if key not in self.cache:
            safe = name.replace(".", "_")
            self.cache[key] = z3.Int(f"{safe}__{key[1]}" if key[1] else safe)
            if name in self.lower:       # a rising induction variable: never below its start
                self.cons.append(self.cache[key] >= self.lower[name])
        return self.cache[key]

    def unknown(self, side):
        return z3.Int(f"unk{next(self.fresh)}__{side}")


class _Terms(T.Terms):
    """The dependence analysis's reading of :class:`xpiler.ir.z3term.Terms`: policy UNKNOWN (an
    untranslatable part is any value, which keeps "unsat" = independent sound), names per
    iteration side, lets and macros expanded, C division with named quotient and remainder."""

    policy = T.UNKNOWN
    max_depth = 40

    def __init__(self, env, side):
        super().__init__()
        self.env, self.side = env, side

    def int(self, e, depth=0):
        if depth == 0:
            e = _expand(e, self.env)
        return super().int(e, depth)

    def unknown(self, e, depth):
        return self.env.unknown(self.side)

    def unknown_bool(self, e, depth):
        return z3.Bool(f"ub{next(self.env.fresh)}")

    def opaque(self, e, depth):
        return _opaque(e, self.side, self.env)

    def name(self, e, depth):
        env = self.env
        if isinstance(e, N.Builtin):
            return env.sym(e.name, None)
        if e.name in env.lets:
            return self.int(env.lets[e.name], depth + 1)
        m = env.macros.get(e.name)
        if m is not None and m.params is None and m.expr is not None:
            return self.int(m.expr, depth + 1)
        return env.sym(e.name, self.side)

    def call(self, e, depth):
        m = self.env.macros.get(e.func)
        if m is not None and m.params is not None and m.expr is not None and len(m.params) == len(e.args):
            return self.int(substitute(m.expr, dict(zip(m.params, e.args))), depth + 1)
        return None

    def special(self, e, depth):
        if isinstance(e, N.BinOp):
            x = _divmod_identity(e)
            if x is not None:
                return self.int(x, depth + 1)
            return low_bits(e, self.side, self.env, to_z3, depth)
        return None

    def special_bool(self, e, depth):
        env = self.env
        if isinstance(e, N.Var) and e.name in env.lets:
            return self.bool(env.lets[e.name], depth + 1)
        return lane_bit(e, self.side, env, to_z3, depth)

    def divide(self, e, depth):
        env, side = self.env, self.side
        key = (_strip_casts(e.lhs), _strip_casts(e.rhs), side)
        if key in env.divs:
            q, r = env.divs[key]
            return q if e.op == "/" else r
        a, d = self.int(e.lhs, depth + 1), self.int(e.rhs, depth + 1)
        q, r = env.unknown(side), env.unknown(side)
        env.divs[key] = (q, r)
        # C truncated division, exact: a = d*q + r, |r| < |d|, r has the sign of a
        env.cons += T.c_divmod_facts(a, d, q, r)
        # the same division in the other iteration by the same divisor: equal quotient and
        # remainder mean equal dividends (a = d*q + r on both sides); stated linearly, since
        # the solver rarely finds it through the products d*q
        other = (key[0], key[1], {"a": "b", "b": "a"}.get(side))
        if other in env.divs and not (_names(e.rhs) & (env.loopvars | env.varying)) and \
                not any(isinstance(n, (N.Index, N.Call, N.AssignExpr)) for n in walk(e.rhs)):
            q2, r2 = env.divs[other]
            a2, d2 = env.dividends[other]
            env.cons.append(z3.Implies(z3.And(q == q2, r == r2, d == d2), a == a2))
        env.dividends[key] = (a, d)
        return q if e.op == "/" else r

    def shift_right(self, e, a, k, depth):
        q, r = self.env.unknown(self.side), self.env.unknown(self.side)
        self.env.cons += [a == (1 << k) * q + r, r >= 0, r < (1 << k)]
        return q


def to_z3(e, side, env: Z3Env, depth=0):
    """An integer Z3 term for ``e`` (never None: untranslatable parts are fresh unknowns)."""
    return _Terms(env, side).int(e, depth)


def _opaque(e, side, env):
    """A value the integer model does not describe.  The same pure, iteration-invariant
    expression is the same unknown in both iterations; anything else is fresh per use."""
    names = {n.name for n in walk(e) if isinstance(n, N.Var)}
    impure = any(isinstance(n, (N.Index, N.Call, N.AssignExpr, N.Intrinsic)) or
                 isinstance(n, N.UnOp) and n.op in ("*", "++", "--", "p++", "p--") for n in walk(e))
    if impure or names & (env.loopvars | env.varying):
        return env.unknown(side)
    key = ("opaque", e)
    if key not in env.cache:
        env.cache[key] = z3.Int(f"opq{next(env.fresh)}")
    return env.cache[key]


CMP = T.CMP


def to_z3_bool(e, side, env, depth=0):
    return _Terms(env, side).bool(e, depth)


def _expand(e, env):
    """Substitute let-bound scalars and object-like macros, drop integer casts."""
    mapping = dict(env.lets)
    for m in env.macros.values():
        if m.params is None and m.expr is not None:
            mapping.setdefault(m.name, m.expr)
    for _ in range(12):
        ne = substitute(e, mapping)
        if ne == e:
            break
        e = ne
    return _strip_casts(e)


def _strip_casts(e):
    def fn(n):
        if isinstance(n, N.Cast) and isinstance(n.type, N.Scalar) and n.type.dtype in INT_DTYPES:
            return n.expr
        return n
    return rewrite(e, fn)


def _divmod_identity(e):
    """(x / d) * d + x % d  ->  x   (C's division identity, any signs), else None."""
    if e.op != "+":
        return None
    a, b = _strip_casts(e.lhs), _strip_casts(e.rhs)
    for p, m in ((a, b), (b, a)):
        if isinstance(m, N.BinOp) and m.op == "%" and isinstance(p, N.BinOp) and p.op == "*":
            for q, d in ((p.lhs, p.rhs), (p.rhs, p.lhs)):
                if isinstance(q, N.BinOp) and q.op == "/" and q.lhs == m.lhs and q.rhs == m.rhs and d == m.rhs:
                    return m.lhs
    return None


def _bounds(loop: N.For, side, env):
    v = env.sym(loop.var, side)
    lo, hi = to_z3(loop.lo, side, env), to_z3(loop.hi, side, env)
    env.cons += [v >= lo, v < hi]
    st = loop.step
    if isinstance(st, N.Const) and isinstance(st.value, int) and st.value > 1:
        k = env.unknown(side)
        env.cons += [k >= 0, v == lo + st.value * k]
    elif not (isinstance(st, N.Const) and st.value == 1):
        k = env.unknown(side)
        env.cons += [k >= 0, v == lo + to_z3(st, side, env) * k]
    return v


def _decide(build, bounds: bool = False) -> str:
    """Ask with invariant locals kept opaque (small problem; an over-approximation, so its
    'unsat' is final), then with them expanded into their definitions. With ``bounds``, between
    the two: ``build("bounds")``, still opaque but with the definitions of the invariant locals
    that name loop bounds added as equations (:func:`_bound_lets`: ``rows == N * Ho`` for a loop
    ``i < rows``), whose 'unsat' is final too (only true facts added)."""
    r = _solve(build(False))
    if r == "unsat":
        return r
    if bounds and _solve(build("bounds")) == "unsat":
        return "unsat"
    r2 = _solve(build(True))
    return "unsat" if r2 == "unsat" else (r if r == "sat" and r2 == "sat" else r2)


def _solve(cons) -> str:
    s = smt.solver(TIMEOUT_MS)
    s.add(*cons)
    r = s.check()
    if r == z3.unknown:
        # the default non-linear engine's answer depends on what the process asked Z3 before
        # (one query: unknown at first, unsat when repeated); eliminating the defined names
        # first answers such queries at once
        s = smt.solver(TIMEOUT_MS, z3.Then("simplify", "propagate-values", "solve-eqs", "smt"))
        s.add(*cons)
        r = s.check()
    return "unsat" if r == z3.unsat else ("sat" if r == z3.sat else "unknown")


def _make_env(program, func: N.Func, region, extra_loops=(), expand_outer=False) -> Z3Env:
    inner = [l for l in walk(region) if isinstance(l, N.For)]
    loopvars = {l.var for l in inner} | {l.var for l in extra_loops}
    assigned_in = assigned_names(region)
    # let-bound scalars declared inside the region vary per iteration: substitute them
    lets = {}
    count: dict = {}
    for d in walk(func.body):
        if isinstance(d, N.Decl):
            count[d.name] = count.get(d.name, 0) + 1
    all_assigned = assigned_names(func.body)
    inside = {id(d) for d in walk(region)}
    cand = {}
    for d in walk(func.body):
        if isinstance(d, N.Decl) and isinstance(d.type, N.Scalar) and d.init is not None and \
                d.name not in all_assigned and count.get(d.name) == 1:
            cand[d.name] = (d.init, id(d) in inside)
    # single-assignment scalars whose value differs between iterations (they read a loop
    # variable or such a scalar) are always substituted; the invariant ones only on request
    # (exact either way, but as opaque symbols they keep the solver's problem small and serve
    # as bases for delinearization)
    moving = set(loopvars) | (assigned_in - set(loopvars))
    moving |= {d.name for d in walk(region) if isinstance(d, N.Decl) and d.name not in cand}
    dependent = set()
    changed = True
    while changed:
        changed = False
        for k, (init, _) in cand.items():
            if k not in dependent and {n.name for n in walk(init) if isinstance(n, N.Var)} & (moving | dependent):
                dependent.add(k)
                changed = True
    for k, (init, _) in cand.items():
        if expand_outer or k in dependent:
            lets[k] = init
    int_params = {p.name for p in func.params if isinstance(p.type, N.Scalar) and p.type.dtype in INT_DTYPES}
    varying = {n for n in assigned_in if n not in loopvars}
    # locals declared inside the region without being a let also vary per iteration
    varying |= {d.name for d in walk(region) if isinstance(d, N.Decl) and d.name not in cand}
    varying |= dependent - set(lets)
    macros = program.macro_table() if program is not None else {}
    return Z3Env(loopvars, lets, macros, int_params, varying, lower=_rising(func))


# ----------------------------------------------------------------------------- delinearization
class _Atoms(P.Reader):
    """The dependence test's reading: never refuses. Any subexpression other than ``+ - *``
    of integer constants (``+x`` and casts included) is an atom, the IR node itself; atoms of
    a monomial are ordered by ``repr``; below depth 40 everything is an atom."""

    key = repr
    max_depth = 40
    unary_plus = False

    def leaf(self, e):
        return {(e,): 1}


_POLY = _Atoms()


def _poly(e, env=None):
    """Polynomial of ``e``: {monomial (sorted tuple of atom Exprs): int coefficient}."""
    return _POLY.read(e)


_poly_expr = P.atom_expr


def _split_on(p, v, S):
    """p = S*q + v (coefficient 1 on v, every other monomial a multiple of atom S): q, else None."""
    if p.get((v,)) != 1:
        return None
    q = {}
    for m, c in p.items():
        if m == (v,):
            continue
        if v in m:
            return None
        if S is None:
            return None
        if isinstance(S, int):
            if c % S:
                return None
            q[m] = c // S
        else:
            if S not in m:
                return None
            lst = list(m)
            lst.remove(S)
            q[tuple(lst)] = q.get(tuple(lst), 0) + c
    return q


def equal_subscripts(ea, loops_a, eb, loops_b, env) -> list:
    """Constraints saying subscripts ``ea`` (side a) and ``eb`` (side b) are equal, split by
    delinearization where a loop variable v in [0, S) is the last digit of both subscripts in
    base S: S*qa + va == S*qb + vb  <=>  qa == qb and va == vb (exact since |va - vb| < S)."""
    cons = []
    ea, loops_a = _closed_forms(ea, loops_a, "a", env, cons)
    eb, loops_b = _closed_forms(eb, loops_b, "b", env, cons)
    pa, pb = _poly(_expand(ea, env), env), _poly(_expand(eb, env), env)
    from . import segments      # a lane over rows of a segment whose length varies (passes/segments.py)
    pa, pb = segments.split(pa, pb, loops_a, loops_b, env, cons, poly=_poly, poly_expr=_poly_expr,
                            expand=_expand, to_z3=to_z3)
    for _ in range(8):
        hit = False
        for la in loops_a:
            if not (isinstance(la.lo, N.Const) and la.lo.value == 0 and isinstance(la.step, N.Const)
                    and la.step.value == 1):
                continue
            hi = _expand(la.hi, env)
            S = hi.value if isinstance(hi, N.Const) and isinstance(hi.value, int) else hi
            if isinstance(S, N.Expr) and _names(S) & (env.loopvars | env.varying):
                continue          # the base must be the same number in both iterations
            va = N.Var(la.var)
            qa = _split_on(pa, va, S)
            if qa is None:
                continue
            for lb in loops_b:
                if not (isinstance(lb.lo, N.Const) and lb.lo.value == 0 and isinstance(lb.step, N.Const)
                        and lb.step.value == 1) or _expand(lb.hi, env) != hi:
                    continue
                qb = _split_on(pb, N.Var(lb.var), S)
                if qb is None:
                    continue
                cons.append(env.sym(la.var, "a") == env.sym(lb.var, "b"))
                pa, pb = qa, qb
                hit = True
                break
            if hit:
                break
        if not hit:
            split = _split_by_base(pa, pb, env, cons)
            if split is None:
                break
            pa, pb, c = split
            cons += c
    cons.append(to_z3(_poly_expr(pa), "a", env, 1) == to_z3(_poly_expr(pb), "b", env, 1))
    return cons


def _split_by_base(pa, pb, env, cons):
    """S*Qa + Ra == S*Qb + Rb with 0 <= Ra, Rb < S proved from the constraints gathered so far
    (bounds, guards): then Qa == Qb and Ra == Rb.  S: an iteration-invariant symbol."""
    atoms = []
    for p in (pa, pb):
        for m in p:
            for a in m:
                if isinstance(a, (N.Var, N.Builtin)) and a not in atoms and \
                        not (isinstance(a, N.Var) and (a.name in env.loopvars or a.name in env.varying
                                                       or a.name in env.lets)):
                    atoms.append(a)
    # constant bases too: 64*(t % tc) + seg with 0 <= seg < 64 (a tile corner plus an offset)
    consts = sorted({abs(c) for p in (pa, pb) for m, c in p.items() if m and abs(c) > 1}, reverse=True)
    for S in atoms + consts[:4]:
        parts = []
        for p in (pa, pb):
            q, r = {}, {}
            for m, c in p.items():
                if isinstance(S, int):
                    if c % S == 0:
                        q[m] = c // S
                    else:
                        r[m] = c
                elif S in m:
                    lst = list(m)
                    lst.remove(S)
                    q[tuple(lst)] = q.get(tuple(lst), 0) + c
                else:
                    r[m] = c
            parts.append((q, r))
        (qa, ra), (qb, rb) = parts
        if not qa and not qb:
            continue
        s_z = z3.IntVal(S) if isinstance(S, int) else to_z3(S, "a", env, 1)
        za, zb = to_z3(_poly_expr(ra), "a", env, 1), to_z3(_poly_expr(rb), "b", env, 1)
        if _solve(env.cons + cons + [z3.Or(za < 0, za >= s_z, zb < 0, zb >= s_z)]) == "unsat":
            return qa, qb, [za == zb]
    return None


def _closed_forms(e, loops, side, env, cons):
    """Replace the variable of each loop with lo != 0 or step != 1 by lo + step * v__it, where
    v__it counts its iterations from 0 (an exact re-expression that delinearization can split)."""
    mapping = {}
    for l in loops:
        if isinstance(l.lo, N.Const) and l.lo.value == 0 and isinstance(l.step, N.Const) and l.step.value == 1:
            continue
        it = f"{l.var}__it"
        env.loopvars.add(it)
        mapping[l.var] = N.BinOp("+", l.lo, N.BinOp("*", l.step, N.Var(it)))
        k = env.sym(it, side)
        cons += [k >= 0, env.sym(l.var, side) == to_z3(l.lo, side, env) + to_z3(l.step, side, env) * k]
    if mapping:
        e = substitute(_expand(e, env), mapping)
    return e, loops


def _names(e):
    return {n.name for n in walk(e) if isinstance(n, N.Var)}


# ----------------------------------------------------------------------------- dependences
@dataclass
class Dep:
    buffer: str
    kind: str                 # flow | anti | output | scalar | unknown
    stmt: object
    reason: str = ""

    @property
    def line(self):
        return getattr(getattr(self.stmt, "loc", None), "line", None)

    def __str__(self):
        at = f" (line {self.line})" if self.line else ""
        return f"{self.kind} dependence on '{self.buffer}'{at}: {self.reason}"


def _kind(a, b):
    if a.mode != "r" and b.mode == "r":
        return "flow"
    if a.mode == "r" and b.mode != "r":
        return "anti"
    return "output"


def _bound_lets(func: N.Func, loops) -> dict:
    """``{name: definition}`` of the scalars named in the bounds of ``loops`` that are declared
    once in ``func``, at its top level before the statement that holds the loops, with a pure
    definition and never assigned, and whose definition names only such scalars or never-assigned
    parameters: the name holds its definition's value wherever the loops run (the bound of a
    collapsed row loop, ``int rows = N * Ho``; issue 15)."""
    names = {n.name for l in loops for e in (l.lo, l.hi, l.step) for n in walk(e) if isinstance(n, N.Var)}
    if not names or not loops:
        return {}
    top = list(func.body.stmts)
    at = next((k for k, st in enumerate(top) if any(n is loops[0] for n in walk(st))), None)
    if at is None:
        return {}
    before = {st.name for st in top[:at] if isinstance(st, N.Decl)}
    assigned = assigned_names(func.body)
    count: dict = {}
    decls = {}
    for d in walk(func.body):
        if isinstance(d, N.Decl):
            count[d.name] = count.get(d.name, 0) + 1
            decls[d.name] = d
    params = {p.name for p in func.params if isinstance(p.type, N.Scalar)}

    def fixed(name):
        return name not in assigned and (count.get(name, 0) == 0 and name in params or count.get(name) == 1 and
                                         isinstance(decls[name].type, N.Scalar))
    out = {}
    for name in sorted(names):
        d = decls.get(name)
        if d is None or name not in before or d.init is None or not fixed(name) or not _pure_value(d.init):
            continue
        if all(fixed(n.name) and (n.name in before or count.get(n.name, 0) == 0)
               for n in walk(d.init) if isinstance(n, N.Var)):
            out[name] = d.init
    return out


def _private_names(region) -> set:
    return {d.name for d in walk(region) if isinstance(d, N.Decl)}


def carried(program, func: N.Func, loop: N.For, *, private=(), first=False) -> list:
    """Dependences carried by ``loop`` of ``func`` (a node of ``func``, not of the view).

    ``private``: names of function-level arrays the caller will privatize (excluded)."""
    view = analysis_view(func)
    vloop = _same_position(func, view, loop)
    accs = collect(vloop.body, view, program)
    skip = _private_names(vloop.body) | set(private)
    deps = []
    by = {}
    for a in accs:
        if a.buffer in skip or a.buffer == vloop.var:
            continue
        by.setdefault(a.buffer, []).append(a)
    for buf, lst in by.items():
        for i, a in enumerate(lst):
            for b in lst[i:]:
                if a.mode == "r" and b.mode == "r":
                    continue
                d = _pair_dep(program, view, vloop, a, b)
                if d is not None:
                    deps.append(d)
                    if first:
                        return deps
    deps += scalar_deps(vloop, skip)
    return deps


def _same_position(orig_root, view_root, node):
    """The node of ``view_root`` at the position of ``node`` in ``orig_root`` (the view only
    rewrites expressions, so the path of child positions through statements is the same)."""
    path = _path(orig_root, node)
    if path is None:
        raise KeyError("node not found in its function")
    cur = view_root
    for k in path:
        cur = list(cur.children())[k]
    return cur


def _path(root, node):
    if root is node:
        return []
    if not isinstance(root, N.Node) or isinstance(root, N.Expr):
        return None
    for k, c in enumerate(root.children()):
        p = _path(c, node)
        if p is not None:
            return [k] + p
    return None


def _pair_dep(program, view, loop, a: Acc, b: Acc) -> Optional[Dep]:
    if a.index is None or b.index is None:
        return Dep(a.buffer, "unknown", a.stmt, "element not computable (pointer passed to a call or "
                   "non-canonical subscript)")
    outer = enclosing_loops(view.body, loop)
    if _same_injective(program, view, loop, a, b):
        return None

    bound_lets = _bound_lets(view, list(outer) + [loop] + list(a.loops) + list(b.loops))

    def build(expand):
        env = _make_env(program, view, loop, (loop,), expand is True)
        for l in outer:          # loops around: one shared iteration, but within their bounds
            _bounds(l, "a", env)
        va, vb = _bounds(loop, "a", env), _bounds(loop, "b", env)
        for acc, side in ((a, "a"), (b, "b")):
            for l in acc.loops:
                _bounds(l, side, env)
            env.cons += guard_constraints(acc, side, env)
        if expand == "bounds":
            for name, init in bound_lets.items():
                if name not in env.lets and name not in env.loopvars | env.varying:
                    env.cons.append(env.sym(name, "a") == to_z3(init, "a", env))
        env.cons.append(va != vb)
        if a.extent is None and b.extent is None:
            env.cons += equal_subscripts(a.index, (loop,) + tuple(a.loops), b.index, (loop,) + tuple(b.loops), env)
        else:
            ia, ib = to_z3(a.index, "a", env), to_z3(b.index, "b", env)
            xa = to_z3(a.extent, "a", env) if a.extent is not None else z3.IntVal(1)
            xb = to_z3(b.extent, "b", env) if b.extent is not None else z3.IntVal(1)
            env.cons += [ia < ib + xb, ib < ia + xa]
        return env.cons
    r = _decide(build, bounds=bool(bound_lets))
    if r == "unsat":
        return None
    why = "two iterations touch the same element" if r == "sat" else "solver could not rule it out"
    return Dep(a.buffer, _kind(a, b), a.stmt, f"{why} of loop '{loop.var}'")


def _same_injective(program, view, loop, a: Acc, b: Acc) -> bool:
    """Both accesses touch one element at the same subscript, which is a one-to-one function of
    the loop variable through / and % digits (passes/digits.py): different iterations never meet."""
    if a.extent is not None or b.extent is not None:
        return False
    if not (isinstance(loop.lo, N.Const) and loop.lo.value == 0 and isinstance(loop.step, N.Const)
            and loop.step.value == 1):
        return False
    from . import digits
    env = _make_env(program, view, loop, (loop,), True)
    ea, eb = _expand(a.index, env), _expand(b.index, env)
    if ea != eb:
        return False
    varying = (env.loopvars | env.varying) - {loop.var}
    return digits.injective(ea, loop.var, _expand(loop.hi, env), varying)


def scalar_deps(loop: N.For, private: set) -> list:
    """Scalars declared outside ``loop`` and assigned inside it (reductions, running values)."""
    deps, seen = [], set()
    inner_vars = {l.var for l in walk(loop.body) if isinstance(l, N.For)}
    for n in walk(loop.body):
        tgt, op = None, "="
        if isinstance(n, (N.Assign, N.AssignExpr)) and isinstance(n.target, N.Var):
            tgt, op = n.target.name, n.op
        elif isinstance(n, N.UnOp) and n.op in ("++", "--", "p++", "p--") and isinstance(n.operand, N.Var):
            tgt, op = n.operand.name, "+="
        if tgt and tgt not in private and tgt != loop.var and tgt not in inner_vars and tgt not in seen:
            seen.add(tgt)
            deps.append(Dep(tgt, "scalar", n, "scalar reduction" if op in ("+=", "-=", "*=") else
                            "scalar assigned in every iteration and declared outside the loop"))
    return deps


def check_parallel(program, func, loop, private=()) -> Optional[Dep]:
    d = carried(program, func, loop, private=private, first=True)
    return d[0] if d else None


# ----------------------------------------------------------------------------- interchange
def interchange_violation(program, func: N.Func, outer: N.For, inner: N.For) -> Optional[str]:
    """Why swapping ``outer`` with the ``inner`` loop directly inside it would reverse a
    dependence (direction (<, >)), or None when it is legal."""
    for x in (inner.lo, inner.hi, inner.step):
        if outer.var in {n.name for n in walk(x) if isinstance(n, N.Var)}:
            return f"bounds of loop '{inner.var}' depend on '{outer.var}' (not a rectangular nest)"
    view = analysis_view(func)
    vouter = _same_position(func, view, outer)
    vinner = _same_position(func, view, inner)
    accs = collect(vouter.body, view, program)
    skip = _private_names(vinner.body)
    by = {}
    for a in accs:
        if a.buffer not in skip:
            by.setdefault(a.buffer, []).append(a)
    for buf, lst in by.items():
        for a in lst:
            for b in lst:
                if a.mode == "r" and b.mode == "r":
                    continue
                if a.index is None or b.index is None:
                    return f"access to '{buf}' has no computable element"
                def build(expand, a=a, b=b):
                    env = _make_env(program, view, vouter, (vouter,), expand)
                    oa, ob = _bounds(vouter, "a", env), _bounds(vouter, "b", env)
                    ia, ib = _bounds(vinner, "a", env), _bounds(vinner, "b", env)
                    for acc, side in ((a, "a"), (b, "b")):
                        for l in acc.loops:
                            if l is not vinner:
                                _bounds(l, side, env)
                        env.cons += guard_constraints(acc, side, env)
                    env.cons += [oa < ob, ia > ib] + overlap(a, b, env)
                    return env.cons
                if _decide(build) != "unsat":
                    line = getattr(getattr(a.stmt, "loc", None), "line", "?")
                    return (f"dependence on '{buf}' (line {line}) has direction (<, >) on "
                            f"('{outer.var}', '{inner.var}')")
    # scalars written in the inner body and declared outside both loops: order-sensitive
    for d in scalar_deps(vouter, _private_names(vouter.body)):
        return f"scalar '{d.buffer}' is updated across iterations of both loops (line {d.line})"
    inner_scalars = scalar_deps(vinner, _private_names(vinner.body))
    for d in inner_scalars:
        # a scalar declared between the two loops carries the inner iterations in order: swapping
        # the loops would interleave different outer iterations on it
        return f"scalar '{d.buffer}' declared between the loops is carried by '{inner.var}' (line {d.line})"
    return None


# ----------------------------------------------------------------------------- fusion
def fusion_violation(program, func: N.Func, first: N.For, second: N.For) -> Optional[str]:
    """Why fusing adjacent ``first`` and ``second`` (same bounds) is illegal: an access in
    iteration i of ``second`` depending on an access in a LATER iteration i' > i of ``first``."""
    view = analysis_view(func)
    v1, v2 = _same_position(func, view, first), _same_position(func, view, second)
    a1, a2 = collect(v1.body, view, program), collect(v2.body, view, program)
    p1, p2 = _private_names(v1.body), _private_names(v2.body)
    for a in a1:
        if a.buffer in p1:
            continue
        for b in a2:
            if b.buffer != a.buffer or (a.mode == "r" and b.mode == "r") or b.buffer in p2:
                continue
            if a.index is None or b.index is None:
                return f"access to '{a.buffer}' has no computable element"
            def build(expand, a=a, b=b):
                env = _make_env(program, view, N.Block((v1, v2)), (), expand)
                env.loopvars |= {v1.var, v2.var}
                # the fused loop runs iteration x of both bodies together: the second body's
                # iteration must not need the first body's iteration x' > x
                x1 = _bounds(v1, "a", env)
                x2 = _bounds(v2, "b", env)
                for l in a.loops:
                    _bounds(l, "a", env)
                for l in b.loops:
                    _bounds(l, "b", env)
                env.cons += guard_constraints(a, "a", env) + guard_constraints(b, "b", env)
                env.cons += [_iter_pos(v1, x1, "a", env) > _iter_pos(v2, x2, "b", env)] + overlap(a, b, env)
                return env.cons
            if _decide(build) != "unsat":
                line = getattr(getattr(b.stmt, "loc", None), "line", "?")
                return (f"'{a.buffer}' at line {line} needs a later iteration of loop '{first.var}' "
                        f"(fusion-preventing backward dependence)")
    s1 = {d.buffer for d in scalar_deps(v1, p1)}
    s2 = {d.buffer for d in scalar_deps(v2, p2)}
    used2 = {n.name for n in walk(v2.body) if isinstance(n, N.Var)}
    used1 = {n.name for n in walk(v1.body) if isinstance(n, N.Var)}
    for s in sorted(s1 & used2 | s2 & used1):
        return f"scalar '{s}' is computed by one loop and used by the other"
    return None


def overlap(a: Acc, b: Acc, env) -> list:
    """Constraints saying access ``a`` (side a) and access ``b`` (side b) share an element: equal
    indices, or overlapping ranges where one covers ``extent`` elements (an intrinsic's effect,
    an element of a cast pointer: ``c4[i]`` is ``c[4*i] .. c[4*i + 3]``)."""
    ia, ib = to_z3(a.index, "a", env), to_z3(b.index, "b", env)
    if a.extent is None and b.extent is None:
        return [ia == ib]
    xa = to_z3(a.extent, "a", env) if a.extent is not None else z3.IntVal(1)
    xb = to_z3(b.extent, "b", env) if b.extent is not None else z3.IntVal(1)
    return [ia < ib + xb, ib < ia + xa]


def _iter_pos(loop, v, side, env):
    """The iteration number of ``v`` in ``loop`` (0, 1, 2, ...)."""
    lo = to_z3(loop.lo, side, env)
    st = loop.step
    if isinstance(st, N.Const) and st.value == 1:
        return v - lo
    q = env.unknown(side)
    env.cons.append(v - lo == to_z3(st, side, env) * q)
    return q


# ----------------------------------------------------------------------------- privatization
def privatizable(program, func: N.Func, loop: N.For, besides=()) -> tuple:
    """Function-level local arrays used only inside ``loop`` whose every read in an iteration is
    covered by an unconditional earlier write of the same iteration: (names, reasons-not).
    ``besides``: top-level statements whose uses do not count as uses outside the loop (the
    caller's fill loops that every thread runs on its own copy: the loop never reads what they
    wrote, since its every read is covered)."""
    top = {d.name: d for d in func.body.stmts if isinstance(d, N.Decl) and isinstance(d.type, N.Array)
           and d.init is None}
    if not top:
        return (), {}
    view = analysis_view(func)
    vloop = _same_position(func, view, loop)
    outside = set()
    skip = {id(_same_position(func, view, b)) for b in besides}
    for s in view.body.stmts:
        if s is vloop or id(s) in skip or isinstance(s, N.Decl) and s.name in top:
            continue
        outside |= {n.name for n in walk(s) if isinstance(n, N.Var)}
    inside = {n.name for n in walk(vloop.body) if isinstance(n, N.Var)}
    ok, why = [], {}
    accs = collect(vloop.body, view, program)
    order = {id(s): k for k, s in enumerate(n for n in walk(vloop.body))}
    for name in top:
        if name not in inside:
            continue
        if name in outside:
            why[name] = "used outside the loop"
            continue
        mine = [a for a in accs if a.buffer == name]
        writes = [a for a in mine if a.mode == "w" and not a.conditional and a.index is not None]
        bad = None
        for r in (a for a in mine if a.mode != "w"):
            if r.index is None:
                bad = "a read with unknown element"
                break
            if not _covered(program, view, vloop, r, [w for w in writes if order.get(id(w.stmt), 1 << 30)
                                                       < order.get(id(r.stmt), -1)]):
                bad = f"the read at line {getattr(getattr(r.stmt, 'loc', None), 'line', '?')} may see a value " \
                      f"from an earlier iteration"
                break
        if bad:
            why[name] = bad
        else:
            ok.append(name)
    return tuple(ok), why


def _covered(program, view, loop, r: Acc, writes) -> bool:
    """Every element read by ``r`` is written by one of ``writes`` earlier in the same iteration
    (loops enclosing both share their iteration; the writer's own loops range over all values)."""
    if not writes:
        return False
    env = _make_env(program, view, loop, (loop,))
    for l in r.loops:
        _bounds(l, "r", env)
    idx_r = to_z3(r.index, "r", env)
    if r.extent is not None:     # the read covers extent elements: some one of them uncovered
        first, idx_r = idx_r, env.unknown("r")
        env.cons += [idx_r >= first, idx_r < first + to_z3(r.extent, "r", env)]
    clauses = []
    for k, w in enumerate(writes):
        shared = [l for l in w.loops if any(l is x for x in r.loops)]
        own = [l for l in w.loops if not any(l is x for x in r.loops)]
        side = f"w{k}"
        sub = Z3Env(env.loopvars, env.lets, env.macros, env.int_params, env.varying, env.cache, [], env.fresh)
        for l in shared:   # same iteration as the read
            sub.cache[(l.var, side)] = sub.sym(l.var, "r")
        ws = []
        for l in own:
            ws.append(_bounds(l, side, sub))
        idx_w = to_z3(w.index, side, sub)
        if w.extent is None:
            misses = idx_w != idx_r
        else:
            misses = z3.Or(idx_r < idx_w, idx_r >= idx_w + to_z3(w.extent, side, sub))
        inner = z3.And(*sub.cons) if sub.cons else z3.BoolVal(True)
        body = z3.Implies(inner, misses)
        extra = [v for v in _free_ints(inner) | _free_ints(misses) if str(v).endswith("__" + side)]
        clauses.append(z3.ForAll(extra, body) if extra else body)
    # satisfiable = some read element that no write covers
    return _solve(env.cons + clauses) == "unsat"


def _free_ints(e) -> set:
    out, stack, seen = set(), [e], set()
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(x)
        stack.extend(x.children())
    return out


# ----------------------------------------------------------------------------- sibling nests
def sibling_conflict(program, func: N.Func, units, replicated=()) -> Optional[str]:
    """Why running the top-level ``units`` of ``func`` spread over threads/tasks is unsafe, or None.

    ``units``: (statement of ``func``, how) in program order; how is ``"loop"`` (a For whose
    iteration number k runs in thread k mod T, T unknown), ``"once"`` (runs in thread 0 only) or
    ``"all"`` (runs redundantly in every thread; must write no memory).  Each thread runs its
    share of the units in program order, so a pair of accesses is safe when the two touch
    different elements or always run in the same thread (equal iteration numbers for every T).
    An ``"all"`` unit may not read a buffer that a loop/once unit writes (another thread may
    write it before or after the read).  ``replicated``: local arrays of which every thread
    holds its own identical copy (written by ``"all"`` units only; ``passes/replicate.py``)."""
    view = analysis_view(func)
    vunits = [(_same_position(func, view, s), how) for s, how in units]
    top_assigned = assigned_names(view.body)
    accs = []
    for v, how in vunits:
        region = v.body if how == "loop" else v
        lst = collect(region, view, program)
        priv = _private_names(region) | set(replicated)
        accs.append([a for a in lst if a.buffer not in priv and not (how == "loop" and a.buffer == v.var)])
    written = {a.buffer for (v, how), lst in zip(vunits, accs) if how != "all" for a in lst if a.mode != "r"}
    for (v, how), lst in zip(vunits, accs):
        if how == "all":
            for a in lst:
                if a.mode != "r":
                    return f"'{a.buffer}' is written by a statement every thread runs"
                if a.buffer in written:
                    line = getattr(getattr(a.stmt, "loc", None), "line", "?")
                    return (f"'{a.buffer}' read at line {line} by every thread is written by a parallel "
                            f"loop nest of another thread")
    par = [(k, v, how) for k, (v, how) in enumerate(vunits) if how != "all"]
    for x, (i, va, ha) in enumerate(par):
        for (j, vb, hb) in par[x + 1:]:
            for a in accs[i]:
                for b in accs[j]:
                    if a.buffer != b.buffer or (a.mode == "r" and b.mode == "r"):
                        continue
                    line = getattr(getattr(b.stmt, "loc", None), "line", "?")
                    what = (f"'{a.buffer}' at line {line} touches an element another thread wrote or read "
                            f"in an earlier loop nest")
                    if a.index is None or b.index is None:
                        return what + " (element not computable)"

                    def build(expand, a=a, b=b, va=va, vb=vb, ha=ha, hb=hb):
                        env = _make_env(program, view, N.Block((va, vb)), (), expand)
                        env.varying |= {n for n in top_assigned if n not in env.loopvars}
                        ks = []
                        la, lb = list(a.loops), list(b.loops)
                        for u, how, side in ((va, ha, "a"), (vb, hb, "b")):
                            if how == "loop":
                                xv = _bounds(u, side, env)
                                ks.append(_iter_pos(u, xv, side, env))
                            else:
                                ks.append(z3.IntVal(0))
                        for acc, side in ((a, "a"), (b, "b")):
                            for l in acc.loops:
                                _bounds(l, side, env)
                            env.cons += guard_constraints(acc, side, env)
                        if a.extent is None and b.extent is None:
                            env.cons += equal_subscripts(a.index, ((va,) if ha == "loop" else ()) + tuple(la),
                                                         b.index, ((vb,) if hb == "loop" else ()) + tuple(lb), env)
                        else:
                            ia, ib = to_z3(a.index, "a", env), to_z3(b.index, "b", env)
                            xa = to_z3(a.extent, "a", env) if a.extent is not None else z3.IntVal(1)
                            xb = to_z3(b.extent, "b", env) if b.extent is not None else z3.IntVal(1)
                            env.cons += [ia < ib + xb, ib < ia + xa]
                        env.cons.append(ks[0] != ks[1])
                        return env.cons
                    if _decide(build) != "unsat":
                        return what
    return None
