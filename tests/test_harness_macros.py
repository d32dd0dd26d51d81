"""A kernel's short macros (`#define T 16`, common in public code) must not leak into the harness
code compiled after it: the wild kernel dense_lds_wt.hip failed to build for that reason."""
from pathlib import Path

from xpiler.api import test as xp_test

ROOT = Path(__file__).resolve().parent.parent


def test_kernel_defining_T_builds_and_verifies():
    v = xp_test(ROOT / "examples/wild/dense/dense_lds_wt.hip", seeds=(0,))
    assert v.verified, [f.message for f in v.failures[:2]]
