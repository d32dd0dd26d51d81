"""vectorize_simt (passes/vectorize_simt.py): float4 loads and stores for a grid-stride
elementwise loop of a cuda/hip kernel, with a scalar tail and an unaligned fallback.

Every vector form here is tested in the SIMT emulator (``emu:simt-cpu``) against the c source
and the Python reference, at n in {1, 3, 4, 5, 1023, 4097} (every remainder mod 4, and n < 4
where no vector runs); the unaligned fallback is run on offset pointers by a driver of its own.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.passes import binding
from xpiler.passes import vectorize_simt as V
from xpiler.passes.base import PassError
from xpiler.printers import print_program
from xpiler.spec import DIALECT_EXT, load_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
SIZES = (1, 3, 4, 5, 1023, 4097)


def bound(op, target, block=512, cap=1024):
    src = EX / op / f"{op}.c"
    prog, launch = binding.apply(parse_file(src, "c"), entry=op, target=target, loop="i", block=block, grid_cap=cap)
    return src, prog, launch


def verify(prog, src, dialect, launch, sizes=SIZES):
    """The candidate against the source kernel and the reference at n in ``sizes``."""
    sp = load_spec(str(src) + ".toml")
    sp.shapes = [{"name": f"n{n}", "n": n} for n in sizes]
    d = Path(tempfile.mkdtemp(prefix="xp-vec-"))
    path = d / f"cand{DIALECT_EXT[dialect]}"
    path.write_text(print_program(prog, dialect))
    cs = sp.with_dialect(dialect, sp.entry, launch)
    ref, fn = sp.reference.split(":")
    cs.reference = f"{(src.parent / ref).resolve()}:{fn}"
    cs.path = path.with_name(path.name + ".toml")
    cs.path.write_text(spec_to_toml(cs))
    v = compare_kernels(path, cs, against=(src, sp), jobs=1)
    return v, set(v.instances)


@pytest.mark.parametrize("op,target", [("relu", "cuda"), ("add", "hip"), ("gelu", "cuda")])
def test_vector_form_verifies_in_the_emulator_at_every_remainder(op, target):
    src, prog, _ = bound(op, target)
    vec = V.apply(prog, entry=op, block=256, grid_cap=None)
    launch = vec.launch_dict(op)
    text = print_program(vec, target)
    assert "float4" in text and "% 4" not in text and "n / 4 * 4" in text
    assert launch == {"grid": ["max(((n) / 4 + 255) / 256, 1)", 1, 1], "block": [256, 1, 1]}
    v, names = verify(vec, src, target, launch)
    assert v.verified, v.summary() if hasattr(v, "summary") else v
    assert {f"n{n}" for n in SIZES} <= names


def test_retargeted_hip_grid_stride_kernel_vectorizes_and_verifies():
    """relu.hip retargeted to cuda keeps its parsed grid-stride loop (the regrid form)."""
    src = EX / "relu" / "relu.hip"
    prog = binding.apply(parse_file(src, "hip"), entry="relu", target="cuda", mode="retarget")
    vec = V.apply(prog, entry="relu", block=512, grid_cap=1024)
    launch = vec.launch_dict("relu")
    text = print_program(vec, "cuda")
    assert "i4 += step" in text and "n / 4 * 4 + (blockIdx.x * blockDim.x + threadIdx.x)" in text
    assert launch["grid"] == ["max(min(((n) / 4 + 511) / 512, 1024), 1)", 1, 1]
    v, _ = verify(vec, src, "cuda", launch, sizes=(3, 5, 1023))
    assert v.verified


# ------------------------------------------------------------------- unaligned pointers, tail alone
DRIVER = r"""
#include <cstdio>
#include <cstdlib>
#include <cmath>
int main() {
    const int sizes[] = {1, 3, 4, 5, 1023, 4097};
    float *xb = (float *)aligned_alloc(64, 4160 * sizeof(float));
    float *yb = (float *)aligned_alloc(64, 4160 * sizeof(float));
    int bad = 0;
    for (int off = 0; off < 2; ++off)
        for (int s = 0; s < 6; ++s) {
            int n = sizes[s];
            float *x = xb + off, *y = yb + off;
            for (int i = 0; i < n + 8; ++i) { xb[i] = (float)((i * 37) % 17) - 8.0f; yb[i] = -99.0f; }
            relu<<<(n / 4 + 255) / 256 + 1, 256>>>(x, y, n);
            cudaDeviceSynchronize();
            for (int i = 0; i < n; ++i) {
                float want = x[i] > 0.0f ? x[i] : 0.0f;
                if (y[i] != want) { ++bad; if (bad < 5) printf("off %d n %d i %d: %g != %g\n", off, n, i, y[i], want); }
            }
            if (yb[off + n] != -99.0f || (off && yb[0] != -99.0f)) { ++bad; printf("off %d n %d: store outside\n", off, n); }
        }
    printf("bad %d\n", bad);
    free(xb); free(yb);
    return bad != 0;
}
"""


def _run_driver(kernel_text: str, tmp_path: Path, name: str) -> str:
    from xpiler.platforms.cuda import CudaPlatform
    from xpiler.platforms.simt_common import prepare_source
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found")
    src = tmp_path / f"{name}.cpp"
    src.write_text(prepare_source(kernel_text + DRIVER, f"{name}.cu"))
    exe = tmp_path / name
    flags = CudaPlatform().emu_flags(sanitize=True)
    cp = subprocess.run([gxx, *flags, str(src), "-o", str(exe)], capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr[-3000:]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    return r.stdout + r.stderr


def test_unaligned_pointers_take_the_scalar_loop_and_aligned_ones_the_vectors(tmp_path):
    """Called on x + 1, y + 1 (not 16-byte aligned) the kernel runs its original loop; on
    aligned pointers the vectors and the tail alone give the result: a copy whose fallback is
    replaced by a marker store would show the marker if it ran."""
    _, prog, _ = bound("relu", "cuda")
    vec = V.apply(prog, entry="relu")
    text = print_program(vec, "cuda")
    out = _run_driver(text, tmp_path, "whole")
    assert "bad 0" in out, out
    head, sep, rest = text.partition("} else {")
    assert sep
    poisoned = head + "} else {\n        if (n > 0) y[0] = 12345.0f;\n    }\n}\n"
    out = _run_driver(poisoned, tmp_path, "poisoned")
    # the aligned half (off = 0) is right; the offset half shows the marker, so the marker
    # branch is exactly the unaligned one
    assert "off 0 " not in out and "off 1 n 1 i 0: 12345" in out, out


# ------------------------------------------------------------------------------------- refusals
KERNELS = {
    "strided": "void k(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = x[2 * i]; }",
    "offset": "void k(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = x[i + 1]; }",
    "int": "void k(const int* x, int* y, int n) { for (int i = 0; i < n; i++) y[i] = x[i] + 1; }",
    "half": "void k(const _Float16* x, _Float16* y, int n) { for (int i = 0; i < n; i++) y[i] = x[i]; }",
    "read_after_write": ("void k(const float* x, float* y, float* z, int n) { for (int i = 0; i < n; i++) "
                         "{ y[i] = x[i] * 2.0f; z[i] = x[i] + 1.0f; } }"),
}


def _bound_text(text):
    prog = parse_text(text, "c", "k.c")
    p, _ = binding.apply(prog, entry="k", target="cuda", loop="i")
    return p


@pytest.mark.parametrize("case,why", [("strided", "not [i]"), ("offset", "not [i]"), ("int", "only float32"),
                                      ("half", "only float32"), ("read_after_write", "read after")])
def test_refusals_name_the_statement(case, why):
    p = _bound_text(KERNELS[case])
    with pytest.raises(PassError) as e:
        V.check(p, entry="k")
    assert e.value.code == "XP4001" and why in e.value.why, e.value.why
    assert e.value.line is not None
    assert V.candidates(p, "cuda") == []


def test_a_carried_dependence_is_refused():
    """Not bindable as a plain parallel loop either: the vector pass refuses such a loop when it
    is marked bound by hand (binding would have refused it)."""
    from xpiler.ir import nodes as N
    prog = parse_text("void k(float* y, int n) { for (int i = 0; i < n; i++) y[i] = y[i] + 1.0f; }", "c", "k.c")
    p, _ = binding.apply(prog, entry="k", target="cuda", loop="i")
    V.check(p, entry="k")        # same element read and written: legal
    text = "void k(float* y, float s, int n) { float acc = 0.0f; for (int i = 0; i < n; i++) { acc += s; y[i] = acc; } }"
    f = parse_text(text, "c", "k.c").func("k")
    lp = f.body.stmts[1]
    nf = f.with_(body=f.body.with_(stmts=(f.body.stmts[0], lp.with_(binding="global.x"))), kind="kernel")
    q = parse_text(text, "c", "k.c")
    q = q.with_(dialect="cuda", items=tuple(nf if isinstance(it, N.Func) else it for it in q.items))
    with pytest.raises(PassError) as e:
        V.check(q, entry="k")
    assert "acc" in e.value.why


def test_not_for_c_programs_or_twice():
    prog = parse_file(EX / "relu" / "relu.c", "c")
    with pytest.raises(PassError) as e:
        V.check(prog, entry="relu")
    assert e.value.code == "XP4002"
    _, p, _ = bound("relu", "cuda")
    vec = V.apply(p, entry="relu")
    with pytest.raises(PassError) as e:
        V.check(vec, entry="relu")
    assert e.value.code == "XP4002"


# --------------------------------------------------------------------------------- search space
def test_the_space_offers_it_for_an_elementwise_kernel_not_for_a_row_kernel():
    from xpiler.schedule.space import legal_steps
    for target in ("cuda", "hip"):
        _, p, _ = bound("relu", target)
        steps = [s for s in legal_steps(p, "relu", target) if s.pass_name == "vectorize_simt"]
        assert len(steps) == len(V.BLOCK_SIZES) * len(V.GRID_CAPS)
    src = EX / "softmax" / "softmax.c"
    entry = load_spec(str(src) + ".toml").entry
    sm, _ = binding.apply(parse_file(src, "c"), entry=entry, target="cuda")
    assert not [s for s in legal_steps(sm, entry, "cuda") if s.pass_name == "vectorize_simt"]


def test_cost_model_ranks_the_vector_form_above_the_scalar_one():
    from xpiler.schedule.cost import estimate, launch_env
    n = 1 << 24
    for target in ("cuda", "hip"):
        _, p, _ = bound("relu", target, block=256, cap=None)
        vec = V.apply(p, entry="relu", block=256, grid_cap=None)
        for prog, threads in ((p, n), (vec, n // 4)):
            prog_parsed = parse_text(print_program(prog, target), target, "k.cu")
            figs = [estimate(q, "relu", target, {"n": n}, threads=threads,
                             env=launch_env([threads // 256, 1, 1], [256, 1, 1])) for q in (prog, prog_parsed)]
            assert figs[0].ms == pytest.approx(figs[1].ms)       # marked IR and printed text agree
            if prog is p:
                scalar = figs[0]
            else:
                vector = figs[0]
        assert vector.ms < scalar.ms
        assert vector.global_bytes == pytest.approx(0.8 * scalar.global_bytes)   # no fallback loop counted


# ---------------------------------------------------------------------------------- end to end
def test_migrate_tune_picks_a_vector_form_and_replays(tmp_path, monkeypatch):
    """Under a stand-in model that prefers float4, `xpiler migrate relu.c --to cuda --tune`
    chooses a vectorize_simt step; the output verifies (emulator) and replay re-derives it."""
    import xpiler.schedule.evaluator as EV
    import xpiler.schedule.tune as TU
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    from xpiler.schedule.timing import MODEL

    def fake(stage, spec, sizes=None):
        t = stage.text or print_program(stage.program, stage.dialect)
        return (0.1 if "float4" in t else 1.0), {"model": "test stand-in"}
    monkeypatch.setattr(EV, "modelled_latency", fake)
    monkeypatch.setattr(TU, "source_for", lambda dialect, text: MODEL)
    # the tuner's choice from the plans' output before they vectorized by default (2026-12-05)
    from xpiler.migration import pipeline as PL
    monkeypatch.setattr(PL, "_finish", lambda dst: [PL._cache(dst), ("tensorize", {"target": dst})])
    r = migrate(EX / "relu" / "relu.c", "cuda", outdir=tmp_path / "out", jobs=1, perf=False, tune=True,
                max_evals=4, seed=0)
    assert r.verified
    out = r.output_path.read_text()
    assert "float4" in out and "(size_t)" in out
    events = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()[1:]]
    res = next(e for e in events if e["type"] == "tune" and e["kind"] == "result")
    names = [s["pass"] for s in res["steps"]]
    assert names[0] == "binding" and names[-1] == "vectorize_simt", names
    rep = replay(tmp_path / "out" / "provenance.jsonl")
    assert rep.ok if hasattr(rep, "ok") else rep


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("op", ["relu", "add", "gelu"])
def test_vector_form_compiles_with_nvcc_sm90(tmp_path, op):
    _, p, _ = bound(op, "cuda")
    vec = V.apply(p, entry=op)
    src = tmp_path / f"{op}.cu"
    src.write_text(print_program(vec, "cuda"))
    cp = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / f"{op}.o")],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_hip_vector_form_compiles_with_nvcc_through_hip_on_cuda(tmp_path):
    """hip outputs are timed on the H200 through hip_on_cuda.h: the float4 form must build there."""
    simt = ROOT / "xpiler" / "runtime" / "simt"
    _, p, _ = bound("add", "hip")
    vec = V.apply(p, entry="add")
    src = tmp_path / "add.hip"
    src.write_text(print_program(vec, "hip"))
    cp = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-x", "cu", f"-I{simt}", f"-I{simt / 'gpu_include'}",
                         "-c", str(src), "-o", str(tmp_path / "add.o")], capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr


# ------------------------------------------------------ the AVX-512 lane route: a loop and a tail
def _flat_avx512(name):
    """relu_avx512.c / add_avx512.c after the tuner's lane route (fusions, contractions, collapse,
    binding): the flat grid-stride loop, then the masked tail in a ``once`` loop."""
    from xpiler.migration.stage import Stage
    from xpiler.passes.base import get
    from xpiler.schedule.routes_lanes import lane_routes
    from xpiler.schedule.step import StepContext, apply_step
    from xpiler.schedule.tune import sequence_steps
    p = get("detensorize").apply(parse_file(EX / name.split("_")[0] / f"{name}.c", "c"), entry=name, target="cuda")
    p = p[0] if isinstance(p, tuple) else p
    st = Stage(p, "c", name)
    st.text = print_program(p, "c")
    ctx = StepContext({}, [])
    flat = st
    for s in sequence_steps(lane_routes(st, "cuda", ctx)[0]):
        flat = apply_step(s, flat, ctx)
    return flat.program


@pytest.mark.parametrize("name", ["relu_avx512", "add_avx512"])
def test_lane_route_output_vectorizes_beside_its_tail_and_verifies(name):
    """The tail after the loop touches only elements from nvec * 16 on: proven disjoint from the
    loop's [0, nvec * 16), so the threads' new ownership cannot meet it."""
    prog = _flat_avx512(name)
    vec = V.apply(prog, entry=name, block=256, grid_cap=None)
    launch = vec.launch_dict(name)
    text = print_program(vec, "cuda")
    assert "float4" in text and "once < 1" in text
    src = EX / name.split("_")[0] / f"{name}.c"
    v, names = verify(vec, src, "cuda", launch, sizes=(1, 3, 15, 16, 17, 18, 19, 35, 4097))
    assert v.verified
    assert {"n3", "n18", "n19"} <= names


def test_a_statement_after_the_loop_that_meets_its_elements_is_refused():
    from xpiler.ir import nodes as N
    text = ("void k(const float* x, float* y, int n) { for (int i = 0; i < n - 1; i++) y[i] = x[i]; "
            "for (int t = 0; t < 1; t++) y[%s] = 2.0f; }")

    def marked(where):
        p = parse_text(text % where, "c", "k.c")
        f = p.func("k")
        a, b = f.body.stmts
        nf = f.with_(body=f.body.with_(stmts=(a.with_(binding="global.x"), b.with_(binding="global.x"))),
                     kind="kernel")
        return p.with_(dialect="cuda", items=tuple(nf if isinstance(it, N.Func) else it for it in p.items))
    V.check(marked("n - 1"), entry="k")         # past the loop's last element: disjoint
    with pytest.raises(PassError) as e:
        V.check(marked("n / 2"), entry="k")
    assert "after loop 'i'" in e.value.why and e.value.code == "XP4001"


def test_stores_follow_each_buffers_last_write():
    """Two written buffers are stored in the order the body last writes them, so a caller passing
    one array for both ends with the scalar loop's value."""
    for first, second in (("z", "y"), ("y", "z")):
        p = parse_text(f"void k(const float* x, float* z, float* y, int n) {{ for (int i = 0; i < n; i++) "
                       f"{{ {first}[i] = x[i]; {second}[i] = 2.0f; }} }}", "c", "k.c")
        b, _ = binding.apply(p, entry="k", target="cuda", loop="i")
        t = print_program(V.apply(b, entry="k"), "cuda")
        assert t.index(f"(float4 *){first})[") < t.index(f"(float4 *){second})[")


def test_a_declaration_after_the_loop_that_reads_its_output_is_refused():
    from xpiler.ir import nodes as N
    text = ("void k(const float* x, float* y, float* z, int n) { for (int i = 0; i < n; i++) y[i] = x[i]; "
            "float last = y[n - 1]; for (int t = 0; t < 1; t++) z[0] = last; }")
    p = parse_text(text, "c", "k.c")
    f = p.func("k")
    a, d, b = f.body.stmts
    nf = f.with_(body=f.body.with_(stmts=(a.with_(binding="global.x"), d, b.with_(binding="global.x"))), kind="kernel")
    q = p.with_(dialect="cuda", items=tuple(nf if isinstance(it, N.Func) else it for it in p.items))
    with pytest.raises(PassError) as e:
        V.check(q, entry="k")
    assert "'y' that the loop writes" in e.value.why


def test_hip_vector_form_compiles_for_gfx90a(tmp_path):
    from xpiler.platforms.hip import HipPlatform
    from xpiler.platforms.simt_common import clang15
    if clang15() is None:
        pytest.skip("no clang with the AMDGPU target")
    _, p, _ = bound("add", "hip")
    src = tmp_path / "add.hip"
    src.write_text(print_program(V.apply(p, entry="add"), "hip"))
    r = HipPlatform().compile_check(src)
    assert r["ok"], r.get("log")
    assert r["resources"]["add"]["scratch_bytes"] == 0
