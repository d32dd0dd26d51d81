"""BANG C printer (Cambricon MLU; checked against the project's BANG header)."""
from __future__ import annotations

from ..ir import nodes as N
from .base import BANG_BINDINGS, Printer


class BangPrinter(Printer):
    dialect = "bang"
    scope_quals = {"nram": "__nram__", "wram": "__wram__", "sram": "__mlu_shared__", "constant": "__mlu_const__",
                   "global": "__mlu_device__"}
    builtins = {"taskId", "taskDim", "taskIdX", "taskIdY", "taskIdZ", "taskDimX", "taskDimY", "taskDimZ",
                "clusterId", "clusterDim", "coreId", "coreDim"}
    bindings = BANG_BINDINGS
    barrier_names = {"cluster": "__sync_cluster", "all": "__sync_all", "copy": "__sync"}
    scalar_spellings = {"half", "bfloat16_t", "bool"}
    canonical_scalar = dict(Printer.canonical_scalar, float16="half", bfloat16="bfloat16_t")
    kind_quals = {"kernel": "__mlu_global__", "device": "__mlu_func__", "host": ""}
    func_attrs_ok = {"static", "inline", "__mlu_entry__"}

    def func_prefix(self, f):
        parts = super().func_prefix(f)
        if "__mlu_entry__" in parts and "__mlu_global__" in parts:
            parts.remove("__mlu_global__")
        return parts

    def s_Launch(self, s: N.Launch):
        cfg = [self.expr(s.grid, 2), self.expr(s.block, 2), self.expr(s.stream, 2) if s.stream is not None else "0"]
        args = ", ".join(self.expr(a, 2) for a in s.args)
        self.emit(f"{s.kernel}<<<{', '.join(cfg)}>>>({args});")

    def prelude(self, prog):
        if prog.dialect == self.dialect:
            return ()
        from .headers import headers_for
        return headers_for(prog, self.dialect)
