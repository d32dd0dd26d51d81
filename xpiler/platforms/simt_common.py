"""What the cuda and hip platforms share: the SIMT CPU emulator build, source preparation,
real-compiler checks and the optional NVIDIA GPU path.

The emulator (``xpiler/runtime/simt/xp_simt.h``) runs a kernel's threads as fibers on one CPU
thread.  A kernel source is compiled by g++ almost as written: ``prepare()`` only rewrites the
few constructs g++ cannot take (``K<<<...>>>(...)`` launches, ``extern __shared__`` arrays,
clang's ``ext_vector_type``), and keeps every line where it was so compiler messages point at
the user's file and line.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import deadline
from ..diagnostics import XPError
from .base import blank_noncode, cache_root, compile_cached, content_key, emulator_cxx, tree_digest, which
from ..verify.variants import flags as variant_flags
from .harness import COMMON_INCLUDE, RUNTIME_DIR, harness_callee, harness_entry, main_source, poison_locals_flags, rename_entry

SIMT_DIR = RUNTIME_DIR / "simt"
SIMT_HEADER = SIMT_DIR / "xp_simt.h"
SIMT_INCLUDE = SIMT_DIR / "include"
HIP_ON_CUDA = SIMT_DIR / "hip_on_cuda.h"
BITCODE_DIR = Path("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode")
LLVM_BIN = Path("/usr/lib/llvm-15/bin")

# --------------------------------------------------------------------------------------------
# Source preparation
# --------------------------------------------------------------------------------------------


def mask_code(text: str) -> str:
    """``text`` with comments, string and character literals blanked (same length, newlines kept),
    so the rewrites below never match inside them."""
    return blank_noncode(text)


def _match_back(masked: str, j: int, open_c: str, close_c: str) -> int:
    """Index of the ``open_c`` matching the ``close_c`` at ``j`` (scanning backwards)."""
    depth = 0
    while j >= 0:
        if masked[j] == close_c:
            depth += 1
        elif masked[j] == open_c:
            depth -= 1
            if depth == 0:
                return j
        j -= 1
    return -1


def _match_fwd(masked: str, j: int, open_c: str, close_c: str) -> int:
    depth = 0
    while j < len(masked):
        if masked[j] == open_c:
            depth += 1
        elif masked[j] == close_c:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _pad(old: str, new: str) -> str:
    """Keep the line count of the replaced span (newlines appended at its end)."""
    missing = old.count("\n") - new.count("\n")
    return new + "\n" * missing if missing > 0 else new


def _launch_edits(text: str, masked: str, filename: str) -> list[tuple[int, int, str]]:
    edits = []
    pos = 0
    while True:
        pos = masked.find("<<<", pos)
        if pos < 0:
            break
        close = masked.find(">>>", pos + 3)
        if close < 0:
            raise XPError("XP2001", detail="unterminated kernel launch '<<<'", file=filename,
                          line=text.count("\n", 0, pos) + 1)
        # the kernel expression before <<<: identifier, ::-qualified, optional template arguments
        j = pos - 1
        while j >= 0 and masked[j].isspace():
            j -= 1
        end_name = j + 1
        if j >= 0 and masked[j] == ">":
            j = _match_back(masked, j, "<", ">") - 1
            while j >= 0 and masked[j].isspace():
                j -= 1
        while j >= 0 and (masked[j].isalnum() or masked[j] in "_:"):
            j -= 1
        start = j + 1
        name = text[start:end_name]
        k = close + 3
        while k < len(masked) and masked[k].isspace():
            k += 1
        if k >= len(masked) or masked[k] != "(" or not name.strip():
            raise XPError("XP2001", detail="cannot parse the kernel launch here", file=filename,
                          line=text.count("\n", 0, pos) + 1)
        m = _match_fwd(masked, k, "(", ")")
        if m < 0:
            raise XPError("XP2001", detail="unbalanced parentheses in kernel launch", file=filename,
                          line=text.count("\n", 0, pos) + 1)
        cfg = text[pos + 3:close]
        args = text[k + 1:m]
        new = f"::xps::launch(::xps::cfg({cfg}), [&]() {{ {name.strip()}({args}); }})"
        edits.append((start, m + 1, _pad(text[start:m + 1], new)))
        pos = m + 1
    return edits


_ATTR = r"(?:__align__\s*\(\s*\w+\s*\)|alignas\s*\([^()]*\)|__attribute__\s*\(\([^;]*?\)\))"
_EXTERN_SHARED = re.compile(
    r"\bextern\s+__shared__\s+(?:" + _ATTR + r"\s*)*(?P<type>[A-Za-z_][\w\s:<>,*]*?)\s*\b(?P<name>[A-Za-z_]\w*)"
    r"\s*\[\s*\]\s*(?:" + _ATTR + r"\s*)*;")
_EXT_VEC_TYPEDEF = re.compile(
    r"\btypedef\b(?P<a>[^;{}]*?)__attribute__\s*\(\(\s*ext_vector_type\s*\((?P<n>[^()]*)\)\s*\)\)(?P<b>[^;{}]*);")
_EXT_VEC_USING = re.compile(
    r"\busing\s+(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<type>[^;{}]*?)__attribute__\s*\(\(\s*ext_vector_type\s*\((?P<n>[^()]*)\)\s*\)\)\s*;")
_STATIC_SHARED = re.compile(r"\bstatic\s+__shared__\b|\b__shared__\s+static\b")
_NOINLINE = re.compile(r"\b__noinline__\b")


def _noinline_edits(masked: str) -> list[tuple[int, int, str]]:
    """CUDA's ``__noinline__`` qualifier becomes GCC's attribute in the kernel's own text. It is
    not a macro of xp_simt.h: libstdc++ 13 writes ``__attribute__((__noinline__))`` in its
    headers, which such a macro breaks (``<algorithm>`` after the forced include failed to
    compile with gcc 13). An occurrence inside an attribute list (after ``(`` or ``,``) is GCC's
    own spelling and is kept."""
    edits = []
    for m in _NOINLINE.finditer(masked):
        before = masked[:m.start()].rstrip()
        if before.endswith(("(", ",")):
            continue
        edits.append((m.start(), m.end(), "__attribute__((noinline))"))
    return edits


_SHARED_KW = re.compile(r"\b__shared__\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _declarator_names(decl: str) -> list[str]:
    """Names declared by ``float a[4][5], *p, b = 1`` (the text after __shared__, without ';')."""
    parts, depth, cur = [], 0, ""
    for ch in decl:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    names = []
    for part in parts:
        depth, head = 0, ""
        for ch in part:
            if ch in "([{":
                if ch == "[" and depth == 0:
                    break
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == "=" and depth == 0:
                break
            head += ch
        ids = _IDENT.findall(re.sub(r"\([^()]*\)", " ", head))
        if ids:
            names.append(ids[-1])
    return names


def _shared_register_edits(masked: str) -> list[tuple[int, int, str]]:
    """After each static ``__shared__`` declaration, register the variable with the runtime so
    it is poisoned at every block start (zero-width insertions: lines do not move)."""
    edits = []
    for m in _SHARED_KW.finditer(masked):
        before = masked[max(0, m.start() - 40):m.start()]
        if re.search(r"\bextern\s*$", before) or masked[m.end():m.end() + 1] == ")":
            continue
        depth, j = 0, m.end()
        while j < len(masked):
            ch = masked[j]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth < 0:
                    break
            elif ch == ";" and depth == 0:
                break
            j += 1
        if j >= len(masked) or masked[j] != ";":
            continue
        decl = masked[m.end():j]
        if re.search(r"\bextern\b", decl) or "#" in decl:
            continue
        regs = "".join(f" static const bool xps_shreg_{n}_{j} = ::xps::shared_register(&{n}, sizeof({n}));"
                       for n in _declarator_names(decl))
        if regs:
            edits.append((j + 1, j + 1, regs))
    return edits


def prepare_source(text: str, filename: str) -> str:
    """Source text -> the text g++ compiles under the emulator (line numbers preserved)."""
    masked = mask_code(text)
    edits = _launch_edits(text, masked, filename)
    for m in _EXTERN_SHARED.finditer(masked):
        ty = " ".join(text[m.start("type"):m.end("type")].split())
        name = m.group("name")
        new = f"{ty}* const& {name} = reinterpret_cast<{ty}* const&>(::xps::g_dyn_smem);"
        edits.append((m.start(), m.end(), _pad(text[m.start():m.end()], new)))
    for m in _EXT_VEC_TYPEDEF.finditer(masked):
        words = (text[m.start("a"):m.end("a")] + " " + text[m.start("b"):m.end("b")]).split()
        if len(words) < 2:
            continue
        name, ty = words[-1], " ".join(words[:-1])
        n = text[m.start("n"):m.end("n")].strip()
        new = f"typedef {ty} {name} __attribute__((vector_size(({n}) * sizeof({ty}))));"
        edits.append((m.start(), m.end(), _pad(text[m.start():m.end()], new)))
    for m in _EXT_VEC_USING.finditer(masked):
        ty = " ".join(text[m.start("type"):m.end("type")].split())
        n = text[m.start("n"):m.end("n")].strip()
        new = f"typedef {ty} {m.group('name')} __attribute__((vector_size(({n}) * sizeof({ty}))));"
        edits.append((m.start(), m.end(), _pad(text[m.start():m.end()], new)))
    for m in _STATIC_SHARED.finditer(masked):
        edits.append((m.start(), m.end(), "__shared__"))
    edits += _shared_register_edits(masked)
    edits += _noinline_edits(masked)
    edits.sort()
    out, last = [], 0
    for s, e, new in edits:
        if s < last:  # overlapping rewrite (e.g. a launch inside a macro we already took): keep the first
            continue
        out.append(text[last:s])
        out.append(new)
        last = e
    out.append(text[last:])
    esc = filename.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{esc}"\n' + "".join(out)


# --------------------------------------------------------------------------------------------
# Tool discovery
# --------------------------------------------------------------------------------------------


def _version(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (p.stdout or p.stderr).strip().splitlines()[0] if (p.stdout or p.stderr).strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def nvidia_gpu() -> str | None:
    """Name of the first NVIDIA GPU ``nvidia-smi`` lists, or None."""
    if not which("nvidia-smi"):
        return None
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = [line.strip() for line in p.stdout.splitlines() if line.strip()]
    return names[0] if p.returncode == 0 and names else None


def clang15() -> str | None:
    c = LLVM_BIN / "clang++"
    return str(c) if c.exists() else which("clang++-15")


def _llvm_tool(name: str) -> str | None:
    p = LLVM_BIN / name
    return str(p) if p.exists() else which(f"{name}-15")


def bitcode_dir_for(arch: str) -> Path:
    """The device-library folder for ``arch``; for gfx1100 (missing in ROCm 5.2's Debian
    package) a cached copy with a generated ``oclc_isa_version_1100.bc``."""
    isa = re.sub(r"\D", "", arch)
    want = BITCODE_DIR / f"oclc_isa_version_{isa}.bc"
    if want.exists() or not BITCODE_DIR.is_dir():
        return BITCODE_DIR
    dest = cache_root() / "amdgcn-bitcode" / f"{isa}"
    target = dest / f"oclc_isa_version_{isa}.bc"
    if target.exists():
        return dest
    src = BITCODE_DIR / "oclc_isa_version_1030.bc"
    dis, asm = _llvm_tool("llvm-dis"), _llvm_tool("llvm-as")
    if not (src.exists() and dis and asm):
        return BITCODE_DIR
    tmp = Path(tempfile.mkdtemp(prefix="bitcode", dir=cache_root()))
    for f in BITCODE_DIR.iterdir():
        if f.is_file():
            (tmp / f.name).symlink_to(f)
    ll = subprocess.run([dis, str(src), "-o", "-"], capture_output=True, text=True)
    if ll.returncode != 0 or "10300" not in ll.stdout:
        shutil.rmtree(tmp, ignore_errors=True)
        return BITCODE_DIR
    text = ll.stdout.replace("i32 10300", f"i32 {int(isa) * 10 if len(isa) == 4 else isa}")
    p = subprocess.run([asm, "-", "-o", str(tmp / target.name)], input=text, capture_output=True, text=True)
    if p.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return BITCODE_DIR
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.rename(dest)
    except OSError:  # another process made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def parse_amdgpu_notes(text: str) -> dict:
    """Per-kernel resource use from ``llvm-readelf --notes`` of an AMDGPU code object:
    {kernel: {"vgpr", "sgpr", "agpr", "lds_bytes", "scratch_bytes", "wave", "max_block"}}."""
    keys = {".vgpr_count": "vgpr", ".sgpr_count": "sgpr", ".agpr_count": "agpr",
            ".group_segment_fixed_size": "lds_bytes", ".private_segment_fixed_size": "scratch_bytes",
            ".wavefront_size": "wave", ".max_flat_workgroup_size": "max_block"}
    return _regroup_notes(text, keys)


def _regroup_notes(text: str, keys: dict) -> dict:
    """The metadata lists one YAML map per kernel ("- .args: ..."); keys are alphabetical, so
    .name arrives in the middle of its map: collect a whole map, then file it under its name."""
    res: dict[str, dict] = {}
    block: dict = {}
    name = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("- .") or s.startswith("amdhsa.target") or s.startswith("amdhsa.version"):
            if name:
                res[name] = block
            block, name = {}, None
            s = s[2:] if s.startswith("- ") else s
        if ":" not in s:
            continue
        k, v = (x.strip() for x in s.split(":", 1))
        if k in keys:
            try:
                block[keys[k]] = int(v)
            except ValueError:
                pass
        elif k == ".name":
            name = v
    if name:
        res[name] = block
    return {k: v for k, v in res.items() if v}


def parse_ptxas(log: str) -> dict:
    res: dict[str, dict] = {}
    cur = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line) or re.search(r"Function properties for (\S+)", line)
        if m:
            cur = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            d = res.setdefault(cur, {})
            d["registers"] = int(m.group(1))
            sm = re.search(r"(\d+) bytes smem", line)
            if sm:
                d["smem_bytes"] = int(sm.group(1))
            bar = re.search(r"used (\d+) barriers", line)
            if bar:
                d["barriers"] = int(bar.group(1))
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line)
        if m and cur:
            d = res.setdefault(cur, {})
            d["stack_bytes"] = int(m.group(1))
            d["spill_bytes"] = int(m.group(2))
    return res


# --------------------------------------------------------------------------------------------
# The platform base shared by cuda and hip
# --------------------------------------------------------------------------------------------


class SimtPlatform:
    dialect = "?"
    wave = 32
    emu_substrate = "emu:simt-cpu"

    # -- discovery ---------------------------------------------------------------------------
    def substrate(self) -> str:
        return self.emu_substrate

    def _emu_row(self) -> tuple[str, bool, str]:
        gxx = which("g++")
        if not gxx:
            return (self.emu_substrate, False, "g++ not found (apt-get install g++)")
        return (self.emu_substrate, True, f"fibers on the CPU, warp {self.wave}; {_version(['g++', '--version'])}")

    # -- preparation ---------------------------------------------------------------------------
    def prepare(self, text: str, filename: str) -> str:
        return prepare_source(text, filename)

    # -- emulator build ----------------------------------------------------------------------
    def emu_flags(self, sanitize: bool) -> list[str]:
        flags = ["-std=c++17", "-O2", "-fno-strict-aliasing", "-fstack-clash-protection", "-w", "-include", str(SIMT_HEADER),
                 f"-I{SIMT_INCLUDE}", f"-I{COMMON_INCLUDE}", f"-DXPS_WAVE={self.wave}"]
        flags += poison_locals_flags(emulator_cxx())   # a thread's local read before written shows (harness.py)
        if sanitize:
            flags += ["-fsanitize=address", "-fno-omit-frame-pointer", "-g", "-O1"]
        return flags

    def build(self, src: Path, spec, workdir: Path, *, sanitize: bool, gpu: bool = False,
              timing: bool = False, defines: dict[str, str] | None = None) -> Path:
        """Compile ``src`` with the harness main into an executable ``exe <jobdir>``.

        ``gpu=True`` builds for the NVIDIA GPU found by ``nvidia-smi`` instead (nvcc, real device
        memory, every CUDA call checked; with ``timing`` it prints ``xpiler-time-ms: <median>``).
        ``defines`` fixes ``XP_USE_*`` guards (``xpiler/verify/variants.py``).
        """
        if gpu:
            return self.build_gpu(src, spec, workdir, timing=timing, defines=defines)
        if not which(emulator_cxx()):
            raise XPError("XP2004", what=f"{self.dialect} emulator", why=f"{emulator_cxx()} not found")
        src = Path(src)
        text = rename_entry(src.read_text(), spec.entry)   # a kernel named exp/sin/abs: no clash with libm
        self.notes = []   # the emulator's forced include (xp_simt.h) provides every standard header
        prepared = self.prepare(text, str(src))
        main = main_source(spec, "kernel.prepared.cpp", callee=harness_callee(text, spec.entry))
        flags = self.emu_flags(sanitize) + variant_flags(defines)
        cxx = emulator_cxx()
        key = content_key("simt-emu", self.dialect, cxx, prepared, main, " ".join(flags), tree_digest(SIMT_DIR),
                          tree_digest(COMMON_INCLUDE))
        workdir = Path(workdir)
        try:
            workdir.mkdir(parents=True, exist_ok=True)
            (workdir / "kernel.prepared.cpp").write_text(prepared)
        except OSError:
            pass
        return compile_cached(key, {"kernel.prepared.cpp": prepared, "main.cpp": main},
                                    [cxx, *flags, "main.cpp", "-o", "run", "-lm"], "XP2001", src)


    # -- GPU build -----------------------------------------------------------------------------
    def gpu_main_source(self, spec, kernel_include: str, *, timing: bool, repeats: int = 20,
                        callee: str | None = None) -> str:
        lines = [
            "/* generated by xpiler: GPU verification harness */",
            "#include <stdint.h>",
            "#include <stdio.h>",
            "#include <algorithm>",
            "#include <vector>",
            '#include "xp_job.h"',
            "#include <cuda_fp16.h>",
        ]
        if self.dialect == "hip":
            lines.append('#include "hip_on_cuda.h"')
        lines += [
            f'#include "{kernel_include}"',
            "#define XPG_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { "
            "fprintf(stderr, \"xpiler-gpu-error: %s at %s:%d: %s\\n\", #call, __FILE__, __LINE__, "
            "cudaGetErrorString(e_)); return 96; } } while (0)",
            "int main(int argc, char** argv) {",
            "  static xp_job J;",
            "  if (argc < 2 || xp_job_load(&J, argv[1])) return 90;",
            "  void* dptr[XP_MAX_ARGS] = {0};",
            "  for (int i = 0; i < XP_MAX_ARGS; ++i) if (J.bytes[i]) {",
            "    XPG_CHECK(cudaMalloc(&dptr[i], J.bytes[i]));",
            "    XPG_CHECK(cudaMemcpy(dptr[i], J.ptr[i], J.bytes[i], cudaMemcpyHostToDevice));",
            "  }",
            "  dim3 grid(J.grid.x, J.grid.y, J.grid.z), block(J.block.x, J.block.y, J.block.z);",
        ]
        lines.insert(lines.index("int main(int argc, char** argv) {"),
                     "struct xp_anyptr { void* p; template <class XpT_> operator XpT_*() const { return (XpT_*)p; } };")
        decls, args = gpu_arg_decls(spec, "dptr", "J.scalar", "J.iscalar")
        lines += decls
        entry = callee or harness_entry(spec.entry)   # a kernel template: its instantiation
        call = f"{entry}<<<grid, block, J.shared>>>({', '.join(args)})"
        lines += [
            "  if (J.shared > 48 * 1024) XPG_CHECK(cudaFuncSetAttribute("
            f"{entry}, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)J.shared));",
            f"  {call};",
            "  XPG_CHECK(cudaGetLastError());",
            "  XPG_CHECK(cudaDeviceSynchronize());",
            "  for (int i = 0; i < XP_MAX_ARGS; ++i) if (J.bytes[i])",
            "    XPG_CHECK(cudaMemcpy(J.ptr[i], dptr[i], J.bytes[i], cudaMemcpyDeviceToHost));",
        ]
        if timing:
            lines += [
                "  { /* time: warm-up launches, then the median of the repeats (outputs were already copied) */",
                "    cudaEvent_t t0, t1; XPG_CHECK(cudaEventCreate(&t0)); XPG_CHECK(cudaEventCreate(&t1));",
                f"    for (int w = 0; w < 3; ++w) {call};",
                "    XPG_CHECK(cudaDeviceSynchronize());",
                "    std::vector<float> ms;",
                f"    for (int r = 0; r < {repeats}; ++r) {{",
                f"      XPG_CHECK(cudaEventRecord(t0)); {call}; XPG_CHECK(cudaEventRecord(t1));",
                "      XPG_CHECK(cudaEventSynchronize(t1)); float m = 0; XPG_CHECK(cudaEventElapsedTime(&m, t0, t1));",
                "      ms.push_back(m);",
                "    }",
                "    XPG_CHECK(cudaGetLastError());",
                "    std::sort(ms.begin(), ms.end());",
                "    printf(\"xpiler-time-ms: %.6f\\n\", ms[ms.size() / 2]);",
                "  }",
            ]
        lines += [
            "  for (int i = 0; i < XP_MAX_ARGS; ++i) if (dptr[i]) cudaFree(dptr[i]);",
            "  return xp_job_store(&J, argv[1]);",
            "}",
            "",
        ]
        return "\n".join(lines)

    def build_gpu(self, src: Path, spec, workdir: Path, *, timing: bool = False,
                  defines: dict[str, str] | None = None) -> Path:
        if not which("nvcc"):
            raise XPError("XP2004", what="NVIDIA GPU build", why="nvcc not found")
        src = Path(src)
        text = src.read_text()
        if self.dialect == "hip" and "__builtin_amdgcn" in text:
            raise XPError("XP2004", what="HIP on an NVIDIA GPU", why="the kernel uses AMD builtins (MFMA/DPP)")
        kernel_name = "kernel.cu"
        # standard headers the source uses without including them go before its #line 1
        from .prelude import include_block, missing_headers
        needs = missing_headers(text, self.dialect, cxx=True)
        self.notes = [n.note(str(src)) for n in needs]
        body = include_block(needs) + f'#line 1 "{src}"\n' + rename_entry(text, spec.entry)
        main = self.gpu_main_source(spec, kernel_name, timing=timing, callee=harness_callee(text, spec.entry))
        arch = os.environ.get("XPILER_CUDA_ARCH", "sm_90")
        argv = ["nvcc", "-O3", f"-arch={arch}", "-std=c++17", "-x", "cu", f"-I{COMMON_INCLUDE}", f"-I{SIMT_DIR}",
                *variant_flags(defines)]
        if self.dialect == "hip":
            argv.append(f"-I{SIMT_DIR / 'gpu_include'}")
        argv += ["main.cu", "-o", "run"]
        key = content_key("simt-gpu", self.dialect, body, main, " ".join(argv), tree_digest(COMMON_INCLUDE),
                          HIP_ON_CUDA.read_text() if HIP_ON_CUDA.exists() else "")
        return compile_cached(key, {kernel_name: body, "main.cu": main}, argv, "XP2001", src)

    # -- real compilers --------------------------------------------------------------------------
    def compile_check(self, src: Path, *, arch: str | None = None) -> dict:
        raise NotImplementedError

    def _run_check(self, argv: list[str], src: Path, cwd: Path, arch: str) -> tuple[bool, str, dict | None]:
        try:
            p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=deadline.cap(300))
        except FileNotFoundError:
            return False, f"{argv[0]} not found", None
        except subprocess.TimeoutExpired:
            deadline.check("a compile check")   # the budget stopped it, not the compiler
            return False, "compiler timed out", None
        log = p.stdout + p.stderr
        if p.returncode == 0:
            return True, log, None
        m = None
        for m2 in re.finditer(r"^(?P<file>[^:\s]+)[:(](?P<line>\d+)[):]?(?::(?P<col>\d+))?:?\s*(?:fatal )?error:?\s*(?P<msg>.*)$",
                              log, re.M):
            if Path(m2.group("file")).name == src.name:
                m = m2
                break
        err = {"file": str(src), "line": int(m.group("line")) if m else None,
               "message": m.group("msg").strip() if m else (log.strip().splitlines() or ["failed"])[-1]}
        return False, log, err


def gpu_arg_decls(spec, ptrs: str, fscalars: str, iscalars: str) -> tuple[list[str], list[str]]:
    """Declarations of the kernel's arguments for a GPU launch (``xp_a<i>``), from a device pointer
    table and float/integer scalar tables named by the caller; returns (lines, argument names).
    Needs ``struct xp_anyptr`` (a void* that converts to any pointer type) in the source."""
    from .harness import binding
    lines, args = [], []
    for b in binding(spec):
        var = f"xp_a{b.index}"
        if b.is_array:
            lines.append(f"  xp_anyptr {var}{{{ptrs}[{b.index}]}};  /* {b.name}: {b.ctype}[] */")
        elif b.ctype == "_Float16":
            lines.append(f"  __half {var} = __float2half((float){fscalars}[{b.index}]);")
        else:
            src = f"{fscalars}[{b.index}]" if b.ctype in ("float", "double") else f"{iscalars}[{b.index}]"
            lines.append(f"  {b.ctype} {var} = ({b.ctype})({src});")
        args.append(var)
    return lines, args
