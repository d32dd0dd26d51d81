"""Regrid's tail rule (passes/regrid_tail.py): a grid-stride kernel whose last statements run only
in the first threads (add_vec4.cu: a float4 loop, then ``n % 4`` scalar elements for ``tid <
n % 4``) gets a launch sized from the problem, and the cuda -> hip retarget plan takes it. A tail
that would run in another set of threads under another launch, or that touches what the loop
touches, is refused."""
from __future__ import annotations

import json

import pytest

from xpiler.api import migrate
from xpiler.frontend import parse_text
from xpiler.passes import binding, regrid
from xpiler.passes.base import PassError

from conftest import EXAMPLES

VEC4 = (EXAMPLES / "add" / "add_vec4.cu").read_text()
#: the source's launch (examples/add/add_vec4.cu.toml): at most 32 blocks of 256 threads
SOURCE_LAUNCH = {"grid": ["max(min(cdiv(n/4,256),32),1)", 1, 1], "block": [256, 1, 1]}


def _prog(text, launch=SOURCE_LAUNCH):
    p = parse_text(text, "cuda", "add_vec4.cu")
    return p.with_launch("add_vec4", launch) if launch else p


def test_the_vec4_tail_is_accepted_and_the_grid_comes_from_n():
    p = _prog(VEC4)
    assert regrid.check(p, p.func("add_vec4"))["trip"] == "n / 4"
    out = binding.apply(p, entry="add_vec4", target="hip", mode="retarget", regrid=True, block=512, grid_cap=None)
    assert out.launch_dict("add_vec4") == {"grid": ["max((n / 4 + 511) / 512, 1)", 1, 1], "block": [512, 1, 1]}


def test_add_vec4_to_hip_is_launched_from_n_not_the_source_cap(tmp_path):
    # on the H200 (through hip_on_cuda.h) this output kept 32 blocks of 256 threads and ran at
    # 0.20-0.22x of PyTorch (benchmarks/RESULTS.md, 2026-12-06)
    r = migrate(EXAMPLES / "add" / "add_vec4.cu", to="hip", outdir=tmp_path / "o", perf=False)
    assert r.verified
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    bind = [e for e in events if e["type"] == "pass" and e["name"] == "binding" and e.get("applied")]
    assert bind and bind[-1]["params"].get("regrid")
    assert bind[-1]["launch"]["grid"][0] == "max((n / 4 + 511) / 512, 1)"
    launch_line = next(line for line in r.code.splitlines() if "hipLaunchKernelGGL" in line)
    assert "/ 512" in launch_line and "32" not in launch_line


# mutants of the tail: each would run in another set of threads, or meet the loop's elements
MUTANTS = [
    # every block writes the tail: under G blocks each element is written G times
    ("int t = nvec * 4 + tid;", "int t = nvec * 4 + threadIdx.x;", {}, "not part of the global thread index"),
    # thread g and g + 512 write the same element: how often depends on the grid
    ("int t = nvec * 4 + tid;", "int t = nvec * 4 + tid % 512;", {}, "not proven to hold only"),
    # threads up to 199 pass: a block of 128 threads would leave some of them out
    ("if (t < n) {", "if (tid < 200) {", {"block": 128}, "below 128"),
    # the tail writes an element the loop's float4 stores write (another thread's, under another launch)
    ("c[t] = a[t] + b[t];", "c[t - 4] = a[t] + b[t];", {}, "may touch an element of 'c' that the loop writes"),
    # ... or reads one
    ("c[t] = a[t] + b[t];", "c[t] = a[t] + c[t - 4];", {}, "may touch an element of 'c' that the loop writes"),
    # the other threads run the else branch
    ("c[t] = a[t] + b[t];\n    }", "c[t] = a[t] + b[t];\n    } else {\n        c[0] = 0.0f;\n    }", {},
     "nor an `if` without `else`"),
    # the stride is the launch
    ("if (t < n) {", "if (t < n && step > 1) {", {}, "'step' after the grid-stride loop depends on the launch"),
    # read in the loop's body, the stride changes the result (refused before the tail is looked at)
    ("c4[i] = vc;", "vc.x += (float)step;\n        c4[i] = vc;", {}, "'step' (the grid's stride"),
]


@pytest.mark.parametrize("old,new,kw,words", MUTANTS)
def test_tails_that_depend_on_the_launch_are_refused(old, new, kw, words):
    assert old in VEC4
    p = _prog(VEC4.replace(old, new))
    with pytest.raises(PassError) as ei:
        regrid.check(p, p.func("add_vec4"), **kw)
    assert ei.value.code == "XP4001" and words in ei.value.why, ei.value.why


def test_the_tail_needs_the_programs_launch():
    # without a launch the threads that ran the tail before are not known
    p = _prog(VEC4, launch=None)
    with pytest.raises(PassError) as ei:
        regrid.check(p, p.func("add_vec4"))
    assert "launch is not a one-dimensional block of known size" in ei.value.why
    p = _prog(VEC4, launch={"grid": ["4", 1, 1], "block": [128, 2, 1]})
    with pytest.raises(PassError):
        regrid.check(p, p.func("add_vec4"))


def test_a_tail_bounded_below_both_blocks_is_accepted():
    # threads 0..199 pass under the source's 256-thread blocks and a new block of 512
    p = _prog(VEC4.replace("if (t < n) {", "if (tid < 200 && t < n) {"))
    assert regrid.check(p, p.func("add_vec4"), 512)["trip"] == "n / 4"


def test_a_stride_read_in_the_body_is_refused_without_a_tail_too():
    # found with the tail rule: the stride variable read in the body made the result depend on the
    # grid, and regrid accepted it (only the parallel builtins themselves were looked for)
    src = """#include <hip/hip_runtime.h>
__global__ void k(const float* x, float* y, int n) {
    int s = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += s)
        y[i] = x[i] + (float)s;
}
"""
    p = parse_text(src, "hip", "k.hip")
    with pytest.raises(PassError) as ei:
        regrid.check(p, p.func("k"))
    assert "'s' (the grid's stride or the thread's index) is read outside" in ei.value.why and ei.value.line == 4


TAILK = """#include <cuda_runtime.h>
__global__ void tailk(const float* x, float* y, int n)
{
    int m = n - 3;
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = tid; i < m; i += blockDim.x * gridDim.x) {
        y[i] = x[i] * 2.0f;
    }
    int t = m + tid;
    if (tid < 3 && t >= 0 && t < n) {
        y[t] = x[t] + 1.0f;
    }
}
"""
TAILK_SPEC = """entry = "tailk"
dialect = "cuda"
[sizes]
n = 4099
[[shapes]]
name = "small"
n = 7
[[shapes]]
name = "large"
n = 70001
[launch]
grid = ["min(cdiv(n,256),32)", 1, 1]
block = [256, 1, 1]
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
[reference]
python = "ref.py:tailk"
"""
TAILK_REF = """import numpy as np
def tailk(x, n):
    y = x * 2.0
    y[n - 3:] = x[n - 3:] + 1.0
    return y.astype(np.float32)
"""


def test_a_scalar_loop_with_a_tail_is_regridded_and_vectorized_and_verifies(tmp_path):
    # the float4 step keeps the tail after its loops: the tail was proven to miss [0, m), which the
    # vector loops cover as the scalar loop did
    (tmp_path / "tailk.cu").write_text(TAILK)
    (tmp_path / "tailk.cu.toml").write_text(TAILK_SPEC)
    (tmp_path / "ref.py").write_text(TAILK_REF)
    r = migrate(tmp_path / "tailk.cu", to="hip", outdir=tmp_path / "o", perf=False)
    assert r.verified
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    applied = {e["name"]: e for e in events if e["type"] == "pass" and e.get("applied")}
    assert applied["binding"]["params"].get("regrid") and "vectorize_simt" in applied
    assert applied["vectorize_simt"]["launch"]["grid"][0] == "max(((n - 3) / 4 + 511) / 512, 1)"
    body = r.code.split("__global__")[1]
    assert "float4" in body and body.index("if (tid < 3") > body.index("} else {")
