"""#define handling: which macros are expressions (kept as names/calls in the IR, resolved by
analyses through Program.macros) and which must be expanded before parsing (types,
statements, qualifier lists...)."""
from __future__ import annotations

import functools
import re

from pycparser import c_parser


_C_TYPE_KEYWORDS = frozenset(("void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
                              "_Bool", "const", "volatile"))


@functools.lru_cache(maxsize=4096)
def _parse_expr_text(body: str, typedefs: tuple):
    # C's own type keywords (`sizeof(float)`) parse as they are; only other names are typedefs
    prelude = "".join(f"typedef int {n};\n" for n in typedefs if n not in _C_TYPE_KEYWORDS)
    src = prelude + "void __xp_m(void) { __xp_v = (" + body + "); }\n"
    try:
        ast = c_parser.CParser().parse(src, "<macro>")
    except Exception:
        return None
    fn = ast.ext[-1]
    stmt = fn.body.block_items[0]
    return stmt.rvalue


def macro_expr_ast(body: str, known_types) -> object | None:
    """The pycparser expression of a macro body, or None if the body is not an expression."""
    if not body.strip() or body.strip().startswith("{"):
        return None
    if re.search(r"\b(static_cast|reinterpret_cast|const_cast|__global__|__device__|__shared__|__nram__|"
                 r"__wram__|__mlu_\w+|std|wmma|for|while|if|return|do|typedef)\b|::|<<<|;", body):
        return None
    used = set(re.findall(r"[A-Za-z_]\w*", body))
    return _parse_expr_text(body, tuple(sorted(used & set(known_types))))


def is_expression_macro(mi, parser, known_types) -> bool:
    return macro_expr_ast(mi.body, known_types) is not None
