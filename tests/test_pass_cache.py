"""cache pass: BANG staging of task-stride loops (elementwise chunks, gemm/gemv row blocks)."""
import tempfile
from pathlib import Path

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache
from xpiler.passes.base import PassError
from xpiler.printers import print_program
from xpiler.spec import DIALECT_EXT, load_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels

ROOT = Path(__file__).resolve().parent.parent
BANG_LAUNCH = {"dim": [4, 1, 1], "func_type": "block"}


def bind_first_loop(prog, entry, dialect="bang", binding="taskId"):
    """What the binding pass does to a serial c loop nest: the outer loop becomes task-bound."""
    f = prog.func(entry)
    stmts = list(f.body.stmts)
    k = next(i for i, s in enumerate(stmts) if isinstance(s, N.For))
    stmts[k] = stmts[k].with_(binding=binding, pragmas=())
    nf = f.with_(body=f.body.with_(stmts=tuple(stmts)), kind="kernel", attrs=("extern_c",))
    return prog.with_(items=tuple(nf if it is f else it for it in prog.items), dialect=dialect)


def verify(prog, src, dialect="bang", launch=BANG_LAUNCH, instances=None):
    sp = load_spec(str(src) + ".toml")
    d = Path(tempfile.mkdtemp(prefix="xp-cache-"))
    path = d / f"cand{DIALECT_EXT[dialect]}"
    path.write_text(print_program(prog, dialect))
    cs = sp.with_dialect(dialect, sp.entry, launch)
    ref, fn = sp.reference.split(":")
    cs.reference = f"{(src.parent / ref).resolve()}:{fn}"
    cs.path = path.with_name(path.name + ".toml")
    cs.path.write_text(spec_to_toml(cs))
    return compare_kernels(path, cs, against=(src, sp), instances=instances)


def bound(op):
    src = ROOT / "examples" / op / f"{op}.c"
    sp = load_spec(str(src) + ".toml")
    return src, sp.entry, bind_first_loop(parse_file(src), sp.entry)


def test_elementwise_chunks_into_nram_and_verifies():
    src, entry, p = bound("sigmoid")
    q = cache.apply(p, entry=entry, target="bang")
    f = q.func(entry)
    nram = [n for n in walk(f) if isinstance(n, N.Decl) and n.scope == "nram"]
    assert {d.name for d in nram} == {"x_nram", "y_nram"}
    dirs = [n.args[3].name for n in walk(f) if isinstance(n, N.Intrinsic) and n.name == "__memcpy"]
    assert dirs == ["GDRAM2NRAM", "NRAM2GDRAM"]
    # the chunk is a multiple of the 128-byte rule and all staged buffers fit NRAM
    size = nram[0].type.dims[0].value
    assert size * 4 % 128 == 0 and 2 * size * 4 <= 512 * 1024
    assert p != q
    v = verify(q, src)
    assert v.verified, v.failures[:1]


def test_gemm_rows_stage_weights_in_wram_and_verify():
    src, entry, p = bound("gemm")
    q = cache.apply(p, entry=entry, target="bang")
    f = q.func(entry)
    scopes = {n.name: n.scope for n in walk(f) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)}
    assert scopes == {"A_nram": "nram", "B_wram": "wram", "C_nram": "nram"}
    dirs = {n.args[3].name for n in walk(f) if isinstance(n, N.Intrinsic) and n.name == "__memcpy"}
    assert "GDRAM2WRAM" in dirs
    # the original loop stays as the fallback when the sizes do not fit
    assert any(isinstance(n, N.If) and n.else_ is not None for n in walk(f))
    v = verify(q, src)
    assert v.verified, v.failures[:1]


def test_refuses_footprint_over_nram_naming_the_buffer():
    src, entry, p = bound("add")
    with pytest.raises(PassError) as e:
        cache.check(p, entry=entry, target="bang", chunk=65536)
    assert e.value.code == "XP4001"
    assert "'c'" in e.value.why and "NRAM" in e.value.why
    assert e.value.line == 5         # the loop's line in examples/add/add.c


def test_refuses_chunk_against_vector_rule():
    src, entry, p = bound("relu")
    with pytest.raises(PassError) as e:
        cache.check(p, entry=entry, target="bang", chunk=100)
    assert e.value.code == "XP4001" and "128-byte" in e.value.why


SHIFTED = """
extern "C" __mlu_global__ void shift(const float* x, float* y, int n) {
    for (int i = 0; i < n - 1; i++) {
        y[i] = x[i + 1];
    }
}
"""


def test_refuses_non_chunk_access_with_location():
    p = parse_text(SHIFTED, "bang", "shift.mlu")
    f = p.func("shift")
    loop = f.body.stmts[0].with_(binding="taskId")
    p = p.with_(items=tuple(f.with_(body=f.body.with_(stmts=(loop,))) if it is f else it for it in p.items))
    with pytest.raises(PassError) as e:
        cache.check(p, entry="shift", target="bang")
    assert e.value.code == "XP4001" and "'x'" in e.value.why
    assert e.value.file == "shift.mlu" and e.value.line == 4


def test_nothing_to_do_without_task_loop_and_on_other_dialects():
    src = ROOT / "examples" / "relu" / "relu.c"
    p = parse_file(src)
    with pytest.raises(PassError) as e:
        cache.check(p, entry="relu", target="c")
    assert e.value.code == "XP4002"
    # already staged by hand: nothing to do
    mlu = parse_file(ROOT / "examples" / "relu" / "relu.mlu")
    with pytest.raises(PassError) as e:
        cache.check(mlu, entry="relu", target="bang")
    assert e.value.code == "XP4002"


def test_candidates_are_legal():
    src, entry, p = bound("add")
    cands = cache.candidates(p, "bang")
    assert cands and all(c["chunk"] * 4 % 128 == 0 for c in cands)
    for c in cands:
        cache.check(p, entry=entry, **c)
    assert cache.candidates(p, "cuda") == []
