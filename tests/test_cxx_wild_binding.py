"""Binding of C/C++ sources in the styles of the wild corpus (issue 12): pure function-like
macros in the prelude, std::min tile edges, an inlined helper's block and a `#pragma omp
parallel` region spliced into the kernel body, a per-thread scratch array filled before the bound
loop, and the reason carried by the final XP4004.  Each accepted form has a twin that must still
be refused."""
from __future__ import annotations

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, purity
from xpiler.passes.base import PassError
from xpiler.passes.inline_helpers import prepare_source


def prog_of(src: str, entry: str = "k", file: str = "k.cpp"):
    return prepare_source(parse_text(src, "c", file), entry)


def bound(src: str, entry: str = "k", target: str = "cuda", file: str = "k.cpp"):
    out, launch = binding.apply(prog_of(src, entry, file), entry=entry, target=target)
    return out, launch, [(l.var, l.binding) for l in walk(out.func(entry)) if isinstance(l, N.For) and l.binding]


def refusal(src: str, entry: str = "k", target: str = "cuda", file: str = "k.cpp") -> str:
    with pytest.raises(PassError) as e:
        binding.apply(prog_of(src, entry, file), entry=entry, target=target)
    return e.value.why


# ------------------------------------------------------------ 1. pure function-like macros
POOL = """
#define OUT_DIM(x, k, s) (((x) - (k)) / (s) + 1)
INCR
void k(const float *in, float *out, int planes, int H, int k, int s) {
    const int OH = INIT;
    const long total = (long)planes * OH;
    for (long idx = 0; idx < total; ++idx)
        out[idx] = in[(idx / OH) * H + (idx % OH) * s];
}
"""


def test_pure_macro_in_prelude_binds_with_its_grid():
    """`const int OH = OUT_DIM(H, k, s)` (a macro with /) runs in every thread; the grid is the
    trip count written over the parameters, the macro expanded."""
    src = POOL.replace("INCR", "").replace("INIT", "OUT_DIM(H, k, s)")
    assert purity.pure_macros(prog_of(src, file="k.c")) == {"OUT_DIM"}
    _, launch, loops = bound(src, file="k.c")
    assert loops == [("idx", "global.x")]
    assert launch["grid"][0] == "(planes * ((H - k) / s + 1) + 255) / 256"


def test_macro_with_a_side_effect_is_still_refused():
    """A macro that increments a global is not replicable: every thread would bump it."""
    src = POOL.replace("INCR", "int calls;\n#define NEXT(x) (calls++ + (x))").replace("INIT", "NEXT(H)")
    assert purity.pure_macros(prog_of(src, file="k.c")) == {"OUT_DIM"}
    assert "side effects" in refusal(src, file="k.c")


def test_macro_calling_an_unknown_function_is_not_pure():
    src = POOL.replace("INCR", "int size_of(int);\n#define SZ(x) size_of(x)").replace("INIT", "SZ(H)")
    assert "SZ" not in purity.pure_macros(prog_of(src, file="k.c"))
    assert "side effects" in refusal(src, file="k.c")


# ------------------------------------------------------------ 2. tiles with std::min edges
TILES = """
#include <algorithm>
#define BLOCK 32
extern "C" void k(const float* in, float* out, int rows, int cols) {
    for (int rb = 0; rb < rows; rb += BLOCK)
        for (int cb = 0; cb < cols; cb += BLOCK) {
            const int re = std::min(rb + EDGE, rows);
            const int ce = std::min(cb + BLOCK, cols);
            for (int r = rb; r < re; ++r)
                for (int c = cb; c < ce; ++c) out[static_cast<long>(c) * rows + r] = in[static_cast<long>(r) * cols + c];
        }
}
"""


def test_tiles_edged_by_std_min_bind_2d():
    """std::min(rb + BLOCK, rows) (an integer min intrinsic) bounds each tile: distinct tiles are
    disjoint, so both tile loops are bound."""
    _, _, loops = bound(TILES.replace("EDGE", "BLOCK"))
    assert loops == [("rb", "global.y"), ("cb", "global.x")]


def test_tiles_wider_than_their_spacing_are_refused():
    assert "carries a dependence" in refusal(TILES.replace("EDGE", "2 * BLOCK"))


# ------------------------------------------------------------ 3. an inlined helper's block
DENSE = """
#include <algorithm>
static void fwd(const float* x, float* y, int n, int m) {
    std::fill(y, y + static_cast<long>(n) * m, 0.0f);
    for (int r = 0; r < n; ++r)
        for (int o = 0; o < m; ++o) y[static_cast<long>(r) * m + o] = x[r] + o;
}
extern "C" void k(const float* x, float* y, int n, int m) {
    if (n <= 0 || m <= 0) return;
    fwd(x, y, n, m);
}
"""


def test_inlined_helper_block_is_spliced_and_runs_as_phases():
    """The helper's body (a fill, then the nest that overwrites it) arrives as one block; spliced
    into the kernel it becomes two ordered phases after the uniform early return."""
    prog = prog_of(DENSE)
    f = prog.func("k")
    assert any(type(s) is N.Block for s in f.body.stmts)
    spliced = binding.splice_blocks(prog, f)
    assert not any(type(s) is N.Block for s in spliced.func("k").body.stmts)
    out, launch, loops = bound(DENSE)
    assert launch["grid"] == [1, 1, 1]
    assert [b for _, b in loops] == ["threadIdx.x", "threadIdx.x"]
    assert sum(isinstance(n, N.Barrier) for n in walk(out.func("k"))) >= 2


def test_block_is_not_spliced_when_a_name_would_change_meaning():
    src = """
    void k(float* y, int n) {
        { int t = 1; for (int i = 0; i < n; ++i) y[i] = t; }
        int t = 2;
        y[0] = t;
    }
    """
    prog = prog_of(src, file="k.c")
    assert binding.splice_blocks(prog, prog.func("k")) is prog


def test_block_after_a_pragma_other_than_a_parallel_region_stays():
    src = """
    void k(float* y, int n) {
        #pragma GCC ivdep
        { for (int i = 0; i < n; ++i) y[i] = 1.0f; }
    }
    """
    prog = prog_of(src, file="k.c")
    assert binding.splice_blocks(prog, prog.func("k"), omp_regions=True) is prog


# ------------------------------------------------------------ 4. omp parallel region + scratch
ATTN = """
#include <vector>
extern "C" void k(const float* x, float* y, int B, int H, int S) {
#pragma omp parallel
    {
        std::vector<float> att(static_cast<size_t>(S));
#pragma omp for collapse(2)
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h) {
                const long base = (static_cast<long>(b) * H + h) * S;
                for (int j = FIRST; j < S; ++j) att[j] = x[base + j] * 2.0f;
                float s = 0.0f;
                for (int j = 0; j < S; ++j) s += att[S - 1 - j];
                y[static_cast<long>(b) * H + h] = s;
            }
    }
}
"""


def test_parallel_region_scratch_is_per_thread_and_loops_bind():
    """The region's braces go (with its pragma); the std::vector scratch and its zero fill stay at
    the top, one copy per thread; every read of it is covered by this iteration's write, so the
    b/h loops bind."""
    out, _, loops = bound(ATTN.replace("FIRST", "0"))
    assert loops == [("b", "global.y"), ("h", "global.x")]
    f = out.func("k")
    assert not any(isinstance(s, N.Pragma) for s in walk(f))
    top = [s.name for s in f.body.stmts if isinstance(s, N.Decl)]
    assert "att" in top                       # not moved into the bound loop next to its fill


def test_scratch_read_not_covered_in_the_iteration_is_refused():
    """With the write loop starting at 1, the read of att[0] sees the previous iteration's value
    (the sequential program's), which another thread's copy does not hold."""
    why = refusal(ATTN.replace("FIRST", "1"))
    assert "'att'" in why


def test_c_target_keeps_the_parallel_region():
    """For OpenMP output the region is left as the source wrote it (no splice)."""
    prog = prog_of(ATTN.replace("FIRST", "0"))
    assert binding.splice_blocks(prog, prog.func("k"), omp_regions=False) is prog


# ------------------------------------------------------------ 5. the reason in XP4004
def test_unresolved_migration_says_why(tmp_path):
    """No pass reaches cuda: the final XP4004 carries binding's refusal."""
    import xpiler
    from spec_text import elementwise_spec
    src = tmp_path / "first.c"
    src.write_text("void first(const float* x, float* y, int n) {\n"
                   "    int i = 0;\n    while (i < n) { y[i] = 2.0f * x[i]; i = i + 1; }\n}\n")
    (tmp_path / "first.c.toml").write_text(elementwise_spec("first", "c", n=8))
    r = xpiler.migrate(src, to="cuda", outdir=tmp_path / "o")
    assert not r.verified and r.exit_code == 3
    d = next(d for d in r.diagnostics if d.code == "XP4004")
    assert d.message.startswith("no verified cuda kernel was found for first: binding refused (")
    assert "no canonical loop" in d.message


def test_xp4004_prefers_the_real_refusal_of_a_dialect_moving_pass():
    from xpiler.migration.driver import _unresolved
    nothing = PassError("detensorize", "the program uses no intrinsic this pass lowers", None, "XP4002")
    no_loop = PassError("binding", "k has no canonical loop to bind", None, "XP4002")
    dep = PassError("binding", "loop 'i' carries a dependence", None, "XP4001")
    later = PassError("cache", "program is c, not yet cuda", None, "XP4002")
    msg = _unresolved("cuda", "k", [("detensorize", nothing, "c"), ("binding", dep, "c"), ("cache", later, "c")],
                      "c").message
    assert msg == "no verified cuda kernel was found for k: binding refused (loop 'i' carries a dependence)"
    msg = _unresolved("cuda", "k", [("detensorize", nothing, "c"), ("binding", no_loop, "c"),
                                    ("cache", later, "c")], "c").message
    assert msg.endswith("binding refused (k has no canonical loop to bind)")
    # refusals made on a program of another dialect say nothing about where it stayed
    assert _unresolved("c", "k", [("binding", dep, "c")], "bang").message == \
        "no verified c kernel was found for k"
