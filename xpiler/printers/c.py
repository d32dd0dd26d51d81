"""C printer (gcc -O2 -march=native; AVX-512 intrinsics, OpenMP pragmas)."""
from __future__ import annotations

from .base import Printer


class CPrinter(Printer):
    dialect = "c"
    scope_quals = {"global": ""}
    builtins = set()
    bindings = {}
    barrier_names = {}
    scalar_spellings = {"_Float16", "__bf16", "bool", "__mmask8", "__mmask16", "__mmask32", "__mmask64"}
    kind_quals = {"kernel": "", "device": "", "host": ""}
    func_attrs_ok = {"static", "inline"}
    cpp = False

    def prelude(self, prog):
        if prog.dialect == self.dialect:
            return ()
        from .headers import headers_for
        return headers_for(prog, self.dialect)
