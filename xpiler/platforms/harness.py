"""Generated harness mains and the job folder format they read (see runtime/common/xp_job.h).

One executable per (kernel, mode) serves every instance of a spec: sizes, launch dimensions
and scalars travel in ``job.txt``; array contents in ``in.bin``; the run writes ``out.bin``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..dtypes import C_TYPE, NUMPY, is_float
from ..spec import FUNC_TYPES, Instance, Spec

RUNTIME_DIR = Path(__file__).resolve().parent.parent / "runtime"
COMMON_INCLUDE = RUNTIME_DIR / "common"
#: compiler flag of test builds on the CPU (c, SIMT emulator): automatic variables start as a
#: byte pattern (gcc: 0xFE), so a read before the first write shows (docs/verification.md)
POISON_LOCALS = "-ftrivial-auto-var-init=pattern"
_POISON_OK: dict = {}


def poison_locals_flags(compiler: str) -> list[str]:
    """``[POISON_LOCALS]`` when ``compiler`` accepts it (gcc >= 12, clang >= 8; probed once per
    compiler), else ``[]``: an older compiler builds as before rather than failing every build."""
    if compiler not in _POISON_OK:
        import shutil
        import subprocess
        exe = shutil.which(compiler)
        ok = False
        if exe:
            try:
                ok = subprocess.run([exe, POISON_LOCALS, "-x", "c", "-fsyntax-only", "-"], input="int main(void) { return 0; }\n",
                                    capture_output=True, text=True, timeout=60).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
        _POISON_OK[compiler] = ok
    return [POISON_LOCALS] if _POISON_OK[compiler] else []


@dataclass(frozen=True)
class ArgBinding:
    index: int
    name: str
    ctype: str  # element type for arrays, value type for scalars
    role: str

    @property
    def is_array(self) -> bool:
        return self.role != "scalar"


# --------------------------------------------------------------------------------------------
# Entry names that clash with the C/C++ standard library
# --------------------------------------------------------------------------------------------
#: Names of the C standard library (math.h, stdlib.h, string.h, stdio.h, time.h) and of the
#: emulators' device math that a kernel is often named after (``exp``, ``sin``, ``abs``, ``max``
#: ...).  A kernel with such a name clashes with the library's declaration in a C build
#: ("conflicting types for 'exp'"), with ``extern "C"`` in C++, and makes ``&exp`` ambiguous in a
#: GPU harness.  The builds rename the kernel's definition and launch sites (and the harness's
#: call) to :func:`harness_entry`; the user's source and the migration outputs keep the name.
RESERVED_ENTRY_NAMES = frozenset("""
    abs labs llabs fabs fabsf div ldiv exp expf exp2 exp2f exp10 expm1 log logf log2 log10 log1p logb
    pow powf sqrt sqrtf cbrt sin sinf cos cosf tan tanf asin acos atan atan2 sinh cosh tanh tanhf asinh
    acosh atanh erf erfc erff tgamma lgamma gamma floor floorf ceil ceilf round roundf lround trunc
    truncf rint lrint nearbyint fmod fmodf remainder remquo fmin fminf fmax fmaxf fma hypot copysign
    ldexp frexp modf scalbn ilogb nan nextafter fdim signbit isnan isinf isfinite max min clamp
    sign norm rsqrt sincos j0 j1 y0 y1 malloc calloc realloc free memcpy memmove memset memcmp
    strlen strcpy qsort bsearch rand srand exit abort atoi atof time clock sort select index
    rindex remove rename read write open close sum mean scale
""".split())
_NOT_A_TYPE = frozenset("return case else do sizeof throw new delete goto co_return co_yield typeof "
                        "decltype alignof operator".split())


def harness_entry(entry: str) -> str:
    """The name the harness calls: ``entry`` itself, or ``xp_entry_<entry>`` for a reserved name."""
    return f"xp_entry_{entry}" if entry in RESERVED_ENTRY_NAMES else entry


def rename_entry(text: str, entry: str, *, c_language: bool = False) -> str:
    """``text`` with the kernel ``entry`` renamed to :func:`harness_entry` where it is the kernel:
    its declarators (``void exp(``, ``__global__ void __launch_bounds__(256) exp(``), its launch
    sites (``exp<<<``) and its uses as a value (``hipLaunchKernelGGL(exp, ...)``,
    ``cudaFuncSetAttribute(exp, ...)``).  Calls such as ``exp(x)`` stay calls of the library
    function.  In C (``c_language``), which has no overloading, a source that defines ``exp``
    cannot call the library's ``exp``: every occurrence is the kernel and is renamed.
    Comments and literals are not touched; line numbers do not move.  Identity for names
    outside :data:`RESERVED_ENTRY_NAMES`."""
    new = harness_entry(entry)
    if new == entry:
        return text
    from .base import blank_noncode
    masked = blank_noncode(text)
    out, last = [], 0
    for m in re.finditer(rf"(?<![\w$]){re.escape(entry)}(?![\w$])", masked):
        s, e = m.start(), m.end()
        j = s - 1
        while j >= 0 and masked[j] in " \t\r\n":
            j -= 1
        prev = masked[j] if j >= 0 else ""
        if prev in (".", ">") and (prev == "." or masked[j - 1:j + 1] == "->"):
            continue                                   # a member
        if masked[max(0, j - 1):j + 1] == "::":
            continue                                   # std::exp, ::exp
        k = e
        while k < len(masked) and masked[k] in " \t\r\n":
            k += 1
        nxt = masked[k:k + 1]
        rename = c_language
        if not rename:
            if masked.startswith("<<<", k):
                rename = True                          # launch site
            elif nxt == "(":
                # a declarator: the previous token is a type word or the ')' of an attribute
                w = re.search(r"([A-Za-z_]\w*)\s*$", masked[:j + 1])
                if w and w.group(1) not in _NOT_A_TYPE:
                    rename = True
                elif prev == ")":
                    o = _open_paren(masked, j)
                    head = re.search(r"([A-Za-z_]\w*)\s*\(*\s*$", masked[:o]) if o > 0 else None
                    rename = bool(head and head.group(1) in ("__launch_bounds__", "__attribute__",
                                                              "__declspec", "alignas", "__align__"))
            elif nxt == "<":
                rename = False                         # a template-id: leave it to the compiler
            else:
                rename = True                          # the kernel used as a value
        if rename:
            out.append(text[last:s])
            out.append(new)
            last = e
    out.append(text[last:])
    return "".join(out)


_CONST_DEF = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+(?P<m>[A-Za-z_]\w*)[ \t]+\(?[ \t]*(?P<mv>-?\d+)[uUlL]*[ \t]*\)?[ \t]*$"
    r"|\b(?:constexpr|const)\b(?:\s+(?:static|const|constexpr|unsigned|signed|long|short|int|size_t|int32_t|"
    r"int64_t|uint32_t|bool|char|auto))+\s+(?P<c>[A-Za-z_]\w*)\s*=\s*(?P<cv>-?\d+)[uUlL]*\s*;", re.M)


def _angle_close(masked: str, i: int) -> int:
    """The index of the '>' that closes the '<' at ``i`` (-1 when a ';', '{' or '}' comes first)."""
    depth = 0
    for j in range(i, len(masked)):
        c = masked[j]
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
            if depth == 0:
                return j
        elif c in ";{}":
            return -1
    return -1


def template_arguments(text: str, entry: str) -> str | None:
    """The template argument list (``"<256, 4>"``) the harness must name when it calls the kernel
    ``entry``, or None when ``entry`` is not a template. A kernel written as ``template <int BLOCK>
    __global__ void k(...)`` cannot be called by its bare name with the harness's untyped
    arguments; the source's own launcher names the instantiation (``k<kBlock><<<...>>>``,
    ``hipLaunchKernelGGL(k<256>, ...)``, an explicit ``template void k<256>(...);``), and that one
    instantiation is taken, with integer constants of the file (``#define``, ``constexpr int``)
    written as their values. With no instantiation in the file, ``<>`` when every template
    parameter has a default. None also when the instantiations differ (the compiler then says
    which call it cannot resolve)."""
    from .base import blank_noncode
    masked = blank_noncode(text)
    e = re.escape(entry)
    defn = None
    for m in re.finditer(r"\btemplate\s*<", masked):
        close = _angle_close(masked, m.end() - 1)
        if close < 0:
            continue
        k = close + 1
        # the declarator: the first `name (` before the body or ';', skipping attribute calls
        while k < len(masked):
            w = re.compile(r"[;{}]|([A-Za-z_]\w*)\s*\(").search(masked, k)
            if not w or w.group(1) is None:
                break
            if w.group(1) in ("__launch_bounds__", "__attribute__", "__align__", "alignas", "__declspec"):
                depth, p = 0, w.end() - 1
                while p < len(masked):
                    depth += masked[p] == "("
                    depth -= masked[p] == ")"
                    if depth == 0:
                        break
                    p += 1
                k = p + 1
                continue
            if w.group(1) == entry:
                defn = (m.start(), w.end(), masked[m.end():close])
            break
        if defn:
            break
    if defn is None:
        return None
    consts: dict[str, set] = {}
    for c in _CONST_DEF.finditer(text):
        name, val = (c.group("m"), c.group("mv")) if c.group("m") else (c.group("c"), c.group("cv"))
        consts.setdefault(name, set()).add(str(int(val)))
    found = []
    for u in re.finditer(rf"(?<![\w$.]){e}\s*<", masked):
        if defn[0] <= u.start() < defn[1]:
            continue
        close = _angle_close(masked, u.end() - 1)
        if close < 0:
            continue
        args = " ".join(text[u.end():close].split())
        args = re.sub(r"\b[A-Za-z_]\w*\b",
                      lambda n: next(iter(consts[n.group(0)])) if len(consts.get(n.group(0), ())) == 1
                      else n.group(0), args)
        found.append(args)
    if not found:
        params = [p for p in defn[2].split(",") if p.strip()]
        return "<>" if params and all("=" in p for p in params) else None
    if len(set(found)) != 1:
        return None
    return "<" + found[0] + ">"


def harness_callee(text: str, entry: str) -> str:
    """What the harness calls: :func:`harness_entry`, with the template arguments of
    :func:`template_arguments` for a kernel template."""
    targs = template_arguments(text, entry)
    return harness_entry(entry) + (targs or "")


def _open_paren(masked: str, j: int) -> int:
    depth = 0
    while j >= 0:
        if masked[j] == ")":
            depth += 1
        elif masked[j] == "(":
            depth -= 1
            if depth == 0:
                return j
        j -= 1
    return -1


def binding(spec: Spec) -> list[ArgBinding]:
    return [ArgBinding(i, a.name, C_TYPE[a.dtype], a.role) for i, a in enumerate(spec.args)]


def _call_args(spec: Spec, cxx: bool) -> tuple[list[str], str]:
    decls, names = [], []
    for b in binding(spec):
        var = f"xp_a{b.index}"
        if b.is_array:
            if cxx:
                decls.append(f"  xp_anyptr {var}{{J.ptr[{b.index}]}};  /* {b.name}: {b.ctype}[] ({b.role}) */")
            else:
                decls.append(f"  void* {var} = J.ptr[{b.index}];  /* {b.name}: {b.ctype}[] ({b.role}) */")
        else:
            src = f"J.scalar[{b.index}]" if b.ctype in ("float", "_Float16") else f"J.iscalar[{b.index}]"
            decls.append(f"  {b.ctype} {var} = ({b.ctype}){src};  /* {b.name} */")
        names.append(var)
    return decls, ", ".join(names)


def main_source(spec: Spec, kernel_include: str, *, cxx: bool | None = None, timing: int = 0,
                callee: str | None = None) -> str:
    """The main() translation unit: includes the (prepared) kernel, loads a job, launches.

    ``callee`` is what is called (default :func:`harness_entry`; :func:`harness_callee` names a
    kernel template's instantiation, parenthesized here so its commas do not split XP_LAUNCH).

    ``timing=N`` (CPU kernels): after the checked run, call the kernel 3 times to warm up and
    N times timed, and print ``xpiler-time-ms: <median>`` (inputs are restored before each call
    so in-place kernels see the same data)."""
    if cxx is None:
        cxx = spec.dialect != "c"
    decls, args = _call_args(spec, cxx)
    callee = callee or harness_entry(spec.entry)
    if "<" in callee:
        callee = f"({callee})"
    lines = [
        "/* generated by xpiler: verification harness */",
        "#include <stdint.h>",
        '#include "xp_job.h"',
        f'#include "{kernel_include}"',
        "#ifndef XP_LAUNCH",
        "#define XP_LAUNCH(J, F, ARGS) F ARGS",
        "#endif",
    ]
    if cxx:
        lines += ["struct xp_anyptr { void* p; template <class XpT_> operator XpT_*() const { return (XpT_*)p; } };"]
    lines += [
        "int main(int argc, char** argv) {",
        "  static xp_job J;",
        "  if (argc < 2 || xp_job_load(&J, argv[1])) return 90;",
        *decls,
        f"  XP_LAUNCH(J, {callee}, ({args}));",
        "  int xp_rc = xp_job_store(&J, argv[1]);",
    ]
    if timing:
        lines = ["#include <time.h>", "#include <stdlib.h>"] + lines
        lines += [
            "  {",
            f"    double xp_ms[{int(timing)}];",
            f"    for (int r = -3; r < {int(timing)}; ++r) {{",
            "      struct timespec t0, t1;",
            "      clock_gettime(CLOCK_MONOTONIC, &t0);",
            f"      XP_LAUNCH(J, {callee}, ({args}));",
            "      clock_gettime(CLOCK_MONOTONIC, &t1);",
            "      if (r >= 0) xp_ms[r] = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;",
            "    }",
            f"    for (int i = 1; i < {int(timing)}; ++i) for (int j = i; j > 0 && xp_ms[j - 1] > xp_ms[j]; --j) "
            "{ double t = xp_ms[j]; xp_ms[j] = xp_ms[j - 1]; xp_ms[j - 1] = t; }",
            f"    printf(\"xpiler-time-ms: %.6f\\n\", xp_ms[{int(timing)} / 2]);",
            "  }",
        ]
    lines += ["  return xp_rc;", "}", ""]
    return "\n".join(lines)


def write_job(jobdir: Path, inst: Instance, arrays: dict[str, np.ndarray]) -> None:
    """Write job.txt and in.bin for ``inst`` with the given initial array contents."""
    jobdir.mkdir(parents=True, exist_ok=True)
    spec = inst.spec
    lines = [f"nargs {len(spec.args)}"]
    if inst.grid:
        lines.append("grid %d %d %d" % inst.grid)
    if inst.block:
        lines.append("block %d %d %d" % inst.block)
    if inst.shared_bytes:
        lines.append(f"shared {inst.shared_bytes}")
    if inst.dim:
        lines.append("dim %d %d %d" % inst.dim)
    if inst.func_type:
        lines.append(f"functype {FUNC_TYPES[inst.func_type]}")
    with open(jobdir / "in.bin", "wb") as f:
        for i, a in enumerate(spec.args):
            if a.is_array:
                arr = np.ascontiguousarray(arrays[a.name], dtype=NUMPY[a.dtype])
                want = inst.numel(a.name)
                if arr.size != want:
                    raise ValueError(f"array {a.name} has {arr.size} elements, expected {want}")
                lines.append(f"array {i} {arr.nbytes}")
                f.write(arr.tobytes())
            else:
                v = inst.scalars[a.name]
                if is_float(a.dtype):
                    lines.append(f"fscalar {i} {float(v)!r}")
                else:
                    lines.append(f"iscalar {i} {int(v)}")
    (jobdir / "job.txt").write_text("\n".join(lines) + "\n")


def read_outputs(jobdir: Path, inst: Instance) -> dict[str, np.ndarray]:
    """Every array argument's final contents (in, out and inout), shaped."""
    data = (jobdir / "out.bin").read_bytes()
    out, off = {}, 0
    for a in inst.spec.args:
        if not a.is_array:
            continue
        dt = np.dtype(NUMPY[a.dtype])
        n = inst.numel(a.name)
        nbytes = n * dt.itemsize
        if off + nbytes > len(data):
            raise ValueError("out.bin is shorter than the arrays of the instance")
        out[a.name] = np.frombuffer(data[off:off + nbytes], dtype=dt).reshape(inst.shapes[a.name]).copy()
        off += nbytes
    return out
