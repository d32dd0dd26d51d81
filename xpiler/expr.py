"""Safe evaluation of the integer size expressions used in specs.

Grammar: integers, size names, ``+ - * / %``, parentheses, unary minus, and the calls
``cdiv(a, b)``, ``min(a, b, ...)``, ``max(a, b, ...)``.  ``/`` is floor division (C
semantics for the non-negative values sizes have).
"""
from __future__ import annotations

import ast


class ExprError(ValueError):
    def __init__(self, kind: str, detail: str, name: str | None = None):
        super().__init__(detail)
        self.kind = kind  # "syntax" | "unknown"
        self.detail = detail
        self.name = name


def evaluate(expr, sizes: dict[str, int]) -> int | float:
    """Evaluate an int literal, a float literal, or an expression string over ``sizes``."""
    if isinstance(expr, bool):
        raise ExprError("syntax", "booleans are not sizes")
    if isinstance(expr, (int, float)):
        return expr
    if not isinstance(expr, str):
        raise ExprError("syntax", f"expected a number or an expression string, got {type(expr).__name__}")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError("syntax", f"syntax error: {e.msg}") from None
    return _eval(tree.body, sizes)


def names_in(expr) -> set[str]:
    if not isinstance(expr, str):
        return set()
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in ("cdiv", "min", "max")}


def _eval(node, sizes):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in sizes:
            raise ExprError("unknown", f"unknown size name '{node.id}'", node.id)
        return sizes[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, sizes)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, sizes), _eval(node.right, sizes)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, (ast.Div, ast.FloorDiv)):
            if b == 0:
                raise ExprError("syntax", "division by zero")
            if isinstance(a, int) and isinstance(b, int):
                return a // b
            return a / b
        if isinstance(node.op, ast.Mod):
            if b == 0:
                raise ExprError("syntax", "modulo by zero")
            return a % b
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = [_eval(a, sizes) for a in node.args]
        if node.func.id == "cdiv" and len(args) == 2:
            if args[1] == 0:
                raise ExprError("syntax", "division by zero")
            return -((-args[0]) // args[1])
        if node.func.id in ("min", "max") and args:
            return min(args) if node.func.id == "min" else max(args)
    raise ExprError("syntax", f"unsupported construct '{ast.unparse(node)}'")


def to_c(expr, rename: dict[str, str] | None = None) -> str | int | float:
    """A spec expression as C source over (renamed) identifiers: ``cdiv(N,16)`` →
    ``(N + 16 - 1) / 16``; ``min``/``max`` become conditional expressions."""
    if not isinstance(expr, str):
        return expr
    rename = rename or {}
    tree = ast.parse(expr.strip(), mode="eval")

    def c(n) -> str:
        if isinstance(n, ast.Constant):
            return repr(n.value)
        if isinstance(n, ast.Name):
            return rename.get(n.id, n.id)
        if isinstance(n, ast.UnaryOp):
            return f"(-{c(n.operand)})" if isinstance(n.op, ast.USub) else c(n.operand)
        if isinstance(n, ast.BinOp):
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "/", ast.Mod: "%"}[type(n.op)]
            return f"({c(n.left)} {op} {c(n.right)})"
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            args = [c(a) for a in n.args]
            if n.func.id == "cdiv":
                return f"(({args[0]} + {args[1]} - 1) / {args[1]})"
            if n.func.id in ("min", "max"):
                out = args[0]
                for a in args[1:]:
                    cmp = "<" if n.func.id == "min" else ">"
                    out = f"({out} {cmp} {a} ? {out} : {a})"
                return out
        raise ExprError("syntax", f"unsupported construct '{ast.unparse(n)}'")

    return c(tree.body)
