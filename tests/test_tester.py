"""The differential tester on plain C kernels: verdicts, poisoning, ASan, limits."""
import json
import textwrap
import time

import numpy as np
import pytest

from xpiler.spec import parse_spec
from xpiler.verify import test_kernel as verify
from xpiler.verify.inputs import make_inputs

SPEC = """\
entry = "scale"
dialect = "c"
[sizes]
n = 300
[[shapes]]
name = "odd"
n = 37
[[args]]
name = "x"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "y"
dtype = "float32"
shape = ["n"]
role = "out"
[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"
[reference]
python = "ref.py:scale"
"""
REF = "def scale(x, n):\n    return 2.0 * x\n"
GOOD = "void scale(const float* x, float* y, int n) { for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i]; }\n"


def _kernel(tmp_path, body, spec=SPEC, ref=REF, name="k"):
    (tmp_path / f"{name}.c").write_text(body)
    (tmp_path / f"{name}.c.toml").write_text(spec)
    (tmp_path / "ref.py").write_text(ref)
    return tmp_path / f"{name}.c"


def test_correct_kernel_verifies(tmp_path):
    v = verify(_kernel(tmp_path, GOOD), timeout=30)
    assert v.verified, [f.message for f in v.failures]
    assert v.substrate in ("hw:cpu-avx512vnni", "emu:simde-cpu")
    assert v.runs == 6 and v.seeds == [0, 1, 2] and v.instances == ["base", "odd"]
    assert v.max_abs_error == 0.0


def test_off_by_one_fails_with_nan_poison(tmp_path):
    v = verify(_kernel(tmp_path, GOOD.replace("i < n", "i < n - 1")), timeout=30)
    assert not v.verified
    assert {f.code for f in v.failures} == {"XP2102"}
    assert v.failures[0].first_diffs[0]["index"] in ([299], [36])


def test_wrong_value_fails(tmp_path):
    v = verify(_kernel(tmp_path, GOOD.replace("2.0f", "2.001f")), timeout=30)
    assert not v.verified and v.failures[0].code == "XP2101"


def test_out_of_bounds_write_caught_by_asan(tmp_path):
    v = verify(_kernel(tmp_path, GOOD.replace("i < n", "i <= n")), timeout=30)
    assert not v.verified and v.failures[0].code == "XP2105"


def test_input_modification_detected(tmp_path):
    body = "void scale(float* x, float* y, int n) { for (int i = 0; i < n; ++i) { y[i] = 2.0f * x[i]; x[i] = 0; } }\n"
    v = verify(_kernel(tmp_path, body), timeout=30)
    assert not v.verified and "XP2107" in {f.code for f in v.failures}


def test_segfault_is_a_failed_verdict(tmp_path):
    body = "void scale(const float* x, float* y, int n) { volatile float* p = (float*)0; y[0] = *p; }\n"
    v = verify(_kernel(tmp_path, body), sanitize=False, timeout=30)
    assert not v.verified and v.failures[0].code == "XP2104"


def test_hang_times_out(tmp_path):
    body = "void scale(const float* x, float* y, int n) { volatile int k = 1; while (k) {} }\n"
    t0 = time.time()
    v = verify(_kernel(tmp_path, body), sanitize=False, timeout=2, seeds=[0], instances=["odd"])
    assert time.time() - t0 < 30
    assert not v.verified and v.failures[0].code == "XP2103"


@pytest.mark.parametrize("sanitize", [False, True])
def test_runaway_allocation_is_stopped(tmp_path, sanitize):
    body = textwrap.dedent("""\
        #include <stdlib.h>
        #include <string.h>
        void scale(const float* x, float* y, int n) {
          for (int i = 0; i < 400; ++i) { char* p = (char*)malloc(256u << 20); if (!p) *(volatile int*)0 = 0; memset(p, 1, 256u << 20); }
          for (int i = 0; i < n; ++i) y[i] = 2.0f * x[i];
        }
        """)
    v = verify(_kernel(tmp_path, body), sanitize=sanitize, timeout=60, mem_mb=512, seeds=[0], instances=["odd"])
    assert not v.verified
    assert v.failures[0].code in ("XP2106", "XP2104"), v.failures[0].message


def test_compile_error_has_location(tmp_path):
    v = verify(_kernel(tmp_path, "void scale(const float* x, float* y, int n) {\n  y[0] = undefined_thing;\n}\n"))
    assert not v.verified and v.build_error is not None
    assert v.build_error.code == "XP2003" and v.build_error.line == 2


def test_no_oracle_is_not_verified(tmp_path):
    spec = SPEC.split("[reference]")[0]
    v = verify(_kernel(tmp_path, GOOD, spec=spec))
    assert not v.verified and v.oracle == "none"


def test_against_source_kernel(tmp_path):
    src = _kernel(tmp_path, GOOD, name="src")
    cand = _kernel(tmp_path, GOOD.replace("2.0f * x[i]", "x[i] + x[i]"), spec=SPEC.split("[reference]")[0], name="cand")
    v = verify(cand, against=(src, tmp_path / "src.c.toml"), use_reference=False, timeout=30)
    assert v.verified and "source kernel" in v.oracle
    bad = _kernel(tmp_path, GOOD.replace("2.0f", "3.0f"), spec=SPEC.split("[reference]")[0], name="bad")
    v = verify(bad, against=(src, tmp_path / "src.c.toml"), use_reference=False, timeout=30)
    assert not v.verified and v.failures[0].message.startswith("vs source kernel")


def test_inputs_honour_constraints():
    spec = parse_spec(SPEC.replace('role = "in"', 'role = "in"\nrange = [-2, 3]\nintegral = true'))
    for seed in range(6):
        x = make_inputs(spec.instances()[0], seed)["x"]
        assert x.min() >= -2 and x.max() <= 3 and np.all(x == np.round(x))
        y = make_inputs(spec.instances()[0], seed)["y"]
        assert np.isnan(y).all()


def test_permutation_and_fixed_value_inputs():
    text = SPEC.replace('name = "x"\ndtype = "float32"', 'name = "x"\ndtype = "int32"').replace(
        'role = "in"', 'role = "in"\npermutation_axis = 0')
    inst = parse_spec(text).instances()[0]
    x = make_inputs(inst, 1)["x"]
    assert sorted(x.tolist()) == list(range(300))
    text2 = SPEC.replace('role = "in"', 'role = "in"\nvalue = [1.5]')
    x2 = make_inputs(parse_spec(text2).instances()[1], 0)["x"]
    assert (x2 == 1.5).all()


def test_adversarial_and_boundary_flavours_differ():
    inst = parse_spec(SPEC).instances()[0]
    a0, a1, a2 = (make_inputs(inst, s)["x"] for s in (0, 1, 2))
    assert np.abs(a1).max() > 10 * np.abs(a0).max() / 4  # wide magnitudes
    assert (a2 == 0).any() and (a2 == 1).any()           # boundary specials
    assert (np.abs(a2) < 1e-30).any()                    # denormal/zero


def test_cli_json(tmp_path):
    from conftest import run_cli
    src = _kernel(tmp_path, GOOD)
    p = run_cli("test", src, "--json", "--seeds", "2")
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)
    assert obj["verified"] is True and obj["seeds"] == [0, 1]
    for key in ("substrate", "max_abs_error", "max_rel_error"):
        assert key in obj
