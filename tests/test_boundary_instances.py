"""Derived boundary instances (xpiler/verify/boundaries.py, docs/verification.md).

Unit tests derive instances for small kernels written here (tile loop, chunk loop, warp-sum
loop, grid-stride loop) and check the derived sizes against the loop arithmetic; others check
that the spec's limits are honoured ([test] constraints, divisibility every instance shares,
the switch). End to end: the six boundary mutants of tests/mutants/corpus_boundaries.toml pass
the tester without derived instances and fail with them, on a derived instance.
"""
import math
import sys
import tomllib

import pytest

from conftest import ROOT

from xpiler.diagnostics import XPError
from xpiler.spec import parse_spec, spec_to_toml, warnings_for
from xpiler.verify.boundaries import derive_for_files
from xpiler.verify.tester import compare_kernels

sys.path.insert(0, str(ROOT / "benchmarks"))
import mutants  # noqa: E402

# ------------------------------------------------------------------------------------ kernels
TILE_CU = """\
__global__ void rowsum(const float* A, float* out, int M, int K) {
    __shared__ float t[16];
    int row = blockIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        int k = k0 + threadIdx.x;
        t[threadIdx.x] = k < K ? A[row * K + k] : 0.0f;
        __syncthreads();
        if (threadIdx.x == 0)
            for (int j = 0; j < 16; ++j)
                acc += t[j];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[row] = acc;
}
"""

TILE_SPEC = """\
entry = "rowsum"
dialect = "cuda"
[sizes]
M = 4
K = {K}
[[shapes]]
name = "odd"
M = 3
K = {K2}
[launch]
grid = ["M", 1, 1]
block = [16, 1, 1]
[[args]]
name = "A"
dtype = "float32"
shape = ["M", "K"]
role = "in"
[[args]]
name = "out"
dtype = "float32"
shape = ["M"]
role = "out"
[[args]]
name = "M"
dtype = "int32"
role = "scalar"
value = "M"
[[args]]
name = "K"
dtype = "int32"
role = "scalar"
value = "K"
"""

CHUNK_C = """\
void twice(const float* x, float* y, int n, int C) {
    int run = 1000 / C;          /* a run length derived from a size */
    if (run > n)
        run = n;
    for (int off = 0; off < n; off += run) {
        int len = n - off < run ? n - off : run;
        for (int i = 0; i < len; ++i)
            y[off + i] = 2.0f * x[off + i];
    }
}
"""

CHUNK_SPEC = """\
entry = "twice"
dialect = "c"
[sizes]
n = 64
C = 100
[[shapes]]
name = "odd"
n = 45
C = 30
[[args]]
name = "x"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "y"
dtype = "float32"
shape = ["n"]
role = "out"
[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"
[[args]]
name = "C"
dtype = "int32"
role = "scalar"
value = "C"
"""

WARP_CU = """\
#define WARP 32
__global__ void rowsum(const float* x, float* y, int S) {
    __shared__ float part[32];
    int lane = threadIdx.x % WARP;
    int warp = threadIdx.x / WARP;
    int nwarps = blockDim.x / WARP;
    const float* xr = x + blockIdx.x * S;
    float s = 0.0f;
    for (int j = threadIdx.x; j < S; j += blockDim.x)
        s += xr[j];
    for (int off = 16; off > 0; off /= 2)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0)
        part[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < nwarps; ++w)
            t += part[w];
        y[blockIdx.x] = t;
    }
}
"""

WARP_SPEC = """\
entry = "rowsum"
dialect = "cuda"
[sizes]
R = 2
S = 40
[[shapes]]
name = "odd"
R = 3
S = 11
[launch]
grid = ["R", 1, 1]
block = [128, 1, 1]
[[args]]
name = "x"
dtype = "float32"
shape = ["R", "S"]
role = "in"
[[args]]
name = "y"
dtype = "float32"
shape = ["R"]
role = "out"
[[args]]
name = "S"
dtype = "int32"
role = "scalar"
value = "S"
"""

GRID_CU = """\
__global__ void scale(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = 2.0f * x[i];
}
"""

GRID_SPEC = """\
entry = "scale"
dialect = "cuda"
[sizes]
n = 100
[[shapes]]
name = "odd"
n = 37
[launch]
grid = [{grid}, 1, 1]
block = [64, 1, 1]
[[args]]
name = "x"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "y"
dtype = "float32"
shape = ["n"]
role = "out"
[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"
"""


def _derive(tmp_path, name, kernel, spec_text):
    src = tmp_path / name
    src.write_text(kernel)
    spec = parse_spec(spec_text, tmp_path / (name + ".toml"))
    return derive_for_files(src, spec), spec


def _line_of(text, needle):
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


# ------------------------------------------------------------------------------- derivation
def test_tile_loop_gets_a_remainder_of_one(tmp_path):
    ds, _ = _derive(tmp_path, "t.cu", TILE_CU, TILE_SPEC.format(K=32, K2=45))
    assert len(ds) == 1
    d = ds[0]
    k = d.sizes["K"]
    assert list(d.changed) == ["K"]
    assert k % 16 == 1 and k > 16            # one element left for the last tile, after a full one
    assert k >= 32                           # never below the smallest K the spec tests
    assert k == 33                           # and the smallest such K
    assert f"t.cu:{_line_of(TILE_CU, 'k0 += 16')}" in d.reasons[0]
    assert "≡ 1 mod 16" in d.reasons[0]


def test_an_instance_at_the_boundary_already_adds_nothing(tmp_path):
    ds, _ = _derive(tmp_path, "t.cu", TILE_CU, TILE_SPEC.format(K=32, K2=49))
    assert ds == []


def test_chunk_loop_with_a_run_length_computed_from_sizes(tmp_path):
    ds, spec = _derive(tmp_path, "c.c", CHUNK_C, CHUNK_SPEC)
    # since 2026-12-04 `if (run > n)`, false on every instance of the spec, also gets one (n = 1)
    assert len(ds) == 2 and "`if (run > n)` at c.c:3 is true here" in ds[1].reasons[0]
    n, c = ds[0].sizes["n"], ds[0].sizes["C"]
    run = min(1000 // c, n)                  # as the kernel computes it
    assert n % run == 1 and n > run
    assert "off += run" in ds[0].reasons[0] and "c.c:5" in ds[0].reasons[0]
    spec.instance_with(ds[0].name, ds[0].sizes)   # a valid instance of the spec


def test_warp_sum_loop_gets_a_last_warp_with_data(tmp_path):
    ds, _ = _derive(tmp_path, "w.cu", WARP_CU, WARP_SPEC)
    assert [d.changed for d in ds] == [{"S": 97}]   # 3 full warps of 32 and one element in the 4th
    assert "last warp holds data" in ds[0].reasons[0]


def test_grid_stride_loop_with_a_fixed_grid(tmp_path):
    ds, _ = _derive(tmp_path, "g.cu", GRID_CU, GRID_SPEC.format(grid=2))
    assert len(ds) == 1
    n = ds[0].sizes["n"]
    assert n % (2 * 64) == 1 and n > 2 * 64
    # with a grid that grows with n, every element has its own thread: no boundary to reach
    ds, _ = _derive(tmp_path, "g.cu", GRID_CU, GRID_SPEC.format(grid='"cdiv(n, 64)"'))
    assert ds == []


def test_constraints_are_respected(tmp_path):
    base = TILE_SPEC.format(K=32, K2=45)
    ds, _ = _derive(tmp_path, "t.cu", TILE_CU, base + '[test]\nconstraints = ["K >= 40"]\n')
    assert [d.sizes["K"] for d in ds] == [49]
    # K even: no K leaves a remainder of 1 over 16, so nothing is derived
    ds, _ = _derive(tmp_path, "t.cu", TILE_CU, base + '[test]\nconstraints = ["K % 2 == 0"]\n')
    assert ds == []


def test_divisibility_every_instance_shares_is_kept(tmp_path):
    # the spec only ever tests K as a multiple of 16: the kernel is taken to require it
    ds, _ = _derive(tmp_path, "t.cu", TILE_CU, TILE_SPEC.format(K=32, K2=64))
    assert ds == []


def test_the_spec_switch_turns_it_off(tmp_path):
    text = TILE_SPEC.format(K=32, K2=45) + "[test]\nderive_boundaries = false\n"
    ds, spec = _derive(tmp_path, "t.cu", TILE_CU, text)
    assert ds == [] and spec.derive_boundaries is False
    # the switch survives the spec a migration writes for its output
    again = parse_spec(spec_to_toml(spec.with_dialect("hip", launch=dict(spec.launch))))
    assert again.derive_boundaries is False


def test_derivation_is_deterministic(tmp_path):
    a, _ = _derive(tmp_path, "w.cu", WARP_CU, WARP_SPEC)
    b, _ = _derive(tmp_path, "w.cu", WARP_CU, WARP_SPEC)
    assert [d.to_json() for d in a] == [d.to_json() for d in b]


def test_bad_test_table_is_a_spec_error():
    base = TILE_SPEC.format(K=32, K2=45)
    with pytest.raises(XPError) as e:
        parse_spec(base + "[test]\nderive_boundaries = 3\n")
    assert "XP1013" in str(e.value.format())
    with pytest.raises(XPError) as e:
        parse_spec(base + '[test]\nconstraints = ["Q > 1"]\n')
    assert "XP1014" in str(e.value.format())
    spec = parse_spec(base + "[test]\nderive_boundary = false\n")
    assert [w.code for w in warnings_for(spec)] == ["XP1024"]


# ----------------------------------------------------------------------------- end to end
BOUNDARY_MUTANTS = tomllib.loads((ROOT / "tests" / "mutants" / "corpus_boundaries.toml").read_text())["mutant"]


def test_the_six_kinds_are_in_the_corpus():
    kinds = {m["kind"] for m in BOUNDARY_MUTANTS}
    assert len(BOUNDARY_MUTANTS) == 6
    assert kinds == {"tile loop misses a remainder of 1", "chunk loop misses a remainder of 1",
                     "warp reduction drops the last warp"}
    assert {mutants.dialect_of(ROOT / m["source"]) for m in BOUNDARY_MUTANTS} == {"cuda", "hip", "bang"}


@pytest.mark.parametrize("m", BOUNDARY_MUTANTS, ids=[m["id"] for m in BOUNDARY_MUTANTS])
def test_boundary_mutant_is_killed_by_a_derived_instance(m, tmp_path):
    import shutil
    from xpiler.spec import default_spec_path
    src = ROOT / m["source"]
    work = tmp_path / src.parent.name
    shutil.copytree(src.parent, work)
    target = work / src.name
    target.write_text(mutants.apply(src.read_text(), m))
    spec = default_spec_path(target)
    without = compare_kernels(target, spec, seeds=(0,), timeout=60, derive_boundaries=False)
    assert without.verified, "the mutant should survive the spec's own instances"
    v = compare_kernels(target, spec, seeds=(0,), timeout=60)
    assert not v.verified
    derived = {d["name"] for d in v.derived}
    assert derived and all(f.instance in derived for f in v.failures), [f.message for f in v.failures[:3]]
    assert v.to_json()["derived"] and "derived instance boundary-" in v.summary()


def test_derived_instances_work_in_a_migration_comparison():
    """compare_kernels with a source kernel (what the migrator runs): the derived instance of
    the candidate is run by the source under the same sizes."""
    src = ROOT / "examples" / "gemm" / "gemm.cu"
    cand = ROOT / "examples" / "gemm" / "gemm.hip"
    from xpiler.spec import load_spec, default_spec_path
    v = compare_kernels(cand, default_spec_path(cand), against=(src, load_spec(default_spec_path(src))),
                        seeds=(0,), timeout=60)
    assert v.verified, [f.message for f in v.failures[:3]]
    assert [d["changed"] for d in v.derived] == [{"K": 33}]
    assert "boundary-1" in v.instances and v.runs == len(v.instances)
    assert math.gcd(v.derived[0]["sizes"]["K"], 16) == 1


@pytest.mark.parametrize("name", ["softmax", "layernorm", "rmsnorm"])
def test_bang_row_sources_state_their_nram_limit(name):
    """The BANG row sources hold a row in an NRAM buffer of MAX_COLS = 8192 floats and overrun it
    past that; their specs say so, so no derived instance of theirs (or of a migration of them,
    whose spec keeps the table) goes past cols = 8192."""
    from xpiler.spec import load_spec
    src = ROOT / "examples" / name / f"{name}.mlu"
    spec = load_spec(str(src) + ".toml")
    assert "MAX_COLS 8192" in src.read_text()
    assert "cols <= 8192" in spec_to_toml(spec)
    assert all(d.sizes.get("cols", 0) <= 8192 for d in derive_for_files(src, spec))


TRAP_C = """\
#include <stdlib.h>
void twice(const float* x, float* y, int n, int C) {
    int padded = (n + 31) / 32 * 32;
    if (padded > 128)
        abort();                 /* a capacity guard: sizes past it are refused */
    float buf[128];
    for (int i = 0; i < n; ++i)
        buf[i] = 2.0f * x[i];
    for (int i = 0; i < n; ++i)
        y[i] = buf[i] + (float)(C - C);
}
"""


def test_a_branch_that_traps_is_not_a_target(tmp_path):
    """A size-only branch no spec instance takes is a target (2026-12-04) — unless taking it
    stops the kernel (a trap, abort, a failed assert): those sizes are refused by the kernel,
    like the capacity guard passes/runtime_arrays.py puts before a bounded array."""
    ds, _ = _derive(tmp_path, "t.c", TRAP_C, CHUNK_SPEC)
    assert all((d.sizes["n"] + 31) // 32 * 32 <= 128 for d in ds), [d.sizes for d in ds]
    assert not any("padded > 128" in r for d in ds for r in d.reasons)
