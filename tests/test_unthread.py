"""unthread: recovered cyclic thread nests and block reduction trees back to plain loops
(passes/unthread.py); the candidates verify against the CUDA source, the refusals name why."""
import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.passes import loop_recovery, unthread
from xpiler.passes.base import PassError
from xpiler.printers import print_program
from xpiler.spec import load_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels

from conftest import EXAMPLES

# one block per row: a privatized partial over a strided slice of the row (with a store that
# moves with the loop), a halving tree in shared memory, then red[0] read by thread 0
REDUCE = r"""
__global__ void rowred(const float *x, float *y, float *out, int rows, int cols)
{
    __shared__ float red[64];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    const float *xr = x + (long)row * cols;
    float p = INIT;
    for (int c = tid; c < cols; c += blockDim.x) {
        float e = xr[c] * 2.0f;
        y[(long)row * cols + c] = e;
        UPDATE;
    }
    red[tid] = p;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        if (tid < h)
            TREE;
        __syncthreads();
    }
    if (tid == 0)
        out[row] = READ;
}
"""
OK = {"INIT": "0.0f", "UPDATE": "p += e", "TREE": "red[tid] += red[tid + h]", "READ": "red[0]"}
MAX = {"INIT": "-3.0e38f", "UPDATE": "p = fmaxf(p, e)", "TREE": "red[tid] = fmaxf(red[tid], red[tid + h])",
       "READ": "red[0]"}

# an elementwise phase written the SIMT way: each thread a cyclic slice of the row
CYCLIC = r"""
__global__ void scale(const float *x, float *y, int rows, int cols, float a)
{
    int row = blockIdx.x;
    int tid = threadIdx.x;
    float *yr = y + (long)row * cols;
    const float *xr = x + (long)row * cols;
    float k = a * 0.5f;
    for (int c = tid; c < LIMIT; c += blockDim.x)
        BODY;
}
"""
CYC_OK = {"LIMIT": "cols", "BODY": "yr[c] = xr[c] * k"}

SPEC = """
entry = "{entry}"
dialect = "cuda"
[sizes]
rows = 3
cols = 37
[[shapes]]
name = "wide"
rows = 2
cols = 200
[launch]
grid = ["rows", 1, 1]
block = [{T}, 1, 1]
{args}
"""
ARG = '[[args]]\nname = "{n}"\ndtype = "{d}"\n{rest}\n'


def _args(entry):
    a = lambda n, d, rest: ARG.format(n=n, d=d, rest=rest)  # noqa: E731
    common = [a("x", "float32", 'shape = ["rows", "cols"]\nrole = "in"'),
              a("y", "float32", 'shape = ["rows", "cols"]\nrole = "inout"')]
    scal = [a("rows", "int32", 'role = "scalar"\nvalue = "rows"'),
            a("cols", "int32", 'role = "scalar"\nvalue = "cols"')]
    if entry == "rowred":
        return "\n".join(common + [a("out", "float32", 'shape = ["rows"]\nrole = "out"')] + scal)
    return "\n".join(common + scal + [a("a", "float32", 'role = "scalar"\nvalue = 1.5')])


def _write(tmp_path, text, entry, T=64, **subst):
    for k, v in subst.items():
        text = text.replace(k, v)
    src = tmp_path / f"{entry}.cu"
    src.write_text(text)
    (tmp_path / f"{entry}.cu.toml").write_text(SPEC.format(entry=entry, T=T, args=_args(entry)))
    return src


def _recovered(src):
    sp = load_spec(str(src) + ".toml")
    p, _ = loop_recovery.apply(parse_file(src), entry=sp.entry, launch=sp.launch)
    return p, sp


def _verify_c(tmp_path, prog, src, sp):
    cand = tmp_path / "cand.c"
    cand.write_text(print_program(prog, "c"))
    cs = sp.with_dialect("c", sp.entry, {})
    cs.path = tmp_path / "cand.c.toml"
    cs.path.write_text(spec_to_toml(cs))
    return compare_kernels(cand, cs, against=(src, sp), use_reference=False, seeds=(0,))


def test_sum_partials_and_tree_become_one_reduction_and_verify(tmp_path):
    src = _write(tmp_path, REDUCE, "rowred", **OK)
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="rowred")
    out = print_program(q, "c")
    assert "red[" not in out and "float red" not in out and "h /= 2" not in out
    assert "for (int c = 0; c < cols; ++c)" in out and "+= 256" not in out and "+= 64" not in out
    assert "out[row] = p;" in out
    v = _verify_c(tmp_path, q, src, sp)
    assert v.verified, v.failures[:1]


def test_max_reduction_verifies(tmp_path):
    src = _write(tmp_path, REDUCE, "rowred", **MAX)
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="rowred")
    assert "fmaxf(p, e)" in print_program(q, "c")
    v = _verify_c(tmp_path, q, src, sp)
    assert v.verified, v.failures[:1]


def test_cyclic_nest_becomes_one_loop_and_verifies(tmp_path):
    src = _write(tmp_path, CYCLIC, "scale", **CYC_OK)
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="scale")
    out = print_program(q, "c")
    assert "tid" not in out and "for (int c = 0; c < cols; ++c)" in out
    v = _verify_c(tmp_path, q, src, sp)
    assert v.verified, v.failures[:1]


@pytest.mark.parametrize("text,entry,T,change,why", [
    (REDUCE, "rowred", 48, {}, "not a constant power of two"),
    (REDUCE, "rowred", 64, {"READ": "red[0] + red[1]"}, "used besides"),
    (REDUCE, "rowred", 64, {"UPDATE": "p = p - e", "TREE": "red[tid] = red[tid] - red[tid + h]"},
     "update 'p' exactly once"),
    (REDUCE, "rowred", 64, {"INIT": "1.0f"}, "identity 0"),
    (REDUCE, "rowred", 64, {"TREE": "red[tid] = fmaxf(red[tid], red[tid + h])"}, "tree combines with 'fmaxf'"),
    (CYCLIC, "scale", 64, {"LIMIT": "cols - 1", "BODY": "yr[c + 1] = yr[c] * k + xr[c]"}, "changes the program"),
])
def test_refusals(tmp_path, text, entry, T, change, why):
    subst = {**(OK if entry == "rowred" else CYC_OK), **change}
    p, _ = _recovered(_write(tmp_path, text, entry, T=T, **subst))
    with pytest.raises(PassError) as e:
        unthread.apply(p, entry=entry)
    assert e.value.code == "XP4001" and why in e.value.why


def test_sequential_program_is_nothing_to_do():
    p = parse_text("void f(float *y, int n) { for (int i = 0; i < n; ++i) y[i] = 0.0f; }", "c", "f.c")
    with pytest.raises(PassError) as e:
        unthread.apply(p, entry="f")
    assert e.value.code == "XP4002"


def test_softmax_cu_to_bang_uses_nram_and_bang_reductions(tmp_path):
    from xpiler.api import migrate
    r = migrate(EXAMPLES / "softmax" / "softmax.cu", "bang", outdir=tmp_path / "out", perf=False, force=True)
    assert r.verified
    assert "__nram__" in r.code and "__bang_max" in r.code and "__bang_sum" in r.code
    assert any(s.pass_name == "unthread" for s in r.steps)


def test_plans_probe_unthread_first_and_keep_the_plan_without_it():
    from xpiler.migration.pipeline import REQUIRE, plans
    for src, dst in (("cuda", "bang"), ("hip", "bang"), ("cuda", "c"), ("hip", "c")):
        ps = plans(src, dst)
        if dst == "bang":   # the float4-lanes plan is probed before it (tests/test_vector_forms_bang.py)
            assert dict(ps[0])["flatten_lanes"].get(REQUIRE) and "unthread" not in dict(ps[0])
            ps = ps[1:]
        first = [n for n, _ in ps[0]]
        assert first[first.index("loop_recovery") + 1] == "unthread" and dict(ps[0])["unthread"].get(REQUIRE)
        assert "unthread" not in [n for n, _ in ps[-1]] and len(ps) == (3 if dst == "c" else 2)


# two recovered phases whose hoisted declarations share a name: the second is renamed
TWO_PHASES = r"""
void scale(const float *x, float *y, int rows, int cols, float a)
{
    for (int row = 0; row < rows; ++row) {
        if (row >= rows)
            continue;
        float *yr = y + (long)row * cols;
        const float *xr = x + (long)row * cols;
        for (int tid = 0; tid < 32; ++tid) {
            float k = a * 0.5f;
            for (int c = tid; c < cols; c += 32)
                yr[c] = xr[c] * k;
        }
        for (int tid = 0; tid < 32; ++tid) {
            float k = a + 1.0f;
            for (int c_1 = tid; c_1 < cols; c_1 += 32)
                yr[c_1] += k;
        }
    }
}
"""


def test_hoisted_names_stay_apart_and_the_dead_guard_goes(tmp_path):
    src = _write(tmp_path, CYCLIC, "scale", **CYC_OK)      # the spec (cuda source as the oracle)
    sp = load_spec(str(src) + ".toml")
    (tmp_path / "two.c").write_text(TWO_PHASES)
    q = unthread.apply(parse_text(TWO_PHASES, "c", "two.c"), entry="scale")
    out = print_program(q, "c")
    # both 'k' occur outside their own thread loop: each hoisted one gets a fresh name
    assert "float k_u2 = a * 0.5f;" in out and "yr[c] = xr[c] * k_u2;" in out
    assert "float k_u3 = a + 1.0f;" in out and "yr[c_1] += k_u3;" in out
    assert "continue" not in out and "tid" not in out
    ref = tmp_path / "two_ref.c"
    ref.write_text(TWO_PHASES)
    rs = sp.with_dialect("c", "scale", {})
    cand = tmp_path / "cand.c"
    cand.write_text(out)
    rs.path = tmp_path / "cand.c.toml"
    rs.path.write_text(spec_to_toml(rs))
    v = compare_kernels(cand, rs, against=(ref, rs), use_reference=False, seeds=(0,))
    assert v.verified, v.failures[:1]


def test_a_guard_reading_a_shadowing_declaration_stays():
    text = TWO_PHASES.replace("        if (row >= rows)", "        int rows;\n        if (row >= rows)")
    out = print_program(unthread.apply(parse_text(text, "c", "two.c"), entry="scale"), "c")
    assert "continue" in out and "tid" not in out
