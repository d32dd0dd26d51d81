"""Generic traversal helpers over the frozen IR: walk, bottom-up rewrite, substitution."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator

from ..deadline import check
from .nodes import Node, Var, Expr, For, Block, Stmt, child_fields


def walk(node) -> Iterator[Node]:
    """Pre-order over every node (types included). An explicit stack, not nested generators:
    a nested ``yield from`` passes every node up through each level above it, which made deep
    programs' walks quadratic in their depth (the tuner's expansion spent a third of its time here).
    Each walk first asks the migration's deadline (xpiler/deadline.py): every analysis walks, so a
    running pass stops within its next walk once ``--budget`` is spent."""
    check("walk")
    stack = [node]
    pop, push = stack.pop, stack.extend
    while stack:
        n = pop()
        if isinstance(n, Node):
            yield n
            kids = []      # n.children(), inlined
            for name in child_fields(type(n)):
                v = getattr(n, name)
                if isinstance(v, Node):
                    kids.append(v)
                elif isinstance(v, tuple):
                    kids += [x for x in v if isinstance(x, Node)]
            kids.reverse()
            push(kids)
        elif isinstance(n, tuple):
            push(reversed(n))


def rewrite(node, fn: Callable):
    """Bottom-up rebuild: children first, then ``fn(new_node)`` (return the node unchanged
    to keep it).  Unchanged subtrees keep their identity."""
    if isinstance(node, tuple):
        new = tuple(rewrite(x, fn) for x in node)
        return new if any(a is not b for a, b in zip(new, node)) else node
    if not isinstance(node, Node):
        return node
    changes = {}
    for name in child_fields(type(node)):
        v = getattr(node, name)
        if isinstance(v, (Node, tuple)):
            nv = rewrite(v, fn)
            if nv is not v:
                changes[name] = nv
    if changes:
        node = replace(node, **changes)
    return fn(node)


def substitute(node, mapping: dict):
    """Replace Var(name) by mapping[name] (an Expr) everywhere below ``node``."""
    def fn(n):
        if isinstance(n, Var) and n.name in mapping:
            return mapping[n.name]
        return n
    return rewrite(node, fn)


def loops(node) -> list:
    """Every canonical For below ``node``, outermost first."""
    return [n for n in walk(node) if isinstance(n, For)]


def find_loop(node, var: str) -> For:
    for n in walk(node):
        if isinstance(n, For) and n.var == var:
            return n
    raise KeyError(var)


def vars_used(node) -> set:
    return {n.name for n in walk(node) if isinstance(n, Var)}


def outside_loops(body) -> list:
    """``body`` and the statements below it through blocks and if-branches, but not inside
    nested loops: where a ``break``/``continue`` would leave the loop that holds ``body``."""
    from .nodes import If

    def scan(s):
        yield s
        if isinstance(s, Block):
            for x in s.stmts:
                yield from scan(x)
        elif isinstance(s, If):
            yield from scan(s.then)
            if s.else_ is not None:
                yield from scan(s.else_)
    return list(scan(body))
