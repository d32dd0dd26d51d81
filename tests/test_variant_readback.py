"""Our outputs read back as sources (xpiler/frontend/variant_guards.py): each XP_USE_* guard of the
variant contract is read as its portable #else branch, lines and columns of the kept text stay
the file's, any other #if is left as it was, and an MFMA hip output migrates to cuda without the
guard or an AMD builtin and verifies."""
from __future__ import annotations

import pytest

from xpiler.frontend import parse_file
from xpiler.frontend.variant_guards import resolve
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk

DEF = """#ifndef XP_USE_{n}
#if defined(__SOME_ARCH__)
#define XP_USE_{n} 1
#else
#define XP_USE_{n} 0
#endif
#endif
"""

KERNEL = DEF.format(n="FAST") + """__global__ void k(float *y, int n) {
    int i = threadIdx.x;
#if XP_USE_FAST
    y[i] = __fast_path(y[i]);
#else
    y[i] = y[i] + 1.0f;
#endif
#if XP_USE_FAST
    fast_only();
#endif
#if USER_FLAG
    y[i] = 2.0f;
#else
    y[i] = 3.0f;
#endif
}
"""


def test_the_else_branch_is_kept_and_the_dropped_lines_are_blank():
    text, done = resolve(KERNEL)
    old, new = KERNEL.split("\n"), text.split("\n")
    assert len(new) == len(old)
    kept = {i for i, (a, b) in enumerate(zip(old, new)) if a == b and a}
    assert {old[i] for i in range(len(old)) if i not in kept and old[i]} == {
        *DEF.format(n="FAST").strip().split("\n"), "#if XP_USE_FAST", "    y[i] = __fast_path(y[i]);", "#else",
        "#endif", "    fast_only();"}
    assert "    y[i] = y[i] + 1.0f;" in new and "#if USER_FLAG" in new and "    y[i] = 2.0f;" in new
    assert new.index("    y[i] = y[i] + 1.0f;") == old.index("    y[i] = y[i] + 1.0f;")
    assert [(r.guard, r.line, r.end_line, r.kept) for r in done] == [("XP_USE_FAST", 10, 14, (13, 13)),
                                                                       ("XP_USE_FAST", 15, 17, None)]


@pytest.mark.parametrize("change", [
    lambda t: t.replace(DEF.format(n="FAST"), ""),                                       # no definition
    lambda t: t.replace("#else\n    y[i] = y[i] + 1.0f;", "#elif X\n    y[i] = 0.0f;\n#else\n    y[i] = y[i] + 1.0f;"),
    lambda t: t.replace("int i = threadIdx.x;", "int i = threadIdx.x + XP_USE_FAST;"),    # used in code
    lambda t: t.replace("#define XP_USE_FAST 0\n", "#define XP_USE_FAST 0\n#define OTHER 1\n"),  # not the shape
    lambda t: t.replace("#define XP_USE_FAST 1\n", "#define XP_USE_FAST 2\n"),
], ids=["no-definition", "elif", "used-in-code", "extra-line", "other-value"])
def test_anything_but_the_contracts_shape_is_left_as_it_is(change):
    text = change(KERNEL)
    assert resolve(text) == (text, [])


def test_a_block_comment_across_the_cut_leaves_the_guard_whole():
    # the comment ends on the #if line (a directive still: cpp reads the comment as a space)
    text = KERNEL.replace("#if XP_USE_FAST\n    fast_only();", "/* a note\n */ #if XP_USE_FAST\n    fast_only();")
    assert resolve(text.replace("/* a note\n */ ", "")) != (text.replace("/* a note\n */ ", ""), [])
    assert resolve(text) == (text, [])


def test_parse_file_reads_the_portable_path_and_points_at_the_files_lines(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text(KERNEL)
    notes: list = []
    prog = parse_file(f, notes=notes)
    calls = {n.name for n in walk(prog.func("k")) if isinstance(n, (N.Call, N.Intrinsic))}
    assert "__fast_path" not in calls and "fast_only" not in calls
    assert [(n.code, n.line, n.severity) for n in notes] == [("XP1150", 10, "note"), ("XP1150", 15, "note")]
    assert "kept its #else branch (line 13)" in notes[0].message
    # a syntax error after the guard is reported at its line and column in the file
    bad = tmp_path / "bad.cu"
    bad.write_text(KERNEL.replace("y[i] = 3.0f;", "y[i] = 3.0f +;"))
    from xpiler.diagnostics import XPError
    with pytest.raises(XPError) as e:
        parse_file(bad)
    line = KERNEL.split("\n").index("    y[i] = 3.0f;") + 1
    assert (e.value.code, e.value.line, e.value.col) == ("XP1101", line, 18)


# --------------------------------------------------------------------- round trips that verify
def _verify_as(prog, dialect, spec, d):
    """``prog`` printed in ``dialect`` beside ``spec`` (its dialect, one instance), tested against the
    spec's Python reference: the cheapest verifying route (one build, one seed)."""
    from xpiler.printers import print_program
    from xpiler.spec import DIALECT_EXT, spec_to_toml
    from xpiler.verify.tester import compare_kernels
    text = print_program(prog, dialect)
    path = d / f"{spec.entry}{DIALECT_EXT[dialect]}"
    path.write_text(text)
    cs = spec.with_dialect(dialect, spec.entry, spec.launch)
    cs.path = path.with_name(path.name + ".toml")
    cs.path.write_text(spec_to_toml(cs))
    return text, compare_kernels(path, cs, use_reference=True, seeds=(0,), derive_boundaries=False, jobs=1)


def _small(spec, src, sizes):
    """``spec`` with one instance of ``sizes``, no derived boundaries, its reference by absolute path."""
    spec.sizes, spec.shapes, spec.test = dict(sizes), [], {"derive_boundaries": False}
    ref, fn = spec.reference.split(":")
    spec.reference = f"{(src.parent / ref).resolve()}:{fn}"
    return spec


@pytest.fixture(scope="module")
def mfma_hip(tmp_path_factory):
    """gemm's hip MFMA output (both paths, XP_USE_MFMA) and its spec, one instance of odd sizes."""
    from _simt_tile_util import bound
    from xpiler.passes import tensorize
    from xpiler.printers import print_program
    from xpiler.spec import load_spec
    src, entry, p = bound("gemm", "hip")
    q, launch = tensorize.apply(p, entry=entry, target="hip")
    path = tmp_path_factory.mktemp("mfma") / "gemm.hip"
    path.write_text(print_program(q, "hip"))
    spec = load_spec(str(src) + ".toml")
    return path, _small(spec.with_dialect("hip", entry, launch), src, {"M": 33, "N": 17, "K": 45})


def test_an_mfma_hip_output_read_back_prints_as_cuda_without_the_variant_and_verifies(mfma_hip, tmp_path):
    path, spec = mfma_hip
    assert "#if XP_USE_MFMA" in path.read_text() and "__builtin_amdgcn_mfma" in path.read_text()
    text, v = _verify_as(parse_file(path), "cuda", spec, tmp_path)
    assert "XP_USE_MFMA" not in text and "__builtin_amdgcn" not in text
    assert v.verified, v.failures[:1]
    assert "emu:simt-cpu" in v.substrate.split(" + ")   # (a GPU machine adds hw:nvidia-...)


@pytest.fixture(scope="module")
def amx_c(tmp_path_factory):
    """gemm_int8_flat's c output (the int8 form with its XP_USE_AMX tile path) and a one-instance
    spec: N and K off every tile, vector and 4-byte group edge; the smallest micro tile and k slice
    (the least code to build)."""
    from test_x86_gemm_i8 import FLAT, GEMM
    from xpiler.frontend import parse_text
    from xpiler.passes import tensorize
    from xpiler.printers import print_program
    from xpiler.spec import load_spec
    r = tensorize.apply(parse_text(FLAT, "c", "gemm_int8_flat.c"), entry="gemm_s8s32", target="c",
                        micro="1x16", kc=8)
    path = tmp_path_factory.mktemp("amx") / "gemm_int8_flat.c"
    path.write_text(print_program(r, "c"))
    src = GEMM / "gemm_int8_flat.cu"
    spec = load_spec(str(src) + ".toml").with_dialect("c", "gemm_s8s32", {})
    return path, _small(spec, src, {"M": 7, "N": 37, "K": 45})


def test_the_amx_c_output_read_back_detensorizes_without_tiles_and_verifies(amx_c, tmp_path):
    """What a migration of the AMX c output onwards (c -> cuda / hip / bang) runs first: detensorize
    takes the VNNI path (its 128-bit byte interleaves of the B packing, the masked loads of rows
    past K under a condition) to scalar loops, no tile or x86 intrinsic left, and they verify."""
    from xpiler.passes import detensorize
    path, spec = amx_c
    assert "#if XP_USE_AMX" in path.read_text() and "_tile_dpbssd(" in path.read_text()
    prog = detensorize.apply(parse_file(path), entry="gemm_s8s32", target="cuda")
    left = {getattr(n, "name", None) or getattr(n, "func", None) for n in walk(prog.func("gemm_s8s32"))
            if isinstance(n, (N.Intrinsic, N.Call))}
    assert not {x for x in left if isinstance(x, str) and x.startswith(("_tile_", "_mm"))}, left
    text, v = _verify_as(prog, "c", spec, tmp_path)
    assert "__mmask" not in text and "#if XP_USE_AMX" not in text and "#define XP_USE_AMX" not in text
    assert v.verified, v.failures[:1]


AMX_BY_HAND = """#include <immintrin.h>
#include <stdint.h>
void tiles(const int8_t *A, const int8_t *B, int32_t *C, int M, int N, int K) {
    for (int i = 0; i < M * N; ++i) {
        C[i] = 0;
    }
    _tile_zero(0);
    _tile_loadd(1, A, 64);
    _tile_loadd(2, B, 64);
    _tile_dpbssd(0, 1, 2);
    _tile_stored(0, C, 64);
}
"""


def test_amx_tile_calls_that_reach_a_pass_are_refused_by_name():
    """A kernel written with AMX tiles (or a guard not in the contract's shape): detensorize and
    binding refuse with XP4001 naming the tile intrinsic, never pass it on to a target."""
    from xpiler.frontend import parse_text
    from xpiler.passes import binding, detensorize
    from xpiler.passes.base import PassError
    prog = parse_text(AMX_BY_HAND, "c", "tiles.c")
    with pytest.raises(PassError) as e:
        detensorize.check(prog, entry="tiles", target="cuda")
    assert e.value.code == "XP4001" and "AMX tile intrinsic _tile_zero" in str(e.value)
    with pytest.raises(PassError) as e:
        binding.check_portable(prog, "hip")
    assert e.value.code == "XP4001" and "'_tile_zero' (an AMX tile intrinsic) does not exist in hip" in str(e.value)
    binding.check_portable(prog, "c")      # c has them
