"""Shared-memory un-staging (``passes/unshare.py``), run by loop recovery's normalization: a
block's cooperative copy of a read-only global slice into shared memory is replaced by global
reads, so the partition loops collapse. Each un-sharing is compiled with gcc and run against the
plain recovery (``normalize=False``); each refusal checks that the array stays and why."""
from __future__ import annotations

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import loop_recovery, unshare
from xpiler.printers import print_program

from test_pass_loop_recovery_normalize import _lib, ptr

LAUNCH = {"grid": ["(L - KW + 1 + 63) / 64", "N * Cout", 1], "block": [64, 1, 1], "shared_bytes": "Cin * KW * 4"}

CONV = """
__global__ void k(const float *input, const float *weight, float *output,
                  int N, int Cin, int L, int Cout, int KW) {
    extern __shared__ float filt[];
    int Lo = L - KW + 1;
    int row = blockIdx.y;
    int n = row / Cout;
    int co = row % Cout;
    int lo = blockIdx.x * 64 + threadIdx.x;
    for (int e = threadIdx.x; e < Cin * KW; e += 64)
        filt[e] = weight[(long)co * Cin * KW + e];
    __syncthreads();
    if (lo < Lo) {
        float sum = 0.0f;
        for (int ci = 0; ci < Cin; ++ci)
            for (int q = 0; q < KW; ++q)
                sum += input[((long)n * Cin + ci) * L + lo + q] * filt[READ];
        output[(long)row * Lo + lo] = sum;
    }
}
"""


def recover(src, normalize=True):
    prog = parse_text(src, "cuda", "k.cu")
    new, _ = loop_recovery.apply(prog, entry="k", launch=LAUNCH, normalize=normalize)
    return new


def arrays(prog, entry="k"):
    return {d.name for d in walk(prog.func(entry)) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}


def run(prog, tmp_path, name, N_=2, Cin=3, L=70, Cout=5, KW=4):
    fn = _lib(print_program(prog), tmp_path, name).k
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N_, Cin, L)).astype(np.float32)
    w = rng.standard_normal((Cout, Cin, KW)).astype(np.float32)
    y = np.full((N_, Cout, L - KW + 1), 7.0, np.float32)
    fn(ptr(x), ptr(w), ptr(y), *map(int, (N_, Cin, L, Cout, KW)))
    return x, w, y


def test_filter_staging_is_read_from_global_memory_and_the_partition_collapses(tmp_path):
    src = CONV.replace("READ", "ci * KW + q")
    plain, new = recover(src, False), recover(src)
    assert "filt" in arrays(plain) and "filt" not in arrays(new)
    # no block or thread loop is left: one loop per output row, then per output position
    text = print_program(new)
    assert "weight[(long)co * Cin * KW + (ci * KW + q)]" in text
    x, w, y = run(new, tmp_path, "new")
    _, _, y0 = run(plain, tmp_path, "plain")
    np.testing.assert_array_equal(y, y0)
    ref = np.stack([np.einsum("ncq,ocq->no", np.stack([x[:, :, j:j + 4] for j in range(67)], 2)[:, :, j], w)
                    for j in range(67)], -1)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("read,why", [
    # one past the staged range when q == KW - 1: the phase never wrote it
    ("ci * KW + q + 1", "outside"),
    # a thread-dependent element that may lie anywhere
    ("lo", "outside"),
])
def test_a_read_the_phase_may_not_have_written_keeps_the_array(read, why):
    f = recover(CONV.replace("READ", read)).func("k")
    _, notes = unshare.unshare(f)
    assert "filt" in {d.name for d in walk(f) if isinstance(d, N.Decl)}
    assert any(w and why in w for _, w in notes), notes


def test_a_second_write_keeps_the_array():
    src = CONV.replace("READ", "ci * KW + q").replace("__syncthreads();", "__syncthreads();\n    if (threadIdx.x == 0) filt[0] = 1.0f;\n    __syncthreads();")
    f = recover(src).func("k")
    assert "filt" in {d.name for d in walk(f) if isinstance(d, N.Decl)}
    assert any(w and "written again" in w for _, w in unshare.unshare(f)[1])


def test_a_staged_value_from_a_buffer_the_kernel_writes_keeps_the_array():
    src = CONV.replace("READ", "ci * KW + q").replace("filt[e] = weight[(long)co * Cin * KW + e];",
                                                      "filt[e] = output[e];")
    f = recover(src).func("k")
    assert "filt" in {d.name for d in walk(f) if isinstance(d, N.Decl)}
    assert any(w and "read-only kernel parameter" in w for _, w in unshare.unshare(f)[1])


def assert_bang_conv_on_chip(text):
    """A ``__bang_conv`` whose output and input are NRAM arrays and whose filter is a WRAM array."""
    import re
    wram = re.findall(r"__wram__ float (\w+)\[", text)
    nram = re.findall(r"__nram__ float (\w+)\[", text)
    call = re.search(r"__bang_conv\(([^;]*)\);", text)
    assert wram and nram and call
    args = [a.strip() for a in call.group(1).split(",")]
    assert args[2] in wram and args[1] in nram and args[0] in nram


@pytest.mark.parametrize("to", [pytest.param("bang", marks=pytest.mark.long), "cuda"])   # (bang: pytest -m long)
def test_conv1d_hip_reaches_the_targets_staging_and_verifies(tmp_path, to):
    """examples/conv1d/conv1d.hip stages its filter in LDS; un-shared, the BANG plan reaches the
    cache / tensorize convolution form (WRAM filter, NRAM input, `__bang_conv` on both) and the
    cuda plan the implicit-GEMM shared tiles (both tiles feed the accumulation); each verifies."""
    import re
    from pathlib import Path

    from xpiler.api import migrate
    root = Path(__file__).resolve().parent.parent
    r = migrate(root / "examples" / "conv1d" / "conv1d.hip", to, outdir=tmp_path / "o", perf=False, jobs=1)
    assert r.verified
    text = (tmp_path / "o" / ("conv1d.mlu" if to == "bang" else "conv1d.cu")).read_text()
    if to == "bang":
        assert_bang_conv_on_chip(text)
    else:
        # (the wide register-blocked tiles, the cuda default for a float32 matmul since 2026-12-05:
        # both tiles are read as float4 runs into registers that feed the accumulation)
        shared = re.findall(r"__shared__ __align__\(16\) float (\w+)\[", text)
        assert len(shared) == 2
        assert all(f"((const float4 *){s})[" in text for s in shared), "the staged tiles are not read"
        assert "xp_acc[" in text and "+=" in text


TWO = """
__global__ void k(const float *x, const float *w, float *y, int n) {
    __shared__ float lds[64 + 8];
    float *row = lds;
    float *taps = lds + 64;
    int i = blockIdx.x * 32 + threadIdx.x;
    for (int e = threadIdx.x; e < 64; e += 32)
        row[e] = blockIdx.x * 32 + e < n + 7 ? x[blockIdx.x * 32 + e] : 0.0f;
    for (int e = threadIdx.x; e < 8; e += 32)
        taps[e] = w[e];
    __syncthreads();
    if (i < n) {
        const float *win = row + threadIdx.x;
        float s = 0.0f;
        for (int q = 0; q < 8; ++q)
            s += win[q] * taps[q];
        y[i] = s;
    }
}
"""
TWO_LAUNCH = {"grid": ["(n + 31) / 32", 1, 1], "block": [32, 1, 1]}


def test_two_regions_of_one_array_through_pointers(tmp_path):
    """Two copy loops fill disjoint parts of one array through pointers into it (Z3: the parts do
    not overlap); a read through a pointer made after the phase is matched to its part."""
    prog = parse_text(TWO, "cuda", "k.cu")
    plain, _ = loop_recovery.apply(prog, entry="k", launch=TWO_LAUNCH, normalize=False)
    new, _ = loop_recovery.apply(prog, entry="k", launch=TWO_LAUNCH, normalize=True)
    assert "lds" in arrays(plain) and not arrays(new)
    outs = []
    for name, p in (("plain", plain), ("new", new)):
        fn = _lib(print_program(p), tmp_path, name).k
        rng = np.random.default_rng(1)
        n = 100
        x = rng.standard_normal(n + 40).astype(np.float32)
        w = rng.standard_normal(8).astype(np.float32)
        y = np.zeros(n, np.float32)
        fn(ptr(x), ptr(w), ptr(y), 100)
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = np.array([sum((x[i + q] if i + q < n + 7 else 0.0) * w[q] for q in range(8)) for i in range(n)], np.float32)
    np.testing.assert_allclose(outs[1], ref, rtol=1e-5, atol=1e-5)


def test_conv2d_nchw_hip_keeps_its_lds_the_stride_sign_is_not_known():
    """examples/conv2d_nchw/conv2d_nchw.hip: its window reads stay inside the staged field only
    for stride >= 0, which nothing in the kernel states, so the LDS phase is kept."""
    from pathlib import Path

    from xpiler.frontend import parse_file
    from xpiler.migration.driver import _launch_to_params
    from xpiler.spec import load_spec
    src = Path(__file__).resolve().parent.parent / "examples" / "conv2d_nchw" / "conv2d_nchw.hip"
    sp = load_spec(str(src) + ".toml")
    p = parse_file(src)
    launch = _launch_to_params(dict(sp.launch), sp, [x.name for x in p.func(sp.entry).params])
    q, _ = loop_recovery.apply(p, entry=sp.entry, launch=launch, normalize="loops")
    f, notes = unshare.unshare(q.func(sp.entry), q)
    assert "lds" in {d.name for d in walk(f) if isinstance(d, N.Decl)}
    assert any(w and "'win' may lie outside" in w for _, w in notes), notes
