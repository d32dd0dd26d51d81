"""Thread phases passing a per-thread accumulator merged into one (``passes/merge_phases.py``),
after un-sharing under the spec's preconditions (``passes/unshare.py``): conv2d_nchw.{cu,hip}
stage a halo tile per input channel; with ``stride >= 1``, ``H >= KH``, ``W >= KW`` the tile's
reads are proved inside it, read from global memory, the three phases merge and the partition
loops collapse. Each rewrite is compiled with gcc and run against the plain recovery."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import loop_recovery, merge_phases, unshare
from xpiler.passes.base import PassError
from xpiler.printers import print_program

from test_pass_loop_recovery_normalize import _lib, ptr
from test_pass_unshare import assert_bang_conv_on_chip

ROOT = Path(__file__).resolve().parent.parent
CONV = ROOT / "examples" / "conv2d_nchw"


def arrays(fn):
    return {d.name for d in walk(fn) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}


def recover(src: Path, normalize, assume=True):
    from xpiler.migration.driver import _launch_to_params, _preconditions_to_params
    from xpiler.spec import load_spec
    sp = load_spec(str(src) + ".toml")
    p = parse_file(src)
    names = [x.name for x in p.func(sp.entry).params]
    return loop_recovery.apply(p, entry=sp.entry, launch=_launch_to_params(dict(sp.launch), sp, names),
                               normalize=normalize, assume=_preconditions_to_params(sp, names) if assume else ())[0]


def run_conv(prog, tmp_path, name, N_, Cin, H, W, Cout, KH, KW, S):
    fn = _lib(print_program(prog), tmp_path, name).conv2d_nchw
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N_, Cin, H, W)).astype(np.float32)
    w = rng.standard_normal((Cout, Cin, KH, KW)).astype(np.float32)
    Ho, Wo = (H - KH) // S + 1, (W - KW) // S + 1
    y = np.full((N_, Cout, Ho, Wo), 7.0, np.float32)
    fn(ptr(x), ptr(w), ptr(y), *map(ctypes.c_int, (N_, Cin, H, W, Cout, KH, KW, S)))
    ref = np.zeros_like(y)
    for i in range(KH):
        for j in range(KW):
            ref += np.einsum("nchw,oc->nohw", x[:, :, i:i + S * (Ho - 1) + 1:S, j:j + S * (Wo - 1) + 1:S], w[:, :, i, j])
    return y, ref


@pytest.mark.parametrize("ext", ["cu", "hip"])
def test_conv2d_nchw_sources_collapse_under_their_preconditions(tmp_path, ext):
    src = CONV / f"conv2d_nchw.{ext}"
    plain = recover(src, False)
    new = recover(src, "partition")
    f = new.func("conv2d_nchw")
    assert not arrays(f)                                  # the tile and the accumulator array are gone
    loops = [l.var for l in walk(f) if isinstance(l, N.For)]
    assert "ho" in loops and "wo" in loops and not {"by", "bx", "ty", "tx"} & set(loops)
    names = {n.name for n in walk(f) if isinstance(n, N.Var)}
    assert not {"span_w", "tile_w", "ty", "tx"} & names                 # no tile index
    assert not [n for n in walk(f) if isinstance(n, N.Cond)]             # no border test
    for shape in ((2, 3, 11, 7, 5, 3, 2, 2), (1, 4, 37, 35, 3, 5, 4, 1), (1, 2, 40, 21, 2, 3, 3, 3)):
        y, ref = run_conv(new, tmp_path, "new", *shape)
        y0, _ = run_conv(plain, tmp_path, "plain", *shape)
        np.testing.assert_array_equal(y, y0)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ext", ["cu", "hip"])
def test_without_the_preconditions_the_partition_does_not_collapse(ext):
    """Without them the tile's reads are not proved inside it (a negative stride reads before
    it), so nothing is un-shared and the three phases stay."""
    with pytest.raises(PassError, match="phases"):
        recover(CONV / f"conv2d_nchw.{ext}", "partition", assume=False)


ACC = """
__global__ void k(const float *x, const float *w, float *y, int n, int C) {
    __shared__ float t[16];
    __shared__ float s[16];
    int i = blockIdx.x * 16 + threadIdx.x;
    s[ACC_AT] = 0.0f;
    for (int c = 0; c < C; ++c) {
        for (int e = threadIdx.x; e < 16; e += 16)
            t[e] = blockIdx.x * 16 + e < n ? x[c * n + blockIdx.x * 16 + e] : 0.0f;
        __syncthreads();
        if (i < n)
            s[ACC_AT] += t[threadIdx.x] * w[c];
        __syncthreads();
    }
    if (i < n)
        y[i] = STORE;
}
"""
LAUNCH = {"grid": ["(n + 15) / 16", 1, 1], "block": [16, 1, 1]}


def merged(src):
    prog = parse_text(src, "cuda", "k.cu")
    plain, _ = loop_recovery.apply(prog, entry="k", launch=LAUNCH, normalize=False)
    f, notes = unshare.unshare(plain.func("k"), plain)
    assert any(a for a, _ in notes), notes              # the tile 't' went
    g, mnotes = merge_phases.merge_phases(f, plain)
    return plain, f, g, mnotes


def test_a_shared_accumulator_array_per_thread_merges_and_runs_the_same(tmp_path):
    plain, f, g, notes = merged(ACC.replace("ACC_AT", "threadIdx.x").replace("STORE", "s[threadIdx.x]"))
    assert ("merged", None) in notes and "s" not in arrays(g)
    new = plain.with_(items=tuple(g if isinstance(i, N.Func) and i.name == "k" and i.body is not None else i
                                  for i in plain.items))
    outs = []
    for name, p in (("plain", plain), ("new", new)):
        fn = _lib(print_program(p), tmp_path, name).k
        rng = np.random.default_rng(5)
        n, C = 37, 3
        x = rng.standard_normal(C * n).astype(np.float32)
        w = rng.standard_normal(C).astype(np.float32)
        y = np.full(n, 9.0, np.float32)
        fn(ptr(x), ptr(w), ptr(y), n, C)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1], x.reshape(C, n).T @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("at,store,why", [
    # two threads add into one element: the order across threads would change
    ("threadIdx.x / 2", "s[threadIdx.x / 2]", "two threads may share an element of 's'"),
    # the store phase reads what it stores to (another thread's output)
    ("threadIdx.x", "s[threadIdx.x] + y[0]", "reads a buffer the phases store to"),
])
def test_phases_that_share_state_between_threads_are_kept(at, store, why):
    _, f, g, notes = merged(ACC.replace("ACC_AT", at).replace("STORE", store))
    assert "s" in arrays(g) and ("merged", None) not in notes
    assert any(w and why in w for _, w in notes), notes


# every source/target here is a whole conv migration (135 s on a loaded host for .cu -> bang): pytest -m long;
# the merge itself keeps its unit tests above in the default run
@pytest.mark.parametrize("src,to", [pytest.param("conv2d_nchw.cu", "bang", marks=pytest.mark.long),
                                    pytest.param("conv2d_nchw.cu", "hip", marks=pytest.mark.long),
                                    # the hip source's copy of the cuda one's route: pytest -m long
                                    pytest.param("conv2d_nchw.hip", "bang", marks=pytest.mark.long)])
def test_conv2d_nchw_simt_sources_reach_the_targets_units_and_verify(tmp_path, src, to):
    """The issue 15 idiom rule on these outputs: bang with NRAM/WRAM and __bang_conv, hip with
    LDS and an MFMA builtin; each verified on its emulator."""
    import re

    from xpiler.api import migrate
    r = migrate(CONV / src, to, outdir=tmp_path / "o", perf=False, jobs=1)
    assert r.verified
    text = (tmp_path / "o" / ("conv2d_nchw.mlu" if to == "bang" else "conv2d_nchw.hip")).read_text()
    if to == "bang":
        assert_bang_conv_on_chip(text)
    else:
        assert re.search(r"__shared__ float \w+\[", text)
        assert "__builtin_amdgcn_mfma_f32_16x16x4f32(" in text
