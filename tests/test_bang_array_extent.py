"""The BANG emulator checks a __memcpy (and, since 2026-12-05, every __bang_* operand) against the
declared array it starts in (XP4230), not
only against the on-chip memory: a copy one row past a ``__nram__`` buffer that stays inside
NRAM used to pass silently (it wrote the next array; the planted ``i_rows = 32768 % N`` mutants
of gemm.c -> bang did exactly that, docs/repair.md "Uncaught mutants")."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from test_bang_emulator import Kernel, f32, runtime_code

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


@pytest.fixture(scope="module")
def k(tmp_path_factory):
    return Kernel("array_extent", tmp_path_factory.mktemp("bang_extent"))


def test_copies_inside_their_arrays_pass(k):
    x = f32(np.arange(64) * 0.5)
    out = k.run({"x": x, "out": (128,)}, {"which": 0, "n": 64})["out"]
    np.testing.assert_array_equal(out[:64], x)


@pytest.mark.parametrize("which,what", [
    (1, "destination at byte 0 of __nram__ array 'a' (256 bytes"),
    (2, "source at byte 128 of __nram__ array 'a' (256 bytes"),
    (3, "array 'fs' (256 bytes"),
    (4, "__wram__ array 'w' (256 bytes"),
    (5, "source segment 1 at byte 128 of __nram__ array 'a'"),
])
def test_copy_past_the_array_is_reported(k, which, what):
    # 65 floats: one past the 64-float array, still far inside NRAM/WRAM (no XP3051)
    p = k.run({"x": f32(np.arange(96)), "out": (128,)}, {"which": which, "n": 65}, expect_rc=97)
    assert runtime_code(p) == "XP4230", p.stderr
    assert what in p.stderr and "past the array's end" in p.stderr
    assert "array_extent.mlu:" in p.stderr      # the copy's line


def test_a_vector_op_past_its_array_is_reported(k):
    # __bang_add over 64 floats from a + 32: the last 32 lie in b, still NRAM
    p = k.run({"x": f32(np.arange(96)), "out": (128,)}, {"which": 6, "n": 65}, expect_rc=97)
    assert runtime_code(p) == "XP4230", p.stderr
    assert "__bang_add" in p.stderr and "at byte 128 of __nram__ array 'a' (256 bytes" in p.stderr
    assert "past the array's end" in p.stderr


def test_a_vector_op_starting_in_no_array_is_reported(k):
    # b + 64 is the first byte after the last array: free NRAM, but past the end of b
    # (conv1d.mlu's tmp row at Cin = 2977 did this, unseen until 2026-12-05)
    p = k.run({"x": f32(np.arange(96)), "out": (128,)}, {"which": 7, "n": 64}, expect_rc=97)
    assert runtime_code(p) == "XP4230", p.stderr
    assert "lies in no declared array" in p.stderr and "past the end of __nram__ array 'b'" in p.stderr
