"""unthread, form 4 (passes/unthread_shuffle.py): a per-thread partial combined by a detensorized
warp-shuffle exchange (butterfly / tree through a scratch array, one value per warp through shared
memory, a fold of those) becomes one sequential reduction; the exchange is run on abstract values
and refused when some result is not the fold of every partial exactly once."""
import pytest

from xpiler.frontend import parse_file
from xpiler.passes import detensorize, loop_recovery, unthread
from xpiler.passes.base import PassError
from xpiler.printers import print_program
from xpiler.spec import load_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels

from conftest import EXAMPLES

SOFTMAX_HIP = EXAMPLES / "softmax" / "softmax.hip"
LAYERNORM_CU = EXAMPLES / "layernorm" / "layernorm.cu"


def _recovered(src, spec_text=None):
    sp = load_spec(str(src) + ".toml")
    p = parse_file(src)
    p = detensorize.apply(p, entry=sp.entry, target="c")
    p = p[0] if isinstance(p, tuple) else p
    p, _ = loop_recovery.apply(p, entry=sp.entry, launch=sp.launch)
    return p, sp


def _variant(tmp_path, src, edits, spec_edits=()):
    text = src.read_text()
    for a, b in edits:
        assert a in text, a
        text = text.replace(a, b)
    spec = (src.parent / (src.name + ".toml")).read_text()
    for a, b in spec_edits:
        assert a in spec, a
        spec = spec.replace(a, b)
    out = tmp_path / src.name
    out.write_text(text)
    (tmp_path / (src.name + ".toml")).write_text(spec)
    (tmp_path / "ref.py").write_text((src.parent / "ref.py").read_text())
    return out


def _verify_c(tmp_path, prog, src, sp):
    cand = tmp_path / "cand.c"
    cand.write_text(print_program(prog, "c"))
    cs = sp.with_dialect("c", sp.entry, {})
    cs.path = tmp_path / "cand.c.toml"
    cs.path.write_text(spec_to_toml(cs))
    return compare_kernels(cand, cs, against=(src, sp), use_reference=False, seeds=(0,))


def test_softmax_hip_butterfly_becomes_row_loops_and_verifies(tmp_path):
    p, sp = _recovered(SOFTMAX_HIP)
    q = unthread.apply(p, entry="softmax")
    out = print_program(q, "c")
    body = out[out.index("void softmax("):]
    for gone in ("xpd_xch", "xpd_sh", "lds", "wave_max_result", "tx", "+= 256"):
        assert gone not in body, gone
    assert "float m = -3.0e38f;" in body and "m = fmaxf(m, xr[c]);" in body
    assert "float s = 0.0f;" in body and "s += expf(xr[c_1] - m);" in body
    assert "for (int c_2 = 0; c_2 < cols; ++c_2)" in body and "expf(xr[c_2] - m) * inv" in body
    v = _verify_c(tmp_path, q, SOFTMAX_HIP, sp)     # c natively against the hip source (emu:simt-cpu)
    assert v.verified, v.failures[:1]


def test_layernorm_cu_down_tree_and_warp0_step_become_row_loops_and_verify(tmp_path):
    # __shfl_down_sync: only lane 0 of each warp holds the warp's sum, and only it is used
    p, sp = _recovered(LAYERNORM_CU)
    q = unthread.apply(p, entry="layernorm")
    body = print_program(q, "c")
    body = body[body.index("void layernorm("):]
    for gone in ("xpd_xch", "partial", "tx", "+= 128"):
        assert gone not in body, gone
    assert "s += xr[c];" in body and "block_sum_result = s;" in body and "sq += d * d;" in body
    v = _verify_c(tmp_path, q, LAYERNORM_CU, sp)
    assert v.verified, v.failures[:1]


def test_a_down_tree_in_the_hip_softmax_is_proven_too(tmp_path):
    # lane 0 of each wave alone is stored, and it holds the wave's fold: accepted (and correct)
    src = _variant(tmp_path, SOFTMAX_HIP, [("v += __shfl_xor(v, off)", "v += __shfl_down(v, off)")])
    p, sp = _recovered(src)
    q = unthread.apply(p, entry="softmax")
    assert "xpd_xch" not in print_program(q, "c")
    v = _verify_c(tmp_path, q, src, sp)
    assert v.verified, v.failures[:1]


@pytest.mark.parametrize("edits,spec_edits,why", [
    # an up-shift: lane 0 keeps its own value at every step (out-of-range rule), 2^6 copies of it
    ([("v += __shfl_xor(v, off)", "v += __shfl_up(v, off)")], (), "does not hold the fold"),
    # the max butterfly gathers only half of each wave
    ([("for (int off = warpSize / 2; off > 0; off /= 2)\n        v = fmaxf",
       "for (int off = warpSize / 4; off > 0; off /= 2)\n        v = fmaxf")], (), "no variable holds the fold"),
    # + with a non-identity initial value: the exchange adds 256 copies of it
    ([("float s = 0.0f;", "float s = 1.0f;")], (), "the identity 0"),
    # a block of 96 threads: the second wavefront (64 wide) has 32 lanes, the butterfly reads past them
    ([], (("block = [256, 1, 1]", "block = [96, 1, 1]"),), "no statement of the exchange wrote it"),
    # a partial of the max combined with + in the butterfly
    ([("v = fmaxf(v, __shfl_xor(v, off));", "v = v + __shfl_xor(v, off);")], (),
     "is not a combination with 'fmaxf'"),
    # the wave values are read again outside the pattern
    ([("yr[c] = expf(xr[c] - m) * inv;", "yr[c] = expf(xr[c] - m) * inv + lds[1];")], (),
     "'lds' is written by the warp-shuffle exchange and used elsewhere"),
])
def test_refusals_name_the_reason(tmp_path, edits, spec_edits, why):
    src = _variant(tmp_path, SOFTMAX_HIP, edits, spec_edits)
    p, _ = _recovered(src)
    with pytest.raises(PassError) as e:
        unthread.apply(p, entry="softmax")
    assert e.value.code == "XP4001" and why in e.value.why, e.value.why


def test_softmax_hip_to_c_and_bang_reach_the_vector_forms(tmp_path):
    from xpiler.api import migrate
    r = migrate(SOFTMAX_HIP, "c", outdir=tmp_path / "c", perf=False, force=True)
    assert r.verified and any(s.pass_name == "unthread" for s in r.steps)
    assert "_mm512_reduce_max_ps" in r.code and "_mm512_reduce_add_ps" in r.code and "xpd_xch" not in r.code
    b = migrate(SOFTMAX_HIP, "bang", outdir=tmp_path / "bang", perf=False, force=True)
    assert b.verified and any(s.pass_name == "unthread" for s in b.steps)
    assert "__nram__" in b.code and "__bang_max" in b.code and "__bang_sum" in b.code
