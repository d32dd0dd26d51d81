"""`xpiler migrate --emit-asm` (issue 16, item 2): the verified kernel's assembly is written beside
it, owned by the output folder (hash recorded), named by the log's `asm` and `end` events and
shown in the report; SASS only where cuobjdump/nvdisasm exist; bang says no assembler exists; a
tool that fails is a note and never changes the verdict."""
import json
import shutil

import pytest

import xpiler
from conftest import EXAMPLES, run_cli
from xpiler import asm
from xpiler.platforms.simt_common import clang15
from xpiler.provenance import read_log, sha256_file

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not installed")
needs_clang = pytest.mark.skipif(not clang15(), reason="clang-15 not installed")


# -- the figures, from assembly texts written for the test ------------------------------------
def test_x86_figures_count_vector_instructions_by_width():
    text = "\n".join([
        "\t.text", "kern:",
        "\tvmovups\t(%rdi), %zmm0",
        "\tvfmadd231ps\t%zmm1, %zmm2, %zmm0",
        "\tvpdpbusd\t%zmm3, %zmm4, %zmm5",
        "\tvaddps\t%ymm1, %ymm2, %ymm3",
        "\tvmulps\t%xmm1, %xmm2, %xmm3",
        "\tvaddss\t%xmm1, %xmm2, %xmm3",
        "\ttdpbssd\t%tmm1, %tmm2, %tmm0",
        "\taddq\t$64, %rdi",
        "\tret"])
    f = asm.x86_figures(text)
    assert (f["zmm_ops"], f["ymm_ops"], f["xmm_ops"], f["scalar_fp_ops"]) == (3, 1, 1, 1)
    assert (f["fma"], f["vnni"], f["amx"], f["instructions"]) == (1, 1, 1, 9)


def test_sass_figures_parse_disassembler_lines():
    text = "\n".join([
        "\tcode for sm_90", "\t\tFunction : add",
        "        /*0000*/                   LDC R1, c[0x0][0x28] ;",
        "        /*0010*/                   LDG.E R2, desc[UR4][R2.64] ;",
        "        /*0020*/                   FFMA R0, R2, R3, R0 ;",
        "        /*0030*/               @P0 STG.E desc[UR4][R4.64], R0 ;",
        "        /*0040*/                   HMMA.16816.F32 R8, R4, R6, R8 ;",
        "        /*0050*/                   EXIT ;"])
    f = asm.sass_figures(text)
    assert (f["instructions"], f["ffma"], f["ldg"], f["stg"], f["hmma"]) == (6, 1, 1, 1, 1)


# -- the tools, on the project's own examples -------------------------------------------------
def test_c_assembly_counts_vnni():
    (a,) = asm.assemble(EXAMPLES / "gemm" / "gemm_vnni.c", "c")
    assert a.available, a.why
    assert a.kind == "x86" and "vpdpbusd" in a.text
    assert a.figures["vnni"] >= 1 and a.figures["zmm_ops"] >= 1
    assert a.figures["march"] in ("native", "sapphirerapids")


@needs_clang
def test_hip_assembly_reports_registers_lds_and_occupancy():
    arts = {a.arch: a for a in asm.assemble(EXAMPLES / "gemm" / "gemm.hip", "hip")}
    assert set(arts) == {"gfx90a", "gfx1100"}
    for arch, wave in (("gfx90a", 64), ("gfx1100", 32)):
        a = arts[arch]
        assert a.available, a.why
        (k,) = [k for k in a.figures["kernels"] if k["kernel"] == "gemm"]
        assert k["wave"] == wave and k["vgpr"] > 0 and k["sgpr"] > 0 and k["occupancy"] >= 1
        assert k["lds_bytes"] == 2 * 16 * 16 * 4     # the example's two 16x16 float tiles
    # MFMA builtins do not exist on RDNA3: that arch is said to be refused, not faked
    mf = {a.arch: a for a in asm.assemble(EXAMPLES / "gemm" / "gemm_mfma.hip", "hip")}
    assert mf["gfx90a"].available and mf["gfx90a"].figures["mfma"] >= 1
    assert not mf["gfx1100"].available and "gfx1100" in mf["gfx1100"].why


@needs_nvcc
def test_cuda_ptx_and_sass_where_a_disassembler_exists():
    arts = {a.kind: a for a in asm.assemble(EXAMPLES / "gemm" / "gemm.cu", "cuda")}
    ptx = arts["ptx"]
    assert ptx.available and ".target sm_90" in ptx.text and ptx.figures["entries"] == ["gemm"]
    assert [k["registers"] > 0 for k in ptx.figures["ptxas"] if k["kernel"] == "gemm"] == [True]
    sass = arts["sass"]
    if asm._which("cuobjdump") or asm._which("nvdisasm"):
        assert sass.available and sass.figures["instructions"] > 0
    else:
        assert not sass.available and "cuobjdump" in sass.why and sass.text is None


def test_a_disassembler_installed_as_a_wheel_is_found_off_path(tmp_path, monkeypatch):
    """`pip install nvidia-cuda-cuobjdump` puts the tool in site-packages/nvidia/cu*/bin, not on
    PATH: the SASS step finds it there; with neither, it says so."""
    import sys
    tool = tmp_path / "site" / "nvidia" / "cu13" / "bin" / "cuobjdump"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delitem(sys.modules, "nvidia", raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")] + [p for p in sys.path if "site-packages" not in p])
    assert asm._which("cuobjdump") == str(tool)
    assert asm._which("nvdisasm") is None and asm._which("ptxas") is None


def test_bang_has_no_assembler_and_says_so():
    (a,) = asm.assemble(EXAMPLES / "gemm" / "gemm.mlu", "bang")
    assert not a.available and a.text is None and "no BANG assembler" in a.why


# -- migrate --emit-asm -----------------------------------------------------------------------
def _asm_event(out):
    _, events = read_log(out / "provenance.jsonl")
    return next(e for e in events if e["type"] == "asm"), events[-1]


@needs_clang
def test_migrate_emit_asm_hip_writes_records_and_replays(tmp_path):
    out = tmp_path / "o"
    p = run_cli("migrate", EXAMPLES / "add" / "add.c", "--to", "hip", "-o", out, "--no-perf", "--emit-asm")
    assert p.returncode == 0, p.stdout + p.stderr
    ev, end = _asm_event(out)
    assert [a["arch"] for a in ev["artifacts"]] == ["gfx90a", "gfx1100"]
    marker = json.loads((out / ".xpiler-output").read_text())["files"]
    roles = {f["role"]: f for f in end["files"]}
    for a in ev["artifacts"]:
        assert a["available"], a
        f = out / a["file"]
        assert f.is_file() and a["sha256"] == sha256_file(f)
        assert marker[a["file"]] == sha256_file(f)                 # owned by the output folder
        assert roles[f"asm:{a['label']}"]["sha256"] == sha256_file(f)
        assert a["figures"]["kernels"]                             # VGPR/SGPR/LDS per kernel
    html = (out / "report.html").read_text()
    assert "<h2>Assembly" in html and 'href="add.hip.gfx90a.s"' in html and "occupancy" in html
    assert "add.hip.gfx1100.s" in (out / "report.md").read_text()
    r = run_cli("replay", out / "provenance.jsonl")                 # the asm files are checked too
    assert r.returncode == 0, r.stdout + r.stderr
    (out / "add.hip.gfx90a.s").write_text("; edited\n")
    r = run_cli("replay", out / "provenance.jsonl")
    assert r.returncode == 2 and "XP4011" in r.stderr


def test_migrate_emit_asm_bang_records_not_available(tmp_path):
    r = xpiler.migrate(EXAMPLES / "add" / "add.c", to="bang", outdir=tmp_path / "o", perf=False, emit_asm=True)
    assert r.verified
    (a,) = r.asm
    assert not a["available"] and "no BANG assembler" in a["why"] and "file" not in a
    assert any(d.code == "XP4130" for d in r.diagnostics)
    ev, end = _asm_event(tmp_path / "o")
    assert ev["artifacts"][0]["available"] is False
    assert not [f for f in end["files"] if f["role"].startswith("asm:")]
    assert "no BANG assembler" in (tmp_path / "o" / "report.md").read_text()


def test_a_failing_assembler_never_changes_the_verdict(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("assembler exploded")
    monkeypatch.setattr(asm, "assemble", boom)
    r = xpiler.migrate(EXAMPLES / "add" / "add.cu", to="c", outdir=tmp_path / "o", perf=False, emit_asm=True)
    assert r.verified and r.exit_code == 0
    assert not r.asm[0]["available"] and "assembler exploded" in r.asm[0]["why"]
    assert any(d.code == "XP4130" for d in r.diagnostics)
    assert not list((tmp_path / "o").glob("*.s"))


def test_without_emit_asm_nothing_is_written(tmp_path):
    r = xpiler.migrate(EXAMPLES / "add" / "add.cu", to="c", outdir=tmp_path / "o", perf=False)
    assert r.verified and r.asm == []
    _, events = read_log(tmp_path / "o" / "provenance.jsonl")
    assert not [e for e in events if e["type"] == "asm"]
    assert not list((tmp_path / "o").glob("*.s"))


def test_per_kernel_figures_survive_the_logs_secret_redaction():
    # the log redacts values under keys like "token": figures are never keyed by kernel name
    from xpiler.provenance import redact
    figs = {"kernels": asm.per_kernel({"mha_tokens": {"vgpr": 24, "sgpr": 16}})}
    assert redact(figs) == {"kernels": [{"kernel": "mha_tokens", "vgpr": 24, "sgpr": 16}]}
    assert "mha_tokens: 24 VGPR" in asm.summary({"kind": "amdgcn", "available": True, "figures": redact(figs)})


def test_c_assembly_sees_the_harness_headers_and_libc_named_kernels(tmp_path):
    # a kernel the substrate builds after <stdio.h> (it uses stderr without including it) ...
    k = tmp_path / "k.c"
    k.write_text("void k(const float *x, float *y, int n) {\n  if (n < 0) fprintf(stderr, \"bad n\\n\");\n"
                 "  for (int i = 0; i < n; i++) y[i] = x[i] * 2.0f;\n}\n")
    (a,) = asm.assemble(k, "c")
    assert a.available, a.why
    # ... and one named like a libc function (clashes with <stdlib.h>'s abs)
    (b,) = asm.assemble(EXAMPLES.parent / "examples" / "wild" / "abs" / "abs.c", "c")
    assert b.available, b.why
