"""Loop binding: c programs onto cuda / hip / bang / OpenMP, SIMT retargeting, and the refusals
(each asserting the diagnostic code and the line it points at).  End-to-end cases run the
pass inside ``migrate`` and verify the result on the emulators."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding
from xpiler.passes.base import PassError
from xpiler.printers import print_program

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"


def c_prog(text: str) -> N.Program:
    return parse_text(text, "c", "k.c")


def loops(prog, name):
    return [n for n in walk(prog.func(name)) if isinstance(n, N.For)]


def refused(prog, code="XP4001", **kw) -> PassError:
    with pytest.raises(PassError) as ei:
        binding.apply(prog, **kw)
    assert ei.value.code == code, ei.value.why
    return ei.value


RELU = """void relu(const float* x, float* y, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
"""


# ------------------------------------------------------------------------------ bind
def test_bind_cuda_one_loop_grid_stride():
    prog, launch = binding.apply(c_prog(RELU), entry="relu", target="cuda")
    assert prog.dialect == "cuda"
    f = prog.func("relu")
    assert f.kind == "kernel" and f.has("extern_c")
    assert [l.binding for l in loops(prog, "relu")] == ["global.x"]
    assert launch == {"grid": ["(n + 255) / 256", 1, 1], "block": [256, 1, 1]}
    text = print_program(prog)
    assert "__global__" in text and "#include <cuda_runtime.h>" in text
    assert "i += gridDim.x * blockDim.x" in text.replace("(", "").replace(")", "")


def test_bind_block_size_and_cap_reach_the_launch():
    _, launch = binding.apply(c_prog(RELU), entry="relu", target="hip", block=128, grid_cap=1024)
    assert launch == {"grid": ["min((n + 127) / 128, 1024)", 1, 1], "block": [128, 1, 1]}
    e = refused(c_prog(RELU), entry="relu", target="cuda", block=100)
    assert "block size" in e.why


def test_bind_bang_task_stride():
    prog, launch = binding.apply(c_prog(RELU), entry="relu", target="bang", tasks=16, func_type="union1")
    assert prog.dialect == "bang" and loops(prog, "relu")[0].binding == "taskId"
    assert launch == {"dim": [16, 1, 1], "func_type": "union1"}
    text = print_program(prog)
    assert "__mlu_global__" in text and "taskDim" in text
    refused(c_prog(RELU), entry="relu", target="bang", tasks=6, func_type="union1")


def test_bind_c_adds_omp_and_is_a_noop_when_present():
    prog, launch = binding.apply(c_prog(RELU), entry="relu", target="c")
    assert launch == {} and prog.dialect == "c"
    assert "#pragma omp parallel for" in print_program(prog)
    gemm = parse_file(EX / "gemm" / "gemm.c")
    refused(gemm, "XP4002", entry="gemm", target="c")


def test_bind_two_nested_parallel_loops_2d():
    prog, launch = binding.apply(parse_file(EX / "maxpool2d" / "maxpool2d.c"), entry="maxpool2d", target="cuda")
    ls = loops(prog, "maxpool2d")
    assert [l.binding for l in ls[:2]] == ["global.y", "global.x"]
    assert launch["block"] == [32, 8, 1]
    assert "H - KH" in launch["grid"][0] and "N" in launch["grid"][1]


def test_pointer_alias_and_size_products_are_seen_through():
    # bmm writes through c = C + ((b*M + i)*N) with b = t / M, i = t % M: still independent
    prog, _ = binding.apply(parse_file(EX / "bmm" / "bmm.c"), entry="bmm", target="cuda")
    assert loops(prog, "bmm")[0].binding == "global.x"
    # ... and a write through an alias that overlaps the next iteration is caught
    src = """void f(float* y, const float* x, int n)
{
    float* p = y + 1;
    for (int i = 0; i < n - 1; i++) {
        p[i] = y[i] + x[i];
    }
}
"""
    e = refused(c_prog(src), entry="f", target="cuda")
    assert e.line == 4 and "'i'" in e.why and "'y'" in e.why


def test_local_array_is_privatized_when_every_read_is_covered():
    prog, _ = binding.apply(parse_file(EX / "self_attention" / "self_attention.c"), entry="self_attention",
                            target="cuda")
    outer = loops(prog, "self_attention")[0]
    assert outer.binding == "global.x"
    assert isinstance(outer.body.stmts[0], N.Decl) and outer.body.stmts[0].name == "p"
    assert not any(isinstance(s, N.Decl) and s.name == "p" for s in prog.func("self_attention").body.stmts)


def test_local_array_read_before_write_is_not_privatized():
    src = """void f(const float* x, float* y, int n)
{
    float t[4];
    for (int i = 0; i < n; i++) {
        y[i] = t[0];
        t[0] = x[i];
    }
}
"""
    e = refused(c_prog(src), entry="f", target="cuda")
    assert e.line == 4 and "'t'" in e.why


# ------------------------------------------------------------------------------ refusals
def test_refuse_prefix_sum():
    src = """void scan(float* a, int n)
{
    for (int i = 1; i < n; i++) {
        a[i] = a[i - 1] + a[i];
    }
}
"""
    e = refused(c_prog(src), entry="scan", target="cuda")
    assert e.line == 3 and e.file == "k.c" and "loop 'i'" in e.why and "'a'" in e.why


def test_refuse_scalar_running_value_that_is_not_a_reduction():
    # s is read by the store (a prefix sum), so it is no reduction; the loop stays sequential,
    # and one thread cannot run it because the other threads use s (issue 12: real reductions
    # become one-block phases, tests/test_binding_reductions.py)
    src = """void scan(const float* x, float* out, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        s += x[i];
        out[i] = s;
    }
    out[0] += s;
}
"""
    e = refused(c_prog(src), entry="scan", target="hip")
    assert e.line == 4 and "'s'" in e.why


def test_atomic_reduction_only_when_asked():
    src = """void colsum(const float* A, float* y, int m, int n)
{
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            y[j] += A[i * n + j];
        }
    }
}
"""
    e = refused(c_prog(src), entry="colsum", target="cuda", dims=1)
    assert e.line == 3 and "'y'" in e.why
    prog, _ = binding.apply(c_prog(src), entry="colsum", target="cuda", atomics=True)
    assert "atomicAdd(&y[j], A[i * n + j]);" in print_program(prog)
    refused(c_prog(src), entry="colsum", target="bang", atomics=True)   # no atomic path on bang


def test_refuse_second_loop_needing_grid_barrier():
    src = """void two(const float* x, float* t, float* y, int n)
{
    for (int i = 0; i < n; i++) {
        t[i] = x[i] * 2.0f;
    }
    for (int i = 0; i < n; i++) {
        y[i] = t[n - 1 - i];
    }
}
"""
    # the grid-stride form alone (dims given: no phases fallback) refuses
    e = refused(c_prog(src), entry="two", target="cuda", dims=1)
    assert e.line == 6 and "another thread" in e.why and "'t'" in e.why
    # by default the kernel becomes ordered phases of one block, a barrier between the nests
    prog, launch = binding.apply(c_prog(src), entry="two", target="cuda")
    assert launch == {"grid": [1, 1, 1], "block": [256, 1, 1]}
    assert [l.binding for l in loops(prog, "two")] == ["threadIdx.x", "threadIdx.x"]
    text = print_program(prog, "cuda")
    assert text.index("t[i] = ") < text.index("__syncthreads()") < text.index("y[i] = ")


def test_sibling_nests_on_disjoint_ranges_are_bound_each():
    src = """void two(const float* x, float* y, int n, int h)
{
    if (n <= 0) return;
    int half = h;
    for (int i = 0; i < half; i++) {
        y[i] = x[i] * 2.0f;
    }
    for (int i = half; i < n; i++) {
        y[i] = x[i] + 1.0f;
    }
    y[0] = y[0];
}
"""
    e = refused(c_prog(src), entry="two", target="cuda", dims=1)  # y[0] read after another thread wrote it
    assert e.line == 11 and "'y'" in e.why
    ok = src.replace("    y[0] = y[0];\n", "")
    prog, launch = binding.apply(c_prog(ok), entry="two", target="cuda")
    assert [l.binding for l in loops(prog, "two")] == ["global.x", "global.x"]
    assert launch["grid"][0].startswith("max(")
    # a second nest reading another iteration's result of the first is refused
    bad = ok.replace("y[i] = x[i] + 1.0f;", "y[i] = y[i - half] + 1.0f;")
    e = refused(c_prog(bad), entry="two", target="bang", dims=1)
    assert e.line == 8 and "'y'" in e.why
    # without dims the bang fallback runs the sequential program in one task
    prog, launch = binding.apply(c_prog(bad), entry="two", target="bang")
    assert launch == {"dim": [1, 1, 1], "func_type": "block"}
    assert [l.binding for l in loops(prog, "two")] == ["taskId", None, None]


def test_strided_partition_is_independent_overlap_is_not():
    src = """void f(const float* x, float* y, int rows, int cols)
{
    for (int task = 0; task < 4; task++) {
        for (int r = task; r < rows; r += 4) {
            for (int c = 0; c < cols; c++) {
                y[r * cols + c] = x[r * cols + c] * 2.0f;
            }
        }
    }
}
"""
    prog, _ = binding.apply(c_prog(src), entry="f", target="bang")
    assert loops(prog, "f")[0].binding == "taskId"
    e = refused(c_prog(src.replace("r += 4", "r += 3")), entry="f", target="bang", dims=1)
    assert e.line == 3 and "'y'" in e.why and "'task'" in e.why
    prog, launch = binding.apply(c_prog(src.replace("r += 4", "r += 3")), entry="f", target="bang")
    assert launch["dim"] == [1, 1, 1] and loops(prog, "f")[1].binding is None    # one task, in order


def test_refuse_x86_intrinsics_until_detensorized():
    e = refused(parse_file(EX / "relu" / "relu_avx512.c"), entry="relu_avx512", target="bang")
    assert e.line is not None and "_mm512" in e.why


def test_refuse_non_c_program_and_unknown_target():
    cu = parse_file(EX / "relu" / "relu.cu")
    refused(cu, "XP4002", entry="relu", target="hip")             # use mode='retarget'
    refused(cu, "XP4001", entry="relu", target="bang")            # needs loop recovery first
    refused(c_prog(RELU), "XP4001", entry="relu", target="opencl")


# ------------------------------------------------------------------------------ retarget
def test_retarget_cuda_to_hip_renames_host_api():
    prog = binding.apply(parse_file(EX / "relu" / "relu.cu"), entry="relu", target="hip", mode="retarget")
    assert prog.dialect == "hip"
    text = print_program(prog)
    assert "hipMalloc" in text and "cudaMalloc" not in text and "hipMemcpyHostToDevice" in text
    assert "<hip/hip_runtime.h>" in text and "cuda_runtime.h" not in text


def test_retarget_makes_warp_width_explicit():
    src = """#include <cuda_runtime.h>
extern "C" __global__ void wsum(const float* x, float* y, int n)
{
    float v = x[threadIdx.x];
    for (int off = warpSize / 2; off > 0; off /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    if (threadIdx.x % warpSize == 0)
        y[threadIdx.x / warpSize] = v;
}
"""
    prog = binding.apply(parse_text(src, "cuda", "w.cu"), entry="wsum", target="hip", mode="retarget")
    text = print_program(prog)
    assert "warpSize" not in text and "32 / 2" in text
    assert "__shfl_xor(v, off, 32)" in text


def test_retarget_refuses_wave64_collectives():
    e = refused(parse_file(EX / "gemv" / "gemv.hip"), entry="gemv", target="cuda", mode="retarget")
    assert e.line == 22 and "64-lane" in e.why
    e = refused(parse_file(EX / "gemm" / "gemm_wmma.cu"), entry="gemm_wmma", target="hip", mode="retarget")
    assert "WMMA" in e.why and e.line is not None
    refused(parse_file(EX / "relu" / "relu.cu"), "XP4002", entry="relu", target="cuda", mode="retarget")


# ------------------------------------------------------------------------------ candidates
def test_candidates():
    c = binding.candidates(c_prog(RELU), "cuda")
    assert {x["block"] for x in c} == {64, 128, 256, 512} and all(x["loop"] == "i" for x in c)
    assert binding.candidates(c_prog(RELU), "bang")
    src = "void scan(float* a, int n)\n{\n    for (int i = 1; i < n; i++)\n        a[i] += a[i - 1];\n}\n"
    assert binding.candidates(c_prog(src), "cuda") == []
    # relu.cu is a grid-stride kernel: retarget, and retarget with a problem-sized launch (regrid)
    rc = binding.candidates(parse_file(EX / "relu" / "relu.cu"), "hip")
    assert rc[0] == {"target": "hip", "mode": "retarget"} and all(x.get("regrid") for x in rc[1:]) and len(rc) > 1


# ------------------------------------------------------------------------------ end to end
@pytest.mark.parametrize("src,target,mode", [
    ("softmax/softmax.c", "cuda", "bind"),
    ("maxpool2d/maxpool2d.c", "hip", "bind"),
    ("self_attention/self_attention.c", "bang", "bind"),
    ("add/add.cu", "hip", "retarget"),
    ("add/add_avx512.c", "cuda", "general"),
    ("gemm/gemm.hip", "cuda", "retarget"),
])
def test_migrate_verifies(tmp_path, src, target, mode):
    from xpiler.migration.driver import migrate
    pipe = [("binding", {"target": target, "mode": mode})]
    if mode == "general":     # detensorize the AVX-512 main loop + masked tail, then bind both
        pipe = [("detensorize", {"target": target}), ("binding", {"target": target})]
    r = migrate(EX / src, target, outdir=tmp_path / "out", jobs=1, pipeline=pipe)
    assert r.verified, [str(d) for d in r.diagnostics]
    assert r.output_path.suffix == {"cuda": ".cu", "hip": ".hip", "bang": ".mlu"}[target]


# ------------------------------------------------------------------------------ large private arrays
TASK_ARRAYS = """#define BIG 16384
void k(const float* x, float* y, int n)
{
    for (int t = 0; t < 4; t++) {
        float buf[BIG];
        float small[64];
        for (int i = 0; i < n; i++)
            buf[i % BIG] = x[i] * 2.0f;
        small[t] = buf[t];
        y[t] = small[t] + buf[n % BIG];
    }
}
"""


def _globals(prog):
    return {it.name: it for it in prog.items if isinstance(it, N.Decl) and it.scope == "global"}


def _local_arrays(prog, name):
    return {n.name for n in walk(prog.func(name)) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)}


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_large_task_arrays_get_one_global_slice_per_task(target):
    prog, launch = binding.apply(c_prog(TASK_ARRAYS), entry="k", target=target)
    g = _globals(prog)
    assert set(g) == {"xp_priv_buf"}                       # 64 KiB: hoisted; small[64] stays local
    assert _local_arrays(prog, "k") == {"small"}
    dims = g["xp_priv_buf"].type.dims
    assert dims[0].value == 4 and isinstance(dims[1], N.Var) and dims[1].name == "BIG"
    text = print_program(prog)
    assert "__device__ float xp_priv_buf[4][BIG];" in text
    assert text.index("xp_priv_buf[4]") < text.index("__global__")
    assert "xp_priv_buf[t][i % BIG] = " in text and "small[t] = xp_priv_buf[t][t];" in text
    assert launch == {"grid": ["(4 + 255) / 256", 1, 1], "block": [256, 1, 1]}


def test_large_arrays_stay_where_they_are_for_bang_and_c():
    for target in ("bang", "c"):
        out = binding.apply(c_prog(TASK_ARRAYS), entry="k", target=target)
        prog = out[0] if isinstance(out, tuple) else out
        assert not _globals(prog) and "buf" in _local_arrays(prog, "k")


def test_unknown_trip_count_is_dealt_over_fixed_slots():
    src = """void k(const float* x, float* y, int n)
{
    for (int r = 0; r < n; r += 2) {
        float a[9000];
        for (int i = 0; i < 9000; i++)
            a[i] = x[r] + i;
        y[r] = a[r % 9000];
    }
}
"""
    prog, launch = binding.apply(c_prog(src), entry="k", target="cuda")
    slots = prog.func("k").body.stmts[0]
    assert slots.binding == "global.x" and slots.lo.value == 0 and isinstance(slots.hi, N.Const)
    S = slots.hi.value
    assert S & (S - 1) == 0 and 1 <= S <= 1024 and S * 9000 * 4 <= 64 * 1024 * 1024
    inner = slots.body.stmts[0]
    assert inner.var == "r" and inner.binding is None
    text = print_program(prog)
    assert f"for (int r = {slots.var} * 2; r < n; r += 2 * {S})" in text
    assert f"xp_priv_a[{slots.var}][i] = " in text and "float a[" not in text
    assert launch == {"grid": [(S + 255) // 256, 1, 1], "block": [256, 1, 1]}


def test_small_per_thread_frames_are_left_alone():
    # self_attention.c: a 16 KiB score row per thread is within the stack budget
    prog, launch = binding.apply(parse_file(EX / "self_attention" / "self_attention.c"), entry="self_attention",
                                 target="hip")
    assert not _globals(prog) and "p" in _local_arrays(prog, "self_attention")
    assert "xp_slot" not in print_program(prog)


def test_two_bound_loops_linearise_the_slice_index():
    src = """#define BIG 16384
void k(const float* x, float* y)
{
    for (int b = 0; b < 3; b++) {
        for (int t = 0; t < 5; t++) {
            float buf[BIG];
            for (int i = 0; i < BIG; i++)
                buf[i] = x[i] + b;
            y[b * 5 + t] = buf[t];
        }
    }
}
"""
    prog, _ = binding.apply(c_prog(src), entry="k", target="cuda")
    assert [l.binding for l in loops(prog, "k")[:2]] == ["global.y", "global.x"]
    assert _globals(prog)["xp_priv_buf"].type.dims[0].value == 15
    assert "xp_priv_buf[b * 5 + t][i] = " in print_program(prog)


def test_hoisting_is_skipped_when_it_would_not_be_exact():
    from xpiler.passes import privatize
    from xpiler.ir.visit import rewrite
    prog, launch = binding.apply(c_prog(TASK_ARRAYS.replace("float buf[BIG];", "float buf[BIG] = {0};")),
                                 entry="k", target="cuda")
    assert not _globals(prog)                               # an initialiser runs at every entry
    shadow = TASK_ARRAYS.replace("small[t] = buf[t];", "{ float buf[BIG]; buf[0] = 1.0f; small[t] = buf[0]; }")
    prog, _ = binding.apply(c_prog(shadow), entry="k", target="cuda")
    text = print_program(prog)                              # outer 'buf' is re-declared in its scope:
    assert "buf" in _local_arrays(prog, "k") and "+ buf[n % BIG];" in text   # it stays local;
    assert "xp_priv_buf[t][0] = 1.0f;" in text             # the inner one has no shadow and moves
    # a loop spread over the threads of one block only runs each iteration once per block:
    # one slice per iteration would be shared by the blocks
    src = c_prog(TASK_ARRAYS)
    plain = binding._bind(src, binding.check(src, entry="k", target="cuda"))[0]
    per_block = rewrite(plain, lambda n: n.with_(binding="threadIdx.x") if isinstance(n, N.For)
                        and n.binding == "global.x" else n)
    assert privatize.hoist_private_arrays(per_block, "k", {})[0] is per_block
    assert _globals(privatize.hoist_private_arrays(plain, "k", {})[0])


@pytest.mark.parametrize("src,target", [
    ("gemv/gemv.mlu", "cuda"),            # 512 KiB of WRAM per task overflowed the emulator's fiber stack
    # row loop of unknown trip count; gfx90a refused the frame. pytest -m long: the same migration runs
    # by default in test_pass_unstage_rows (rmsnorm -> hip)
    pytest.param("rmsnorm/rmsnorm.mlu", "hip", marks=pytest.mark.long),
])
def test_bang_buffers_migrate_to_simt_and_verify(tmp_path, src, target):
    from xpiler.migration.driver import migrate
    from xpiler.migration.pipeline import direction_plans
    # the general plan, which keeps the task buffers (gemv.mlu's default is now un-blocked to the
    # plain row loop first: tests/test_rows_default.py)
    r = migrate(EX / src, target, outdir=tmp_path / "out", jobs=1, pipeline=direction_plans("bang", target)[-1])
    assert r.verified, [str(d) for d in r.diagnostics]
    assert "xp_priv_" in r.output_path.read_text()
