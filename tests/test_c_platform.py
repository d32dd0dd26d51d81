"""The c platform: native AVX-512 VNNI where the CPU has it, SIMD Everywhere otherwise."""
import os

import numpy as np
import pytest

from xpiler.platforms.c import CPlatform, cpu_flags, simde_available
from xpiler.verify import test_kernel as verify

from spec_text import elementwise_spec

KERNEL = r"""
#include <immintrin.h>
#include <stdint.h>
/* y[i] = sum_k a[i*K+k] (u8) * b[k] (s8), K a multiple of 64 */
void dot(const uint8_t* a, const int8_t* b, int32_t* y, int M, int K) {
  for (int i = 0; i < M; ++i) {
    __m512i acc = _mm512_setzero_si512();
    for (int k = 0; k < K; k += 64)
      acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(a + i * K + k), _mm512_loadu_si512(b + k));
    y[i] = _mm512_reduce_add_epi32(acc);
  }
}
"""
SPEC = """
entry = "dot"
dialect = "c"
[sizes]
M = 5
K = 128
[[args]]
name = "a"
dtype = "uint8"
shape = ["M", "K"]
role = "in"
[[args]]
name = "b"
dtype = "int8"
shape = ["K"]
role = "in"
[[args]]
name = "y"
dtype = "int32"
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
[reference]
python = "ref.py:dot"
"""
REF = "import numpy as np\ndef dot(a, b, M, K):\n    return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)\n"


def _write(tmp_path):
    (tmp_path / "dot.c").write_text(KERNEL)
    (tmp_path / "dot.c.toml").write_text(SPEC)
    (tmp_path / "ref.py").write_text(REF)
    return tmp_path / "dot.c"


@pytest.mark.skipif(not {"avx512f", "avx512_vnni"} <= cpu_flags(), reason="CPU lacks AVX-512 VNNI")
def test_native_vnni(tmp_path, monkeypatch):
    monkeypatch.delenv("XPILER_C_SUBSTRATE", raising=False)
    v = verify(_write(tmp_path), timeout=60)
    assert v.verified and v.substrate == "hw:cpu-avx512vnni"


@pytest.mark.skipif(not simde_available(), reason="libsimde-dev not installed")
def test_simde_vnni_bit_exact(tmp_path, monkeypatch):
    monkeypatch.setenv("XPILER_C_SUBSTRATE", "simde")
    assert CPlatform().substrate() == "emu:simde-cpu"
    v = verify(_write(tmp_path), timeout=120, sanitize=False)
    assert v.verified, [f.message + f.log[-500:] for f in v.failures]
    assert v.substrate == "emu:simde-cpu"


def test_doctor_rows():
    rows = CPlatform().doctor()
    ids = [r[0] for r in rows]
    assert "hw:cpu-avx512vnni" in ids and "emu:simde-cpu" in ids


def test_sanitized_builds_have_no_use_after_return_frames():
    # gcc 13's ASan runtime gave an AVX-512 kernel's 64-byte-aligned local a fake-stack frame of
    # lower alignment; an aligned vector store to it faulted in a correct kernel (the half gemm of
    # test_half_matmul.py on an Intel host; benchmarks/asan_probe_c.py). Sanitized c builds carry no
    # use-after-return instrumentation; timing and plain builds are unchanged.
    assert "--param=asan-use-after-return=0" in CPlatform()._flags(True)
    assert "-fsanitize=address" in CPlatform()._flags(True)
    assert not any("asan" in f for f in CPlatform()._flags(False))


ALIGNED_LOCAL = r"""
#include <immintrin.h>
/* a 64-byte-aligned local written with aligned 512-bit stores, as the register-tiled gemm's packing
   buffers can be; y[i] = 2 x[i] */
void twice(const float* x, float* y, int n) {
  for (int i0 = 0; i0 < n; i0 += 16) {
    _Alignas(64) float buf[16];
    int m = n - i0 < 16 ? n - i0 : 16;
    __mmask16 k = (__mmask16)((1u << m) - 1u);
    _mm512_store_ps(buf, _mm512_mul_ps(_mm512_set1_ps(2.0f), _mm512_maskz_loadu_ps(k, x + i0)));
    for (int j = 0; j < m; ++j) y[i0 + j] = buf[j];
  }
}
"""


@pytest.mark.skipif(not {"avx512f"} <= cpu_flags(), reason="CPU lacks AVX-512")
def test_aligned_avx512_local_verifies_under_asan(tmp_path, monkeypatch):
    monkeypatch.delenv("XPILER_C_SUBSTRATE", raising=False)
    (tmp_path / "twice.c").write_text(ALIGNED_LOCAL)
    (tmp_path / "twice.c.toml").write_text(elementwise_spec("twice", "c", n=37, reference="ref.py:twice"))
    (tmp_path / "ref.py").write_text("import numpy as np\n\ndef twice(x, n):\n    return (2 * np.asarray(x, np.float32)).astype(np.float32)\n")
    v = verify(tmp_path / "twice.c", timeout=60)
    assert v.verified, [f.message for f in v.failures]
