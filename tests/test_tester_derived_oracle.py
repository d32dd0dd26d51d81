"""On a *derived* boundary instance (the tester's own, not the spec's), a candidate that agrees
with the source kernel is not failed because the source kernel itself is outside the
reference's tolerance there (a float32 sum of tens of thousands of terms against a float64
reference): the migration promises the source's behaviour. On the spec's own instances, and for a
candidate that differs from the source, nothing changes."""
from __future__ import annotations

from xpiler.spec import parse_spec
from xpiler.verify import tester
from xpiler.verify.boundaries import Derived

KERNEL = """\
void scale(const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i)
        y[i] = FACTOR * x[i];
}
"""

# the reference is off by 1e-3 for n > 1000: it cannot judge those sizes
REF = """\
import numpy as np
def scale(x, n):
    y = 2.0 * np.asarray(x, dtype=np.float32)[:n]
    return (y * (1.001 if n > 1000 else 1.0)).astype(np.float32)
"""

SPEC = """\
entry = "scale"
dialect = "c"
[sizes]
n = {n}
[test]
derive_boundaries = false
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


def _setup(tmp_path, n, factor_src="2.0f", factor_cand="2.0f"):
    (tmp_path / "ref.py").write_text(REF)
    src = tmp_path / "src.c"
    src.write_text("#define FACTOR " + factor_src + "\n" + KERNEL)
    cand = tmp_path / "cand.c"
    cand.write_text("#define FACTOR " + factor_cand + "\n" + KERNEL)
    spec_s = parse_spec(SPEC.format(n=n), tmp_path / "src.c.toml")
    spec_c = parse_spec(SPEC.format(n=n), tmp_path / "cand.c.toml")
    return src, spec_s, cand, spec_c


def _with_derived(monkeypatch, n):
    monkeypatch.setattr(tester, "_derived",
                        lambda candidate, spec, against, names: [Derived("boundary-1", "default", {"n": n}, {"n": n})])


def test_a_derived_instance_the_reference_cannot_judge_is_judged_by_the_source(tmp_path, monkeypatch):
    src, spec_s, cand, spec_c = _setup(tmp_path, 16)
    _with_derived(monkeypatch, 2000)
    v = tester.compare_kernels(cand, spec_c, against=(src, spec_s), seeds=[0], jobs=1, timeout=30,
                               derive_boundaries=True)
    assert v.verified, v.failures[:1]
    assert "boundary-1" in v.instances
    assert any("judged against the source kernel only" in n for n in v.notes)


def test_a_candidate_that_differs_from_the_source_still_fails_there(tmp_path, monkeypatch):
    src, spec_s, cand, spec_c = _setup(tmp_path, 16, factor_cand="2.002f")
    _with_derived(monkeypatch, 2000)
    v = tester.compare_kernels(cand, spec_c, against=(src, spec_s), seeds=[0], jobs=1, timeout=30,
                               derive_boundaries=True)
    assert not v.verified
    assert any(f.instance == "boundary-1" and "vs source kernel" in f.message for f in v.failures)


def test_a_spec_instance_stays_judged_by_the_reference(tmp_path):
    src, spec_s, cand, spec_c = _setup(tmp_path, 2000)
    v = tester.compare_kernels(cand, spec_c, against=(src, spec_s), seeds=[0], jobs=1, timeout=30)
    assert not v.verified
    assert any(f.instance == "base" and "vs source kernel" not in f.message for f in v.failures)
