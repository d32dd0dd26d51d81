"""Printers: golden files pin the output; re-printed kernels compile with each dialect's
real compiler (where installed): nvcc sm_90, clang++-15 gfx90a/gfx1100, the project's BANG
header, gcc -march=native.  Every example is parsed, printed and compiled (CUDA examples: a
representative subset unless XPILER_FULL_COMPILE=1, since nvcc takes seconds per file)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from xpiler.frontend import parse_file
from xpiler.ir.serialize import dump
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ROOT / "tests" / "frontend_inputs"
GOLDEN = ROOT / "tests" / "golden"
EXT = {"cuda": ".cu", "hip": ".hip", "bang": ".mlu", "c": ".c"}
BITCODE = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"

INPUT_FILES = sorted(p for p in INPUTS.iterdir() if p.suffix in (".cu", ".hip", ".mlu", ".c"))
# (input, target dialect) pairs whose printed text is pinned
GOLDEN_CASES = [(p, None) for p in INPUT_FILES] + [(INPUTS / "saxpy.cu", "hip")]


def _golden_check(name: str, text: str, update: bool):
    path = GOLDEN / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
    assert text == path.read_text(), f"printer output differs from {path} (pytest --update-golden to accept)"


@pytest.mark.parametrize("path,to", GOLDEN_CASES, ids=[f"{p.name}->{t or 'self'}" for p, t in GOLDEN_CASES])
def test_printer_golden(path, to, update_golden):
    prog = parse_file(path)
    text = print_program(prog, to)
    suffix = f".{to}{EXT[to]}" if to else ""
    _golden_check(f"print_{path.name}{suffix}.golden", text, update_golden)


@pytest.mark.parametrize("name", ["constructs.cu", "nram_scale.mlu"])
def test_ir_dump_golden(name, update_golden):
    prog = parse_file(INPUTS / name)
    _golden_check(f"ir_{name}.golden", dump(prog).replace(str(INPUTS / name), name), update_golden)


def test_print_is_a_fixed_point(tmp_path):
    """Printing, re-parsing and printing again gives the same text; after one round the IR is stable."""
    for path in INPUT_FILES:
        once = print_program(parse_file(path))
        f = tmp_path / path.name
        f.write_text(once)
        prog2 = parse_file(f)
        assert print_program(prog2) == once, path.name
        g = tmp_path / ("again_" + path.name)
        g.write_text(print_program(prog2))
        assert parse_file(g).funcs == prog2.funcs, path.name


# ------------------------------------------------------------------------------ compiling
def _compile(dialect: str, src: Path, arch: str | None = None) -> tuple[bool, str]:
    if dialect == "cuda":
        if not shutil.which("nvcc"):
            pytest.skip("nvcc not installed")
        argv = ["nvcc", "-c", "-arch=sm_90", "-o", str(src.with_suffix(".o")), str(src)]
    elif dialect == "hip":
        if not shutil.which("clang++-15") or not Path(BITCODE).is_dir():
            pytest.skip("clang++-15 / ROCm device libraries not installed")
        libdir = BITCODE
        if arch == "gfx1100":
            try:
                from xpiler.platforms.simt_common import bitcode_dir_for
                libdir = str(bitcode_dir_for("gfx1100"))
            except Exception:
                pytest.skip("no gfx1100 device library")
            if not (Path(libdir) / "oclc_isa_version_1100.bc").exists():
                pytest.skip("no gfx1100 device library")
        argv = ["clang++-15", "-x", "hip", f"--offload-arch={arch or 'gfx90a'}", "-O3", "-c", "--rocm-path=/usr",
                f"--rocm-device-lib-path={libdir}", "-o", str(src.with_suffix(".o")), str(src)]
    elif dialect == "c":
        if not shutil.which("gcc"):
            pytest.skip("gcc not installed")
        # the c platform's own flags: -march=native where the CPU has AVX-512 VNNI, else the SIMDe wrapper
        from xpiler.platforms.c import CPlatform
        argv = ["gcc", *CPlatform()._flags(False), "-c", "-o", str(src.with_suffix(".o")), str(src)]
    else:
        try:
            from xpiler.platforms.bang import BangPlatform
        except ImportError:
            pytest.skip("BANG platform (xpiler/runtime/bang) not available")
        r = BangPlatform().compile_check(src)
        return r["ok"], r["log"]
    env = dict(os.environ, HIP_PLATFORM="amd", ROCM_PATH="/usr")
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    return p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("path", INPUT_FILES, ids=[p.name for p in INPUT_FILES])
def test_reprinted_input_compiles(path, tmp_path):
    prog = parse_file(path)
    out = tmp_path / path.name
    out.write_text(print_program(prog))
    ok, log = _compile(prog.dialect, out)
    assert ok, log[-3000:]


def test_hip_input_compiles_for_gfx1100(tmp_path):
    out = tmp_path / "mfma_free.hip"
    out.write_text(print_program(parse_file(INPUTS / "shfl_reduce.hip")))
    ok, log = _compile("hip", out, "gfx1100")
    assert ok, log[-3000:]


def test_cuda_input_printed_as_hip_compiles(tmp_path):
    out = tmp_path / "saxpy.hip"
    out.write_text(print_program(parse_file(INPUTS / "saxpy.cu"), "hip"))
    ok, log = _compile("hip", out)
    assert ok, log[-3000:]


def _examples(dialect_ext):
    full = os.environ.get("XPILER_FULL_COMPILE") == "1"
    paths = sorted((ROOT / "examples").glob(f"*/*.{dialect_ext}"))
    if dialect_ext == "cu" and not full:
        paths = [p for p in paths if any(k in p.stem for k in ("wmma", "shfl", "vec4"))] + paths[:1]
    return paths


@pytest.mark.slow
@pytest.mark.parametrize("dialect,ext", [("cuda", "cu"), ("hip", "hip"), ("bang", "mlu"), ("c", "c")])
def test_examples_reprint_and_compile(dialect, ext, tmp_path):
    """Every example of the dialect: parse, print, compile (a few compiles at a time)."""
    from concurrent.futures import ThreadPoolExecutor
    paths = _examples(ext)
    if not paths:
        pytest.skip(f"no {dialect} examples yet")

    def one(path):
        out = tmp_path / path.parent.name / path.name
        out.parent.mkdir(exist_ok=True)
        out.write_text(print_program(parse_file(path)))
        ok, log = _compile(dialect, out)
        return path, ok, log

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(one, paths))
    bad = [f"{p.relative_to(ROOT)}:\n{log[-1500:]}" for p, ok, log in results if not ok]
    assert not bad, f"{len(bad)}/{len(paths)} re-printed {dialect} examples do not compile:\n" + "\n".join(bad)
