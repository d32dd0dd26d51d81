"""A rounded-up count, ``(n + c - 1) / c``, gets a derived instance one past whole chunks,
``n % c == 1``, besides the largest remainder ``c - 1`` (xpiler/verify/boundaries.py, residue
targets; docs/verification.md). Its last chunk holds a single element, where a ceil/floor mix-up
shows: the planted ``r_pad = (cols + 31) % 32 * 32`` of softmax.c -> bang is 0 at cols = 33 (a
division by zero) and the right size at cols = 63, the only residue instance before."""
from __future__ import annotations

from xpiler.spec import parse_spec
from xpiler.verify.boundaries import derive_for_files
from xpiler.verify.tester import compare_kernels

SPEC = """\
entry = "scale"
dialect = "c"
[sizes]
n = 64
[[shapes]]
name = "odd"
n = 63
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
"""

SOURCE = """\
void scale(const float* x, float* y, int n) {
    for (int i = 0; i < n; i++)
        y[i] = 2.0f * x[i];
}
"""

# chunks of 32; the chunk loop's bound is a rounded-up count. BUG: a last chunk of one element
# is skipped (only n % 32 == 1 shows it; the spec's n = 64 and 63 leave 0 and 31)
CANDIDATE = """\
void scale(const float* x, float* y, int n) {
    int chunks = (n + 31) / 32;
    for (int c = 0; c < chunks; c++) {
        int len = n - c * 32 < 32 ? n - c * 32 : 32;
        for (int j = 0; j < len && len > SKIP; j++)
            y[c * 32 + j] = 2.0f * x[c * 32 + j];
    }
}
"""


def _files(tmp_path, skip: int):
    src = tmp_path / "src.c"
    src.write_text(SOURCE)
    cand = tmp_path / "cand.c"
    cand.write_text(CANDIDATE.replace("SKIP", str(skip)))
    return cand, parse_spec(SPEC, tmp_path / "cand.c.toml"), (src, parse_spec(SPEC, tmp_path / "src.c.toml"))


def test_rounded_up_count_gets_one_past_whole_chunks(tmp_path):
    cand, spec, against = _files(tmp_path, 0)
    ds = derive_for_files(cand, spec, against)
    # the spec's n = 63 already leaves 31; the new target: the smallest n >= 63 (the spec's smallest)
    # with n % 32 == 1
    assert [d.changed for d in ds] == [{"n": 65}]
    assert "≡ 1 mod 32" in ds[0].reasons[0] and "holds one element" in ds[0].reasons[0]


def test_floor_division_keeps_only_the_largest_remainder(tmp_path):
    cand, spec, against = _files(tmp_path, 0)
    cand.write_text(cand.read_text().replace("(n + 31) / 32", "n / 32 + 1"))
    assert derive_for_files(cand, spec, against) == []     # n = 63 leaves 31 already


def test_a_lost_one_element_chunk_is_caught(tmp_path):
    cand, spec, against = _files(tmp_path, 1)
    v = compare_kernels(cand, spec, against=against, use_reference=False, jobs=1)
    assert not v.verified
    assert v.derived and v.derived[0]["changed"] == {"n": 65}
    assert {f.instance for f in v.failures} == {v.derived[0]["name"]}      # only there
    good, spec, against = _files(tmp_path, 0)
    assert compare_kernels(good, spec, against=against, use_reference=False, jobs=1).verified
