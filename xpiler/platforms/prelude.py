"""Sources written for a build that prepends headers: find what a kernel uses without including
it, and whether a c-dialect source is really C++.

Kernels taken from larger projects often rely on a header the project's build includes first
(``__m512i`` with no ``<immintrin.h>``, ``M_PI`` with no ``<math.h>``, ``uint8_t`` with no
``<stdint.h>``, ``half`` with no ``<cuda_fp16.h>``).  ``missing_headers`` names the standard
headers of the dialect such a source needs; the platforms put them *before* the ``#line 1``
marker of the prepared source, so every compiler message still points at the user's line, and
each addition is reported as an XP2006 note.

``cxx_reason`` tells a C source from a C++ one: a ``.cpp/.cc/.cxx`` file, or a ``.c`` file
that uses spellings only C++ accepts (``extern "C"``, ``static_cast``, ``std::``, ``auto``,
``namespace``, ``nullptr``, ``<cmath>``...).  Such a source is still the c dialect; it is
compiled with g++ (docs/decisions.md, "C++ sources are the c dialect, compiled with g++").
"""
from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..diagnostics import XPError
from .base import blank_noncode

CXX_EXTS = (".cpp", ".cc", ".cxx", ".c++", ".cp")

_CXX_SPELLINGS = [
    (re.compile(r'\bextern\s+"(?:C|C\+\+| | {3})"'), 'extern "C"'),   # literal contents are blanked
    (re.compile(r"\b(?:static|reinterpret|const|dynamic)_cast\s*<"), "C++ casts"),
    (re.compile(r"\bstd\s*::"), "std:: names"),
    (re.compile(r"\bnamespace\b"), "a namespace"),
    (re.compile(r"\btemplate\s*<"), "a template"),
    (re.compile(r"\bnullptr\b"), "nullptr"),
    (re.compile(r"\bconstexpr\b"), "constexpr"),
    (re.compile(r"(?:^|[;{(,]\s*)(?:const\s+)?auto\s+[A-Za-z_&*]", re.M), "auto"),
    (re.compile(r"\b(?:class|public|private|operator)\b"), "classes"),
    (re.compile(r"\b(?:float|double|int|char|bool|auto|[A-Za-z_]\w*_t)\s*&\s*[A-Za-z_]\w*\s*[,)=;]"), "references"),
]
_CXX_HEADERS = re.compile(r"^\s*#\s*include\s*<(cmath|cstdint|cstdlib|cstring|cstdio|cstddef|cfloat|climits|"
                          r"algorithm|limits|numeric|vector|array|type_traits|utility|functional|"
                          r"memory|iostream|tuple|cassert|cinttypes)>", re.M)


def cxx_reason(text: str, filename: str | None = None) -> str | None:
    """Why a c-dialect source must be compiled as C++ (None: it is C)."""
    if filename and Path(filename).suffix in CXX_EXTS:   # case matters: .C is C++ too
        return f"{Path(filename).suffix} file"
    if filename and Path(filename).suffix == ".C":
        return ".C file"
    m = _CXX_HEADERS.search(text)
    if m:
        return f"includes <{m.group(1)}>"
    code = blank_noncode(text, preprocessor=True)
    for rx, what in _CXX_SPELLINGS:
        for m in rx.finditer(code):
            if what == 'extern "C"' and not re.match(r'extern\s+"C', text[m.start():m.end()]):
                continue
            return f"uses {what}"
    return None


# ------------------------------------------------------------------------------ header rules
@dataclass(frozen=True)
class _Rule:
    header: str            # what gets included
    uses: re.Pattern       # a use in the code (comments, strings and # lines blanked)
    provided_by: tuple     # header names (any of) that already provide it
    dialects: tuple = ("c",)
    lang: str = "any"      # "c" | "cxx" | "any"


def _rx(s: str) -> re.Pattern:
    return re.compile(s)


_MATH_FNS = (r"(?:exp|exp2|expm1|log|log2|log10|log1p|sqrt|cbrt|tanh|sinh|cosh|sin|cos|tan|atan|atan2|asin|acos|"
             r"erf|erfc|pow|fabs|floor|ceil|round|trunc|fmax|fmin|fmod|fma|rint|lrint|nearbyint|hypot|"
             r"copysign|isnan|isinf|isfinite|signbit|ldexp|frexp)[fl]?")
_MATH_SET = ("math.h", "cmath", "tgmath.h")
_MATH_CONSTS = r"\b(?:M_(?:PI|E|LN2|LN10|LOG2E|LOG10E|SQRT2|SQRT1_2|PI_2|PI_4|1_PI|2_PI|2_SQRTPI)|INFINITY|NAN|HUGE_VALF?)\b"
_X86 = ("immintrin.h", "x86intrin.h", "zmmintrin.h", "avx512fintrin.h", "avx512vnniintrin.h", "emmintrin.h",
        "xmmintrin.h", "pmmintrin.h", "smmintrin.h", "nmmintrin.h", "tmmintrin.h", "wmmintrin.h")

RULES = (
    _Rule("immintrin.h", _rx(r"\b(?:_mm(?:256|512)?_\w+|__m(?:64|128|256|512)[a-z]*|__mmask(?:8|16|32|64)|_tile_\w+"
                             r"|_cvtss_sh|_cvtsh_ss)\b"), _X86),
    _Rule("math.h", _rx(_MATH_CONSTS + r"|(?<![\w.>:])" + _MATH_FNS + r"\s*\("), _MATH_SET),
    # on a GPU the math functions come with the runtime; only the constants need <math.h>
    _Rule("math.h", _rx(_MATH_CONSTS), _MATH_SET + ("cuda_runtime.h",), ("cuda", "hip")),
    _Rule("cmath", _rx(r"\bstd\s*::\s*" + _MATH_FNS + r"\b"), ("cmath",), ("c", "cuda", "hip"), "cxx"),
    _Rule("algorithm", _rx(r"\bstd\s*::\s*(?:max|min|clamp|swap|fill|copy|sort|max_element|min_element)\b"),
          ("algorithm",), ("c", "cuda", "hip"), "cxx"),
    _Rule("limits", _rx(r"\bstd\s*::\s*numeric_limits\b"), ("limits",), ("c", "cuda", "hip"), "cxx"),
    _Rule("stdint.h", _rx(r"\b(?:u?int(?:8|16|32|64)_t|u?intptr_t|INT(?:8|16|32|64)_(?:MAX|MIN)|UINT(?:8|16|32|64)_MAX)\b"),
          ("stdint.h", "cstdint", "inttypes.h", "cinttypes")),
    # ptrdiff_t is only guaranteed by <stddef.h>; size_t comes with many headers
    _Rule("stddef.h", _rx(r"\bptrdiff_t\b"), ("stddef.h", "cstddef")),
    _Rule("stddef.h", _rx(r"\bsize_t\b"),
          ("stddef.h", "cstddef", "stdlib.h", "cstdlib", "stdio.h", "cstdio", "string.h", "cstring", "stdint.h",
           "cstdint", "math.h", "cmath", "immintrin.h", "algorithm", "omp.h")),
    _Rule("stdbool.h", _rx(r"\b(?:bool|true|false)\b"), ("stdbool.h",), ("c",), "c"),
    _Rule("float.h", _rx(r"\b(?:FLT|DBL)_(?:MAX|MIN|EPSILON|TRUE_MIN)\b"), ("float.h", "cfloat")),
    _Rule("limits.h", _rx(r"\b(?:INT|UINT|LONG|SHRT|CHAR|SCHAR|UCHAR|LLONG)_(?:MAX|MIN)\b"), ("limits.h", "climits")),
    _Rule("string.h", _rx(r"\b(?:memcpy|memset|memmove)\s*\("), ("string.h", "cstring")),
    _Rule("stdlib.h", _rx(r"\b(?:malloc|calloc|free|aligned_alloc|abort)\s*\("), ("stdlib.h", "cstdlib")),
    _Rule("omp.h", _rx(r"\bomp_\w+\s*\("), ("omp.h",)),
    _Rule("cuda_fp16.h", _rx(r"\b(?:half2?|__half2?|__float2half\w*|__half2float|__h(?:add|mul|sub|fma|max|min|div)2?)\b"),
          ("cuda_fp16.h", "cuda_fp16.hpp"), ("cuda",)),
    _Rule("hip/hip_runtime.h", _rx(r"\b(?:__global__|__device__|__shared__|threadIdx|blockIdx|hipLaunchKernelGGL|"
                                   r"hip\w+)\b"), ("hip/hip_runtime.h",), ("hip",)),
    _Rule("hip/hip_fp16.h", _rx(r"\b(?:half2?|__half2?|__float2half\w*|__half2float|__h(?:add|mul|sub|fma|max|min|div)2?)\b"),
          ("hip/hip_fp16.h", "hip/hip_runtime.h"), ("hip",)),
)

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


@dataclass
class HeaderNeed:
    header: str
    use: str          # the spelling found
    line: int

    def note(self, file: str | None) -> XPError:
        return XPError("XP2006", header=self.header, use=self.use, file=file, line=self.line)


def missing_headers(text: str, dialect: str, *, cxx: bool = False) -> list[HeaderNeed]:
    """Standard headers of ``dialect`` that ``text`` uses without including (in a fixed order)."""
    included = {Path(h).name if not h.startswith("hip/") else h for h in _INCLUDE.findall(text)}
    included |= set(_INCLUDE.findall(text))
    code = blank_noncode(text, preprocessor=True)
    # names the source defines itself (a #define M_PI, a typedef ... half) are not missing
    defined = set(re.findall(r"^\s*#\s*define\s+(\w+)", text, re.M))
    defined |= set(re.findall(r"\btypedef\b[^;{}]*?\b(\w+)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?;", code))
    # ... nor are variables that happen to have such a name (`for (int half = ...)`)
    defined |= set(re.findall(r"\b(?:int|unsigned|float|double|long|short|char|bool|auto|size_t)\s+(\w+)\s*[=;,)\[]",
                              code))
    need = []
    for r in RULES:
        if dialect not in r.dialects or (r.lang == "c" and cxx) or (r.lang == "cxx" and not cxx):
            continue
        if any(p in included for p in r.provided_by) or any(n.header == r.header for n in need):
            continue
        for m in r.uses.finditer(code):
            word = m.group(0).rstrip("( \t")
            if re.sub(r"\W.*", "", word) in defined:
                continue
            need.append(HeaderNeed(r.header, word, code.count("\n", 0, m.start()) + 1))
            break
    return need


def include_block(needs: list[HeaderNeed]) -> str:
    return "".join(f"#include <{n.header}>\n" for n in needs)


@dataclass
class PreparedC:
    """A c-dialect source ready for gcc/g++: ``text`` (headers + ``#line 1`` + the source)."""
    text: str
    cxx: str | None                       # why it is compiled as C++ (None: C)
    needs: list = field(default_factory=list)

    def notes(self, file: str | None) -> list[XPError]:
        out = [n.note(file) for n in self.needs]
        if self.cxx:
            out.insert(0, XPError("XP2007", why=self.cxx, file=file))
        return out


_BF16_USE = re.compile(r"\b__bf16\b")
#: what a C compiler must accept for a text using __bf16 to be built as C
_BF16_PROBE = "__bf16 xp_probe_v;\nfloat xp_probe(void) { return (float)xp_probe_v; }\n"


@functools.lru_cache(maxsize=None)
def c_has_bf16(cc: str = "gcc") -> bool:
    """Whether ``cc``'s C has an arithmetic ``__bf16`` (gcc 13 on x86 has; gcc 12 has none)."""
    try:
        r = subprocess.run([cc, "-x", "c", "-fsyntax-only", "-w", "-"], input=_BF16_PROBE, text=True,
                           capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def bf16_shim_reason(text: str) -> str | None:
    """Why a c text using ``__bf16`` is built as C++ with xpiler's bfloat16 type
    (runtime/common/xp_bf16.h): the compiler's C lacks ``__bf16``; None when it has it or the text
    does not use it."""
    if not _BF16_USE.search(blank_noncode(text, preprocessor=True)) or c_has_bf16():
        return None
    return ("uses __bf16, which this gcc's C lacks (gcc 13 has it): built as C++ with xpiler's bfloat16 "
            "storage type (runtime/common/xp_bf16.h, exact conversions)")


def prepare_c(text: str, filename: str) -> PreparedC:
    shim = bf16_shim_reason(text)
    why = cxx_reason(text, filename) or shim
    needs = missing_headers(text, "c", cxx=bool(why))
    esc = Path(filename).name.replace("\\", "\\\\").replace('"', '\\"')
    head = include_block(needs) + ('#include "xp_bf16.h"\n' if shim else "")
    return PreparedC(head + f'#line 1 "{esc}"\n' + text, why, needs)
