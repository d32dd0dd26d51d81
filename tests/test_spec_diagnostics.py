"""Malformed specs: each gets its own diagnostic ID, the file and line, exit code 2, no traceback."""
import textwrap

import pytest

from conftest import run_cli

GOOD = """\
entry = "add"
dialect = "c"
[sizes]
n = 16
[[args]]
name = "a"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "c"
dtype = "float32"
shape = ["n"]
role = "out"
[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"
"""

KERNEL = "void add(const float* a, float* c, int n) { for (int i = 0; i < n; ++i) c[i] = a[i]; }\n"

# (name, spec text, expected ID, expected line or None)
CASES = [
    ("not_toml", GOOD.replace('dialect = "c"', 'dialect = "c'), "XP1002", 2),
    ("missing_entry", GOOD.replace('entry = "add"\n', ""), "XP1003", None),
    ("missing_dialect", GOOD.replace('dialect = "c"\n', ""), "XP1003", None),
    ("unknown_dialect", GOOD.replace('dialect = "c"', 'dialect = "opencl"'), "XP1004", 2),
    ("unknown_dtype", GOOD.replace('dtype = "float32"', 'dtype = "float33"', 1), "XP1005", 7),
    ("unknown_role", GOOD.replace('role = "in"', 'role = "input"'), "XP1006", 9),
    ("zero_extent", GOOD.replace('shape = ["n"]', "shape = [0]", 1), "XP1007", 8),
    ("negative_size", GOOD.replace("n = 16", "n = -3"), "XP1007", None),
    ("no_shape", GOOD.replace('shape = ["n"]\n', "", 1), "XP1008", None),
    ("scalar_without_value", GOOD.replace('value = "n"\n', ""), "XP1009", 15),
    ("launch_missing_cuda", GOOD.replace('dialect = "c"', 'dialect = "cuda"'), "XP1010", None),
    ("launch_missing_bang", GOOD.replace('dialect = "c"', 'dialect = "bang"'), "XP1010", None),
    ("grid_two_entries", GOOD.replace('dialect = "c"', 'dialect = "cuda"') + '[launch]\ngrid = [1, 1]\nblock = [32, 1, 1]\n',
     "XP1011", 21),
    ("block_zero", GOOD.replace('dialect = "c"', 'dialect = "cuda"') + '[launch]\ngrid = [1, 1, 1]\nblock = [0, 1, 1]\n',
     "XP1012", 22),
    ("bad_expression", GOOD.replace('shape = ["n"]', 'shape = ["n +* 2"]', 1), "XP1013", None),
    ("unknown_size_name", GOOD.replace('shape = ["n"]', 'shape = ["m"]', 1), "XP1014", 8),
    ("duplicate_arg", GOOD.replace('name = "c"', 'name = "a"'), "XP1015", 10),
    ("signature_mismatch", GOOD.replace('name = "n"\ndtype = "int32"\nrole = "scalar"\nvalue = "n"\n',
                                        'name = "n"\ndtype = "int32"\nrole = "scalar"\nvalue = "n"\n'
                                        '[[args]]\nname = "extra"\ndtype = "int32"\nrole = "scalar"\nvalue = 1\n'),
     "XP1016", None),
    ("bad_func_type", GOOD.replace('dialect = "c"', 'dialect = "bang"') + '[launch]\ndim = [4, 1, 1]\nfunc_type = "union3"\n',
     "XP1018", 22),
    ("bad_reference", GOOD + '[reference]\npython = "ref.py"\n', "XP1019", 21),
    ("negative_tolerance", GOOD + "[tolerance]\nrtol = -1.0\n", "XP1020", 21),
    ("shape_without_name", GOOD + "[[shapes]]\nn = 4\n", "XP1021", 20),
    ("bad_range", GOOD.replace('role = "in"', 'role = "in"\nrange = [5, 1]'), "XP1022", 10),
    ("float_size", GOOD.replace("n = 16", "n = 16.5"), "XP1025", 4),
    ("huge_array", GOOD.replace("n = 16", "n = 1000000000"), "XP1026", None),
    ("int_scalar_float_value", GOOD.replace('value = "n"', "value = 2.5"), "XP1027", None),
    ("arg_without_name", GOOD.replace('name = "c"\n', ""), "XP1028", None),
    ("duplicate_instance", GOOD + '[[shapes]]\nname = "x"\nn = 4\n[[shapes]]\nname = "x"\nn = 5\n', "XP1029", None),
    ("shape_overrides_unknown", GOOD + '[[shapes]]\nname = "x"\nm = 4\n', "XP1014", None),
    ("entry_not_found", GOOD.replace('entry = "add"', 'entry = "addd"'), "XP1017", None),
    ("dialect_mismatch", GOOD.replace('dialect = "c"', 'dialect = "hip"') + '[launch]\ngrid = [1,1,1]\nblock = [1,1,1]\n',
     "XP1023", None),
]


@pytest.mark.parametrize("name,text,code,line", CASES, ids=[c[0] for c in CASES])
def test_malformed_spec(tmp_path, name, text, code, line):
    (tmp_path / "add.c").write_text(KERNEL)
    (tmp_path / "add.toml").write_text(text)
    p = run_cli("test", tmp_path / "add.c", "--no-asan", "--seeds", "1")
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert code in p.stderr, p.stderr
    assert "Traceback" not in p.stderr + p.stdout
    if line is not None:
        assert f"add.toml:{line}:" in p.stderr, p.stderr


def test_good_spec_passes(tmp_path):
    (tmp_path / "add.c").write_text(KERNEL)
    (tmp_path / "add.toml").write_text(GOOD + '[reference]\npython = "ref.py:f"\n')
    (tmp_path / "ref.py").write_text("def f(a, n):\n    return a.copy()\n")
    p = run_cli("test", tmp_path / "add.c", "--no-asan", "--seeds", "1")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "VERIFIED on hw:cpu" in p.stdout or "VERIFIED on emu:simde" in p.stdout


def test_missing_spec_file(tmp_path):
    (tmp_path / "add.c").write_text(KERNEL)
    p = run_cli("test", tmp_path / "add.c")
    assert p.returncode == 2 and "XP1001" in p.stderr


def test_missing_source_file(tmp_path):
    p = run_cli("test", tmp_path / "nope.c")
    assert p.returncode == 2 and "XP1201" in p.stderr


def test_all_errors_reported_together(tmp_path):
    text = GOOD.replace('dtype = "float32"', 'dtype = "f32"').replace('role = "in"', 'role = "x"')
    (tmp_path / "add.c").write_text(KERNEL)
    (tmp_path / "add.toml").write_text(text)
    p = run_cli("test", tmp_path / "add.c")
    assert p.returncode == 2
    assert "XP1005" in p.stderr and "XP1006" in p.stderr
