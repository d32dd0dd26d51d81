"""binding(reduce="shuffle") (passes/warp_reduce.py): the block reductions of the block forms
(rows="block", rows="core", the phases plan) fold with warp shuffles (an xor butterfly in each
warp, one shared slot per warp, one barrier, every warp folds the slots) instead of the shared
tree.  Row kernels of examples/ verify on the SIMT emulator for cuda (32 lanes) and hip (64
lanes, and 32 through the guarded steps), with columns below the warp, not a multiple of the
block, and one column; every operator of passes/phases.py folds right; illegal block sizes and
types are refused; the search offers the parameter; the outputs compile with nvcc sm_90 and
clang-15 for gfx90a / gfx1100 where installed."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, warp_reduce
from xpiler.passes.base import PassError
from xpiler.printers import print_program

EX = Path(__file__).resolve().parents[1] / "examples"
#: shapes added to an example's spec: one column, fewer columns than a warp, more than a block
EXTRA = {"rows": [("sh_one", 3, 1), ("sh_few", 4, 5), ("sh_long", 2, 1000)],
         "gemv": [("sh_one", 3, 1), ("sh_few", 70, 5), ("sh_long", 2, 1000)]}


def _with_shapes(tmp: Path, src: Path, shapes) -> tuple[Path, Path]:
    """A copy of ``src``, its spec (with ``shapes`` added: (name, rows-or-M, cols-or-K)) and
    its reference in ``tmp``."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, tmp / src.name)
    shutil.copy(src.parent / "ref.py", tmp / "ref.py")
    text = (src.parent / (src.name + ".toml")).read_text()
    gemv = "\nM = " in text
    for name, a, b in shapes:
        text += f'\n[[shapes]]\nname = "{name}"\n' + (f"M = {a}\nK = {b}\n" if gemv else f"rows = {a}\ncols = {b}\n")
    spec = tmp / (src.name + ".toml")
    spec.write_text(text)
    return tmp / src.name, spec


def _migrate(tmp, src, target, pipeline, shapes=None):
    from xpiler.migration.driver import migrate
    s, spec = _with_shapes(tmp / "in", src, shapes if shapes is not None else EXTRA["rows"])
    r = migrate(s, target, spec=spec, outdir=tmp / "out", jobs=1, perf=False, pipeline=pipeline, repair=False)
    return r


def _count_barriers(prog, name):
    return sum(1 for n in walk(prog.func(name)) if isinstance(n, N.Barrier))


# ---------------------------------------------------------------------------------- the form
def test_softmax_cuda_form_one_barrier_per_reduction():
    prog = parse_file(EX / "softmax" / "softmax.c")
    tree, _ = binding.apply(prog, entry="softmax", target="cuda", rows="block", block=256)
    out, launch = binding.apply(prog, entry="softmax", target="cuda", rows="block", block=256, reduce="shuffle")
    assert launch == {"grid": ["rows", 1, 1], "block": [256, 1, 1]}
    text = print_program(out)
    # slots: one per warp (256 / 32), not one per thread
    assert "__shared__ float xp_red_m[8];" in text and "__shared__ float xp_red_sum[8];" in text
    for off in (16, 8, 4, 2, 1):
        assert f"__shfl_xor_sync(0xffffffffu, m_part, {off});" in text
    assert "if (threadIdx.x % warpSize == 0) {\n                xp_red_m[threadIdx.x / warpSize] = m_part;" in text
    assert "m_part = xp_red_m[threadIdx.x % 8];" in text
    # max / min: the shuffle is a statement of its own (never inside one arm of a conditional)
    assert "m_part = xp_w_m > m_part ? xp_w_m : m_part;" in text
    assert "m = m_part;" in text and "sum = sum + sum_part;" in text
    # one barrier per reduction + the row's end; the tree has one before its loop of log2(256)
    # halving steps and one in it (8 + 1 barriers run per reduction), + the row's end
    assert _count_barriers(out, "softmax") == 3
    assert _count_barriers(tree, "softmax") == 2 * 2 + 1
    assert not any(isinstance(n, N.For) and n.binding is None for n in walk(out.func("softmax")))
    # the default is unchanged: a tree
    assert "__shared__ float xp_red_m[256];" in print_program(tree) and "__shfl" not in print_program(tree)


def test_hip_form_reads_warp_size():
    prog = parse_file(EX / "softmax" / "softmax.c")
    out, _ = binding.apply(prog, entry="softmax", target="hip", rows="block", block=128, reduce="shuffle")
    text = print_program(out)
    # slots for the narrowest wavefront (wave32 RDNA); the 64-lane steps guarded by warpSize
    assert "__shared__ float xp_red_sum[4];" in text and "__shfl_xor_sync" not in text
    assert "if (32 < warpSize) {\n                xp_w_sum = __shfl_xor(sum_part, 32);" in text
    assert "sum_part = xp_red_sum[threadIdx.x % (128 / warpSize)];" in text
    assert "if (2 < 128 / warpSize) {\n                xp_w_sum = __shfl_xor(sum_part, 2);" in text


# ---------------------------------------------------------------------------------- refusals
def test_block_size_must_be_whole_warps():
    for target, block in (("cuda", 48), ("hip", 96), ("hip", 32), ("cuda", 2048)):
        with pytest.raises(PassError) as e:
            warp_reduce.check_reduce("shuffle", target, block)
        assert "multiple of" in e.value.why and e.value.code == "XP4001"
    warp_reduce.check_reduce("shuffle", "cuda", 64)
    warp_reduce.check_reduce("shuffle", "hip", 64)
    with pytest.raises(PassError, match="unknown reduce='warp'"):
        binding.check(parse_file(EX / "softmax" / "softmax.c"), entry="softmax", target="cuda", rows="block",
                      block=128, reduce="warp")


def test_nothing_to_fold_and_unshuffled_types_are_refused():
    add = parse_text("void k(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = x[i] + 1.0f; }\n",
                     "c", "k.c")
    with pytest.raises(PassError, match="no block reduction to fold"):
        binding.apply(add, entry="k", target="cuda", block=128, reduce="shuffle")
    rows = parse_text("void k(const char* x, char* y, int rows, int cols) {\n"
                      "  for (int r = 0; r < rows; r++) {\n    char a = 0;\n"
                      "    for (int c = 0; c < cols; c++) a ^= x[r * cols + c];\n    y[r] = a;\n  }\n}\n", "c", "k.c")
    with pytest.raises(PassError, match="has no cuda warp shuffle"):
        binding.apply(rows, entry="k", target="cuda", rows="block", block=128, reduce="shuffle")
    binding.apply(rows, entry="k", target="cuda", rows="block", block=128)      # the tree takes it


def test_search_offers_shuffle_where_there_are_block_reductions():
    prog = parse_file(EX / "softmax" / "softmax.c")
    cands = binding.candidates(prog, "hip")
    shuf = [c for c in cands if c.get("reduce") == "shuffle"]
    assert {(c["rows"], c["block"]) for c in shuf} == {("block", b) for b in (128, 256, 512)}
    assert all("reduce" not in c for c in cands if c.get("rows") != "block")
    add = parse_text("void k(const float* x, float* y, int rows, int cols) {\n"
                     "  for (int r = 0; r < rows; r++)\n    for (int c = 0; c < cols; c++) y[r*cols+c] = x[r*cols+c];\n}\n",
                     "c", "k.c")
    assert not [c for c in binding.candidates(add, "cuda") if c.get("reduce")]


# ---------------------------------------------------------------------------------- every operator
OPS_SRC = """#include <math.h>
void ops(const float* x, const float* p, const int* v, float* f, int* g, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        float s = 0.0f, pr = 1.0f, mx = -100.0f, mn = 100.0f;
        int a = -1, o = 0, e = 0, n = 0, im = -2147483647;
        for (int c = 0; c < cols; c++) {
            float t = x[r * cols + c];
            s += t;
            pr *= p[r * cols + c];
            mx = fmaxf(mx, t);
            if (t < mn) mn = t;
            a &= v[r * cols + c];
            o |= v[r * cols + c];
            e ^= v[r * cols + c];
            n += v[r * cols + c] & 7;
            im = v[r * cols + c] > im ? v[r * cols + c] : im;
        }
        f[r * 4 + 0] = s;
        f[r * 4 + 1] = pr;
        f[r * 4 + 2] = mx;
        f[r * 4 + 3] = mn;
        g[r * 5 + 0] = a;
        g[r * 5 + 1] = o;
        g[r * 5 + 2] = e;
        g[r * 5 + 3] = n;
        g[r * 5 + 4] = im;
    }
}
"""

OPS_TOML = """entry = "ops"
dialect = "c"

[sizes]
rows = 6
cols = 300

[[shapes]]
name = "one"
rows = 3
cols = 1

[[shapes]]
name = "few"
rows = 5
cols = 5

[[shapes]]
name = "long"
rows = 2
cols = 1000

[[args]]
name = "x"
dtype = "float32"
shape = ["rows", "cols"]
role = "in"
range = [-20.0, -1.0]

[[args]]
name = "p"
dtype = "float32"
shape = ["rows", "cols"]
role = "in"
range = [0.999, 1.001]

[[args]]
name = "v"
dtype = "int32"
shape = ["rows", "cols"]
role = "in"
range = [-1000000, 1000000]

[[args]]
name = "f"
dtype = "float32"
shape = ["rows", 4]
role = "out"

[[args]]
name = "g"
dtype = "int32"
shape = ["rows", 5]
role = "out"

[[args]]
name = "rows"
dtype = "int32"
role = "scalar"
value = "rows"

[[args]]
name = "cols"
dtype = "int32"
role = "scalar"
value = "cols"

[tolerance]
rtol = 0.0001
atol = 0.00001

[reference]
python = "ref.py:ops"
"""

OPS_REF = """import numpy as np


def ops(x, p, v, rows, cols):
    x = np.asarray(x, np.float64).reshape(rows, cols)
    p = np.asarray(p, np.float64).reshape(rows, cols)
    v = np.asarray(v, np.int64).reshape(rows, cols)
    f = np.stack([x.sum(1), p.prod(1), np.maximum(x.max(1), -100.0), np.minimum(x.min(1), 100.0)], 1)
    g = np.stack([np.bitwise_and.reduce(v, 1) & -1, np.bitwise_or.reduce(v, 1), np.bitwise_xor.reduce(v, 1),
                  (v & 7).sum(1), v.max(1)], 1)
    return f.astype(np.float32), g.astype(np.int32)
"""


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_every_operator_folds_right(tmp_path, target):
    """+ * max min on floats, & | ^ + max on ints, one row per block; the float maximum starts
    at -100 with every input negative, so a fold that put 0 (or any other identity than the
    accumulator) into the threads without columns would show; cols = 1 and 5 leave most
    threads of the block without a column."""
    from xpiler.migration.driver import migrate
    d = tmp_path / "in"
    d.mkdir()
    (d / "ops.c").write_text(OPS_SRC)
    (d / "ops.c.toml").write_text(OPS_TOML)
    (d / "ref.py").write_text(OPS_REF)
    params = {"target": target, "rows": "block", "block": 256, "grid_cap": 2, "reduce": "shuffle"}
    r = migrate(d / "ops.c", target, spec=d / "ops.c.toml", outdir=tmp_path / "out", jobs=1, perf=False,
                pipeline=[("binding", params)], repair=False)
    assert r.verified, [str(x) for x in r.diagnostics]
    assert [s.params for s in r.steps] == [params]
    # nine reductions, one barrier each where the tree has two (static count: the tree's second
    # is in its loop of halving steps); the thread-0 stores keep theirs
    prog = parse_text(OPS_SRC, "c", "ops.c")
    kw = dict(entry="ops", target=target, rows="block", block=256)
    assert _count_barriers(binding.apply(prog, **kw, reduce="shuffle")[0], "ops") == \
        _count_barriers(binding.apply(prog, **kw)[0], "ops") - 9


# ---------------------------------------------------------------------------------- examples
@pytest.mark.parametrize("name,target", [("softmax", "cuda"), ("layernorm", "hip"), ("rmsnorm", "cuda"),
                                         ("gemv", "hip"), ("rmsnorm", "hip")])
def test_c_row_kernels_verify(tmp_path, name, target):
    params = {"target": target, "rows": "block", "block": 128, "grid_cap": 2, "reduce": "shuffle"}
    if name == "gemv":
        params["loop"] = "i"
    r = _migrate(tmp_path, EX / name / f"{name}.c", target, [("binding", params)],
                 EXTRA["gemv" if name == "gemv" else "rows"])
    assert r.verified, [str(x) for x in r.diagnostics]
    assert "__shfl_xor" in r.output_path.read_text()


# (softmax over its row loop r: 125 s on a loaded host, pytest -m long; softmax.mlu -> cuda / hip stays in
# the default run through test_pass_unstage_rows)
@pytest.mark.parametrize("name,loop,target", [pytest.param("softmax", "r", "cuda", marks=pytest.mark.long),
                                              ("layernorm", "task", "cuda"),
                                              # (a second task loop, to hip: pytest -m long)
                                              pytest.param("gemv", "task", "hip", marks=pytest.mark.long)])
def test_bang_row_kernels_verify_one_block_per_task(tmp_path, name, loop, target):
    """rows='core': a BANG task per block; the row loops inside the task run in every thread,
    each column loop's reduction folds with shuffles (its slots reused row after row)."""
    params = {"target": target, "loop": loop, "rows": "core", "block": 128, "grid_cap": None, "reduce": "shuffle"}
    r = _migrate(tmp_path, EX / name / f"{name}.mlu", target,
                 [("detensorize", {"target": target}), ("loop_recovery", {}), ("binding", params)],
                 EXTRA["gemv" if name == "gemv" else "rows"])
    assert r.verified, [str(x) for x in r.diagnostics]
    assert "__shfl_xor" in r.output_path.read_text()


def test_phases_plan_takes_shuffle_too(tmp_path):
    """A whole-array sum (one block, phases plan) with reduce='shuffle' verifies and replays."""
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    d = tmp_path / "in"
    d.mkdir()
    (d / "total.c").write_text("void total(const float* x, float* y, int n) {\n  float s = 0.0f;\n"
                               "  for (int i = 0; i < n; i++) s += x[i];\n  y[0] = s;\n}\n")
    (d / "total.c.toml").write_text('entry = "total"\ndialect = "c"\n[sizes]\nn = 1000\n[[shapes]]\nname = "one"\n'
                                    'n = 1\n[[args]]\nname = "x"\ndtype = "float32"\nshape = ["n"]\nrole = "in"\n'
                                    '[[args]]\nname = "y"\ndtype = "float32"\nshape = [1]\nrole = "out"\n'
                                    '[[args]]\nname = "n"\ndtype = "int32"\nrole = "scalar"\nvalue = "n"\n'
                                    '[reference]\npython = "ref.py:total"\n')
    (d / "ref.py").write_text("import numpy as np\n\ndef total(x, n):\n"
                              "    return np.array([np.asarray(x, np.float64).sum()], np.float32)\n")
    params = {"target": "hip", "block": 64, "reduce": "shuffle"}
    r = migrate(d / "total.c", "hip", spec=d / "total.c.toml", outdir=tmp_path / "out", jobs=1, perf=False,
                pipeline=[("binding", params)], repair=False)
    assert r.verified, [str(x) for x in r.diagnostics]
    assert "__shfl_xor(" in r.output_path.read_text()
    rep = replay(tmp_path / "out" / "provenance.jsonl")
    assert rep.ok if hasattr(rep, "ok") else rep


# ---------------------------------------------------------------------------------- hip on wave32
def test_hip_output_on_a_32_lane_wavefront(tmp_path):
    """The hip output run by the emulator with 32-lane wavefronts (RDNA): the steps guarded by
    warpSize are skipped and the slots of B / 32 warps fold, with the same result."""
    from xpiler.platforms.harness import read_outputs, write_job
    from xpiler.platforms.hip import HipPlatform
    from xpiler.sandbox import run_limited
    from xpiler.spec import load_spec

    class Wave32(HipPlatform):
        wave = 32

    prog = parse_file(EX / "softmax" / "softmax.c")
    out, launch = binding.apply(prog, entry="softmax", target="hip", rows="block", block=256, grid_cap=3,
                                reduce="shuffle")
    src = tmp_path / "softmax.hip"
    src.write_text(print_program(out))
    spec = load_spec(EX / "softmax" / "softmax.c.toml")
    spec.launch = {"grid": [3, 1, 1], "block": [256, 1, 1]}
    spec.dialect = "hip"
    ran = 0
    for wave, plat in ((32, Wave32()), (64, HipPlatform())):
        exe = plat.build(src, spec, tmp_path / f"w{wave}", sanitize=False)
        for inst in spec.instances():
            rng = np.random.default_rng(1)
            x = rng.uniform(-20, 20, inst.sizes["rows"] * inst.sizes["cols"]).astype(np.float32)
            job = tmp_path / f"job{wave}_{inst.name}"
            write_job(job, inst, {"x": x, "y": np.full_like(x, np.nan)})
            oc = run_limited([str(exe), str(job)], timeout_s=120, mem_mb=None)
            assert oc.ok, oc.stderr
            y = read_outputs(job, inst)["y"].reshape(inst.sizes["rows"], inst.sizes["cols"])
            a = x.reshape(y.shape).astype(np.float64)
            want = np.exp(a - a.max(1, keepdims=True))
            np.testing.assert_allclose(y, want / want.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)
            ran += 1
    assert ran == 2 * len(spec.instances())


# ---------------------------------------------------------------------------------- real compilers
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", ["layernorm", "softmax"])
def test_cuda_output_compiles_with_nvcc(tmp_path, name):
    from xpiler.platforms.cuda import CudaPlatform
    prog = parse_file(EX / name / f"{name}.c")
    out, _ = binding.apply(prog, entry=name, target="cuda", rows="block", block=512, reduce="shuffle")
    src = tmp_path / f"{name}.cu"
    src.write_text(print_program(out))
    r = CudaPlatform().compile_check(src)
    assert r["ok"], r["log"][-2000:]


@pytest.mark.skipif(not Path("/usr/lib/llvm-15/bin/clang++").exists() or
                    not Path("/usr/include/hip/hip_runtime.h").exists(), reason="clang-15 / HIP headers not installed")
@pytest.mark.parametrize("arch", ["gfx90a", "gfx1100"])
@pytest.mark.parametrize("name", ["rmsnorm", "softmax"])
def test_hip_output_compiles_for_amdgpu(tmp_path, arch, name):
    from xpiler.platforms.hip import HipPlatform
    prog = parse_file(EX / name / f"{name}.c")
    out, _ = binding.apply(prog, entry=name, target="hip", rows="block", block=256, reduce="shuffle")
    src = tmp_path / f"{name}.hip"
    src.write_text(print_program(out))
    r = HipPlatform().compile_check(src, arch=arch)
    assert r["ok"], r["log"][-2000:]


# ---------------------------------------------------------------------------------- cost model
@pytest.mark.parametrize("target,block", [("cuda", 128), ("cuda", 512), ("hip", 256)])
def test_cost_model_ranks_shuffle_above_tree(target, block):
    """The analytic model (model:analytic, a ranking) counts each __syncthreads a thread runs
    (cost.BARRIER_NS): the tree's log2 B + 1 barriers per reduction cost more than the shuffle
    form's one; without the term both forms tie at the DRAM bound."""
    from xpiler.schedule import cost
    prog = parse_file(EX / "softmax" / "softmax.c")
    sizes = {"rows": 4096, "cols": 1024}
    ms = {}
    for red in ("tree", "shuffle"):
        out, _ = binding.apply(prog, entry="softmax", target=target, rows="block", block=block, reduce=red)
        env = cost.launch_env([4096, 1, 1], [block, 1, 1])
        ms[red] = cost.estimate(out, "softmax", target, sizes, 4096 * block, env=env).ms
    assert ms["shuffle"] < ms["tree"], ms


# ---------------------------------------------------------------------------------- uniform results
UNIFORM_SRC = """#include <math.h>
void k(const float* x, float* y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        float m = -100.0f;
        for (int c = 0; c < cols; c++)
            if (x[r * cols + c] > m) m = x[r * cols + c];
        for (int c = 0; c < cols; c++)
            y[r * cols + c] = m;
    }
}
"""


@pytest.mark.parametrize("rows_form,target", [("block", "cuda"), ("block", "hip"), ("warp", "cuda"),
                                              ("warp", "hip")])
def test_float_max_is_the_same_in_every_thread(tmp_path, rows_form, target):
    """Every thread writes its own copy of the row maximum. With NaNs and signed zeros among the
    inputs, the xor butterfly's pairs would disagree (``b > a ? b : a`` is not symmetric for
    them); lane 0's value is broadcast, so each row's outputs are one value (bitwise)."""
    from xpiler.frontend import parse_text
    from xpiler.platforms.cuda import CudaPlatform
    from xpiler.platforms.harness import read_outputs, write_job
    from xpiler.platforms.hip import HipPlatform
    from xpiler.sandbox import run_limited
    from xpiler.spec import parse_spec
    prog = parse_text(UNIFORM_SRC, "c", "k.c")
    kw = {"reduce": "shuffle"} if rows_form == "block" else {}
    out, launch = binding.apply(prog, entry="k", target=target, loop="r", rows=rows_form, block=128, **kw)
    src = tmp_path / ("k.cu" if target == "cuda" else "k.hip")
    src.write_text(print_program(out))
    text = (f'entry = "k"\ndialect = "{target}"\n[sizes]\nrows = 6\ncols = 256\n[launch]\n'
            f'grid = ["{launch["grid"][0]}", 1, 1]\nblock = [128, 1, 1]\n'
            '[[args]]\nname = "x"\ndtype = "float32"\nshape = ["rows", "cols"]\nrole = "in"\n'
            '[[args]]\nname = "y"\ndtype = "float32"\nshape = ["rows", "cols"]\nrole = "out"\n'
            '[[args]]\nname = "rows"\ndtype = "int32"\nrole = "scalar"\nvalue = "rows"\n'
            '[[args]]\nname = "cols"\ndtype = "int32"\nrole = "scalar"\nvalue = "cols"\n')
    spec = parse_spec(text, tmp_path / "k.toml")
    inst = spec.instances()[0]
    rng = np.random.default_rng(3)
    x = rng.uniform(-50, -1, (6, 256)).astype(np.float32)
    x[0, ::7] = np.nan                       # NaNs all over a row
    x[1, 5] = np.nan                         # one NaN
    x[2, :] = -0.0
    x[2, ::3] = 0.0                          # the maximum is a zero of either sign
    x[3, 100:] = np.nan
    plat = CudaPlatform() if target == "cuda" else HipPlatform()
    exe = plat.build(src, spec, tmp_path / "w", sanitize=False)
    job = tmp_path / "job"
    write_job(job, inst, {"x": x.ravel(), "y": np.zeros(x.size, np.float32)})
    oc = run_limited([str(exe), str(job)], timeout_s=120, mem_mb=None)
    assert oc.ok, oc.stderr
    y = read_outputs(job, inst)["y"].reshape(6, 256).view(np.uint32)
    for r in range(6):
        assert len(set(y[r].tolist())) == 1, (r, sorted(set(y[r].tolist()))[:4])
    assert (y[4:].view(np.float32) == x[4:].max(1, keepdims=True)).all()
