"""Lane loops to a flat loop: fuse's collapse mode (passes/collapse.py), the fuse / contraction
generalizations the route needs, the tuner's route (xpiler/schedule/routes_lanes.py) and the cost
model's view of the two forms. End to end: relu_avx512.c and add_avx512.c -> cuda reach the flat
grid-stride form as a verified tuner candidate, logged pass by pass, and replay re-derives it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes.base import PassError, get
from xpiler.printers import print_program

EX = Path(__file__).resolve().parents[1] / "examples"

LANES = """
void f(const float* x, float* y, int n) {
    int nvec = n / 16;
    for (int v = 0; v < nvec; ++v) {
        int i = v * 16;
        for (int l = 0; l < 16; ++l) {
            float t = x[i + l];
            y[i + l] = t * 2.0f;
        }
    }
}
"""


def _c(text):
    return parse_text(text, "c", "<test>")


def _loops(node):
    return [n for n in walk(node) if isinstance(n, N.For)]


def test_collapse_makes_one_flat_loop_over_the_elements():
    out = get("fuse").apply(_c(LANES), entry="f", mode="collapse", loop="v")
    fn = out.func("f")
    loops = _loops(fn)
    assert len(loops) == 1, print_program(out, "c")
    flat = loops[0]
    assert flat.var == "v_l"
    assert print_program(out, "c").count("v_l < nvec * 16") == 1
    body = [s for s in flat.body.stmts if not isinstance(s, N.Comment)]
    assert len(body) == 2
    assert isinstance(body[0], N.Decl) and body[0].name == "t"
    assert body[0].init == N.Index(N.Var("x"), N.Var("v_l"))
    assert isinstance(body[1], N.Assign) and body[1].target == N.Index(N.Var("y"), N.Var("v_l"))
    # the prefix declaration (i = v * 16) was substituted away; v and l no longer occur
    names = {n.name for n in walk(fn) if isinstance(n, N.Var)}
    assert not names & {"v", "l", "i"}


def test_collapse_keeps_a_scaled_flat_index_and_invariant_declarations():
    src = LANES.replace("int i = v * 16;", "int i = v * 16;\n        float s = 3.0f;").replace(
        "y[i + l] = t * 2.0f;", "y[2 * (i + l) + 1] = t * s;")
    out = get("fuse").apply(_c(src), entry="f", mode="collapse", loop="v")
    text = print_program(out, "c")
    assert "float s = 3.0f;" in text               # loop-invariant: kept at the top of the flat body
    assert "y[2 * v_l + 1]" in text, text          # 2*(v*16 + l) + 1 == 2*e + 1


def _refusal(text, loop="v"):
    with pytest.raises(PassError) as ei:
        get("fuse").apply(_c(text), entry="f", mode="collapse", loop=loop)
    assert ei.value.code == "XP4001"
    return ei.value


def test_collapse_refuses_an_index_that_is_not_a_bijection():
    # v*8 + l with l < 16: iterations (v, l+8) and (v+1, l) name one element
    e = _refusal(LANES.replace("int i = v * 16;", "int i = v * 8;"))
    assert "bijection" in e.why and e.line == 7          # names the statement that reads x[i + l]


def test_collapse_refuses_a_lane_used_as_a_value():
    e = _refusal(LANES.replace("y[i + l] = t * 2.0f;", "y[i + l] = t * l;"))
    assert "'l'" in e.why and e.line == 8


def test_collapse_refuses_a_carried_dependence():
    e = _refusal(LANES.replace("y[i + l] = t * 2.0f;", "y[i + l + 1] = y[i + l] * t;"))
    assert "dependence" in e.why and "'y'" in e.why


def test_collapse_refuses_a_lane_array_read_after_the_lane_loop():
    src = """
void f(const float* x, float* y, int n) {
    for (int v = 0; v < n; ++v) {
        float xv[16];
        for (int l = 0; l < 16; ++l) {
            xv[l] = x[v * 16 + l];
        }
        y[v] = xv[0];
    }
}
"""
    e = _refusal(src)
    assert e.line == 8 and "follows the lane loop" in e.why
    # and a lane array still declared in the loop (not contracted) is refused by name
    e = _refusal(src.replace("        y[v] = xv[0];\n", "").replace("xv[l] = x[v * 16 + l];",
                                                                    "xv[l] = x[v * 16 + l]; y[v * 16 + l] = xv[l];"))
    assert "'xv'" in e.why and "contract" in e.why


def test_collapse_refuses_a_non_constant_lane_count():
    _refusal(LANES.replace("l < 16", "l < n"))


def test_fuse_moves_an_uninitialized_declaration_between_the_loops():
    src = """
void f(const float* a, const float* b, float* c) {
    float va[16];
    for (int p = 0; p < 16; ++p) { va[p] = a[p]; }
    float vb[16];
    for (int q = 0; q < 16; ++q) { vb[q] = b[q]; }
}
"""
    out = get("fuse").apply(_c(src), entry="f", loop="p")
    fn = out.func("f")
    stmts = [s for s in fn.body.stmts if not isinstance(s, N.Comment)]
    assert [type(s).__name__ for s in stmts] == ["Decl", "Decl", "For"]
    assert len(_loops(fn)) == 1
    # a declaration the first loop names (here it would shadow the parameter the first loop
    # writes) is not moved in front of it: refused
    bad = """
void f(const float* a, const float* b, float* c, float* vb) {
    if (c) {
        float va[16];
        for (int p = 0; p < 16; ++p) { va[p] = a[p]; vb[p] = va[p]; }
        float vb[16];
        for (int q = 0; q < 16; ++q) { vb[q] = b[q]; c[q] = vb[q]; }
    }
}
"""
    with pytest.raises(PassError) as ei:
        get("fuse").apply(_c(bad), entry="f", loop="p")
    assert "not followed by another loop" in ei.value.why


def test_contraction_names_one_of_two_declarations_by_a_loop():
    src = """
void f(const float* x, float* y, int n) {
    for (int v = 0; v < n; ++v) {
        float xv[16];
        for (int l = 0; l < 16; ++l) { xv[l] = x[v * 16 + l]; y[v * 16 + l] = xv[l]; }
    }
    if (n > 0) {
        float xv[16];
        for (int k = 0; k < 16; ++k) { xv[k] = x[k]; y[k] = xv[k] + 1.0f; }
    }
}
"""
    with pytest.raises(PassError):          # two declarations and no loop to tell them apart
        get("contraction").apply(_c(src), entry="f", array="xv")
    out = get("contraction").apply(_c(src), entry="f", array="xv", loop="l")
    text = print_program(out, "c")
    assert "float xv = x[v * 16 + l];" in text and text.count("float xv[16];") == 1
    assert {"entry": "f", "array": "xv", "loop": "k"} in get("contraction").candidates(out, "c")


def _root(name, entry):
    from xpiler.frontend import parse_file
    from xpiler.migration.stage import Stage
    p = parse_file(EX / name.split("_")[0] / f"{name}.c", "c")
    p = get("detensorize").apply(p, entry=entry, target="cuda")
    p = p[0] if isinstance(p, tuple) else p
    st = Stage(p, "c", entry)
    st.text = print_program(p, "c")
    return st


def test_route_steps_and_cost_model_prefer_the_flat_form():
    from xpiler.schedule.cost import estimate, launch_env
    from xpiler.schedule.routes_lanes import lane_routes
    from xpiler.schedule.step import StepContext, apply_step
    from xpiler.schedule.tune import SEQUENCE, sequence_steps
    st, ctx = _root("relu_avx512", "relu_avx512"), StepContext({}, [])
    routes = lane_routes(st, "cuda", ctx)
    assert routes and all(r.pass_name == SEQUENCE for r in routes)
    subs = sequence_steps(routes[0])
    assert [(s.pass_name, s.params.get("mode")) for s in subs] == [
        ("fuse", None), ("fuse", None), ("contraction", None), ("contraction", None), ("fuse", "collapse"),
        ("binding", None)]
    assert lane_routes(st, "c", ctx) == [] and lane_routes(st, "bang", ctx) == []
    hip = lane_routes(st, "hip", ctx)
    assert hip and sequence_steps(hip[0])[-1].params["target"] == "hip"
    flat = st
    for s in subs:
        flat = apply_step(s, flat, ctx)
    lane, lane_launch = get("binding").apply(st.program, entry="relu_avx512", target="cuda",
                                             block=subs[-1].params["block"])

    def model(prog, launch, n):
        g = eval(launch["grid"][0].replace("/", "//"), {"n": n, "max": max, "min": min})
        b = launch["block"][0]
        return estimate(prog, "relu_avx512", "cuda", {"n": n}, threads=g * b, env=launch_env([g, 1, 1], [b, 1, 1]))

    def parsed(prog):     # as a candidate's test sees it: printed and parsed again (no binding marks)
        return parse_text(print_program(prog, "cuda"), "cuda", "<candidate>")
    for n in (65536, 1 << 24):     # under-filled and saturating launches
        for form in (lambda p: p, parsed):
            a, b = model(form(lane), lane_launch, n), model(form(flat.program), flat.launch, n)
            assert b.ms * 3 < a.ms, (n, a, b)
            if n >= 1 << 24:     # both launches fill the GPU: the lane form's strided accesses waste sectors
                assert b.global_bytes * 4 < a.global_bytes, (a, b)


def _tuned(tmp_path, monkeypatch, name, entry):
    import xpiler.schedule.tune as TU
    from xpiler.migration.driver import migrate
    from xpiler.schedule.timing import MODEL
    monkeypatch.setattr(TU, "source_for", lambda dialect, text: MODEL)   # the model decides on any host
    from conftest import plans_before_20261205
    plans_before_20261205(monkeypatch)    # (the default flattens these lanes itself since 2026-12-05)
    out = tmp_path / name
    r = migrate(EX / name.split("_")[0] / f"{name}.c", "cuda", outdir=out, jobs=1, perf=False, tune=True,
                max_evals=3, seed=0)
    events = [json.loads(x) for x in (out / "provenance.jsonl").read_text().splitlines()[1:]]
    return r, out, events


@pytest.mark.parametrize("name,entry,arrays", [("relu_avx512", "relu_avx512", ["x"]),
                                               pytest.param("add_avx512", "add_avx512", ["a", "b"], marks=pytest.mark.long)])
def test_avx512_source_reaches_the_flat_form_and_replays(tmp_path, monkeypatch, name, entry, arrays):
    from xpiler.replay import replay
    r, out, events = _tuned(tmp_path, monkeypatch, name, entry)
    assert r.verified
    res = next(e for e in events if e["type"] == "tune" and e["kind"] == "result")
    names = [(s["pass"], s["params"].get("mode")) for s in res["steps"]]
    assert ("fuse", "collapse") in names and names[-1][0] == "binding", names
    assert names.index(("fuse", "collapse")) > max(i for i, (p, _) in enumerate(names) if p == "contraction")
    # the candidate was tested and verified as a candidate of the search
    tests = [e for e in events if e["type"] == "test" and str(e.get("stage", "")).startswith("tune")
             and e["stage"] != "tune_root"]
    assert any(e["verified"] and e["program_hash"] == res["chosen"] for e in tests), tests
    assert res["tuned_ms"] < res["untuned_ms"]
    searched = [e["name"] for e in events if e["type"] == "pass" and e.get("proposer") == "search"]
    assert searched == [p for p, _ in names]
    text = r.output_path.read_text()
    kernel = text.split("_host(")[0]
    assert "[16]" not in kernel.split("int rest")[0], kernel      # no lane array in the main loop
    for a in arrays:
        assert f"{a}[v_xpd_l1]" in kernel
    assert "v_xpd_l1 < nvec * 16; v_xpd_l1 += (gridDim.x * blockDim.x)" in kernel
    rep = replay(out / "provenance.jsonl")
    assert rep.ok and rep.output_file is not None and rep.output_file.read_text() == text
