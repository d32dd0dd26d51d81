"""Assembly of a kernel for its target (``xpiler migrate --emit-asm``, ``xpiler export-pairs``).

What each dialect gets (docs/provenance.md, "Assembly"):

- ``cuda``: PTX for sm_90 (``nvcc -ptx``), and the sm_90 code object built by ptxas
  (``nvcc -cubin --resource-usage``: registers, shared memory, spills per kernel); its SASS is
  written when ``cuobjdump`` (or ``nvdisasm``) is on PATH, as on the GPU machine, and said not to
  be when it is not.
- ``hip``: AMDGPU assembly for gfx90a (CDNA2, wave64) and gfx1100 (RDNA3, wave32) from clang-15,
  the compiler of the compile gate, with each kernel's VGPR/SGPR/AGPR/LDS/scratch figures read
  from the assembly's metadata and the occupancy clang reports (waves per SIMD).
- ``c``: x86-64 assembly from gcc (``-S``), with the flags the native c substrate builds with
  (``-O2 -fopenmp``; ``-march=native`` where the CPU has AVX-512 VNNI, otherwise
  ``-march=sapphirerapids``: the ISA the dialect targets, compiled only, never run), and the
  vector instructions counted by register width, FMA, VNNI (``vpdpbusd``/``vpdpwssd``) and AMX.
- ``bang``: no BANG assembler (cncc) exists here; the record says so and nothing is written.

A tool that is missing or fails gives an artifact with ``available: False`` and the reason:
never an exception, never a change to a migration's verdict.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT_S = 120.0

#: (label, kind, arch, file suffix) of each artifact a dialect gets
PLAN: dict[str, list[tuple[str, str, str, str]]] = {
    "cuda": [("ptx-sm_90", "ptx", "sm_90", "sm_90.ptx"), ("sass-sm_90", "sass", "sm_90", "sm_90.sass")],
    "hip": [("amdgcn-gfx90a", "amdgcn", "gfx90a", "gfx90a.s"), ("amdgcn-gfx1100", "amdgcn", "gfx1100", "gfx1100.s")],
    "c": [("x86_64", "x86", "x86-64", "x86-64.s")],
    "bang": [("bang-mlu", "bang", "mlu", "")],
}

BANG_WHY = ("no BANG assembler (Cambricon cncc) is available here: BANG C kernels are verified on xpiler's "
            "CPU emulator of the BANG API, which produces no MLU instructions")


@dataclass
class AsmArtifact:
    label: str                  # e.g. "ptx-sm_90", "amdgcn-gfx1100", "x86_64"
    kind: str                   # ptx | sass | amdgcn | x86 | bang
    arch: str
    available: bool
    text: str | None = None
    figures: dict = field(default_factory=dict)
    tool: str = ""              # the command line that produced it
    why: str = ""               # why it is not available (or a note on how it was made)

    def to_json(self, *, text: bool = False) -> dict:
        d = {"label": self.label, "kind": self.kind, "arch": self.arch, "available": self.available,
             "figures": self.figures, "tool": self.tool}
        if self.why:
            d["why"] = self.why
        if text:
            d["text"] = self.text
        return d


def asm_names(out_name: str, dialect: str) -> list[str]:
    """The file names ``--emit-asm`` may write beside the output ``out_name`` (``gemm.hip`` ->
    ``gemm.hip.gfx90a.s``, ``gemm.hip.gfx1100.s``)."""
    return [f"{out_name}.{suffix}" for _, _, _, suffix in PLAN.get(dialect, []) if suffix]


def file_name(out_name: str, dialect: str, label: str) -> str | None:
    for lab, _, _, suffix in PLAN.get(dialect, []):
        if lab == label and suffix:
            return f"{out_name}.{suffix}"
    return None


def _which(name: str) -> str | None:
    """A tool on PATH, else one installed as a Python package in this environment: the CUDA
    binary utilities come as wheels too (``pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm``,
    which put the tools in ``site-packages/nvidia/cu*/bin`` without adding them to PATH)."""
    from .platforms.base import which
    found = which(name)
    if found or name not in ("cuobjdump", "nvdisasm"):
        return found
    import importlib.util
    import os
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for b in sorted(Path(root).glob(f"cu*/bin/{name}"), reverse=True):
            if os.access(b, os.X_OK):
                return str(b)
    return None


def _run(argv: list[str], cwd: Path, timeout: float, env: dict | None = None) -> tuple[bool, str]:
    """(ok, stdout+stderr) of a tool; a missing tool or a timeout is a failure, not an exception."""
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError:
        return False, f"{argv[0]} not found"
    except subprocess.TimeoutExpired:
        return False, f"{Path(argv[0]).name} timed out after {timeout:g} s"
    except OSError as e:
        return False, f"{argv[0]}: {e}"
    return p.returncode == 0, (p.stdout or "") + (p.stderr or "")


def per_kernel(d: dict) -> list[dict]:
    """Per-kernel figures as a list of records with a ``kernel`` field, never a dict keyed by
    kernel name: the provenance log redacts values under keys that look like secrets (a kernel
    named ``mha_tokens`` would lose its figures)."""
    return [{"kernel": k, **v} for k, v in (d or {}).items() if isinstance(v, dict)]


def _first_error(log: str, src: Path | None = None) -> str:
    if src is not None:
        log = log.replace(str(src.resolve()), src.name)
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    err = next((ln for ln in lines if "error" in ln.lower()), None)
    return (err or (lines[-1] if lines else "failed"))[:300]


# -- figures ---------------------------------------------------------------------------------
_PTX_INSN = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\b")


def ptx_figures(text: str) -> dict:
    """Counts over a PTX module: lines, instructions, and the kinds that tell a kernel's shape
    (FMA, global/shared loads and stores, barriers, tensor-core mma/wmma, shuffles)."""
    entries = re.findall(r"\.entry\s+(\w+)", text)
    insns = []
    for ln in text.splitlines():
        s = ln.strip()
        if not s or s.startswith(("//", ".", "{", "}", "$")) or s.endswith(":"):
            continue
        m = _PTX_INSN.match(s)
        if m:
            insns.append(m.group(1))

    def count(pred) -> int:
        return sum(1 for i in insns if pred(i))
    shared = sum(int(n) for n in re.findall(r"\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+\w+\[(\d+)\]", text))
    return {"lines": len(text.splitlines()), "instructions": len(insns), "entries": entries,
            "fma": count(lambda i: i.startswith("fma")),
            "ld_global": count(lambda i: i.startswith("ld.global")), "st_global": count(lambda i: i.startswith("st.global")),
            "ld_shared": count(lambda i: i.startswith("ld.shared")), "st_shared": count(lambda i: i.startswith("st.shared")),
            "barriers": count(lambda i: i.startswith(("bar.", "barrier."))),
            "mma": count(lambda i: i.startswith(("mma.", "wmma.", "wgmma."))),
            "shfl": count(lambda i: i.startswith("shfl")),
            "static_shared_bytes": shared}


_SASS_INSN = re.compile(r"/\*[0-9a-fA-F]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?\b")


def sass_figures(text: str) -> dict:
    """Counts over ``cuobjdump -sass`` / ``nvdisasm`` output: instructions and the main kinds."""
    ops = _SASS_INSN.findall(text)

    def count(*names) -> int:
        return sum(1 for o in ops if o in names or any(o.startswith(n) for n in names if n.endswith("*")))
    return {"lines": len(text.splitlines()), "instructions": len(ops),
            "ffma": count("FFMA"), "hmma": count("HMMA"), "ldg": count("LDG"), "stg": count("STG"),
            "lds": count("LDS"), "sts": count("STS"), "bar": count("BAR"), "shfl": count("SHFL")}


def amdgpu_figures(text: str) -> dict:
    """Per kernel from AMDGPU assembly: vgpr, sgpr, agpr, lds_bytes, scratch_bytes, wave (the
    ``.amdgpu_metadata`` block) and occupancy (waves per SIMD, clang's ``; Occupancy:`` comment);
    plus instruction counts over the whole file (VALU, SALU, LDS, global memory, MFMA, dot)."""
    from .platforms.simt_common import parse_amdgpu_notes
    kernels = parse_amdgpu_notes(text)
    cur = None
    for ln in text.splitlines():
        m = re.match(r"\s*\.size\s+([\w.$]+),\s*\.Lfunc_end", ln)
        if m:
            cur = m.group(1)
            continue
        m = re.match(r";\s*(Occupancy|NumAgprs|codeLenInByte)\s*[:=]\s*(\d+)", ln)
        if m and cur:
            key = {"Occupancy": "occupancy", "NumAgprs": "agpr", "codeLenInByte": "code_bytes"}[m.group(1)]
            kernels.setdefault(cur, {})[key] = int(m.group(2))
    insns = [m.group(1) for m in re.finditer(r"^\s+([vsd][a-z0-9_]*_[a-z0-9_]+|global_\w+|buffer_\w+|flat_\w+|ds_\w+)\b",
                                              text, re.M)]
    return {"lines": len(text.splitlines()), "instructions": len(insns), "kernels": per_kernel(kernels),
            "valu": sum(i.startswith("v_") for i in insns), "salu": sum(i.startswith("s_") for i in insns),
            "lds_ops": sum(i.startswith("ds_") for i in insns),
            "global_ops": sum(i.startswith(("global_", "buffer_", "flat_")) for i in insns),
            "mfma": sum(i.startswith(("v_mfma", "v_wmma")) for i in insns),
            "dot": sum(i.startswith("v_dot") for i in insns)}


_X86_INSN = re.compile(r"^\s+([a-z][a-z0-9]*)\b(.*)$")
_FMA = re.compile(r"^v?f(?:n)?m(?:add|sub)(?:sub|add)?\d*[ps][sdh]$")


def x86_figures(text: str) -> dict:
    """Counts over x86-64 AT&T assembly: instructions, packed vector instructions by the widest
    register they use (zmm/ymm/xmm), scalar floating-point ones, FMA, VNNI and AMX."""
    zmm = ymm = xmm = scalar = fma = vnni = amx = total = 0
    for ln in text.splitlines():
        m = _X86_INSN.match(ln)
        if not m or ln.lstrip().startswith("."):
            continue
        op, rest = m.group(1), m.group(2)
        total += 1
        if _FMA.match(op):
            fma += 1
        if op.startswith(("vpdpbusd", "vpdpwssd")):
            vnni += 1
        if op.startswith(("tdp", "tileload", "tilestore", "tilezero", "ldtilecfg", "sttilecfg", "tilerelease")):
            amx += 1
        if "%zmm" in rest:
            zmm += 1
        elif "%ymm" in rest:
            ymm += 1
        elif "%xmm" in rest:
            # scalar float: vaddss, vmaxsd, vcvtsi2ssl, vcvttss2si, vucomiss, ...
            if re.search(r"(?:ss|sd|sh)[lq]?$|s[sd]2", op) and not op.startswith(("vpdp", "vpmov")):
                scalar += 1
            else:
                xmm += 1
    return {"lines": len(text.splitlines()), "instructions": total, "zmm_ops": zmm, "ymm_ops": ymm, "xmm_ops": xmm,
            "scalar_fp_ops": scalar, "fma": fma, "vnni": vnni, "amx": amx}


# -- building --------------------------------------------------------------------------------
def _cuda(src: Path, work: Path, timeout: float) -> list[AsmArtifact]:
    from .platforms.simt_common import parse_ptxas
    out = []
    if not _which("nvcc"):
        why = "nvcc not found on PATH"
        return [AsmArtifact("ptx-sm_90", "ptx", "sm_90", False, why=why),
                AsmArtifact("sass-sm_90", "sass", "sm_90", False, why=why)]
    ptx = work / "k.ptx"
    argv = ["nvcc", "-ptx", "-x", "cu", "-arch=sm_90", "-std=c++17", str(src.resolve()), "-o", str(ptx)]
    ok, log = _run(argv, work, timeout)
    tool = " ".join(["nvcc", "-ptx", "-x", "cu", "-arch=sm_90", "-std=c++17", src.name])
    if ok and ptx.is_file():
        text = ptx.read_text(errors="replace")
        a = AsmArtifact("ptx-sm_90", "ptx", "sm_90", True, text, ptx_figures(text), tool)
    else:
        a = AsmArtifact("ptx-sm_90", "ptx", "sm_90", False, tool=tool,
                        why=f"nvcc -ptx failed: {_first_error(log, src)}")
    out.append(a)
    cubin = work / "k.cubin"
    argv = ["nvcc", "-cubin", "-x", "cu", "-arch=sm_90", "-std=c++17", "--resource-usage", str(src.resolve()),
            "-o", str(cubin)]
    ok, log = _run(argv, work, timeout)
    res = per_kernel(parse_ptxas(log)) if ok else []
    if a.available:
        a.figures["ptxas"] = res      # ptxas's own figures for sm_90 (registers, smem, spills)
    stool = "nvcc -cubin -arch=sm_90 --resource-usage; "
    if not ok or not cubin.is_file():
        out.append(AsmArtifact("sass-sm_90", "sass", "sm_90", False, tool=stool.rstrip("; "),
                               why=f"nvcc -cubin failed: {_first_error(log, src)}"))
        return out
    dis = _which("cuobjdump")
    argv = [dis, "-sass", str(cubin)] if dis else None
    if not dis and _which("nvdisasm"):
        dis = _which("nvdisasm")
        argv = [dis, "-c", str(cubin)]
    if not dis:
        out.append(AsmArtifact("sass-sm_90", "sass", "sm_90", False, figures={"ptxas": res}, tool=stool.rstrip("; "),
                               why="cuobjdump/nvdisasm not found (the CUDA binary utilities: on the GPU machine, or "
                                   "`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`): no SASS written; ptxas's sm_90 figures "
                                   "are recorded"))
        return out
    env = None
    nvd = _which("nvdisasm")
    if nvd:     # cuobjdump -sass runs nvdisasm: say where it is when it is not on PATH (a wheel's)
        import os
        env = {**os.environ, "NVDISASM_PATH": str(Path(nvd).parent),
               "PATH": f"{Path(nvd).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    ok, log = _run(argv, work, timeout, env)
    stool += f"{Path(argv[0]).name} {' '.join(argv[1:-1])}"
    if not ok or not log.strip():
        out.append(AsmArtifact("sass-sm_90", "sass", "sm_90", False, figures={"ptxas": res}, tool=stool,
                               why=f"{Path(argv[0]).name} failed: {_first_error(log)}"))
        return out
    figs = sass_figures(log)
    figs["ptxas"] = res
    out.append(AsmArtifact("sass-sm_90", "sass", "sm_90", True, log, figs, stool))
    return out


def _hip(src: Path, work: Path, timeout: float) -> list[AsmArtifact]:
    from .platforms.simt_common import bitcode_dir_for, clang15
    out = []
    clang = clang15()
    for label, kind, arch, _ in PLAN["hip"]:
        if not clang:
            out.append(AsmArtifact(label, kind, arch, False, why="clang++-15 not found (apt-get install clang-15)"))
            continue
        s = work / f"k.{arch}.s"
        argv = [clang, "-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "-O3", "-S", "--rocm-path=/usr",
                f"--rocm-device-lib-path={bitcode_dir_for(arch)}", "-std=c++17", "-w", str(src.resolve()), "-o", str(s)]
        tool = f"clang++-15 -x hip --offload-arch={arch} --cuda-device-only -O3 -S -std=c++17 {src.name}"
        ok, log = _run(argv, work, timeout)
        if ok and s.is_file():
            text = s.read_text(errors="replace")
            out.append(AsmArtifact(label, kind, arch, True, text, amdgpu_figures(text), tool))
        else:
            out.append(AsmArtifact(label, kind, arch, False, tool=tool,
                                   why=f"clang-15 rejects it for {arch}: {_first_error(log, src)}"))
    return out


def _c(src: Path, work: Path, timeout: float) -> list[AsmArtifact]:
    from .platforms.c import CPlatform, cpu_flags
    from .platforms.harness import COMMON_INCLUDE
    from .platforms.prelude import prepare_c
    label, kind, arch, _ = PLAN["c"][0]
    try:
        prep = prepare_c(src.read_text(errors="replace"), src.name)
    except Exception as e:   # a source the prelude cannot read: said, not raised
        return [AsmArtifact(label, kind, arch, False, why=f"could not prepare the source: {type(e).__name__}: {e}")]
    compiler = "g++" if prep.cxx else "gcc"
    if not _which(compiler):
        return [AsmArtifact(label, kind, arch, False, why=f"{compiler} not found")]
    native = {"avx512f", "avx512_vnni"} <= cpu_flags()
    march = "native" if native else "sapphirerapids"
    f = work / ("k.cpp" if prep.cxx else "k.c")
    f.write_text(prep.text)
    s = work / "k.s"
    lang = ["-x", "c++", "-std=gnu++17"] if prep.cxx else ["-x", "c"]
    # the headers the c substrate's harness puts before the kernel (harness.main_source, xp_job.h)
    pre = [x for h in ("stdint.h", "stdio.h", "stdlib.h", "string.h") for x in ("-include", h)]
    argv = [compiler, "-S", "-O2", "-fopenmp", "-w", f"-I{COMMON_INCLUDE}", f"-march={march}", *pre, *lang, str(f),
            "-o", str(s)]
    tool = " ".join([compiler, "-S", "-O2", "-fopenmp", f"-march={march}", *lang, src.name])
    ok, log = _run(argv, work, timeout)
    if not ok:   # a kernel named like a libc function (abs, exp) clashes with those headers: try without
        ok2, log2 = _run([x for x in argv if x not in pre], work, timeout)
        if ok2:
            ok, log = ok2, log2
    if not ok or not s.is_file():
        return [AsmArtifact(label, kind, arch, False, tool=tool, why=f"{compiler} -S failed: {_first_error(log)}")]
    text = s.read_text(errors="replace")
    note = "" if native else (f"compiled for -march=sapphirerapids (AVX-512 VNNI, AMX): this CPU lacks AVX-512 VNNI, "
                              f"so the kernel was verified on the {CPlatform().substrate()} substrate; this assembly "
                              "is compiled only, not run")
    figs = x86_figures(text)
    figs["march"] = march
    return [AsmArtifact(label, kind, arch, True, text, figs, tool, why=note)]


def assemble(src: str | Path, dialect: str, *, timeout: float = TIMEOUT_S) -> list[AsmArtifact]:
    """The assembly artifacts of the kernel file ``src`` in ``dialect`` (texts in memory).
    Never raises for a tool that is missing or fails: that artifact says why."""
    src = Path(src)
    if dialect == "bang":
        return [AsmArtifact("bang-mlu", "bang", "mlu", False, why=BANG_WHY)]
    builders = {"cuda": _cuda, "hip": _hip, "c": _c}
    if dialect not in builders:
        return [AsmArtifact("unknown", "unknown", "-", False, why=f"no assembly for dialect {dialect!r}")]
    with tempfile.TemporaryDirectory(prefix="xpiler-asm-") as d:
        try:
            return builders[dialect](src, Path(d), timeout)
        except Exception as e:   # never a crash: the migration's verdict does not depend on this
            return [AsmArtifact(lab, kind, arch, False, why=f"internal error while making assembly: "
                                                            f"{type(e).__name__}: {e}")
                    for lab, kind, arch, _ in PLAN[dialect]]


def _records(x) -> list[dict]:
    return [v for v in x if isinstance(v, dict)] if isinstance(x, list) else []


def summary(a: dict) -> str:
    """One line of figures of an artifact record (``AsmArtifact.to_json``), for reports."""
    f = a.get("figures") or {}
    if not a.get("available"):
        return "not available: " + str(a.get("why", ""))
    if a["kind"] == "ptx":
        regs = "; ".join(f"{v.get('kernel')}: {v.get('registers')} regs, {v.get('smem_bytes', 0)} B smem, "
                         f"{v.get('spill_bytes', 0)} B spill" for v in _records(f.get("ptxas")))
        return (f"{f.get('lines')} lines, {f.get('instructions')} instructions (fma {f.get('fma')}, mma {f.get('mma')}, "
                f"ld/st.shared {f.get('ld_shared')}/{f.get('st_shared')}, bar {f.get('barriers')})"
                + (f"; ptxas sm_90: {regs}" if regs else ""))
    if a["kind"] == "sass":
        return (f"{f.get('instructions')} instructions (FFMA {f.get('ffma')}, HMMA {f.get('hmma')}, "
                f"LDS/STS {f.get('lds')}/{f.get('sts')}, LDG/STG {f.get('ldg')}/{f.get('stg')})")
    if a["kind"] == "amdgcn":
        ks = "; ".join(f"{v.get('kernel')}: {v.get('vgpr')} VGPR, {v.get('sgpr')} SGPR"
                       + (f", {v['agpr']} AGPR" if v.get("agpr") else "")
                       + f", {v.get('lds_bytes')} B LDS, {v.get('scratch_bytes')} B scratch, wave{v.get('wave')}"
                       + (f", occupancy {v['occupancy']}" if v.get("occupancy") is not None else "")
                       for v in _records(f.get("kernels")))
        return (f"{f.get('lines')} lines, {f.get('instructions')} instructions (VALU {f.get('valu')}, "
                f"LDS {f.get('lds_ops')}, MFMA {f.get('mfma')}); {ks}")
    if a["kind"] == "x86":
        return (f"{f.get('lines')} lines, {f.get('instructions')} instructions; vector: zmm {f.get('zmm_ops')}, "
                f"ymm {f.get('ymm_ops')}, xmm {f.get('xmm_ops')}; scalar fp {f.get('scalar_fp_ops')}; "
                f"FMA {f.get('fma')}, VNNI {f.get('vnni')}, AMX {f.get('amx')} (-march={f.get('march')})")
    return ""


def report_sections(events: list[dict]) -> tuple[list[str], str]:
    """The report's "Assembly" section (markdown lines, HTML) from the log's ``asm`` events;
    empty when the run did not ask for assembly."""
    import html as _html
    evs = [e for e in events if e.get("type") == "asm"]
    if not evs:
        return [], ""
    md = ["", "## Assembly (--emit-asm)", "", "| artifact | file | figures |", "|---|---|---|"]
    rows = []
    for e in evs:
        for a in e.get("artifacts", []):
            name = a.get("file")
            link_md = f"[{name}]({name})" if name else "-"
            md.append(f"| {a.get('label')} | {link_md} | {summary(a)} |")
            link = f'<a href="{_html.escape(name)}">{_html.escape(name)}</a>' if name else "-"
            rows.append(f"<tr><td>{_html.escape(str(a.get('label')))}</td><td>{link}</td>"
                        f"<td>{_html.escape(summary(a))}</td></tr>")
    md.append("")
    md.append("_Assembly is produced after verification and never changes the verdict._")
    page = ("<h2>Assembly (--emit-asm)</h2><table><tr><th>artifact</th><th>file</th><th>figures</th></tr>"
            + "".join(rows) + "</table><p><i>Assembly is produced after verification and never changes the "
            "verdict.</i></p>")
    return md, page


def emit(out_path: Path, dialect: str, owner, log) -> tuple[list[dict], dict[str, Path], list]:
    """``--emit-asm`` for a verified output: build its assembly, write each artifact beside it
    through ``owner`` (the run's ``OutDir``: claimed, hashed when the run ends), log one ``asm``
    event, and return (artifact records, {end-event role: path}, notes XP4130 for artifacts that
    could not be made). Never raises: the verdict does not depend on it."""
    import hashlib
    from .diagnostics import XPError
    out_path = Path(out_path)
    records, files, notes = [], {}, []
    try:
        arts = assemble(out_path, dialect)
    except Exception as e:   # assemble already says why per artifact; this is a last guard
        arts = [AsmArtifact("unknown", "unknown", "-", False, why=f"{type(e).__name__}: {e}")]
    for a in arts:
        rec = a.to_json()
        name = file_name(out_path.name, dialect, a.label) if a.available and a.text is not None else None
        if name:
            try:
                p = owner.write_text(name, a.text)
                rec.update(file=name, sha256=hashlib.sha256(p.read_bytes()).hexdigest())
                files[f"asm:{a.label}"] = p
            except Exception as e:   # e.g. a full disk: the kernel stays verified
                rec.update(available=False, why=f"could not write {name}: {type(e).__name__}: {e}")
        if not rec.get("available"):
            notes.append(XPError("XP4130", label=a.label, why=rec.get("why", "?")))
            stale = file_name(out_path.name, dialect, a.label)
            try:   # an earlier run's file of this name would pass for this kernel's: removed when ours
                if stale and (owner.path / stale).is_file() and owner.owns(stale):
                    (owner.path / stale).unlink()
            except Exception:
                pass
        records.append(rec)
    log.event("asm", dialect=dialect, output=out_path.name, artifacts=records)
    return records, files, notes
