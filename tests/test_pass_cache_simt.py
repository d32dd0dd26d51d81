"""cache / pipeline on cuda/hip: matmul-like nests become shared-memory (LDS) tiled kernels."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import binding, cache, pipeline
from xpiler.passes.base import PassError

from _simt_tile_util import bound, verify


def shared(prog, entry):
    return {n.name: n for n in walk(prog.func(entry)) if isinstance(n, N.Decl) and n.scope == "shared"}


@pytest.mark.parametrize("op,dialect,tile", [("gemm", "cuda", 16), ("gemm", "hip", 32), ("bmm", "cuda", 8)])
def test_matmul_nest_becomes_shared_tiles_and_verifies(op, dialect, tile):
    src, entry, p = bound(op, dialect)
    q, launch = cache.apply(p, entry=entry, target=dialect, tile=tile)
    sh = shared(q, entry)
    assert set(sh) == {"xp_As", "xp_Bs"}
    assert all(d.type.dims[0].value == tile * tile for d in sh.values())
    assert sum(isinstance(n, N.Barrier) and n.kind == "block" for n in walk(q.func(entry))) == 2
    assert launch["block"] == [tile, tile, 1]
    assert launch["grid"][0] == f"(N + {tile - 1}) / {tile}" and launch["grid"][1] == f"(M + {tile - 1}) / {tile}"
    assert launch["grid"][2] == ("batch" if op == "bmm" else 1)
    v = verify(q, src, dialect, launch)
    assert v.verified, v.failures[:1]


def test_wrong_launch_is_caught():
    # the tiled kernel relies on its launch: a too small grid leaves C unwritten (tests can fail)
    src, entry, p = bound("gemm", "cuda")
    q, launch = cache.apply(p, entry=entry, target="cuda", tile=16)
    bad = dict(launch, grid=[1, 1, 1])
    assert not verify(q, src, "cuda", bad, instances=["base"]).verified


def test_refuses_tile_footprint_over_48k():
    src, entry, p = bound("gemm", "hip")
    with pytest.raises(PassError) as e:
        cache.check(p, entry=entry, target="hip", tile=128)
    assert e.value.code == "XP4001" and e.value.line == 7 and "1024 threads" in e.value.why
    # the shared-memory rule on its own: a 16x16 tile next to 40 KiB of existing shared data
    text = ("extern \"C\" __global__ void g(const float* A, const float* B, float* C, int M, int N, int K) {\n"
            "    __shared__ float big[10240];\n"
            "    for (int i = 0; i < M; ++i) {\n"
            "        for (int j = 0; j < N; ++j) { float acc = 0.0f;\n"
            "            for (int k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];\n"
            "            C[i * N + j] = acc; } } }\n")
    prog = parse_text(text, "cuda", "big.cu")
    f = prog.func("g")
    loop = f.body.stmts[1].with_(binding="global.x")
    prog = prog.with_(items=(f.with_(body=f.body.with_(stmts=(f.body.stmts[0], loop))),))
    cache.check(prog, entry="g", target="cuda", tile=16)            # 40 KiB + 2 KiB fits
    cache.check(prog, entry="g", target="cuda", tile=32)            # 40 KiB + 8 KiB = 48 KiB fits
    with pytest.raises(PassError) as e:
        cache.check(prog, entry="g", target="cuda", tile=32, double=True)
    assert e.value.code == "XP4001" and "57344 bytes" in e.value.why and e.value.line == 3


def test_refuses_non_affine_access_with_location():
    text = ("void g(const float* A, const float* B, const int* idx, float* C, int M, int N, int K) {\n"
            "    for (int i = 0; i < M; ++i) {\n"
            "        for (int j = 0; j < N; ++j) {\n"
            "            float acc = 0.0f;\n"
            "            for (int k = 0; k < K; ++k)\n"
            "                acc += A[i * K + k] * B[(k * k) % K * N + j];\n"
            "            C[i * N + j] = acc;\n"
            "        }\n"
            "    }\n"
            "}\n")
    p, _ = binding.apply(parse_text(text, "c", "nonaffine.c"), entry="g", target="cuda")
    with pytest.raises(PassError) as e:
        cache.apply(p, entry="g", target="cuda")
    assert e.value.code == "XP4001" and "'B'" in e.value.why and "affine" in e.value.why
    assert e.value.line == 6


def test_not_a_matmul_is_nothing_to_do():
    src, entry, p = bound("gemv", "cuda")
    with pytest.raises(PassError) as e:
        cache.check(p, entry=entry, target="cuda")
    assert e.value.code == "XP4002"
    assert cache.candidates(p, "cuda") == []
    src, entry, p = bound("gemm", "cuda")
    cands = cache.candidates(p, "cuda")
    assert [c["tile"] for c in cands if "thread_tile" not in c] == [8, 16, 32]
    # and the register-blocked shapes (passes/patterns/simt_regtile.py)
    assert [(c["tile"], c["thread_tile"], c["bk"]) for c in cands if "thread_tile" in c and "vec" not in c] == \
        [(64, 4, 16), (128, 8, 8), (64, 8, 8)]


@pytest.mark.parametrize("op,dialect", [("gemm", "hip"), ("bmm", "cuda")])
def test_pipeline_double_buffers_the_tiles_and_verifies(op, dialect):
    src, entry, p = bound(op, dialect)
    q, launch = cache.apply(p, entry=entry, target=dialect, tile=8)
    r = pipeline.apply(q, entry=entry, target=dialect, depth=2)
    sh = shared(r, entry)
    assert all(d.type.dims[0].value == 2 * 64 for d in sh.values())
    # one barrier per tile in the loop (+ the prologue's)
    assert sum(isinstance(n, N.Barrier) for n in walk(r.func(entry))) == 2
    v = verify(r, src, dialect, launch)
    assert v.verified, v.failures[:1]
    with pytest.raises(PassError) as e:        # already double-buffered: not the cache form any more
        pipeline.check(r, entry=entry, target=dialect)
    assert e.value.code == "XP4002"
    with pytest.raises(PassError) as e:        # untiled kernel: run cache first
        pipeline.check(p, entry=entry, target=dialect)
    assert e.value.code == "XP4002"
