"""The cache pass's wide register-blocked matmul form on cuda/hip (``vec=4``,
passes/patterns/simt_regtile.py ``body_wide``): a BM x BN block tile, T x T per thread, A staged
transposed, shared-memory reads as float4. Verified on the SIMT emulator (spec instances and the
derived boundary instances) and by the real compilers where installed; refused shapes say why.
Also: a hip source whose launch is written with ``cdiv`` (examples/bmm/bmm.hip) now un-tiles, so
that it reaches the register-blocked forms when migrated to cuda."""
import shutil
import tempfile
from pathlib import Path

import pytest
import z3

from xpiler.frontend import parse_file
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, cache, loop_recovery, untile
from xpiler.passes.base import PassError
from xpiler.passes.patterns import polyz
from xpiler.passes.patterns import simt_regtile as RT
from xpiler.printers import print_program
from xpiler.spec import DIALECT_EXT, load_spec

from _simt_tile_util import ROOT, bound, verify


def wide(p, entry, dialect, BM, BN, T, BK, TN=None, prefetch=False):
    return cache.apply(p, entry=entry, target=dialect, tile=BM, tile_n=BN, thread_tile=T, bk=BK, vec=4,
                       thread_tile_n=TN, prefetch=prefetch)


@pytest.mark.parametrize("op,dialect,shape", [("gemm", "cuda", (128, 128, 8, 8, 8, False)),
                                              ("bmm", "cuda", (128, 64, 8, 8, 8, False)),
                                              ("gemm", "hip", (64, 128, 8, 8, 8, False)),
                                              ("bmm", "hip", (64, 64, 4, 16, 4, False)),
                                              ("gemm", "cuda", (128, 64, 8, 8, 4, True)),
                                              ("bmm", "cuda", (64, 64, 4, 16, 4, True)),
                                              ("gemm", "hip", (128, 128, 8, 8, 8, True))])
def test_wide_tiles_verify(op, dialect, shape):
    BM, BN, T, BK, TN, pf = shape
    src, entry, p = bound(op, dialect)
    q, launch = wide(p, entry, dialect, BM, BN, T, BK, TN, pf)
    assert launch["block"] == [BN // TN, BM // T, 1]
    assert launch["grid"][:2] == [f"(N + {BN - 1}) / {BN}", f"(M + {BM - 1}) / {BM}"]
    decls = {n.name: n for n in walk(q.func(entry)) if isinstance(n, N.Decl)}
    assert decls["xp_As"].type.dims[0].value == BK * (BM + 4)     # transposed, padded rows
    assert decls["xp_Bs"].type.dims[0].value == BK * BN
    assert [d.value for d in decls["xp_acc"].type.dims] == [T, TN]
    assert ("xp_pa" in decls) == pf            # the prefetch registers
    text = print_program(q, dialect)
    assert "((const float4 *)xp_As)" in text and "((const float4 *)xp_Bs)" in text and "#pragma unroll" in text
    v = verify(q, src, dialect, launch)
    assert v.verified, v.failures[:1]


def test_a_short_grid_is_caught():
    """Each block owns its tile: a grid too small leaves C unwritten (the test can fail)."""
    src, entry, p = bound("gemm", "cuda")
    q, launch = wide(p, entry, "cuda", 64, 64, 8, 8)
    assert not verify(q, src, "cuda", dict(launch, grid=[1, 1, 1]), instances=["medium"]).verified


def test_a_wrong_thread_mapping_is_caught():
    """The float4 runs must match the rows / columns a thread stores: a store with the scalar
    form's strided mapping writes other elements than the ones summed (the test can fail)."""
    src, entry, p = bound("gemm", "cuda")
    ct, BM, BN, T, TN, BK, _ = cache.plan_wide(p, entry, 64, 64, 8, 8, 4)
    from xpiler.passes.patterns import simt_tile as ST
    text = RT.body_wide(ct, "cuda", BM, BN, T, TN, BK).replace("xp_ty * 4 + xp_m % 4 + xp_m / 4 * 32",
                                                            "xp_ty + xp_m * 8")
    assert "xp_ty + xp_m * 8" in text
    q = ST.rebuild(p, ct, text)
    assert not verify(q, src, "cuda", RT.launch_wide(ct, "cuda", BM, BN, T, TN), instances=["medium"]).verified


def test_a_prefetch_that_skips_the_store_is_caught():
    """With prefetch the registers must reach shared memory every slice: dropping the store of
    the prefetched A values leaves the slices after the first stale (the test can fail)."""
    src, entry, p = bound("gemm", "cuda")
    ct, BM, BN, T, TN, BK, _ = cache.plan_wide(p, entry, 64, 64, 4, 16, 4, prefetch=True)
    from xpiler.passes.patterns import simt_tile as ST
    good = RT.body_wide(ct, "cuda", BM, BN, T, TN, BK, True)
    bad = good.replace("xp_As[xp_c * 68 + xp_r] = xp_pa[xp_u];", "")
    assert bad != good
    q = ST.rebuild(p, ct, bad)
    assert not verify(q, src, "cuda", RT.launch_wide(ct, "cuda", BM, BN, T, TN), instances=["medium"]).verified


@pytest.mark.parametrize("dialect,prefetch", [("cuda", False), ("hip", False), ("cuda", True), ("hip", True)])
def test_real_compilers_accept_it(dialect, prefetch):
    from xpiler.platforms import get_platform
    if dialect == "cuda" and not shutil.which("nvcc"):
        pytest.skip("nvcc not installed")
    if dialect == "hip" and not (shutil.which("clang++-15") or Path("/usr/lib/llvm-15/bin/clang++").exists()):
        pytest.skip("clang-15 not installed")
    src, entry, p = bound("gemm", dialect)
    q, _ = wide(p, entry, dialect, 128, 128, 8, 8, None, prefetch)
    path = Path(tempfile.mkdtemp(prefix="xp-wide-")) / f"k{DIALECT_EXT[dialect]}"
    path.write_text(print_program(q, dialect))
    r = get_platform(dialect).compile_check(path, arch="sm_90" if dialect == "cuda" else "gfx90a")
    assert r["ok"], r["log"][-500:]
    if dialect == "cuda":          # ptxas: the accumulators stay in registers
        assert r["resources"][entry]["spill_bytes"] == 0, r["resources"]


@pytest.mark.parametrize("params,words", [
    (dict(tile=64, tile_n=64, thread_tile=6, bk=8, vec=4), "not a multiple of 4"),
    (dict(tile=128, tile_n=100, thread_tile=8, bk=8, vec=4), "not a multiple of thread tile 8"),
    (dict(tile=512, tile_n=512, thread_tile=8, bk=8, vec=4), "threads per block"),
    (dict(tile=128, tile_n=128, thread_tile=16, bk=8, vec=4), "too many accumulators"),
    (dict(tile=128, tile_n=128, thread_tile=8, bk=64, vec=4), "bytes of shared memory"),
    (dict(tile=128, tile_n=128, thread_tile=8, bk=8, vec=2), "float4 only"),
    (dict(tile=64, tile_n=128, thread_tile=4, bk=16), "needs the wide form"),
    (dict(tile=64, thread_tile=4, thread_tile_n=8, bk=16), "needs the wide form"),
    (dict(tile=64, thread_tile=4, bk=16, prefetch=True), "only the wide register-blocked form"),
    (dict(tile=64, tile_n=64, thread_tile=8, thread_tile_n=6, bk=8, vec=4), "not a multiple of 4"),
    (dict(tile=32, tile_n=64, thread_tile=4, bk=3, vec=4, prefetch=True), "do not split evenly"),
])
def test_refused_shapes_say_why(params, words):
    src, entry, p = bound("gemm", "cuda")
    with pytest.raises(PassError) as e:
        cache.apply(p, entry=entry, target="cuda", **params)
    assert e.value.code == "XP4001" and words in e.value.why, e.value.why
    with pytest.raises(PassError):
        cache.check(p, entry=entry, target="cuda", **params)


def test_only_float32():
    src, entry, p = bound("gemm", "cuda")
    ct, *_ = cache.plan_wide(p, entry, 128, 128, 8, 8, 4)
    ct.dtypes = dict(ct.dtypes, B="float16")
    assert "float32" in RT.check_wide(ct, 128, 128, 8, 8, 8)


def test_the_search_offers_the_wide_shapes_and_keeps_the_old_ones():
    from xpiler.schedule.space import legal_steps
    src, entry, p = bound("bmm", "cuda")
    cands = cache.candidates(p, "cuda")
    assert [(c["tile"], c["tile_n"], c["thread_tile"], c.get("thread_tile_n", c["thread_tile"]), c["bk"],
             c.get("prefetch", False)) for c in cands if c.get("vec") == 4] == list(RT.WIDE_SHAPES)
    assert [(c["tile"], c["thread_tile"], c["bk"]) for c in cands if "thread_tile" in c and "vec" not in c] == \
        list(RT.SHAPES)
    keys = [s.describe() for s in legal_steps(p, entry, "cuda", ("cache",))]
    assert "cache(bk=8, thread_tile=8, tile=128, tile_n=128, vec=4)" in keys
    assert "cache(bk=8, prefetch=True, thread_tile=8, thread_tile_n=4, tile=128, tile_n=64, vec=4)" in keys


def test_cost_model_rates_float4_reads_above_the_scalar_form_of_the_same_shape():
    """model:analytic at 1024^3: the wide form of a shape is rated faster than the scalar
    register-blocked form of the same shape (fewer index operations per multiply-add)."""
    from xpiler.schedule.cost import estimate, launch_env
    src, entry, p = bound("gemm", "cuda")
    sizes = {"M": 1024, "N": 1024, "K": 1024}

    def ms(q, tile_m, tile_n, block):
        grid = (1024 // tile_n, 1024 // tile_m, 1)
        return estimate(q, entry, "cuda", sizes, threads=grid[0] * grid[1] * block[0] * block[1],
                        env=launch_env(grid, block)).ms
    for BM, T, BK in ((128, 8, 8), (64, 4, 16)):
        old, _ = cache.apply(p, entry=entry, target="cuda", tile=BM, thread_tile=T, bk=BK)
        new, _ = wide(p, entry, "cuda", BM, BM, T, BK)
        b = (BM // T, BM // T, 1)
        assert ms(new, BM, BM, b) < ms(old, BM, BM, b)


# ------------------------------------------------------------------------------ bmm.hip -> cuda
def _hip_untiled(name):
    """examples/bmm/<name>.hip through loop recovery (launch from its spec: cdiv) and untile."""
    src = ROOT / "examples" / "bmm" / f"{name}.hip"
    sp = load_spec(str(src) + ".toml")
    p, _ = loop_recovery.apply(parse_file(src), entry=sp.entry, launch=dict(sp.launch))
    return src, sp.entry, untile.apply(p, entry=sp.entry)


def test_cdiv_bounds_are_read_as_the_ceiling():
    z = polyz.Z()
    c = N.Call("cdiv", (N.Var("M"), N.Const(16, "int32", "16")))
    s = z3.Solver()
    m = z.v("M")
    s.add(m >= 0, z3.Not(z3.And(z.int(c) * 16 >= m, z.int(c) * 16 < m + 16)))
    assert s.check() == z3.unsat
    with pytest.raises(polyz.Refused):            # a non-constant divisor is still refused
        z.int(N.Call("cdiv", (N.Var("M"), N.Var("T"))))


def test_bmm_hip_untiles_and_reaches_the_register_tiles():
    """bmm.hip's launch is 'cdiv(N,16)'; loop recovery keeps it as the block loops' bound, which
    untile's prover did not read (XP4001), so bmm.hip -> cuda never reached a register tile."""
    src, entry, p = _hip_untiled("bmm")
    assert p.dialect == "c"
    q, _ = binding.apply(p, entry=entry, target="cuda")
    cands = cache.candidates(q, "cuda")
    assert any(c.get("vec") == 4 for c in cands) and any("thread_tile" in c and "vec" not in c for c in cands)
    r, launch = wide(q, entry, "cuda", 128, 64, 8, 8)
    v = verify(r, src, "cuda", launch)
    assert v.verified, v.failures[:1]


@pytest.mark.parametrize("name", ["bmm_mfma"])
def test_mfma_sources_still_say_why(name):
    """The MFMA sources are refused before the cache pass (their detensorized matrix-core step
    accumulates a scalar per lane through shared exchange buffers, not a local array per thread):
    said with XP4002 (nothing to un-tile), never a wrong contraction."""
    src = ROOT / "examples" / "bmm" / f"{name}.hip"
    sp = load_spec(str(src) + ".toml")
    with pytest.raises(PassError) as e:
        p, _ = loop_recovery.apply(parse_file(src), entry=sp.entry, launch=dict(sp.launch))
        untile.apply(p, entry=sp.entry)
    assert e.value.code in ("XP4001", "XP4002")


# ------------------------------------------------------------------------------ benchmarks/gemm_forms.py
def test_the_timing_script_makes_every_form_without_a_gpu(tmp_path):
    """The non-GPU half of benchmarks/gemm_forms.py: one kernel per cache candidate (plus the
    untuned one), each with a spec the timing harness reads at the perf shape; a wide variant it
    writes verifies on the emulator."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gemm_forms", ROOT / "benchmarks" / "gemm_forms.py")
    gf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gf)
    made = gf.make_variants("bmm", tmp_path)
    labels = [m[0] for m in made]
    assert labels[0] == "untuned" and "reg64x64_t4_bk16" in labels
    assert len([x for x in labels if x.startswith("wide")]) == len(RT.WIDE_SHAPES)
    assert "wide128x64_t8x4_bk8_pf" in labels
    path = dict((m[0], m[1]) for m in made)["wide128x64_t8_bk8"]
    assert path.parent.name == "bmm__wide128x64_t8_bk8" and "float4" in path.read_text()
    assert load_spec(str(path) + ".toml").launch["block"] == [8, 16, 1]
    sys_path = __import__("sys").path
    sys_path.insert(0, str(ROOT / "benchmarks"))
    from gpu_perf import _perf_spec
    op, ps = _perf_spec(path)
    assert op == "bmm" and ps.shapes[0]["M"] == 256 and ps.shapes[0]["batch"] == 16
    assert gf.verify_variant("bmm", path)


# ------------------------------------------------------------------------------ half inputs
@pytest.mark.parametrize("shape", [(64, 64, 4, 16, 4, False), (128, 64, 8, 8, 4, True)])
def test_half_operands_converted_by_the_source_are_staged_as_float(shape):
    """A scalar half x half -> float gemm (spec of gemm_wmma.cu) whose source converts each load
    with __half2float: the tile holds the converted floats, the product is formed in float as
    in the source, and it verifies (the old square form still refuses half)."""
    from _simt_tile_util import half_gemm
    BM, BN, T, BK, TN, pf = shape
    src, p = half_gemm()
    with pytest.raises(PassError):
        cache.apply(p, entry="gemm_wmma", target="cuda", tile=64, thread_tile=4, bk=16)
    assert any(c.get("vec") == 4 for c in cache.candidates(p, "cuda"))
    q, launch = wide(p, "gemm_wmma", "cuda", BM, BN, T, BK, TN, pf)
    text = print_program(q, "cuda")
    assert "__half2float(A[" in text and "__half2float(xp_a4" not in text
    v = verify(q, src, "cuda", launch)
    assert v.verified, v.failures[:1]


def test_a_half_operand_the_source_multiplies_unconverted_is_refused():
    from xpiler.frontend import parse_text
    text = (ROOT / "tests" / "simt_inputs" / "gemm_half_scalar.cu").read_text()
    text = text.replace("__half2float(B[k * N + j])", "B[k * N + j]")
    assert "* B[k * N + j]" in text
    p = parse_text(text, "cuda", "g.cu")
    f = p.func("gemm_wmma")
    li = f.body.stmts[0]
    li = li.with_(binding="global.y", body=li.body.with_(stmts=(li.body.stmts[0].with_(binding="global.x"),)))
    p = p.with_(items=tuple(f.with_(body=f.body.with_(stmts=(li,))) if it is f else it for it in p.items))
    with pytest.raises(PassError) as e:
        wide(p, "gemm_wmma", "cuda", 64, 64, 4, 16)
    assert e.value.code == "XP4001" and "converts to float before the multiply" in e.value.why


def test_cost_model_runs_a_split_loop_whose_step_exceeds_its_range_once():
    """model:analytic: a sequential loop split by a factor larger than its trip count
    (``for (k = 0; k < K; k += 8 * 256)`` around the chunk) runs once, not 1024/2048 of a time:
    the fraction made each split of the k loop halve the modelled time (a tuned gemm was modelled
    at 0.0034 ms at 1024^3)."""
    from xpiler.passes import split
    from xpiler.schedule.cost import estimate, launch_env
    src, entry, p = bound("gemm", "cuda")
    sizes = {"M": 1024, "N": 1024, "K": 1024}
    q, launch = wide(p, entry, "cuda", 128, 64, 8, 8, 4, True)
    env = launch_env((16, 8, 1), tuple(launch["block"]))
    r = split.apply(q, entry=entry, loop="xp_k0", factor=256)
    r = r[0] if isinstance(r, tuple) else r
    a = estimate(q, entry, "cuda", sizes, threads=16 * 8 * 256, env=env).ms
    b = estimate(r, entry, "cuda", sizes, threads=16 * 8 * 256, env=env).ms
    assert a <= b < 1.05 * a


def test_the_tuner_offers_the_register_tiles_right_after_bmm_hips_route():
    """xpiler/schedule/tune.py through_loops: bmm.hip's route (loop recovery, untile, binding) ends
    in a one-thread-per-row kernel the model rates at 133 ms at 16 x 256^3, below the tiled
    source, so a 30-candidate search never expanded it; the register tiles after it are root
    steps of their own, and the wide ones are among them."""
    from xpiler.migration.stage import Stage
    from xpiler.schedule.step import StepContext
    from xpiler.schedule.tune import SEQUENCE, sequence_steps, through_loops
    src = ROOT / "examples" / "bmm" / "bmm.hip"
    sp = load_spec(str(src) + ".toml")
    prog = parse_file(src)
    st = Stage(prog.with_launch(sp.entry, dict(sp.launch)), "hip", sp.entry)
    st.text = print_program(prog, "hip")
    steps = through_loops(st, "cuda", StepContext(dict(sp.launch), []))
    tiled = [sequence_steps(s) for s in steps if s.pass_name == SEQUENCE and len(sequence_steps(s)) == 4]
    assert [x.pass_name for x in tiled[0]] == ["loop_recovery", "untile", "binding", "cache"]
    assert len(tiled) == len(RT.SHAPES) + len(RT.WIDE_SHAPES)
    assert any(t[-1].params.get("vec") == 4 and t[-1].params.get("prefetch") for t in tiled)
