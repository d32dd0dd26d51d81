"""softmax_avx512.c to cuda / hip bound one block per row by default (issue 15): the c plan after
the plain row plan (xpiler/migration/pipeline.py: ``row_plans``) makes the detensorized AVX-512
row body plain scalar row loops with ``flatten_lanes(rows=True)`` (the exp helper inlined, lane
loops fused pair by pair with the fuse pass's check, lane arrays and lane accumulators made
scalars, each 16-wide loop joined with its masked tail by ``lowering/chunk_tail.join_masked``),
then binds it with ``binding(**ROWS)``. Here: the joins and their refusals, the inliner's
trailing ``return;``, the plan's form, where it is refused (XP4002), the bound on its fusion
checks, and the verified row-block output."""
from __future__ import annotations

import time

import pytest

from xpiler.frontend import parse_file, parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.migration.pipeline import REQUIRE, ROW_REGS, ROWS, _finish, plans
from xpiler.passes import flatten_lanes as FL
from xpiler.passes import fuse as F
from xpiler.passes.base import PassError, get
from xpiler.passes.inline_helpers import inline_calls
from xpiler.passes.lowering.chunk_tail import join_masked
from xpiler.passes.lowering.common import Names
from xpiler.printers import print_program

from conftest import EXAMPLES

ROWS_SRC = """
#define W 16
void f(const float* x, float* y, int cols) {
    int full = cols / W * W;
    int tail = cols - full;
    float vmax = -3.0e38f;
    for (int c = 0; c < full; c += W) {
        for (int l = 0; l < 16; ++l) {
            vmax = vmax > x[c + l] ? vmax : x[c + l];
        }
    }
    if (tail) {
        for (int l2 = 0; l2 < 16; ++l2) {
            vmax = vmax > (l2 < tail ? x[full + l2] : -3.0e38f) ? vmax : l2 < tail ? x[full + l2] : -3.0e38f;
        }
    }
    float s = 0.0f;
    for (int c = 0; c < full; c += W) {
        for (int l = 0; l < 16; ++l) {
            float t = x[c + l] - vmax;
            float e = expf(t);
            y[c + l] = e;
            s = s + e;
        }
    }
    if (tail) {
        for (int l2 = 0; l2 < 16; ++l2) {
            float v = l2 < tail ? x[full + l2] : 0.0f;
            float t2 = v - vmax;
            float e2 = expf(t2);
            if (l2 < tail) {
                y[full + l2] = e2;
            }
            if (l2 < tail) {
                s = s + e2;
            }
        }
    }
    y[0] = s;
}
"""


def _join(text):
    p = parse_text(text, "c", "<test>")
    fn = p.func("f")
    body, n = join_masked(fn, fn.body, Names(p), p.macros)
    return n, print_program(p.with_(items=tuple(fn.with_(body=body) if it is fn else it for it in p.items)), "c")


def test_masked_tails_join_into_element_loops():
    n, text = _join(ROWS_SRC)
    assert n == 2, text
    assert text.count("< cols; ++") == 2 and "if (tail)" not in text and "l2" not in text, text
    # the joined loops are the chunk loops' bodies at element i
    assert "vmax = vmax > x[xpd_i1] ? vmax : x[xpd_i1];" in text, text
    assert "float t = x[xpd_i2] - vmax;" in text, text


@pytest.mark.parametrize("old,new,joined", [
    # the fill is not the max's initial value: a masked lane could change the fold
    ("-3.0e38f) ? vmax : l2 < tail ? x[full + l2] : -3.0e38f", "-1.0f) ? vmax : l2 < tail ? x[full + l2] : -1.0f", 1),
    # the tail writes memory on a masked lane
    ("float v = l2 < tail ? x[full + l2] : 0.0f;", "float v = l2 < tail ? x[full + l2] : 0.0f; y[1] = 0.0f;", 1),
    # the tail is not the chunk body at F + l2
    ("float t2 = v - vmax;", "float t2 = v + vmax;", 1),
    # F is not X / W * W
    ("int full = cols / W * W;", "int full = cols / 8 * W;", 0),
    # something assigns the split
    ("y[0] = s;", "y[0] = s; tail = 0;", 0),
])
def test_masked_join_refusals(old, new, joined):
    assert old in ROWS_SRC
    n, text = _join(ROWS_SRC.replace(old, new))
    assert n == joined, text


INLINE = """
static void h(float* t, float* r) {
    {
        for (int l = 0; l < 4; ++l) { r[l] = t[l] * 2.0f; }
        return;
    }
}
static float g(float a) {
    {
        float b = a * 2.0f;
        return b;
    }
}
void f(float* x, float* y) {
    h(x, y);
    y[0] = g(x[0]);
}
"""


def test_inliner_takes_a_valueless_return_that_ends_a_trailing_block():
    p = parse_text(INLINE, "c", "<test>")
    fn, done = inline_calls(p, p.func("f"), lambda h: h.name == "h")
    assert done == {"h"}
    assert "return" not in print_program(p.with_(items=tuple(fn if it.name == "f" else it for it in p.items)),
                                         "c").split("void f(")[1]
    # a valued return inside a trailing block may name the block's locals: still refused
    with pytest.raises(PassError):
        inline_calls(p, p.func("f"), lambda h: False, must=lambda h: h.name == "g")


@pytest.mark.parametrize("dst", ["cuda", "hip"])
def test_c_plans_offer_the_lane_row_plan_after_the_plain_row_plan(dst):
    ps = plans("c", dst)
    names = [[n for n, _ in p] for p in ps]
    assert "flatten_lanes" not in names[0]
    lanes = ps[1]
    assert [n for n, _ in lanes][:4] == ["detensorize", "loop_recovery", "flatten_lanes", "binding"]
    assert lanes[2][1] == {"rows": True, REQUIRE: True}
    assert lanes[3][1] == {"target": dst, **ROWS, REQUIRE: True}
    assert lanes[4] == ("row_registers", {"target": dst, **ROW_REGS})     # passes/row_registers.py
    assert lanes[5:] == _finish(dst)
    # no other direction gets it
    for src in ("cuda", "hip", "bang"):
        assert not any(p.get("rows") for q in plans(src, dst) for n, p in q if n == "flatten_lanes")


def _det(name, entry):
    p = parse_file(EXAMPLES / name.split("_")[0].split(".")[0] / name, "c")
    return get("detensorize").apply(p, entry=entry, target="cuda")


def test_softmax_avx512_becomes_three_scalar_row_loops_and_binds_one_block_per_row():
    out = get("flatten_lanes").apply(_det("softmax_avx512.c", "softmax"), entry="softmax", rows=True)
    text = print_program(out, "c")
    body = text[text.index("void softmax("):]
    assert body.count("< cols; ++") == 3, body            # max, sum of exp, normalize
    assert "if (tail)" not in body and "[16]" not in body and "exp_nonpositive_ps(" not in body, body
    assert "float vmax = (float)NEG_BIG;" in body and "vsum = vsum + e;" in body, body
    bound, launch = get("binding").apply(out, entry="softmax", target="cuda", **ROWS)
    assert launch["block"] == [128, 1, 1]
    cu = print_program(bound)
    assert "xp_red_vmax[4]" in cu and "xp_red_vsum[4]" in cu and "__shfl_xor_sync(0xffffffffu" in cu, cu
    # without the step the row binding is refused (a lane array in the row body)
    with pytest.raises(PassError) as ei:
        get("binding").apply(_det("softmax_avx512.c", "softmax"), entry="softmax", target="cuda", **ROWS)
    assert ei.value.code == "XP4002"


def test_refused_where_it_does_not_fit():
    # a scalar row kernel: no vector loop, no masked tail; refused before any fusion is tried
    p = parse_file(EXAMPLES / "softmax" / "softmax.c", "c")
    with pytest.raises(PassError) as ei:
        get("flatten_lanes").apply(p, entry="softmax", rows=True)
    assert ei.value.code == "XP4002" and "masked tail" in ei.value.why
    # the join refused (F is not X / W * W): XP4002, so the probe skips the plan
    bad = ROWS_SRC.replace("int full = cols / W * W;", "int full = cols / 8 * W;")
    with pytest.raises(PassError) as ei:
        get("flatten_lanes").apply(parse_text(bad, "c", "<test>"), entry="f", rows=True)
    assert ei.value.code == "XP4002" and "join" in ei.value.why


@pytest.mark.parametrize("name,entry", [("relu_avx512.c", "relu_avx512"), ("add_avx512.c", "add")])
def test_elementwise_avx512_sources_are_refused(name, entry):
    # their vector loops run over vector indices (step 1), not the 16-step form joined here
    with pytest.raises(PassError) as ei:
        get("flatten_lanes").apply(_det(name, entry), entry=entry, rows=True)
    assert ei.value.code == "XP4002"


def test_fusion_checks_are_linear_and_bounded(monkeypatch):
    p = _det("softmax_avx512.c", "softmax")
    from xpiler.passes.inline_helpers import prepare_source
    from xpiler.passes.patterns.common import replace_func
    q = prepare_source(p, "softmax")
    q = replace_func(q, q.func("softmax"), FL.splice_nested(q.func("softmax")))
    lanes = sum(1 for n in walk(q.func("softmax").body) if isinstance(n, N.For) and FL.is_lane_loop(n))
    calls = []
    real = F.check_fuse
    monkeypatch.setattr(F, "check_fuse", lambda *a: (calls.append(1), real(*a))[1])
    t = time.process_time()
    out, done = FL.fuse_lane_runs(q, "softmax")
    fused = len(done)
    assert fused >= 40                      # the inlined helper's lane loops, twice, and the row's own
    # one check per fusion made and at most one per adjacent pair refused
    assert len(calls) <= fused + lanes, (len(calls), fused, lanes)
    assert time.process_time() - t < 30
    # the budget stops the walk
    calls.clear()
    _, done = FL.fuse_lane_runs(q, "softmax", budget=5)
    assert len(calls) == 5 and len(done) <= 5


def test_softmax_avx512_to_cuda_verifies_in_the_row_block_form(tmp_path):
    import json
    import re
    from xpiler.migration.driver import migrate
    out = tmp_path / "out"
    r = migrate(EXAMPLES / "softmax" / "softmax_avx512.c", "cuda", outdir=out, jobs=1, perf=False)
    assert r.verified
    text = r.output_path.read_text()
    assert "xp_red_vmax[4]" in text and "xp_red_vsum[4]" in text and "__shfl_xor_sync(0xffffffffu" in text
    assert "threadIdx.x" in text and not re.search(r"\b(vmax|vsum)\[", text)
    events = [json.loads(x) for x in (out / "provenance.jsonl").read_text().splitlines()[1:]]
    # the plain row plan is refused (lane arrays in the row body), this one is taken
    skipped = [e for e in events if e["type"] == "note" and e.get("what") == "plan skipped"]
    assert skipped and skipped[0]["plan"] == 0 and "XP4002" in skipped[0]["why"]
    passes = [e["name"] for e in events if e["type"] == "pass" and e.get("applied")]
    assert passes[:3] == ["detensorize", "flatten_lanes", "binding"], passes
    tests = [e for e in events if e["type"] == "test" and e.get("stage") == "step4_binding_symbolic"]
    # the emulator always runs it; on a machine with an NVIDIA GPU the GPU runs it too
    # ("hw:<gpu> + emu:simt-cpu")
    assert tests and tests[0]["verified"] and tests[0]["substrate"].split(" + ")[-1] == "emu:simt-cpu"


def test_the_probe_and_the_run_flatten_once():
    # the driver probes the plan, then runs it: the second call on an equal program is the memo's
    a, b = _det("softmax_avx512.c", "softmax"), _det("softmax_avx512.c", "softmax")
    assert a is not b and a == b
    FL._ROWS_MEMO.clear()
    x = get("flatten_lanes").apply(a, entry="softmax", rows=True)
    assert get("flatten_lanes").apply(b, entry="softmax", rows=True) is x
    assert len(FL._ROWS_MEMO) == 1
