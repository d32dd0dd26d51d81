"""The c dialect: C with Intel intrinsics, built with gcc and run natively on this CPU.

Substrate ``hw:cpu-avx512vnni`` when the CPU has AVX-512 VNNI (the examples' dpbusd/dpwssd
run natively), otherwise ``emu:simde-cpu``: an ``immintrin.h`` wrapper that adds SIMD
Everywhere's portable implementations.  ``XPILER_C_SUBSTRATE=simde`` forces the portable path.

Variants (``xpiler/verify/variants.py``): a build with ``XP_USE_AMX=1`` (the AMX tile path of an int8
contraction, passes/patterns/x86_gemm_amx.py) runs natively only on a CPU with AMX-TILE and
AMX-INT8 (substrate ``hw:cpu-amx``); elsewhere it is built for ``emu:simde-cpu``, whose wrapper
emulates the tiles (runtime/c/simde/xp_amx_tiles.h), even on a CPU with AVX-512 VNNI. Likewise a
build with ``XP_USE_AVX512BF16=1`` (the vdpbf16ps path of a bfloat16 contraction) runs natively only
where the CPU has AVX512-BF16 (``hw:cpu-avx512bf16``; its AMX build also needs AMX-BF16), else on
``emu:simde-cpu``, whose wrapper implements vdpbf16ps with the instruction's numerics.

A c-dialect source written as C++ (``.cpp/.cc/.cxx``, or C++-only spellings such as
``extern "C"``, ``static_cast`` or ``std::exp``) is compiled with g++; standard headers the
source uses without including them are put before its ``#line 1`` (platforms/prelude.py).
Both facts are reported as notes (XP2007, XP2006) in the verdict.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..diagnostics import XPError
from .base import blank_noncode, compile_cached, content_key, tree_digest, which
from ..verify.variants import flags as variant_flags
from .harness import COMMON_INCLUDE, RUNTIME_DIR, harness_callee, main_source, poison_locals_flags, rename_entry
from .prelude import bf16_shim_reason, cxx_reason, prepare_c

SIMDE_WRAPPER = RUNTIME_DIR / "c" / "simde"
SIMDE_FIRST = RUNTIME_DIR / "c" / "xp_simde_first.h"
# headers that may come before a kernel's <immintrin.h> without changing what it reads
_PLAIN_HEADERS = {"stdint.h", "stddef.h", "stdlib.h", "string.h", "math.h", "stdio.h", "float.h",
                  "limits.h", "stdbool.h", "omp.h", "cstdint", "cstddef", "cstdlib", "cstring",
                  "cmath", "cstdio", "cfloat", "climits"}
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)[ \t]*(.*)$", re.M)


def immintrin_first(text: str) -> bool:
    """True where ``text``'s first directive that is not ``#line`` or a plain standard header is
    ``#include <immintrin.h>``: forcing the SIMDe wrapper ahead of the harness then reads the same
    declarations as the written order (and lets it be precompiled)."""
    for m in _DIRECTIVE.finditer(blank_noncode(text)):
        word, rest = m.group(1), m.group(2).strip()
        if word == "line":
            continue
        if word != "include" or not rest.startswith("<"):
            return False
        name = rest[1:rest.find(">")]
        if name == "immintrin.h":
            return True
        if name not in _PLAIN_HEADERS:
            return False
    return False


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


#: /proc/cpuinfo flags of the AMX tile instructions the int8 tile path uses
AMX_FLAGS = {"amx_tile", "amx_int8"}


def _wants_amx(defines) -> bool:
    return str((defines or {}).get("XP_USE_AMX", "0")) == "1"


#: /proc/cpuinfo flag of AVX512-BF16 (vdpbf16ps), which a build with XP_USE_AVX512BF16=1 runs; such a
#: build is a bfloat16 contraction's (passes/patterns/x86_gemm_bf16.py), whose AMX path needs amx_bf16
BF16_FLAG = "avx512_bf16"


def _wants_bf16(defines) -> bool:
    return str((defines or {}).get("XP_USE_AVX512BF16", "0")) == "1"


def simde_available() -> bool:
    return any(Path(p, "simde/x86/avx512.h").is_file() for p in ("/usr/include", "/usr/local/include"))


class CPlatform:
    dialect = "c"
    notes: list = []   # XP2006/XP2007 notes of the last build (headers added, built as C++)

    def _mode(self, defines: dict[str, str] | None = None) -> str:
        forced = os.environ.get("XPILER_C_SUBSTRATE", "").lower()
        flags = cpu_flags()
        if _wants_amx(defines) and forced != "simde":
            # the AMX path runs natively only where the CPU has the tiles; a native build of it
            # elsewhere would fall back to VNNI at run time (arch_prctl refused) and test nothing
            bf16 = {"amx_bf16"} if "XP_USE_AVX512BF16" in (defines or {}) else set()
            return "native" if AMX_FLAGS | bf16 | {"avx512f", "avx512_vnni"} <= flags else "simde"
        if _wants_bf16(defines) and forced != "simde":
            # the dpbf16 path natively only where the CPU has it (no run-time fallback inside the kernel)
            return "native" if {"avx512f", "avx512_vnni", BF16_FLAG} <= flags else "simde"
        if forced in ("simde", "native"):
            return forced
        return "native" if {"avx512f", "avx512_vnni"} <= flags else "simde"

    def substrate(self) -> str:
        return "hw:cpu-avx512vnni" if self._mode() == "native" else "emu:simde-cpu"

    def substrate_for(self, defines: dict[str, str] | None) -> str:
        """The substrate of a build with these ``XP_USE_*`` values (the verifier adds the label)."""
        if self._mode(defines) != "native":
            return "emu:simde-cpu"
        if _wants_amx(defines):
            return "hw:cpu-amx"
        return "hw:cpu-avx512bf16" if _wants_bf16(defines) else "hw:cpu-avx512vnni"

    def doctor(self) -> list[tuple[str, bool, str]]:
        gcc = which("gcc")
        flags = cpu_flags()
        rows = [("hw:cpu-avx512vnni", bool(gcc) and {"avx512f", "avx512_vnni"} <= flags,
                 "gcc -march=native; CPU has AVX-512 VNNI" if {"avx512f", "avx512_vnni"} <= flags
                 else "this CPU lacks AVX-512 VNNI"),
                ("hw:cpu-amx", bool(gcc) and AMX_FLAGS <= flags, "AMX tiles (int8)" if AMX_FLAGS <= flags else "no AMX"),
                ("emu:simde-cpu", bool(gcc) and simde_available(),
                 "SIMD Everywhere found" if simde_available() else "apt-get install libsimde-dev")]
        if not gcc:
            rows = [(r[0], False, "gcc not found") for r in rows]
        return rows

    def prepare(self, text: str, filename: str) -> str:
        """The text gcc/g++ compiles: missing standard headers, ``#line 1``, the source."""
        return prepare_c(text, filename).text

    def is_cxx(self, src: Path) -> bool:
        return bool(cxx_reason(Path(src).read_text(), str(src)))

    def _flags(self, sanitize: bool, timing: int = 0, defines: dict[str, str] | None = None) -> list[str]:
        mode = self._mode(defines)
        flags = ["-O2", "-fopenmp", "-w", f"-I{COMMON_INCLUDE}"]
        if mode == "native":
            flags.append("-march=native")
        else:
            flags += [f"-I{SIMDE_WRAPPER}", "-mavx2", "-mfma"]
        if not timing:
            # test builds: every automatic variable starts as a pattern (gcc: 0xFE bytes, so
            # -1.7e38 for a float, 254 for an unsigned char), so a read before the first write
            # -- a partial or flag array a wrong loop leaves unset -- shows in the results
            # instead of whatever the stack held (often zeros). Timing builds are left as written.
            flags += poison_locals_flags("gcc")
        if sanitize:
            # no use-after-return instrumentation (ASan's "fake stack"): gcc 13's runtime gave a
            # 64-byte-aligned local of an AVX-512 kernel a frame of lower alignment, and an aligned
            # vector store to it faulted (SEGV in a correct kernel, Intel host; docs/decisions.md)
            flags += ["-fsanitize=address", "-fno-omit-frame-pointer", "-g", "--param=asan-use-after-return=0"]
        return flags

    def build(self, src: Path, spec, workdir: Path, *, sanitize: bool, timing: int = 0,
              defines: dict[str, str] | None = None) -> Path:
        if not which("gcc"):
            raise XPError("XP2004", what="c", why="gcc not found")
        src = Path(src)
        prep = prepare_c(src.read_text(), src.name)
        self.notes = prep.notes(str(src))
        # a kernel named exp/sin/abs is renamed for the build (no clash with libm; harness.py)
        text = rename_entry(prep.text, spec.entry, c_language=not prep.cxx)
        if prep.cxx:
            # C++ written as the c dialect: the kernel is included into a C++ main, so an entry
            # with C++ linkage (no extern "C") is called as well as one with C linkage
            if not which("g++"):
                raise XPError("XP2004", what="c (C++ source)", why="g++ not found")
            main = main_source(spec, "kernel.cpp", cxx=True, timing=timing, callee=harness_callee(text, spec.entry))
            files = {"kernel.cpp": text, "main.cpp": main}
            # a C text built as C++ only for the bfloat16 shim keeps C's implicit void* conversions
            permissive = ["-fpermissive"] if prep.cxx == bf16_shim_reason(src.read_text()) else []
            argv = ["g++", "-std=gnu++17", *permissive, *self._flags(sanitize, timing, defines),
                    *variant_flags(defines), "main.cpp", "-o", "run", "-lm"]
        else:
            main = main_source(spec, "kernel.c", cxx=False, timing=timing)
            files = {"kernel.c": text, "main.c": main}
            argv = ["gcc", *self._flags(sanitize, timing, defines), *variant_flags(defines), "main.c", "-o", "run", "-lm"]
        if self._mode(defines) != "native" and immintrin_first(text):
            argv[-4:-4] = ["-include", str(SIMDE_FIRST)]
        # the SIMDe wrapper is part of an emulated build (its tile emulation, masked loads, ...)
        key = content_key("c", *files.values(), " ".join(argv), tree_digest(RUNTIME_DIR / "common"),
                          tree_digest(SIMDE_WRAPPER) if "-I" + str(SIMDE_WRAPPER) in argv else "")
        return compile_cached(key, files, argv, "XP2003", src)

    def compile_check(self, src: Path, *, arch: str | None = None) -> dict:
        import subprocess
        src = Path(src)
        lang = ["g++", "-x", "c++"] if self.is_cxx(src) else ["gcc", "-x", "c"]
        # no arch named and a CPU without AVX-512 VNNI: check against the SIMDe wrapper, as the build does
        march = [f"-march={arch}"] if arch else [f for f in self._flags(False) if f.startswith(("-march", "-I", "-m"))]
        p = subprocess.run([lang[0], "-O2", *march, "-fopenmp", "-c", *lang[1:], str(src),
                            "-o", "/dev/null"], capture_output=True, text=True)
        return {"ok": p.returncode == 0, "log": p.stdout + p.stderr, "arch": arch or "native", "resources": {}}
