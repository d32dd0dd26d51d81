"""The hip dialect: HIP kernels for AMD GPUs.

Substrates: ``emu:simt-cpu`` (the SIMT emulator in wavefront-64 mode, with the gfx90a MFMA
builtins), ``compile:amdgcn-gfx90a`` / ``compile:amdgcn-gfx1100`` (clang-15's AMDGPU backend;
VGPR/SGPR/LDS use read from the code object), and ``hw:nvidia-<gpu>`` through our
``hip_on_cuda.h`` header for kernels without AMD builtins.
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from .base import which
from .simt_common import (BITCODE_DIR, SimtPlatform, _llvm_tool, bitcode_dir_for, clang15, nvidia_gpu,
                          parse_amdgpu_notes)
from .cuda import _slug

ARCHES = ("gfx90a", "gfx1100")


class HipPlatform(SimtPlatform):
    dialect = "hip"
    wave = 64

    def doctor(self) -> list[tuple[str, bool, str]]:
        rows = [self._emu_row()]
        clang = clang15()
        have_hdr = Path("/usr/include/hip/hip_runtime.h").exists()
        for arch in ARCHES:
            if not clang:
                rows.append((f"compile:amdgcn-{arch}", False, "clang++-15 not found (apt-get install clang-15)"))
            elif not have_hdr or not BITCODE_DIR.is_dir():
                rows.append((f"compile:amdgcn-{arch}", False,
                             "HIP headers or device libraries missing (apt-get install hipcc libamdhip64-dev rocm-device-libs)"))
            elif arch == "gfx1100" and not (BITCODE_DIR / "oclc_isa_version_1100.bc").exists() and not (
                    _llvm_tool("llvm-dis") and _llvm_tool("llvm-as")):
                rows.append((f"compile:amdgcn-{arch}", False, "needs llvm-dis-15/llvm-as-15 to generate oclc_isa_version_1100.bc"))
            else:
                rows.append((f"compile:amdgcn-{arch}", True, f"clang-15 AMDGPU backend ({'wave32' if arch == 'gfx1100' else 'wave64'})"))
        gpu = nvidia_gpu()
        if gpu:
            rows.append((f"hw:nvidia-{_slug(gpu)}", bool(which("nvcc")),
                         f"{gpu} through hip_on_cuda.h (kernels without AMD builtins)"))
        return rows

    def compile_check(self, src: Path, *, arch: str | None = None) -> dict:
        src = Path(src)
        arch = arch or "gfx90a"
        clang = clang15()
        if not clang:
            return {"ok": False, "log": "clang++-15 not found", "arch": arch, "resources": {}, "error": None}
        libdir = bitcode_dir_for(arch)
        with tempfile.TemporaryDirectory(prefix="xphip") as d:
            obj = Path(d) / "k.o"
            argv = [clang, "-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "-O3", "-c",
                    "--no-gpu-bundle-output", "--rocm-path=/usr", f"--rocm-device-lib-path={libdir}", "-std=c++17",
                    str(src.resolve()), "-o", str(obj)]
            ok, log, err = self._run_check(argv, src, Path(d), arch)
            res = {}
            if ok and obj.exists():
                readelf = _llvm_tool("llvm-readelf")
                if readelf:
                    p = subprocess.run([readelf, "--notes", str(obj)], capture_output=True, text=True)
                    res = parse_amdgpu_notes(p.stdout)
        return {"ok": ok, "log": log, "arch": arch, "resources": res, "error": err}
