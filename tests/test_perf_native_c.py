"""The report's performance table and the tuner agree on which c kernels run on hardware here: a
kernel without wide SIMD intrinsics is timed natively even where the c substrate emulates
AVX-512 (SIMDe), one with them only where the CPU has AVX-512."""
from pathlib import Path

from xpiler.perf import hardware_substrate
from xpiler.platforms.c import CPlatform
from xpiler.schedule.timing import native_c_substrate

SCALAR = "void k(const float* x, float* y, int n) { for (int i = 0; i < n; i++) y[i] = x[i]; }\n"
WIDE = "#include <immintrin.h>\nvoid k(float* y) { _mm512_storeu_ps(y, _mm512_setzero_ps()); }\n"


def test_perf_and_tuner_use_one_rule():
    for text in (SCALAR, WIDE):
        assert hardware_substrate("c", text) == native_c_substrate(text)
    native = CPlatform()._mode() == "native"
    assert hardware_substrate("c", SCALAR) == ("hw:cpu-avx512vnni" if native else "hw:cpu-native")
    assert (hardware_substrate("c", WIDE) is None) == (not native)
    assert hardware_substrate("bang", SCALAR) is None and hardware_substrate("hip", SCALAR) is None


def test_report_times_a_scalar_c_output(tmp_path):
    """softmax.cu -> c: the migration's report has a measured row on this CPU, labelled with the
    hardware substrate, where the output can run natively; where it cannot (AVX-512 vectors on a
    CPU without AVX-512) the report has no timing and says why."""
    import json
    import xpiler
    ex = Path(__file__).resolve().parents[1] / "examples" / "softmax" / "softmax.cu"
    r = xpiler.migrate(ex, to="c", outdir=tmp_path / "out")
    assert r.verified
    events = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()[1:]]
    perf = next(e for e in events if e["type"] == "perf")
    from xpiler.platforms.c import CPlatform
    if "_mm512" in r.code and CPlatform()._mode() != "native":
        # the output has AVX-512 vectors (it is no longer scalar) and this CPU has no AVX-512: the
        # only run here is the SIMDe emulator's, which is never reported as a timing
        assert not perf.get("rows") and "no hardware substrate" in perf["note"], perf
        return
    assert perf["rows"] and perf["rows"][0]["substrate"].startswith("hw:cpu-"), perf
