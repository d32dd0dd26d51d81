"""HIP ``ext_vector_type`` values (``floatx4``, ``halfx4``) as plain arrays.

The MFMA builtins take and return clang vector values; once :mod:`.mfma` has lowered them, the
vectors are only ever read and written element by element (``acc[e]``).  Other compilers do not
accept the type (nvcc: "is a vector, which is not supported in device code"), so detensorize
finishes the job: every local ``floatx4 v = {…};`` becomes ``float v[4] = {…};`` and a vector
typedef that nothing names any more is dropped.

Sound only when the variable is used element-wise: a whole-vector use (``v = w``, ``v + w``,
passing ``v`` to a function) has no meaning for an array, so it is refused (XP4001, naming the
variable).  An initializer list longer than the vector is refused too.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk


def _vector(t):
    if isinstance(t, N.Vector):
        return t
    if isinstance(t, N.Named) and isinstance(t.target, N.Vector):
        return t.target
    return None


class Kept(Exception):
    """A vector cannot become an array (``why``, ``node``)."""

    def __init__(self, why, node):
        super().__init__(why)
        self.why, self.node = why, node


def _keep(why, node):
    raise Kept(why, node)


def lower_func(func: N.Func, refuse=_keep) -> N.Func:
    """``func`` with every local vector-typed variable declared as an array (see module doc).
    ``refuse(why, node)`` raises (by default :class:`Kept`)."""
    if func.body is None:
        return func
    for p in func.params:
        if _vector(getattr(p, "type", None)) is not None:
            refuse(f"parameter '{p.name}' of '{func.name}' is a vector value; only element-wise "
                   f"vector locals can become arrays", func)
    decls = {n.name: n for n in walk(func.body) if isinstance(n, N.Decl) and _vector(n.type) is not None}
    if not decls:
        return func
    for n in _whole_uses(func.body, set(decls)):
        refuse(f"vector '{n.name}' is used as a whole value; it cannot become a plain array", decls[n.name])
    for d in decls.values():
        vt = _vector(d.type)
        if isinstance(d.init, N.InitList) and len(d.init.items) > vt.n:
            refuse(f"vector '{d.name}' has more initializers than its {vt.n} elements", d)
        if d.init is not None and not isinstance(d.init, N.InitList):
            refuse(f"vector '{d.name}' is initialised from a whole vector value", d)

    def conv(s):
        if isinstance(s, N.Decl) and _vector(s.type) is not None:
            vt = _vector(s.type)
            return s.with_(type=N.Array(vt.elem.with_(const=False), (N.Const(vt.n, "int32", str(vt.n)),)))
        return s
    from xpiler.ir.visit import rewrite
    return func.with_(body=rewrite(func.body, conv))


def _whole_uses(node, names: set) -> list:
    """Occurrences of ``names`` other than as the base of an element access ``v[e]``."""
    out = []

    def go(n, as_base=False):
        if isinstance(n, tuple):
            for x in n:
                go(x)
            return
        if not isinstance(n, N.Node):
            return
        if isinstance(n, N.Var):
            if n.name in names and not as_base:
                out.append(n)
            return
        if isinstance(n, N.Index):
            go(n.base, as_base=isinstance(n.base, N.Var))
            go(n.index)
            return
        for ch in n.children():
            go(ch)
    go(node)
    return out


def drop_unused_typedefs(program: N.Program) -> N.Program:
    """Remove vector typedefs that no declaration, cast or parameter names any more."""
    used = set()
    for it in program.items:
        if isinstance(it, N.Typedef):
            continue
        for n in walk(it):
            v = _vector(n) if isinstance(n, N.Type) else None
            if v is not None:
                used.add(v.spelling)
            if isinstance(n, N.Named):
                used.add(n.name)
    items = tuple(it for it in program.items
                  if not (isinstance(it, N.Typedef) and isinstance(it.type, N.Vector) and it.name not in used))
    return program.with_(items=items)
