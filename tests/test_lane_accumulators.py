"""contraction(mode="lanes") (passes/lane_accumulators.py): a lane-array accumulator with a
horizontal reduction becomes one scalar reduction; its refusals; and the rewrite on
softmax_avx512.c's real loop form (detensorize, then the lane fusions / contractions of the
tuner's lane route)."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes.base import PassError, get
from xpiler.printers import print_program

EX = Path(__file__).resolve().parents[1] / "examples"

SUM = """
void f(const float* x, float* y, int n) {
    float acc[16];
    for (int l = 0; l < 16; ++l) {
        acc[l] = 0.0f;
    }
    for (int c = 0; c < n; c += 16) {
        for (int l = 0; l < 16; ++l) {
            acc[l] = acc[l] + x[c + l];
        }
    }
    float red[16];
    for (int i = 0; i < 16; ++i) {
        red[i] = acc[i];
    }
    for (int w = 8; w > 0; w /= 2) {
        for (int i = 0; i < w; ++i) {
            red[i] = red[i] + red[i + w];
        }
    }
    y[0] = red[0];
}
"""


def _c(text):
    return parse_text(text, "c", "<test>")


def _lanes(text, array="acc"):
    return get("contraction").apply(_c(text), entry="f", array=array, mode="lanes")


def _body(fn):
    return [s for s in fn.body.stmts if not isinstance(s, N.Comment)]


def test_lane_sum_becomes_one_scalar_reduction():
    out = _lanes(SUM)
    fn = out.func("f")
    stmts = _body(fn)
    # float acc = 0.0f; for (c) for (l) acc = acc + x[c + l]; y[0] = acc;
    assert [type(s).__name__ for s in stmts] == ["Decl", "For", "Assign"], print_program(out, "c")
    d, col, store = stmts
    assert d.name == "acc" and isinstance(d.type, N.Scalar) and d.init.value == 0.0
    assert col.var == "c" and col.step.value == 16
    lane = col.body.stmts[0]
    assert isinstance(lane, N.For) and lane.var == "l" and lane.hi.value == 16
    upd = lane.body.stmts[0]
    assert upd == N.Assign(N.Var("acc"), "=", N.BinOp("+", N.Var("acc"), N.Index(N.Var("x"), N.BinOp("+", N.Var("c"), N.Var("l")))))
    assert store == N.Assign(N.Index(N.Var("y"), N.Const(0, "int32", "0")), "=", N.Var("acc"))
    # no array is left
    assert not [n for n in walk(fn) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)]


def test_lane_max_through_a_temporary_with_a_guarded_tail_and_a_chain():
    src = """
void f(const float* x, float* y, int n, int tail) {
    float vmax[4];
    for (int l = 0; l < 4; ++l) {
        vmax[l] = -3.0e38f;
    }
    for (int c = 0; c < n; c += 4) {
        for (int l = 0; l < 4; ++l) {
            float t = vmax[l] > x[c + l] ? vmax[l] : x[c + l];
            vmax[l] = t;
        }
    }
    for (int l = 0; l < 4; ++l) {
        vmax[l] = l < tail ? fmaxf(vmax[l], x[n + l]) : vmax[l];
    }
    y[0] = fmaxf(fmaxf(vmax[0], vmax[1]), fmaxf(vmax[2], vmax[3]));
}
"""
    out = _lanes(src, "vmax")
    text = print_program(out, "c")
    assert "float vmax = -3.0e38f;" in text, text
    assert "vmax = vmax > x[c + l] ? vmax : x[c + l];" in text     # the temporary is folded in
    assert "float t" not in text
    assert "if (l < tail) {" in text and "vmax = fmaxf(vmax, x[n + l]);" in text
    assert "y[0] = vmax;" in text and "[4]" not in text


def _refused(text, array="acc"):
    with pytest.raises(PassError) as ei:
        _lanes(text, array)
    assert ei.value.code == "XP4001", ei.value
    return ei.value


def test_refuses_an_accumulator_read_inside_the_loop_for_something_else():
    e = _refused(SUM.replace("acc[l] = acc[l] + x[c + l];", "acc[l] = acc[l] + x[c + l];\n            y[c + l] = acc[l];"))
    assert e.line == 10 and "other than by a lane update" in e.why  # names the statement 'y[c + l] = acc[l]'
    # reading another lane in the update is no lane update either
    e = _refused(SUM.replace("acc[l] = acc[l] + x[c + l];", "acc[l] = acc[l] + acc[0];"))
    assert e.line == 9


def test_refuses_lanes_with_different_initial_values_for_a_sum():
    e = _refused(SUM.replace("acc[l] = 0.0f;", "acc[l] = (float)l;"))
    assert "different values" in e.why and e.line == 5
    e = _refused(SUM.replace("acc[l] = 0.0f;", "acc[l] = 1.0f;"))
    assert "identity" in e.why and e.line == 5


def test_max_may_start_from_any_common_value():
    src = SUM.replace("acc[l] = 0.0f;", "acc[l] = x[0];").replace("acc[l] + x[c + l]", "fmaxf(acc[l], x[c + l])") \
        .replace("red[i] + red[i + w]", "fmaxf(red[i], red[i + w])")
    assert "float acc = x[0];" in print_program(_lanes(src), "c")


def test_refuses_a_non_associative_operator():
    e = _refused(SUM.replace("acc[l] = acc[l] + x[c + l];", "acc[l] = x[c + l] - acc[l];"))
    assert e.line == 9
    # a horizontal reduction with another operator than the updates
    e = _refused(SUM.replace("red[i] + red[i + w]", "red[i] - red[i + w]"))
    assert "horizontal" in e.why


def test_candidates_and_other_modes():
    from xpiler.passes import lane_accumulators as LA
    assert LA.candidates(_c(SUM)) == [{"entry": "f", "array": "acc", "mode": "lanes"}]
    assert get("contraction").candidates(_c(SUM), "c") == []     # the array mode does not touch it
    with pytest.raises(PassError) as ei:
        get("contraction").apply(_c(SUM), entry="f", array="acc", mode="bogus")
    assert ei.value.code == "XP4002"


def test_softmax_avx512_accumulators_become_scalar_reductions():
    from xpiler.frontend import parse_file
    from xpiler.migration.stage import Stage
    from xpiler.passes import lane_accumulators as LA
    from xpiler.passes import dependence as D
    from xpiler.schedule import routes_lanes as RL
    from xpiler.schedule.step import StepContext
    p = parse_file(EX / "softmax" / "softmax_avx512.c", "c")
    p = get("detensorize").apply(p, entry="softmax", target="cuda")
    p = p[0] if isinstance(p, tuple) else p
    cur, ctx = Stage(p, "c", "softmax"), StepContext({}, [])
    assert LA.candidates(p) == []          # the updates still go through a temporary lane array

    def lane_fuse(fn, q):
        lp = D.find_loop(fn, q["loop"])
        return lp is not None and RL.is_lane_loop(lp)
    for name, pick in (("fuse", lane_fuse), ("contraction", lambda fn, q: RL._lane_array(fn, q["array"]))):
        while (got := RL._next(cur, ctx, name, pick)) is not None:
            cur = got[1]
    assert [c["array"] for c in LA.candidates(cur.program)] == ["vmax", "vsum"]
    q = cur.program
    for a in ("vmax", "vsum"):
        q = get("contraction").apply(q, entry="softmax", array=a, mode="lanes")
    text = print_program(q, "c")
    body = text[text.index("void softmax"):]
    assert "float vmax = (float)NEG_BIG;" in body and "float vsum = 0.0f;" in body
    assert "const float m = (float)vmax;" in body and "(1.0f / vsum)" in body
    assert "xpd_red" not in body and "vmax[" not in body and "vsum[" not in body
    # the tail's masked sum keeps only the valid lanes
    assert "if (xpd_l51 < tail) {" in body


def test_guard_loops_turns_a_tail_guard_into_a_loop_bound_or_a_one_trip_loop():
    src = """
void f(const float* x, float* y, int rows, int tail) {
    for (int r = 0; r < rows; ++r) {
        if (tail) {
            for (int l = 0; l < 16; ++l) { y[r * 16 + l] = x[l]; }
        }
        if (tail > 2) {
            float t = x[r];
            for (int l = 0; l < 16; ++l) { y[l] = t; }
        }
        if (rows) { y[r] = 0.0f; }
    }
}
"""
    out = get("guard_loops").apply(_c(src), entry="f")
    row = [s for s in out.func("f").body.stmts if isinstance(s, N.For)][0]
    a, b, c = [s for s in row.body.stmts if not isinstance(s, N.Comment)]
    assert isinstance(a, N.For) and a.var == "l" and isinstance(a.hi, N.Cond) and a.hi.cond == N.Var("tail")
    assert isinstance(b, N.For) and b.var.startswith("xp_guard") and isinstance(b.hi, N.Cond)
    assert isinstance(c, N.If)                         # no loop inside: left alone
    # a condition the loop changes keeps the one-trip form; a loose break is refused
    bad = src.replace("y[r * 16 + l] = x[l];", "y[r * 16 + l] = x[l]; tail = 0;")
    out = get("guard_loops").apply(_c(bad), entry="f")
    first = [s for s in out.func("f").body.stmts if isinstance(s, N.For)][0].body.stmts[0]
    assert first.var.startswith("xp_guard")
    with pytest.raises(PassError) as ei:
        get("guard_loops").apply(_c(src.replace("float t = x[r];", "float t = x[r]; if (t > 0.0f) break;")), entry="f")
    assert ei.value.code == "XP4001" and ei.value.line == 8


@pytest.mark.long     # a tuning run of a route the default plans now take themselves (test_softmax_avx512_rows.py)
def test_softmax_avx512_reaches_a_verified_block_per_row_candidate_and_replays(tmp_path, monkeypatch):
    """The cost model decides (forced on any host); a stand-in rates programs with the
    block-reduction tree fastest, so the search takes the accumulator route's rows='block'
    alternative. The candidate is tested and verifies, the log holds the route's passes one by
    one, and replay re-derives the kernel."""
    import json
    import xpiler.schedule.evaluator as EV
    import xpiler.schedule.tune as TU
    from xpiler.migration.driver import migrate
    from xpiler.replay import replay
    from xpiler.schedule.timing import MODEL
    from conftest import plans_before_20261205
    plans_before_20261205(monkeypatch)     # the default plans now reach this form themselves

    def fake(stage, spec, sizes=None):
        t = stage.text or print_program(stage.program, stage.dialect)
        return (0.1 if "xp_red_" in t else 1.0), {"model": "test stand-in"}
    monkeypatch.setattr(EV, "modelled_latency", fake)
    monkeypatch.setattr(TU, "source_for", lambda dialect, text: MODEL)
    out = tmp_path / "out"
    r = migrate(EX / "softmax" / "softmax_avx512.c", "cuda", outdir=out, jobs=1, perf=False, tune=True,
                max_evals=2, seed=0)
    assert r.verified
    events = [json.loads(x) for x in (out / "provenance.jsonl").read_text().splitlines()[1:]]
    res = next(e for e in events if e["type"] == "tune" and e["kind"] == "result")
    names = [(s["pass"], s["params"].get("mode")) for s in res["steps"]]
    assert ("contraction", "lanes") in names and ("guard_loops", None) in names, names
    assert res["steps"][-1]["pass"] == "binding" and res["steps"][-1]["params"].get("rows") == "block"
    tests = [e for e in events if e["type"] == "test" and str(e.get("stage", "")).startswith("tune")
             and e["stage"] != "tune_root"]
    assert any(e["verified"] and e["program_hash"] == res["chosen"] for e in tests), tests
    searched = [e["name"] for e in events if e["type"] == "pass" and e.get("proposer") == "search"]
    assert searched == [p for p, _ in names]
    text = r.output_path.read_text()
    import re
    assert "xp_red_vmax" in text and "xp_red_vsum" in text
    assert not re.search(r"\b(vmax|vsum)\[", text)        # no lane accumulator left
    rep = replay(out / "provenance.jsonl")
    assert rep.ok and rep.output_file is not None and rep.output_file.read_text() == text
