"""Headers a dialect needs when a program is printed into it from another dialect.  The
program's own #include lines that belong to another dialect are dropped by the printers."""
from __future__ import annotations

from ..ir import nodes as N
from ..ir.visit import walk

DIALECT_HEADERS = {
    "cuda": ("cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h", "mma.h"),
    "hip": ("hip/hip_runtime.h", "hip/hip_fp16.h", "hip/hip_bf16.h"),
    "bang": ("bang.h", "cnrt.h"),
    "c": ("immintrin.h",),
}


def foreign_include(text: str, target: str) -> bool:
    """True for an #include of another dialect's header."""
    for d, hs in DIALECT_HEADERS.items():
        if d == target:
            continue
        for h in hs:
            if f"<{h}>" in text or f'"{h}"' in text:
                return True
    return False


def headers_for(prog: N.Program, target: str) -> tuple:
    names = {n.name for n in walk(prog.items) if isinstance(n, N.Intrinsic)}
    need = []
    if target in ("cuda", "hip", "bang") and any(
            isinstance(n, N.Scalar) and (n.spelling or "").endswith("_t") and n.spelling.startswith(("int", "uint"))
            for n in walk(prog.items)):
        need.append("stdint.h")
    if target == "cuda":
        need.append("cuda_runtime.h")
        if any(isinstance(n, N.Scalar) and n.dtype == "float16" for n in walk(prog.items)):
            need.append("cuda_fp16.h")
        if any(n.startswith("wmma::") for n in names):
            need.append("mma.h")
    elif target == "hip":
        need.append("hip/hip_runtime.h")
    elif target == "bang":
        need.append("bang.h")
    elif target == "c":
        need += ["stdint.h", "math.h"]
        if any(n.startswith("_mm") for n in names):
            need.insert(0, "immintrin.h")
    return tuple(N.Directive(f"#include <{h}>", "include") for h in need)


def missing_hip_headers(prog: N.Program) -> tuple:
    """The HIP headers a hip program needs and does not include: ``hip/hip_runtime.h`` always
    (hipcc does not add it, unlike nvcc's implicit ``cuda_runtime.h``: a CUDA source without
    includes retargeted to hip would not know ``__global__``), and ``hip/hip_fp16.h`` where
    float16 is spelled ``half``/``__half`` (``_Float16`` is built in)."""
    own = " ".join(i.text for i in prog.items if isinstance(i, N.Directive) and i.kind == "include")
    need = []
    if "hip_runtime.h" not in own:
        need.append("hip/hip_runtime.h")
    if "hip_fp16.h" not in own and any(isinstance(n, N.Scalar) and n.dtype == "float16"
                                       and (n.spelling or "") in ("half", "__half", "half2", "__half2")
                                       for n in walk(prog.items)):
        need.append("hip/hip_fp16.h")
    return tuple(N.Directive(f"#include <{h}>", "include") for h in need)
