"""Row-body blocks: a plain ``{ ... }`` block that holds a loop, in the body of a row loop, made
statements of the row body, so that binding's one-block-per-row form (``passes/block_rows.py``)
sees its loops as column loops.

An inlined helper (``passes/inline_helpers.py``: ``float r; { float t = 0; for (...) t += ...;
r = t; }``) or a source's own scoping braces leave such a block; ``block_rows.plan`` spreads only
the row body's own loops over the block, and refused every such kernel (the row plan skipped,
one thread per row).

Legality (:func:`splice`), per block, checked on the names the block declares directly (its own
``Decl`` statements, not those of loops or blocks inside it):

* a name no other statement of the function uses (outside this block), and no parameter, is
  kept: the block's braces only limited its scope, and nothing else sees it once they are gone;
* a name used elsewhere is renamed to a fresh one (unused anywhere in the function) inside the
  block, when that rename is exact: the block declares it once, no loop or block inside it
  declares it again (which would shadow it), and no statement of the block before its
  declaration reads it (which would mean the outer one);
* otherwise the block is left as it is, and :func:`why_kept` says which name kept it.

Only blocks that hold a loop are spliced (a block of plain statements is a statement of the row
body already, run by every thread or by thread 0, as before); a block right after a pragma is
left alone (the pragma applies to it). Nested blocks are spliced from the outside in, repeatedly.
"""
from __future__ import annotations

from xpiler.ir import nodes as N
from xpiler.ir.visit import rewrite, walk


def names(n) -> set:
    """Every name a node declares, reads or loops over."""
    out = set()
    for x in walk(n):
        if isinstance(x, (N.Var, N.Decl)):
            out.add(x.name)
        elif isinstance(x, N.For):
            out.add(x.var)
    return out


def _has_loop(s) -> bool:
    return any(isinstance(n, (N.For, N.CFor, N.While)) for n in walk(s))


def _outside(func: N.Func, block: N.Block) -> set:
    """The names ``func`` uses outside ``block`` (its parameters included)."""
    out = {p.name for p in func.params}
    stack = [func.body]
    while stack:
        n = stack.pop()
        if n is block:
            continue
        if isinstance(n, (N.Var, N.Decl)):
            out.add(n.name)
        elif isinstance(n, N.For):
            out.add(n.var)
        if isinstance(n, N.Node):
            for name in N.child_fields(type(n)):
                v = getattr(n, name)
                if isinstance(v, N.Node):
                    stack.append(v)
                elif isinstance(v, tuple):
                    stack.extend(x for x in v if isinstance(x, N.Node))
    return out


def _renamable(block: N.Block, name: str) -> bool:
    decls = [k for k, s in enumerate(block.stmts) if isinstance(s, N.Decl) and s.name == name]
    if len(decls) != 1:
        return False
    inner = [x for s in block.stmts for x in walk(s) if isinstance(x, N.Decl) and x.name == name
             or isinstance(x, N.For) and x.var == name]
    if len(inner) != 1:               # only the direct declaration itself
        return False
    before = block.stmts[:decls[0]] + ((block.stmts[decls[0]].init,) if block.stmts[decls[0]].init else ())
    return not any(isinstance(x, N.Var) and x.name == name for s in before for x in walk(s))


def _rename(block: N.Block, mapping: dict) -> N.Block:
    def fn(n):
        if isinstance(n, N.Var) and n.name in mapping:
            return n.with_(name=mapping[n.name])
        if isinstance(n, N.Decl) and n.name in mapping:
            return n.with_(name=mapping[n.name])
        return n
    return rewrite(block, fn)


def why_kept(func: N.Func, block: N.Block) -> str | None:
    """Why ``block`` (in ``func``) cannot be spliced: a name it declares that is used outside it
    and cannot be renamed exactly; None when it can."""
    outside = _outside(func, block)
    for s in block.stmts:
        if isinstance(s, N.Decl) and s.name in outside and not _renamable(block, s.name):
            return f"the block declares '{s.name}', also used outside it, and a rename would not be exact"
    return None


def splice(func: N.Func, row: N.For, fresh) -> tuple | None:
    """``(func, row)`` with the plain blocks that hold a loop in ``row``'s body spliced into it
    (renamed where needed, by ``fresh(base)``: a name unused in ``func``); None when nothing
    changes. ``row`` must be a statement of ``func``'s body."""
    changed = False
    while True:
        stmts, done = row.body.stmts, False
        for k, s in enumerate(stmts):
            prev = next((p for p in reversed(stmts[:k]) if not isinstance(p, N.Comment)), None)
            if type(s) is not N.Block or not _has_loop(s) or isinstance(prev, N.Pragma):
                continue
            if why_kept(func, s) is not None:
                continue
            outside = _outside(func, s)
            mapping = {d.name: fresh(d.name) for d in s.stmts if isinstance(d, N.Decl) and d.name in outside}
            inner = _rename(s, mapping) if mapping else s
            new_row = row.with_(body=row.body.with_(stmts=stmts[:k] + inner.stmts + stmts[k + 1:]))
            func = func.with_(body=func.body.with_(stmts=tuple(new_row if x is row else x
                                                               for x in func.body.stmts)))
            row, done = new_row, True
            break
        if not done:
            return (func, row) if changed else None
        changed = True

