"""Binding proofs for parallel loops of the wild corpus (issue 12): a walk index restarted at a
constant, a clamped chunk length, tiles placed through / and % of the loop variable, and
AMD's readfirstlane.  Each proof has a twin with a real overlap that must still be refused."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.printers import print_program
from xpiler.ir.visit import walk
from xpiler.passes import binding, dependence
from xpiler.passes.base import PassError

WILD = Path(__file__).resolve().parents[1] / "examples" / "wild"


def deps_of(src: str, entry: str, loop: str) -> list:
    prog = parse_text(src, "c", "k.c")
    f = prog.func(entry)
    return dependence.carried(prog, f, dependence.find_loop(f, loop))


def bind_cuda(src: str, entry: str):
    out, _ = binding.apply(parse_text(src, "c", "k.c"), entry=entry, target="cuda")
    return [l.binding for l in walk(out.func(entry)) if isinstance(l, N.For) and l.binding]


# ------------------------------------------------------------ 1. walk index restarted at a constant
ROWS = """
void k(const float* x, float* y, int rows, int D) {
    for (int r = 0; r < rows; ++r) {
        float* yr = y + (long)r * D;
        int i = 0;
        for (; i + 16 <= D; i += 16) { }
        for (; i < D; ++i) yr[i] = x[i];
        for (i = RESTART; i + 16 <= D; i += 16)
            for (int l = 0; l < 16; ++l)
                yr[i + l] = x[i + l];
        for (; i < D; ++i) yr[i] = 2.0f * x[i];
    }
}
"""


def test_row_loop_with_restarted_walk_binds():
    """`for (i = 0; ...)` after `int i = 0` keeps i >= 0: rows of y stay apart through yr."""
    assert deps_of(ROWS.replace("RESTART", "0"), "k", "r") == []
    assert bind_cuda(ROWS.replace("RESTART", "0"), "k") == ["global.x"]


def test_restart_below_zero_is_still_refused():
    """`i = -1` lets yr[i + l] reach the previous row: the restart constant is the lower bound."""
    deps = deps_of(ROWS.replace("RESTART", "-1"), "k", "r")
    assert deps and deps[0].buffer == "y", [str(d) for d in deps]


def test_restart_at_a_variable_is_not_a_bound():
    src = ROWS.replace("RESTART", "0").replace("int D) {", "int D, int s) {").replace("for (i = 0;", "for (i = s;")
    assert deps_of(src, "k", "r")


# ------------------------------------------------------------ 2. clamped chunk length
CHUNKS = """
#define CH 2048
void k(const float* x, float* y, int n) {
    for (int base = 0; base < n; base += CH) {
        int len = n - base;
        if (len > LIMIT) len = LIMIT;
        EXTRA
        for (int j = 0; j < len; ++j) y[base + j] = x[base + j] * 2.0f;
    }
}
"""


def test_chunk_loop_with_clamped_length_binds():
    src = CHUNKS.replace("LIMIT", "CH").replace("EXTRA", "")
    assert deps_of(src, "k", "base") == []
    assert bind_cuda(src, "k") == ["global.x"]


@pytest.mark.parametrize("limit, extra", [
    ("CH + 1", ""),                     # chunks overlap by one element
    ("CH", "len = len + 1;"),           # assigned again after the clamp: not a clamp any more
    ("CH", "len += 1;"),
])
def test_overlapping_chunks_are_refused(limit, extra):
    deps = deps_of(CHUNKS.replace("LIMIT", limit).replace("EXTRA", extra), "k", "base")
    assert deps and deps[0].buffer == "y", [str(d) for d in deps]


def test_clamp_fold_keeps_statement_positions():
    prog = parse_text(CHUNKS.replace("LIMIT", "CH").replace("EXTRA", ""), "c", "k.c")
    f = prog.func("k")
    view = dependence.fold_clamps(f)
    loop = dependence.find_loop(f, "base")
    vloop = dependence._same_position(f, view, loop)
    assert isinstance(vloop, N.For) and vloop.var == "base"
    decl = next(d for d in walk(vloop) if isinstance(d, N.Decl) and d.name == "len")
    assert isinstance(decl.init, N.Cond)
    assert not any(isinstance(s, N.If) for s in walk(vloop))


# ------------------------------------------------------------ 3. tiles through t / tc and t % tc
TILES = """
#define TS 64
void k(const float* in, float* out, int rows, int cols) {
    const int tr = (rows + TS - 1) / TS;
    const int tc = (cols + TS - 1) / TS;
    for (int t = 0; t < tr * tc; ++t) {
        const int r0 = t / tc * TS;
        const int c0 = t % tc * TS;
        const int h = rows - r0 < TS ? rows - r0 : TS;
        const int w = cols - c0 < WT ? cols - c0 : WT;
        for (int s = 0; s < w; ++s)
            for (int j = 0; j < h; ++j)
                (out + (long)c0 * rows + r0)[s * rows + j] = in[(r0 + j) * cols + c0 + s];
    }
}
"""


def test_transposed_tiles_bind():
    """Tile t writes columns [c0, c0 + w) x rows [r0, r0 + h) of the transposed matrix, w, h <= TS:
    the solver splits the subscript by rows, then by TS, and equal t / tc and t % tc give equal t."""
    src = TILES.replace("WT", "TS")
    assert deps_of(src, "k", "t") == []
    assert bind_cuda(src, "k") == ["global.x"]


def test_tiles_wider_than_their_spacing_are_refused():
    deps = deps_of(TILES.replace("WT", "(TS + 1)"), "k", "t")
    assert deps and deps[0].buffer == "out", [str(d) for d in deps]


def test_tiles_taller_than_their_spacing_are_refused():
    src = TILES.replace("WT", "TS").replace("const int h = rows - r0 < TS ? rows - r0 : TS;",
                                            "const int h = rows - r0 < TS + 1 ? rows - r0 : TS + 1;")
    deps = deps_of(src, "k", "t")
    assert deps and deps[0].buffer == "out", [str(d) for d in deps]


# ------------------------------------------------------------ 4. readfirstlane (hip)
FIRST = """
#include <hip/hip_runtime.h>
__global__ void k(const float* in, float* out, int n) {
    int wave = (blockIdx.x * blockDim.x + threadIdx.x) / 64;
    int base = __builtin_amdgcn_readfirstlane(wave * 128);
    int i = base + threadIdx.x % 64;
    if (i < n) out[i] = in[i];
}
"""


def test_readfirstlane_is_lowered_as_a_lane_zero_exchange():
    from xpiler.passes import detensorize
    prog = parse_text(FIRST, "hip", "k.hip")
    assert any(fam == "warp" for fam, _, _ in detensorize.intrinsic_sites(prog))
    text = print_program(detensorize.apply(prog, entry="k", target="cuda"))
    assert "readfirstlane(" not in text
    assert "% 64" in text and "__syncthreads()" in text


# ------------------------------------------------------------ end to end (the corpus kernels)
@pytest.mark.parametrize("rel, to", [
    ("silu/silu_wave.hip", "c"),
    ("transpose/transpose_tiles_bang.mlu", "cuda"),
])
def test_corpus_kernel_now_verifies(rel, to, tmp_path):
    from xpiler.migration.driver import migrate
    r = migrate(WILD / rel, to, outdir=tmp_path / "out", perf=False)
    assert r.verified, [str(d) for d in r.diagnostics]
