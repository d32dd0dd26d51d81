"""Per-store access traces in repair (xpiler/repair/trace.py; docs/repair.md, "Localize" and
"Solve"): the trace names the store that wrote the wrong elements, constraints drawn from the
reference run pin a planted wrong coefficient of that store's index, a store outside its output
is recorded and not done, and a trace that cannot be taken falls back to the static slice and
says so."""
from __future__ import annotations

from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.spec import load_spec

INTERLEAVE = """void interleave(const float* a, const float* b, float* y, int n)
{
    for (int i = 0; i < n; i++) {
        y[2 * i] = a[i];
        y[2 * i + 1] = b[i];
    }
}
"""
SPEC = """entry = "interleave"
dialect = "c"
[sizes]
n = 12
[[shapes]]
name = "odd"
n = 7
[[args]]
name = "a"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "b"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "y"
dtype = "float32"
shape = ["n", 2]
role = "out"
[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"
"""
# the planted bug: the second store's coefficient of i is 1, not 2 (in bounds: y[i + 1])
BAD = INTERLEAVE.replace("y[2 * i + 1]", "y[i + 1]")
STORE2 = ["items", 0, "body", "stmts", 0, "body", "stmts", 1]


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    d = tmp_path_factory.mktemp("interleave")
    (d / "interleave.c").write_text(INTERLEAVE)
    (d / "interleave.c.toml").write_text(SPEC)
    return d / "interleave.c"


def _trace(src, text, tmp_path):
    from xpiler.repair import _smallest_failure
    from xpiler.repair.fastcheck import ExampleOracle
    from xpiler.repair.trace import take
    from xpiler.verify.tester import compare_kernels
    spec = load_spec(str(src) + ".toml")
    cand = tmp_path / "cand.c"
    cand.write_text(text)
    v = compare_kernels(cand, spec, against=(src, spec), use_reference=False, seeds=(0, 1, 2), stop_on_failure=True)
    assert not v.verified
    oracle = ExampleOracle(spec, (src, spec), False, v, 10.0)
    prog = parse_text(text, "c", "cand.c")
    return spec, prog, v, take(prog, "interleave", "c", spec, oracle, _smallest_failure(v, spec), tmp_path,
                               timeout=10.0)


def test_the_trace_names_the_store_that_wrote_the_wrong_elements(src, tmp_path):
    spec, prog, v, tr = _trace(src, BAD, tmp_path)
    named = tr.culprits()
    assert [s.line for s in named] == [5]                  # the second store, not the first
    assert list(named[0].path) == STORE2
    assert tr.bad[named[0].sid] > 0 and not tr.outside
    # which iteration wrote which element: the second store at i wrote element i + 1
    ev = tr.events[named[0].sid]
    assert all(e == lv["i"] + 1 for e, _, _, lv in ev)


def test_the_trace_orders_the_named_stores_regions_first(src, tmp_path):
    from xpiler.repair.localize import localize
    spec, prog, v, tr = _trace(src, BAD, tmp_path)
    idx = [r for r in localize(prog, "interleave", "c", v, stores=[s.path for s in tr.culprits()]) if r.kind == "index"]
    assert list(idx[0].path) == STORE2 + ["target", "index"]
    # the static slice alone has both stores at depth 0: source order puts the first store first
    idx0 = [r for r in localize(prog, "interleave", "c", v) if r.kind == "index"]
    assert list(idx0[0].path) != STORE2 + ["target", "index"]


def test_constraints_from_the_reference_run_alone_pin_the_coefficient(src, tmp_path):
    from xpiler.repair.localize import localize
    from xpiler.repair.solve import hinted, models, problem
    from xpiler.repair.trace import derive
    from xpiler.sketches import affine_index
    spec, prog, v, tr = _trace(src, BAD, tmp_path)
    r = next(r for r in localize(prog, "interleave", "c", v) if list(r.path) == STORE2 + ["target", "index"])
    p = problem(affine_index.build(r), r)
    p.hints = derive(tr, spec, p)
    assert p.hints is not None and p.hints.used
    got = [vals for level in (1, 2, 3) for vals in hinted(p, level, 4)]
    assert got == [{"c0": 2, "off": 1}]       # one filling maps every traced iteration right
    # without the constraints, Z3 proposes other fillings of the same cost too
    q = problem(affine_index.build(r), r)
    assert len(list(models(q, 1, 12))) > 1


def test_repair_tries_the_trace_pinned_filling_first(src, tmp_path):
    from xpiler.repair import repair_kernel
    spec = load_spec(str(src) + ".toml")
    r = repair_kernel(BAD, "c", "interleave", spec, (src, spec), workdir=tmp_path / "t", budget_s=60)
    assert r.repaired and r.holes == {"c0": 2}
    assert r.localization["by"] == "trace" and r.localization["culprits"][0]["line"] == 5
    first = r.tried[0]
    assert first["trace"] and first["path"] == STORE2 + ["target", "index"] and first["checked"] == 1
    assert first["result"] == "sat" and r.trace_constraints >= 1
    js = r.to_json()     # the repair event carries both
    assert js["localization"]["by"] == "trace" and js["trace_constraints"] == r.trace_constraints
    # the static slice alone first tries another region
    r0 = repair_kernel(BAD, "c", "interleave", spec, (src, spec), workdir=tmp_path / "s", budget_s=60, trace=False)
    assert r0.localization == {"by": "slice", "why": "trace off"} and r0.trace_constraints == 0
    assert r0.tried[0]["path"] != STORE2 + ["target", "index"]


def test_a_store_outside_its_output_is_recorded_and_not_done(src, tmp_path):
    bad = INTERLEAVE.replace("y[2 * i + 1]", "y[3 * i + 1]")
    spec, prog, v, tr = _trace(src, bad, tmp_path)
    sid = next(s.sid for s in tr.stores if s.line == 5)
    assert tr.outside.get(sid, 0) > 0 and tr.evidence() == "XP2105"
    assert tr.culprits()[0].sid == sid


POINTER_WALK = """void interleave(const float* a, const float* b, float* y, int n)
{
    float *p = y;
    for (int i = 0; i < n; i++) {
        *p = a[i];
        p++;
        *p = b[i + 1];
        p++;
    }
}
"""


def test_the_fallback_to_the_slice_is_logged(src, tmp_path, monkeypatch):
    from xpiler.repair import repair_kernel
    spec = load_spec(str(src) + ".toml")
    # a pointer that walks the output is not an alias the trace models: no store to instrument
    r = repair_kernel(POINTER_WALK, "c", "interleave", spec, (src, spec), workdir=tmp_path / "a", budget_s=60)
    assert r.localization["by"] == "slice"
    assert "no store into an output the trace can see" in r.localization["why"]
    assert r.to_json()["localization"]["by"] == "slice"
    assert r.repaired and r.holes      # the slice still finds the repair (b[i + 1] -> b[i])
    # the instrumented build failing falls back too, with its reason
    import xpiler.repair.trace as T

    def broken(*a, **k):
        raise RuntimeError("planted build failure")
    monkeypatch.setattr(T, "take", broken)
    r2 = repair_kernel(BAD, "c", "interleave", spec, (src, spec), workdir=tmp_path / "b", budget_s=60)
    assert r2.localization == {"by": "slice", "why": "trace failed: RuntimeError: planted build failure"}
    assert r2.repaired and r2.trace_constraints == 0


MALLOC_C = """#include <stdlib.h>
#include <string.h>
void interleave(const float* a, const float* b, float* y, int n)
{
    float *t = malloc((size_t)n * sizeof(float));
    memcpy(t, b, (size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) {
        y[2 * i] = a[i];
        y[i + 1] = t[i];
    }
    free(t);
}
"""


def test_a_c_candidate_stays_c_in_the_trace_build(src, tmp_path):
    # the prelude of a c trace build has no C++ (an overload would make the c platform compile
    # the file as C++, where ``float *t = malloc(...)`` does not compile)
    from xpiler.repair.trace import prelude
    assert "template" not in prelude("c") and "template" in prelude("cuda")
    spec, prog, v, tr = _trace(src, MALLOC_C, tmp_path)
    assert [s.line for s in tr.culprits()] == [9]


VADD = """#include <immintrin.h>
void vadd(const float* a, const float* b, float* y, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(&y[i], _mm512_add_ps(_mm512_loadu_ps(&a[i]), _mm512_loadu_ps(&b[i])));
    for (; i < n; i++)
        y[i] = a[i] + b[i];
}
"""
VADD_SPEC = """entry = "vadd"
dialect = "c"
[sizes]
n = 40
[[args]]
name = "a"
dtype = "float32"
shape = ["n"]
role = "in"
[[args]]
name = "b"
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


def test_an_avx512_store_of_a_c_output_is_traced(tmp_path):
    from xpiler.repair import _smallest_failure
    from xpiler.repair.fastcheck import ExampleOracle
    from xpiler.repair.trace import take
    from xpiler.verify.tester import compare_kernels
    src = tmp_path / "vadd.c"
    src.write_text(VADD)
    (tmp_path / "vadd.c.toml").write_text(VADD_SPEC)
    spec = load_spec(str(src) + ".toml")
    bad = VADD.replace("_mm512_storeu_ps(&y[i]", "_mm512_storeu_ps(&y[i + 1]")
    cand = tmp_path / "cand.c"
    cand.write_text(bad)
    v = compare_kernels(cand, spec, against=(src, spec), use_reference=False, seeds=(0,), stop_on_failure=True)
    assert not v.verified
    oracle = ExampleOracle(spec, (src, spec), False, v, 10.0)
    tr = take(parse_text(bad, "c", "cand.c"), "vadd", "c", spec, oracle, _smallest_failure(v, spec), tmp_path,
              timeout=10.0)
    named = tr.culprits()
    assert named and named[0].kind == "vstore" and named[0].line == 6
    # 16 lanes per event; the shifted vector store wrote elements of the next lanes
    assert all(c == 16 for _, c, _, _ in tr.events[named[0].sid])
    assert tr.bad.get(named[0].sid, 0) > 0


def test_a_non_temporal_store_of_a_c_output_is_a_traced_vector_store():
    # the large-output elementwise form (passes/patterns/x86_stream.py) stores with
    # _mm512_stream_ps beside _mm512_store_ps: the trace counts both as 16-lane stores of y
    from xpiler.ir import nodes as N
    from xpiler.ir.visit import walk
    from xpiler.passes import tensorize
    from xpiler.repair.trace import Model, find_stores
    plain = "void vadd(const float* a, const float* b, float* y, int n) {\n" \
            "    for (int i = 0; i < n; i++) y[i] = a[i] + b[i];\n}\n"
    prog = tensorize.apply(parse_text(plain, "c", "vadd.c"), entry="vadd", target="c")
    kinds = {}
    for s in find_stores(Model(prog, "vadd", ["y"])):
        kinds.setdefault(s.kind, 0)
        kinds[s.kind] += 1
    stream = [n for n in walk(prog.func("vadd")) if isinstance(n, N.Intrinsic) and n.name == "_mm512_stream_ps"]
    assert stream and kinds.get("vstore", 0) >= 4       # peel, stream, aligned store and tail
