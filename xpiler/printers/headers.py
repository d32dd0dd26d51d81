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


_FLOAT_H = {"FLT_MAX", "FLT_MIN", "FLT_EPSILON", "FLT_TRUE_MIN", "DBL_MAX", "DBL_MIN", "DBL_EPSILON"}
_LIMITS_H = {"INT_MAX", "INT_MIN", "UINT_MAX", "LONG_MAX", "LONG_MIN", "SHRT_MAX", "SHRT_MIN", "CHAR_MAX",
             "SCHAR_MAX", "SCHAR_MIN", "UCHAR_MAX", "LLONG_MAX", "LLONG_MIN"}
_MATH_H = {"M_PI", "M_E", "M_LN2", "M_LN10", "M_LOG2E", "M_LOG10E", "M_SQRT2", "M_SQRT1_2", "M_PI_2", "M_PI_4",
           "M_1_PI", "M_2_PI", "M_2_SQRTPI", "INFINITY", "NAN", "HUGE_VALF", "HUGE_VAL"}


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
    # constants a source took from a header its build prepended (FLT_MAX, M_PI...): the printed
    # program includes that header itself
    used = {n.name for n in walk(prog.items) if isinstance(n, N.Var)}
    for h, words in (("float.h", _FLOAT_H), ("limits.h", _LIMITS_H), ("math.h", _MATH_H)):
        if used & words and h not in need:
            need.append(h)
    return tuple(N.Directive(f"#include <{h}>", "include") for h in need)


def missing_hip_headers(prog: N.Program) -> tuple:
    """The HIP headers a hip program needs and does not include: ``hip/hip_runtime.h`` always
    (hipcc does not add it, unlike nvcc's implicit ``cuda_runtime.h``: a CUDA source without
    includes retargeted to hip would not know ``__global__``), ``hip/hip_fp16.h`` where
    float16 is spelled ``half``/``__half`` (``_Float16`` is built in), and ``hip/hip_bfloat16.h``
    where bfloat16 is printed ``hip_bfloat16`` (hip_runtime.h does not declare it; a kernel re-derived
    through loops has lost its source's bfloat16 header)."""
    own = " ".join(i.text for i in prog.items if isinstance(i, N.Directive) and i.kind == "include")
    need = []
    if "hip_runtime.h" not in own:
        need.append("hip/hip_runtime.h")
    if "hip_fp16.h" not in own and any(isinstance(n, N.Scalar) and n.dtype == "float16"
                                       and (n.spelling or "") in ("half", "__half", "half2", "__half2")
                                       for n in walk(prog.items)):
        need.append("hip/hip_fp16.h")
    if "hip_bfloat16.h" not in own and "hip_bf16.h" not in own and any(
            isinstance(n, N.Scalar) and n.dtype == "bfloat16" and n.spelling not in ("__bf16", "__hip_bfloat16")
            for n in walk(prog.items)):
        need.append("hip/hip_bfloat16.h")
    return tuple(N.Directive(f"#include <{h}>", "include") for h in need)
