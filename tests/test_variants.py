"""Every value of an XP_USE_* guard is built and tested (xpiler/verify/variants.py)."""
from __future__ import annotations

from pathlib import Path

from xpiler.verify.tester import test_kernel as run_tests
from xpiler.verify.variants import flags, guards, label, variants

EX = Path(__file__).resolve().parent.parent / "examples" / "relu"

GUARD = """#ifndef XP_USE_{name}
#if defined(XP_NEVER_DEFINED_ANYWHERE)
#define XP_USE_{name} 1
#else
#define XP_USE_{name} 0
#endif
#endif
"""

GOOD = "y[i] = v > 0.0f ? v : 0.0f;"
BAD = "y[i] = v;"     # no clamp: wrong wherever x < 0


def _c_relu(one: str, zero: str) -> str:
    return GUARD.format(name="FAST") + f"""
void relu(const float* x, float* y, int n)
{{
    for (int i = 0; i < n; i++) {{
        float v = x[i];
#if XP_USE_FAST
        {one}
#else
        {zero}
#endif
    }}
}}
"""


def _cuda_relu(one: str, zero: str) -> str:
    return GUARD.format(name="WIDE") + f"""
__global__ void relu(const float* x, float* y, int n)
{{
    int step = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{
        float v = x[i];
#if XP_USE_WIDE
        {one}
#else
        {zero}
#endif
    }}
}}
"""


def test_guards_and_builds():
    text = GUARD.format(name="A") + GUARD.format(name="B") + "#if XP_USE_A\n#endif\n#ifndef XP_USE_A\n#endif\n"
    assert guards(text) == ["XP_USE_A", "XP_USE_B"]
    assert variants(text) == [{"XP_USE_A": "1", "XP_USE_B": "1"}, {"XP_USE_A": "1", "XP_USE_B": "0"},
                              {"XP_USE_A": "0", "XP_USE_B": "1"}, {"XP_USE_A": "0", "XP_USE_B": "0"}]
    three = text + GUARD.format(name="C")
    vs = variants(three)        # past 4 builds: all at 1, then each guard at 0 once
    assert len(vs) == 4 and vs[0] == dict.fromkeys(guards(three), "1")
    assert all(list(v.values()).count("0") == 1 for v in vs[1:])
    assert variants("#ifndef XP_MAX\n#define XP_MAX 4\n#endif\n") == []     # not a guard: no XP_USE_ prefix
    assert label({"XP_USE_A": "1"}) == "[XP_USE_A=1]" and label(None) == ""
    assert flags({"XP_USE_A": "0"}) == ["-DXP_USE_A=0"]


def test_a_wrong_path_the_default_build_skips_is_caught(tmp_path):
    # the auto-detection picks 0 here; the 1 path (what another compiler would take) is wrong
    src = tmp_path / "relu.c"
    src.write_text(_c_relu(BAD, GOOD))
    v = run_tests(src, EX / "relu.c.toml")
    assert not v.verified
    assert any("XP_USE_FAST=1]" in f.message for f in v.failures)
    assert not any("XP_USE_FAST=0]" in f.message for f in v.failures)


def test_both_paths_right_verify_and_the_substrate_names_each_build(tmp_path):
    src = tmp_path / "relu.c"
    src.write_text(_c_relu(GOOD, GOOD))
    v = run_tests(src, EX / "relu.c.toml")
    assert v.verified, v.summary()
    assert "[XP_USE_FAST=1]" in v.substrate and "[XP_USE_FAST=0]" in v.substrate


def test_the_simt_emulator_builds_each_value(tmp_path):
    src = tmp_path / "relu.cu"
    src.write_text(_cuda_relu(GOOD, BAD))
    v = run_tests(src, EX / "relu.cu.toml", emulator_beside_gpu=False)
    assert not v.verified
    assert any("XP_USE_WIDE=0]" in f.message for f in v.failures)
