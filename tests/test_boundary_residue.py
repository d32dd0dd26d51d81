"""Residue targets of the derived boundary instances (xpiler/verify/boundaries.py, docs/verification.md).

A loop whose start or bound divides a size by a constant c >= 3 (``n / 4`` whole float4 chunks,
``n / 4 * 4`` where the scalar tail starts; also ``%``, ``>> k`` and the masks ``& (c - 1)``,
``& ~(c - 1)``) gets an instance where that size leaves the largest remainder, c - 1, after at
least one whole chunk. Unit tests on small C kernels written here; end to end: a vectorize_simt
output of examples/relu/relu.c (cuda) with a planted bug that only a 3-element tail shows fails
the tester with the residue instance (``emu:simt-cpu``) and passed it without.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT

from xpiler.spec import load_spec, parse_spec, spec_to_toml
from xpiler.verify import boundaries as B
from xpiler.verify.boundaries import derive_for_files
from xpiler.verify.tester import compare_kernels

# ------------------------------------------------------------------------------------ kernels
C_SPEC = """\
entry = "scale"
dialect = "c"
[sizes]
n = {n}
[[shapes]]
name = "odd"
n = {n2}
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


def kernel(main_bound: str, tail_start: str, pre: str = "") -> str:
    return f"""\
#define VEC 8
void scale(const float* x, float* y, int n) {{
{pre}    for (int i = 0; i < {main_bound}; i += 1)
        y[i] = 2.0f * x[i];
    for (int j = {tail_start}; j < n; j++)
        y[j] = 2.0f * x[j];
}}
"""


def _derive(tmp_path, text, n=64, n2=33, extra=""):
    src = tmp_path / "k.c"
    src.write_text(text)
    spec = parse_spec(C_SPEC.format(n=n, n2=n2) + extra, tmp_path / "k.c.toml")
    return derive_for_files(src, spec)


# ------------------------------------------------------------------------------- derivation
@pytest.mark.parametrize("main,tail,c", [
    ("n / 4 * 4", "n / 4 * 4", 4),             # division
    ("n - n % 8", "n - n % 8", 8),             # modulo
    ("(n >> 2) << 2", "(n >> 2) << 2", 4),     # shift
    ("(n & ~3)", "(n & ~3)", 4),               # mask of the whole chunks
    ("n - (n & 15)", "n - (n & 15)", 16),      # mask of the remainder
    ("n / VEC * VEC", "n / VEC * VEC", 8),     # a macro divisor
    ("(n + 3) / 4 * 4 - 4", "(n + 3) / 4 * 4 - 4", 4),   # ceil form: read from n itself
])
def test_the_largest_remainder_after_a_whole_chunk(tmp_path, main, tail, c):
    ds = _derive(tmp_path, kernel(main, tail))
    assert len(ds) == 1
    n = ds[0].sizes["n"]
    assert n % c == c - 1 and n >= c and n >= 33          # never below the smallest n of the spec
    assert n == min(v for v in range(33, 200) if v % c == c - 1)   # and the smallest such n
    assert f"≡ {c - 1} mod {c}" in ds[0].reasons[0] and "k.c:" in ds[0].reasons[0]


def test_a_local_defined_once_is_read_through(tmp_path):
    ds = _derive(tmp_path, kernel("n4 * 4", "n4 * 4", pre="    int n4 = n / 4;\n"))
    assert [d.changed for d in ds] == [{"n": 35}]
    # a local assigned again is not: its value at the loop is not the definition's
    ds = _derive(tmp_path, kernel("n4 * 4", "n4 * 4", pre="    int n4 = n / 4;\n    n4 = n4 - 0;\n"))
    assert ds == []


def test_an_instance_at_the_remainder_already_adds_nothing(tmp_path):
    assert _derive(tmp_path, kernel("n / 4 * 4", "n / 4 * 4"), n2=35) == []
    # n = 3 leaves 3 but no whole chunk before it: not the boundary, one is still derived
    assert [d.changed for d in _derive(tmp_path, kernel("n / 4 * 4", "n / 4 * 4"), n2=3)] == [{"n": 7}]


def test_no_target_for_two_for_the_thread_index_or_when_the_spec_forbids_it(tmp_path):
    # c = 2: the remainder is 0 or 1, which any odd instance already gives
    assert _derive(tmp_path, kernel("n / 2 * 2", "n / 2 * 2")) == []
    # every instance a multiple of 4: the kernel is taken to require it
    assert _derive(tmp_path, kernel("n / 4 * 4", "n / 4 * 4"), n=64, n2=32) == []
    # a [test] constraint that rules the remainder out
    assert _derive(tmp_path, kernel("n / 4 * 4", "n / 4 * 4"),
                   extra='[test]\nconstraints = ["n % 4 != 3"]\n') == []


def test_thread_index_divisions_are_not_residue_targets(tmp_path):
    cu = """\
__global__ void scale(const float* x, float* y, int n) {
    for (int i = threadIdx.x / 4 * 4; i < n; i += 4 * blockDim.x)
        y[i] = 2.0f * x[i];
}
"""
    spec = C_SPEC.format(n=64, n2=33).replace('dialect = "c"', 'dialect = "cuda"\n[launch]\ngrid = [1, 1, 1]\n'
                                              'block = [4, 1, 1]')
    src = tmp_path / "k.cu"
    src.write_text(cu)
    ds = derive_for_files(src, parse_spec(spec, tmp_path / "k.cu.toml"))
    assert all("mod 4 (the largest remainder" not in r for d in ds for r in d.reasons)


def test_residue_derivation_is_deterministic_and_merges(tmp_path):
    text = kernel("n / 4 * 4", "n / 4 * 4")
    a = _derive(tmp_path, text)
    b = _derive(tmp_path, text)
    assert [d.to_json() for d in a] == [d.to_json() for d in b]
    # two loops with the same dividend and divisor share one target (one reason)
    assert len(a) == 1 and len(a[0].reasons) == 1


# ------------------------------------------------------------------ end to end: vectorize_simt
def _vectorized_relu():
    from xpiler.frontend import parse_file
    from xpiler.passes import binding
    from xpiler.passes import vectorize_simt as V
    from xpiler.printers import print_program
    src = ROOT / "examples" / "relu" / "relu.c"
    prog, _ = binding.apply(parse_file(src, "c"), entry="relu", target="cuda", loop="i", block=512, grid_cap=1024)
    vec = V.apply(prog, entry="relu", block=256, grid_cap=None)
    launch = vec.launch_dict("relu")
    return src, print_program(vec, "cuda"), launch


def _candidate(text, src, launch):
    sp = load_spec(str(src) + ".toml")
    d = Path(tempfile.mkdtemp(prefix="xp-res-"))
    path = d / "cand.cu"
    path.write_text(text)
    cs = sp.with_dialect("cuda", sp.entry, launch)
    ref, fn = sp.reference.split(":")
    cs.reference = f"{(src.parent / ref).resolve()}:{fn}"
    cs.path = path.with_name(path.name + ".toml")
    cs.path.write_text(spec_to_toml(cs))
    return path, cs, sp


TAIL = "for (int i = n / 4 * 4 + (blockIdx.x * blockDim.x + threadIdx.x); i < n;"


def test_vectorized_relu_gets_a_three_element_tail():
    src, text, launch = _vectorized_relu()
    assert TAIL in text
    path, cs, sp = _candidate(text, src, launch)
    assert {i.sizes["n"] % 4 for i in sp.instances()} == {0, 1}      # the spec's own: no tail of 2-3
    ds = derive_for_files(path, cs, against=(src, sp))
    assert [d.changed for d in ds] == [{"n": 7}]
    assert "n = 7 ≡ 3 mod 4" in ds[0].reasons[0]


BUGS = {
    "tail stops one short": TAIL[:-1] + " - (n % 4 == 3);",
    "tail starts one late": TAIL.replace("n / 4 * 4 +", "n / 4 * 4 + (n % 4 == 3) +"),
}


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_bug_only_a_three_element_tail_shows_is_caught_now(monkeypatch, bug):
    """The tail loop misses an element when n % 4 == 3: caught on the residue instance
    (emu:simt-cpu); with the residue targets taken out (the derivation before them) it verified."""
    src, text, launch = _vectorized_relu()
    assert text.count(TAIL) == 1
    bad = text.replace(TAIL, BUGS[bug])
    assert bad != text
    path, cs, sp = _candidate(bad, src, launch)
    v = compare_kernels(path, cs, against=(src, sp), jobs=1)
    assert not v.verified
    assert v.derived and v.derived[0]["changed"] == {"n": 7}
    assert v.failures and {f.instance for f in v.failures} == {v.derived[0]["name"]}   # only there
    with monkeypatch.context() as m:
        m.setattr(B._Eval, "residues", lambda self, loop: [])
        assert derive_for_files(path, cs, against=(src, sp)) == []
        old = compare_kernels(path, cs, against=(src, sp), jobs=1)
    assert old.verified                        # the bug the old instances let through
    # the correct kernel verifies with the residue instance
    path, cs, sp = _candidate(text, src, launch)
    assert compare_kernels(path, cs, against=(src, sp), jobs=1).verified
