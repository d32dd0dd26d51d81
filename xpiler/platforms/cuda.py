"""The cuda dialect: CUDA C kernels.

Substrates: ``emu:simt-cpu`` (the fiber-based SIMT emulator, warp 32, always here when g++
is), ``compile:nvcc-sm90`` (nvcc compile check with register/shared-memory use), and
``hw:nvidia-<gpu>`` when ``nvidia-smi`` finds a GPU (``build(..., gpu=True)``).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from .base import which
from .simt_common import SimtPlatform, _version, nvidia_gpu, parse_ptxas


class CudaPlatform(SimtPlatform):
    dialect = "cuda"
    wave = 32

    def doctor(self) -> list[tuple[str, bool, str]]:
        rows = [self._emu_row()]
        nvcc = which("nvcc")
        rows.append(("compile:nvcc-sm90", bool(nvcc),
                     _version(["nvcc", "--version"]).strip() and
                     next((ln for ln in _nvcc_version_lines() if "release" in ln), "nvcc") if nvcc
                     else "nvcc not found (install the CUDA toolkit)"))
        gpu = nvidia_gpu()
        if gpu:
            rows.append((f"hw:nvidia-{_slug(gpu)}", bool(nvcc), gpu if nvcc else f"{gpu} found but nvcc is missing"))
        else:
            rows.append(("hw:nvidia-gpu", False, "nvidia-smi finds no GPU"))
        return rows

    def substrate(self) -> str:
        return self.emu_substrate

    def compile_check(self, src: Path, *, arch: str | None = None) -> dict:
        src = Path(src)
        arch = arch or "sm_90"
        if not which("nvcc"):
            return {"ok": False, "log": "nvcc not found", "arch": arch, "resources": {}, "error": None}
        with tempfile.TemporaryDirectory(prefix="xpnvcc") as d:
            argv = ["nvcc", "-c", "-x", "cu", f"-arch={arch}", "-std=c++17", "--resource-usage", str(src.resolve()),
                    "-o", str(Path(d) / "k.o")]
            ok, log, err = self._run_check(argv, src, Path(d), arch)
        return {"ok": ok, "log": log, "arch": arch, "resources": parse_ptxas(log) if ok else {}, "error": err}


def _nvcc_version_lines() -> list[str]:
    import subprocess
    try:
        return subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return []


def _slug(name: str) -> str:
    import re
    s = name.lower().replace("nvidia", "").strip()
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"
