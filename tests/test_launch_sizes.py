"""Launch sizes no kernel parameter carries, added as last parameters of the migrated kernel
(issue 12, failure class XP4060; xpiler/migration/launch_sizes.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from xpiler.diagnostics import XPErrors
from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.migration.launch_sizes import (add_size_params, augment, describe, host_size_values,
                                           needs_values, uncarried)
from xpiler.spec import load_spec, parse_spec, spec_to_toml

ROOT = Path(__file__).resolve().parent.parent
WILD = ROOT / "examples" / "wild"
SOFTMAX = WILD / "softmax" / "softmax_smem_tree.cu"
RELU_DEFINE = WILD / "relu" / "relu_define.cu"
RELU_LB = WILD / "relu" / "relu_lb.cu"

ROWS_SRC = """__global__ void k(const float* x, float* y, int cols) {
    int r = blockIdx.x;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[r * cols + j] = x[r * cols + j];
}
void k_host(const float* x, float* y, int nrows, int cols) {
    k<<<nrows, 32>>>(x, y, cols);
}
"""
ROWS_SPEC = """entry = "k"
dialect = "cuda"
[sizes]
R = 4
W = 40
[launch]
grid = ["R", 1, 1]
block = [32, 1, 1]
[[args]]
name = "x"
dtype = "float32"
shape = ["R", "W"]
role = "in"
[[args]]
name = "y"
dtype = "float32"
shape = ["R", "W"]
role = "out"
[[args]]
name = "cols"
dtype = "int32"
role = "scalar"
value = "W"
"""


def _params(prog, entry):
    return [p.name for p in prog.func(entry).params]


# ------------------------------------------------------------------------------ unit
def test_needs_values_only_where_the_launch_changes_shape():
    assert needs_values("cuda", "c") and needs_values("hip", "bang") and needs_values("bang", "cuda")
    assert needs_values("bang", "c")
    assert not needs_values("cuda", "hip") and not needs_values("hip", "cuda")
    assert not needs_values("c", "cuda") and not needs_values("c", "bang")   # a c source has no launch
    assert not needs_values("cuda", "cuda")


def test_uncarried_names_the_sizes_only_the_launch_has():
    spec = parse_spec(ROWS_SPEC)
    assert uncarried(spec, ["x", "y", "cols"]) == ["R"]
    # a grid over a carried size needs nothing
    carried = parse_spec(ROWS_SPEC.replace('grid = ["R", 1, 1]', 'grid = ["cdiv(W,32)", 1, 1]'))
    assert uncarried(carried, ["x", "y", "cols"]) == []
    # dynamic shared memory sized by an uncarried size counts too
    sh = parse_spec(ROWS_SPEC.replace('block = [32, 1, 1]', 'block = [32, 1, 1]\nshared_bytes = "4 * R"')
                    .replace('grid = ["R", 1, 1]', 'grid = [1, 1, 1]'))
    assert uncarried(sh, ["x", "y", "cols"]) == ["R"]


def test_add_size_params_appends_an_int_parameter_and_a_scalar_argument():
    spec = parse_spec(ROWS_SPEC)
    prog = parse_text(ROWS_SRC, "cuda", "k.cu")
    new, kspec, added = add_size_params(prog, spec, ["R"], ROWS_SRC)
    assert added == [{"param": "R", "arg": "R", "size": "R", "host": "nrows"}]
    assert _params(new, "k") == ["x", "y", "cols", "R"]
    p = new.func("k").params[-1]
    assert isinstance(p.type, N.Scalar) and p.type.dtype == "int32"
    a = kspec.args[-1]
    assert (a.name, a.role, a.dtype, a.value, a.in_reference) == ("R", "scalar", "int32", "R", False)
    # the source's spec and program are not changed
    assert len(spec.args) == 3 and _params(prog, "k") == ["x", "y", "cols"]
    assert [i.scalars["R"] for i in kspec.instances()] == [4]


def test_a_size_named_like_a_macro_gets_a_fresh_parameter_name():
    src, spec = RELU_DEFINE, load_spec(str(RELU_DEFINE) + ".toml")
    prog = parse_file(src, "cuda")
    new, kspec, added = augment(prog, spec, "bang", src.read_text())
    # N is `#define N 4099` in the source: a parameter named N would be macro-expanded
    assert [a["param"] for a in added] == ["xp_N"] and added[0]["size"] == "N"
    assert _params(new, "relu_kernel") == ["in", "out", "xp_N"]
    assert kspec.args[-1].name == "xp_N" and kspec.args[-1].value == "N"
    # an identifier anywhere in the text counts, and xp_<size> is made fresh against it too
    _, _, added2 = add_size_params(parse_text(ROWS_SRC, "cuda", "k.cu"), parse_spec(ROWS_SPEC), ["R"],
                                   ROWS_SRC + "\n// R and xp_R are taken\n")
    assert added2[0]["param"] == "xp_R_1"


def test_the_argument_name_is_fresh_against_the_spec_arguments():
    # the spec names the scalar argument "R" although the kernel's parameter is "cols"
    spec = parse_spec(ROWS_SPEC.replace('name = "cols"', 'name = "R"'))
    _, kspec, added = add_size_params(parse_text(ROWS_SRC, "cuda", "k.cu"), spec, ["R"], ROWS_SRC)
    assert added[0]["param"] == "R" and added[0]["arg"] == "R_1"
    assert [a.name for a in kspec.args] == ["x", "y", "R", "R_1"]


def test_no_augmentation_where_every_size_is_carried_or_the_launch_is_kept():
    spec = load_spec(str(RELU_LB) + ".toml")
    prog = parse_file(RELU_LB, "cuda")
    for to in ("c", "bang", "hip"):
        new, kspec, added = augment(prog, spec, to, RELU_LB.read_text())
        assert added == [] and new is prog and kspec is spec
    sspec = load_spec(str(SOFTMAX) + ".toml")
    sprog = parse_file(SOFTMAX, "cuda")
    assert augment(sprog, sspec, "hip", SOFTMAX.read_text())[2] == []     # cuda -> hip keeps the grid
    assert [a["param"] for a in augment(sprog, sspec, "c", SOFTMAX.read_text())[2]] == ["rows"]


# ------------------------------------------------------------------------------ spec key
def test_in_reference_round_trips_and_defaults_to_true():
    spec = parse_spec(ROWS_SPEC + '[[args]]\nname = "rows"\ndtype = "int32"\nrole = "scalar"\nvalue = "R"\n'
                                  'in_reference = false\n')
    assert [a.in_reference for a in spec.args] == [True, True, True, False]
    text = spec_to_toml(spec)
    assert text.count("in_reference") == 1 and "in_reference = false" in text
    again = parse_spec(text)
    assert [a.in_reference for a in again.args] == [True, True, True, False]


def test_in_reference_that_is_not_a_bool_is_xp1022():
    with pytest.raises(XPErrors) as e:
        parse_spec(ROWS_SPEC + '[[args]]\nname = "rows"\ndtype = "int32"\nrole = "scalar"\nvalue = "R"\n'
                               'in_reference = "no"\n')
    codes = [x.code for x in e.value.errors]
    assert codes == ["XP1022"] and "in_reference" in e.value.errors[0].message
    assert e.value.errors[0].line is not None


def test_reference_args_skip_arguments_not_in_the_reference():
    from xpiler.verify.inputs import make_inputs
    from xpiler.verify.oracle import reference_args
    spec = parse_spec(ROWS_SPEC + '[[args]]\nname = "rows"\ndtype = "int32"\nrole = "scalar"\nvalue = "R"\n'
                                  'in_reference = false\n')
    inst = spec.instances()[0]
    arrays = make_inputs(inst, 0)
    args = reference_args(spec, inst, arrays)
    assert len(args) == 2 and isinstance(args[0], np.ndarray) and args[1] == 40   # x and cols, not rows
    with_rows = parse_spec(spec_to_toml(spec).replace("in_reference = false\n", ""))
    assert reference_args(with_rows, inst, arrays)[1:] == [40, 4]


# ------------------------------------------------------------------------------ host launcher
def _launches(prog_or_funcs, kernel):
    funcs = prog_or_funcs.funcs if isinstance(prog_or_funcs, N.Program) else prog_or_funcs
    return [n for f in funcs if f.body is not None for n in walk(f.body)
            if isinstance(n, N.Launch) and n.kernel == kernel
            or isinstance(n, N.Call) and n.func == kernel]


def test_the_source_launch_passes_the_grid_value_it_launched_with():
    from xpiler.migration.host import migrate_host
    spec = parse_spec(ROWS_SPEC)
    new, kspec, added = augment(parse_text(ROWS_SRC, "cuda", "k.cu"), spec, "c", ROWS_SRC)
    # the source program's own launch passes it (its cuda/hip candidates compile as a whole)...
    (L,) = _launches(new, "k")
    assert [a.name for a in L.args] == ["x", "y", "cols", "nrows"]
    assert added[0]["host"] == "nrows"
    # ...and so does the migrated launcher
    funcs = migrate_host(new, "c", "k", {}, _params(new, "k"), spec=kspec)
    (call,) = _launches(funcs, "k")
    assert [a.name for a in call.args] == ["x", "y", "cols", "nrows"]
    # a dim3 variable: its component on the size's axis
    src2 = ROWS_SRC.replace("k<<<nrows, 32>>>", "dim3 g(1, nrows); k<<<g, 32>>>")
    spec2 = parse_spec(ROWS_SPEC.replace('grid = ["R", 1, 1]', 'grid = [1, "R", 1]'))
    new2, _, added2 = augment(parse_text(src2, "cuda", "k.cu"), spec2, "c", src2)
    (L2,) = _launches(new2, "k")
    assert isinstance(L2.args[-1], N.Var) and L2.args[-1].name == "nrows"


def test_a_launcher_that_gives_no_value_for_the_size_is_left_out():
    src = ROWS_SRC.replace("k<<<nrows, 32>>>", "k<<<(nrows + 1) / 2, 32>>>")
    spec = parse_spec(ROWS_SPEC.replace('grid = ["R", 1, 1]', 'grid = ["cdiv(R,2)", 1, 1]'))
    new, _, added = augment(parse_text(src, "cuda", "k.cu"), spec, "c", src)
    assert host_size_values(spec, added) == [("R", "", -1)]
    assert added[0]["host"] is None and "no launcher" in describe(added)
    assert [f.name for f in new.funcs] == ["k"]            # k_host would not compile any more
    # kept (and left as it is) when something else calls it
    called = src + "int main() { k_host(0, 0, 1, 1); return 0; }\n"
    new2, _, _ = augment(parse_text(called, "cuda", "k.cu"), spec, "c", called)
    assert [f.name for f in new2.funcs] == ["k", "k_host", "main"]
    assert len(_launches(new2, "k")[0].args) == 3


def test_a_macro_size_is_passed_by_its_macro():
    spec = load_spec(str(RELU_DEFINE) + ".toml")
    new, _, added = augment(parse_file(RELU_DEFINE, "cuda"), spec, "c", RELU_DEFINE.read_text())
    (L,) = _launches(new, "relu_kernel")
    assert isinstance(L.args[-1], N.Var) and L.args[-1].name == "N" and added[0]["host"] == "N"


# ------------------------------------------------------------------------------ end to end
def _copy(src: Path, tmp: Path) -> Path:
    for f in (src, Path(str(src) + ".toml"), src.parent / "ref.py"):
        shutil.copy(f, tmp / f.name)
    return tmp / src.name


def test_softmax_one_block_per_row_migrates_to_c_with_the_row_count_added(tmp_path):
    from xpiler import migrate
    from xpiler.replay import replay
    from xpiler.verify.tester import test_kernel
    src = _copy(SOFTMAX, tmp_path)
    r = migrate(src, to="c", outdir=tmp_path / "out", perf=False)
    assert r.verified, [d.format() for d in r.diagnostics]
    out = parse_file(r.output_path, "c")
    assert _params(out, "softmax_tree") == ["in", "out", "ncols", "rows"]
    ospec = load_spec(r.spec_path)
    assert ospec.args[-1].name == "rows" and ospec.args[-1].value == "rows" and not ospec.args[-1].in_reference
    assert "in_reference = false" in r.spec_path.read_text()
    notes = [d for d in r.diagnostics if d.code == "XP4061"]
    assert len(notes) == 1 and "int rows (= size rows, the launcher passes nrows)" in notes[0].message and notes[0].severity == "note"
    assert test_kernel(r.output_path, ospec).verified
    rep = replay(r.log_path)
    assert rep.ok and rep.verified


def test_relu_with_a_macro_size_migrates_to_bang(tmp_path):
    from xpiler import migrate
    src = _copy(RELU_DEFINE, tmp_path)
    r = migrate(src, to="bang", outdir=tmp_path / "out", perf=False)
    assert r.verified, [d.format() for d in r.diagnostics]
    assert _params(parse_file(r.output_path, "bang"), "relu_kernel") == ["in", "out", "xp_N"]
    assert "#define N 4099" in r.output_path.read_text()


def test_a_kernel_whose_sizes_are_all_carried_gets_no_extra_parameter(tmp_path):
    from xpiler import migrate
    src = _copy(RELU_LB, tmp_path)
    r = migrate(src, to="c", outdir=tmp_path / "out", perf=False)
    assert r.verified, [d.format() for d in r.diagnostics]
    assert _params(parse_file(r.output_path, "c"), "relu_lb_kernel") == ["x", "y", "n"]
    assert "in_reference" not in r.spec_path.read_text()
    assert not [d for d in r.diagnostics if d.code == "XP4061"]


BANG_ROWS = """#include <bang.h>
#define R 4
__mlu_global__ void k(const float* x, float* y, int cols) {
    int r = taskId;
    for (int j = 0; j < cols; ++j) y[r * cols + j] = x[r * cols + j] * 2.0f;
}
void k_host(const float* x, float* y, int cols) {
    float *dx, *dy;
    cnrtMalloc((void**)&dx, sizeof(float) * R * cols);
    cnrtMalloc((void**)&dy, sizeof(float) * R * cols);
    cnrtMemcpy(dx, (void*)x, sizeof(float) * R * cols, cnrtMemcpyHostToDev);
    cnrtDim3_t dim = {R, 1, 1};
    cnrtQueue_t q;
    cnrtQueueCreate(&q);
    k<<<dim, CNRT_FUNC_TYPE_BLOCK, q>>>(dx, dy, cols);
    cnrtQueueSync(q);
    cnrtMemcpy(y, dy, sizeof(float) * R * cols, cnrtMemcpyDevToHost);
    cnrtFree(dx); cnrtFree(dy);
}
"""


def test_a_bang_task_count_becomes_a_parameter_and_the_launcher_passes_it(tmp_path):
    """bang -> cuda with taskDim = a size: the migrated launcher passes the source's task count
    (its cnrtDim3_t component) and verifies in host mode; replay re-derives it."""
    from xpiler import migrate
    from xpiler.replay import replay
    (tmp_path / "rows.mlu").write_text(BANG_ROWS)
    (tmp_path / "rows.mlu.toml").write_text(
        ROWS_SPEC.replace('dialect = "cuda"', 'dialect = "bang"')
        .replace('grid = ["R", 1, 1]\nblock = [32, 1, 1]', 'dim = ["R", 1, 1]\nfunc_type = "block"')
        + '[reference]\npython = "ref.py:double"\n')
    (tmp_path / "ref.py").write_text("def double(x, cols):\n    return x * 2.0\n")
    r = migrate(tmp_path / "rows.mlu", to="cuda", outdir=tmp_path / "out", perf=False)
    assert r.verified, [d.format() for d in r.diagnostics]
    assert _params(parse_file(r.output_path, "cuda"), "k") == ["x", "y", "cols", "xp_R"]
    (L,) = _launches(parse_file(r.output_path, "cuda"), "k")
    assert isinstance(L.args[-1], N.Var) and L.args[-1].name == "R"     # the launcher passes it
    assert not [d for d in r.diagnostics if d.code == "XP4003" and "host launcher" in d.message]
    rep = replay(r.log_path)
    assert rep.ok and rep.verified
