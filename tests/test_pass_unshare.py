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


def arrays(prog):
    return {d.name for d in walk(prog.func("k")) if isinstance(d, N.Decl) and isinstance(d.type, N.Array)}


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


def test_conv1d_hip_to_bang_uses_bang_conv_and_verifies(tmp_path):
    """examples/conv1d/conv1d.hip stages its filter in LDS; un-shared, the BANG plan reaches the
    cache / tensorize convolution form (WRAM filter, `__bang_conv`) and the output verifies."""
    from pathlib import Path

    from xpiler.api import migrate
    root = Path(__file__).resolve().parent.parent
    r = migrate(root / "examples" / "conv1d" / "conv1d.hip", "bang", outdir=tmp_path / "o", perf=False, jobs=1)
    assert r.verified
    text = (tmp_path / "o" / "conv1d.mlu").read_text()
    assert "__bang_conv(" in text and "__wram__" in text and "__nram__" in text
