"""Derived boundary instances, "last" targets (2026-12-05, tenth session; docs/verification.md):
a guard in a stepped loop's body on what is left for the last trip (`if (xg_mr > 3)`, the rows of
a register-tiled gemm's micro-tile remainder) gets instances where the value it compares is at
each side of the guard's edge on the last trip. The planted `if (xg_mr > 4)` -> `if (xg_mr > 5)`
of gemm.cu -> c needed M mod 6 = 5, which no instance had."""
from __future__ import annotations

from pathlib import Path

from xpiler.spec import load_spec
from xpiler.verify import test_kernel as verify
from xpiler.verify.boundaries import derive_for_files

ROWS = """void rows(const float *x, float *y, int n) {
    for (int i = 0; i < n; i += 4) {
        const int left = n - i;
        y[i] = x[i] * 2.0f;
        if (left > 1) {
            y[i + 1] = x[i + 1] * 2.0f;
        }
        if (left > 2) {
            y[i + 2] = x[i + 2] * 2.0f;
        }
        if (left > 3) {
            y[i + 3] = x[i + 3] * 2.0f;
        }
    }
}
"""
SPEC = """entry = "rows"
dialect = "c"
[sizes]
n = 64
[[shapes]]
name = "odd"
n = 33
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
python = "ref.py:rows"
"""
REF = """import numpy as np


def rows(x, n):
    return (np.asarray(x, dtype=np.float32) * np.float32(2.0)).astype(np.float32)
"""


def _write(tmp_path: Path, text: str) -> Path:
    k = tmp_path / "rows.c"
    k.write_text(text)
    (tmp_path / "rows.c.toml").write_text(SPEC)
    (tmp_path / "ref.py").write_text(REF)
    return k


def test_last_trip_values_at_each_guard_edge(tmp_path):
    k = _write(tmp_path, ROWS)
    got = derive_for_files(k, load_spec(tmp_path / "rows.c.toml"))
    # the spec leaves 4 (n = 64) and 1 (n = 33) on the last trip; 2 and 3 are derived
    rems = {d.sizes["n"] % 4 for d in got}
    assert {2, 3} <= rems, [d.describe() for d in got]
    assert any("on the last trip" in r for d in got for r in d.reasons)


def test_a_wrong_remainder_guard_is_caught(tmp_path):
    k = _write(tmp_path, ROWS.replace("if (left > 2)", "if (left > 3)"))
    v = verify(k, seeds=(0,))
    assert not v.verified
    assert v.failures[0].code == "XP2102" and v.failures[0].instance.startswith("boundary")
    k2 = tmp_path / "orig"
    k2.mkdir()
    assert verify(_write(k2, ROWS), seeds=(0,)).verified
