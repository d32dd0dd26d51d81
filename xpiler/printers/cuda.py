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

    def typedef(self, t: N.Typedef) -> str:
        """A GCC/clang vector typedef (``__vector_size__``, ``ext_vector_type``) is not accepted by
        nvcc in device code; it is printed as a struct of the same size and alignment with the
        lanes as members and the component-wise arithmetic GCC vectors have (vector op vector,
        vector op scalar, scalar op vector, compound assignment, unary minus, subscript)."""
        ty = t.type
        if isinstance(ty, N.Vector) and ty.spelling == t.name and any(
                "vector_size" in a or "ext_vector_type" in a for a in t.attrs):
            return vector_struct(self.type_name(t.name), self.scalar(N.Scalar(ty.elem.dtype, ty.elem.spelling)), ty.elem.dtype, ty.n)
        return super().typedef(t)

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


_ELEM_BYTES = {"float64": 8, "int64": 8, "uint64": 8, "float32": 4, "int32": 4, "uint32": 4,
               "float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1}


def vector_struct(name: str, elem: str, dtype: str, n: int) -> str:
    """The struct a GCC/clang vector type ``name`` (``n`` lanes of ``elem``) is printed as for
    nvcc: lanes x, y, z, w (up to 4, so HIP's ``v.x`` still reads) or ``v[n]``, storage padded to
    a power of two lanes and aligned like the vector type (at most 16 bytes), operators
    component-wise."""
    lanes = 1
    while lanes < n:
        lanes *= 2
    size = lanes * _ELEM_BYTES.get(dtype, 4)
    align = min(size, 16)
    hd = "__host__ __device__ inline"
    if lanes <= 4:
        members = ", ".join("xyzw"[:lanes])
        body = [f"    {elem} {members};",
                f"    {hd} {elem}& operator[](int i) {{ return (&x)[i]; }}",
                f"    {hd} const {elem}& operator[](int i) const {{ return (&x)[i]; }}"]
    else:
        body = [f"    {elem} v[{lanes}];",
                f"    {hd} {elem}& operator[](int i) {{ return v[i]; }}",
                f"    {hd} const {elem}& operator[](int i) const {{ return v[i]; }}"]
    ops = ["+", "-", "*", "/"]
    if not dtype.startswith(("float", "bfloat")):
        ops += ["%", "&", "|", "^", "<<", ">>"]
    lines = [f"struct alignas({align}) {name} {{  /* a {n}-lane vector of {elem} (GCC/clang vector type) */",
             *body, "};"]
    loop = f"for (int i = 0; i < {n}; ++i)"
    for op in ops:
        lines += [
            f"{hd} {name} operator{op}({name} a, const {name}& b) {{ {loop} a[i] {op}= b[i]; return a; }}",
            f"{hd} {name} operator{op}({name} a, {elem} s) {{ {loop} a[i] {op}= s; return a; }}",
            f"{hd} {name} operator{op}({elem} s, const {name}& b) {{ {name} r; {loop} r[i] = s {op} b[i]; return r; }}",
            f"{hd} {name}& operator{op}=({name}& a, const {name}& b) {{ {loop} a[i] {op}= b[i]; return a; }}",
            f"{hd} {name}& operator{op}=({name}& a, {elem} s) {{ {loop} a[i] {op}= s; return a; }}",
        ]
    lines.append(f"{hd} {name} operator-({name} a) {{ {loop} a[i] = -a[i]; return a; }}")
    return "\n".join(lines)
