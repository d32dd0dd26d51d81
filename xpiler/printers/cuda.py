"""CUDA printer (nvcc -arch=sm_90)."""
from __future__ import annotations

from ..ir import nodes as N
from .base import Printer, SIMT_BINDINGS


class CudaPrinter(Printer):
    dialect = "cuda"
    scope_quals = {"shared": "__shared__", "constant": "__constant__", "global": "__device__"}
    builtins = {f"{b}.{a}" for b in ("threadIdx", "blockIdx", "blockDim", "gridDim") for a in "xyz"} | {"warpSize"}
    bindings = SIMT_BINDINGS
    barrier_names = {"block": "__syncthreads", "warp": "__syncwarp", "fence": "__threadfence",
                     "fence_block": "__threadfence_block"}
    # no _Float16: nvcc (13.0, sm_90) stops with an internal error on it in device code; float16
    # is spelled half (same bits) instead
    scalar_spellings = {"half", "__half", "__nv_bfloat16", "bool"}
    canonical_scalar = dict(Printer.canonical_scalar, float16="half", bfloat16="__nv_bfloat16")
    kind_quals = {"kernel": "__global__", "device": "__device__", "host": ""}
    func_attrs_ok = {"static", "inline", "__forceinline__", "__noinline__", "__launch_bounds__", "__host__",
                     "__inline__"}
    headers = ("cuda_runtime.h",)

    def attr_ok(self, a):
        return a.startswith(("__attribute__", "__align__", "alignas"))

    def fragment(self, t: N.Fragment) -> str:
        args = [f"wmma::{t.kind}", self.expr(t.m), self.expr(t.n), self.expr(t.k), self.declare(t.elem, "")]
        if t.layout:
            args.append(f"wmma::{t.layout}")
        return f"wmma::fragment<{', '.join(args)}>"

    def s_Launch(self, s: N.Launch):
        cfg = [self.expr(s.grid, 2), self.expr(s.block, 2)]
        if s.shmem is not None or s.stream is not None:
            cfg.append(self.expr(s.shmem, 2) if s.shmem is not None else "0")
        if s.stream is not None:
            cfg.append(self.expr(s.stream, 2))
        args = ", ".join(self.expr(a, 2) for a in s.args)
        self.emit(f"{s.kernel}<<<{', '.join(cfg)}>>>({args});")

    def prelude(self, prog):
        if prog.dialect == self.dialect and self.dialect == "hip":
            from .headers import missing_hip_headers
            return missing_hip_headers(prog)
        if prog.dialect == self.dialect:
            # float16 is spelled half here (see scalar_spellings), which needs cuda_fp16.h even
            # where the program came in with _Float16 (a hip program retargeted by binding)
            from ..ir.visit import walk
            if self.dialect != "cuda" or any(isinstance(i, N.Directive) and ("cuda_fp16.h" in i.text or "mma.h" in i.text)
                   for i in prog.items):
                return ()
            if any(isinstance(n, N.Scalar) and n.dtype == "float16" and n.spelling not in ("half", "__half")
                   for n in walk(prog.items)):
                return (N.Directive("#include <cuda_fp16.h>", "include"),)
            return ()
        from .headers import headers_for
        return headers_for(prog, self.dialect)
