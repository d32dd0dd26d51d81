"""Loop recovery's normalizations as logged alternatives (issue 13: "hidden fallbacks inside
passes become logged alternatives"): ``normalize="partition" | "task_slices" | "staged" |
"loops"`` each applies alone or is refused (AlternativeRefused, XP4002, with its reason); the
plans propose them in that order as steps of their own; ``normalize=True`` (logs written before)
is the four in that order inside the pass and still replays."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.migration.pipeline import ALTERNATIVES, alternatives, plans
from xpiler.passes import loop_recovery
from xpiler.passes.base import AlternativeRefused, PassError
from xpiler.printers import print_program

from conftest import EXAMPLES
from test_pass_loop_recovery_normalize import GRID, GRID_STRIDE
from test_pass_loop_recovery_slices import BLOCK4, STAGED

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "launch_logs"

PHASES = """
__global__ void k(const float *x, float *y, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = s[255 - threadIdx.x];
}
"""


def _recover(src, dialect, launch, normalize):
    prog = parse_text(src, dialect, "k." + {"cuda": "cu", "bang": "mlu"}[dialect])
    new, _ = loop_recovery.apply(prog, entry="k", launch=launch, normalize=normalize)
    return print_program(new, "c")


def _first(src, dialect, launch):
    """The first alternative that applies, its output, and the refused ones with their reasons."""
    refused = []
    for how in loop_recovery.NORMALIZE:
        try:
            return how, _recover(src, dialect, launch, how), refused
        except AlternativeRefused as e:
            assert e.code == "XP4002" and e.why.startswith(f"normalize={how!r}: ")
            refused.append((how, e.why))
    raise AssertionError("'loops' always applies")


@pytest.mark.parametrize("src, dialect, launch, want", [
    (GRID_STRIDE, "cuda", GRID, "partition"),
    (STAGED, "bang", BLOCK4, "task_slices"),
    (PHASES, "cuda", GRID, "loops"),
])
def test_first_alternative_that_applies_is_what_normalize_true_gives(src, dialect, launch, want):
    how, text, refused = _first(src, dialect, launch)
    assert how == want
    assert text == _recover(src, dialect, launch, True)
    assert [h for h, _ in refused] == list(loop_recovery.NORMALIZE[:loop_recovery.NORMALIZE.index(want)])


def test_each_alternative_refuses_with_its_own_reason():
    # task slices: the grid-stride loop is no contiguous per-task slice
    with pytest.raises(AlternativeRefused, match="normalize='task_slices'"):
        _recover(GRID_STRIDE, "cuda", GRID, "task_slices")
    # a barrier's phases: no normalization applies, staged or not
    for how in ("partition", "staged"):
        with pytest.raises(AlternativeRefused, match=f"normalize='{how}': .*phases"):
            _recover(PHASES, "cuda", GRID, how)
    # the staged function (nothing un-staged) normalizes like 'partition' here
    assert _recover(GRID_STRIDE, "cuda", GRID, "staged") == _recover(GRID_STRIDE, "cuda", GRID, "partition")
    # 'loops' keeps the partition loops; False keeps them without un-staging
    assert "for (int bx" in _recover(GRID_STRIDE, "cuda", GRID, "loops")
    assert _recover(GRID_STRIDE, "cuda", GRID, "loops") == _recover(GRID_STRIDE, "cuda", GRID, False)


def test_an_unknown_alternative_and_a_real_refusal_are_not_alternatives():
    with pytest.raises(PassError) as e:
        _recover(GRID_STRIDE, "cuda", GRID, "fastest")
    assert not isinstance(e.value, AlternativeRefused) and e.value.code == "XP4001"
    # a refusal of the recovery itself is the same for every alternative: not AlternativeRefused
    prog = parse_text("void k(float *y) { y[0] = 1.0f; }", "c", "k.c")
    with pytest.raises(PassError) as e:
        loop_recovery.apply(prog, entry="k", launch=GRID, normalize="partition")
    assert not isinstance(e.value, AlternativeRefused)


def test_candidates_offer_the_alternatives_that_apply_in_order():
    prog = parse_text(STAGED, "bang", "k.mlu").with_launch("k", BLOCK4)
    assert loop_recovery.candidates(prog, "c") == [{"entry": "k", "normalize": h} for h in ("task_slices", "loops")]
    prog = parse_text(GRID_STRIDE, "cuda", "k.cu").with_launch("k", GRID)
    assert [c["normalize"] for c in loop_recovery.candidates(prog, "c")] == ["partition", "staged", "loops"]


def test_plans_propose_the_normalizations_in_order():
    step = next(p for n, p in plans("bang", "c")[-1] if n == "loop_recovery")
    assert [a["normalize"] for a in alternatives(step)] == ["partition", "task_slices", "staged", "loops"]
    assert alternatives({"target": "c"}) == [{"target": "c"}]
    assert alternatives({"x": 1, ALTERNATIVES: [{"y": 2}, {"y": 3}]}) == [{"x": 1, "y": 2}, {"x": 1, "y": 3}]


def test_migration_logs_the_refused_alternatives_and_the_one_taken(tmp_path):
    """add.mlu -> c: partition refused (XP4002, with why), task slices taken; the log replays."""
    from xpiler.api import migrate
    from xpiler.replay import replay
    r = migrate(EXAMPLES / "add" / "add.mlu", to="c", outdir=tmp_path / "o", perf=False)
    assert r.verified
    events = [json.loads(x) for x in r.log_path.read_text().splitlines()]
    lr = [e for e in events if e["type"] == "pass" and e["name"] == "loop_recovery"]
    assert [(e["params"], e["applied"]) for e in lr] == [({"normalize": "partition"}, False),
                                                        ({"normalize": "task_slices"}, True)]
    assert lr[0]["code"] == "XP4002" and lr[0]["why"].startswith("normalize='partition': ")
    assert lr[0]["step"] == lr[1]["step"]          # one step of the plan, two alternatives
    notes = [e for e in events if e["type"] == "note" and e.get("what") == "alternative refused"]
    assert [(n["params"], n["next"], n["why"]) for n in notes] == [
        ({"normalize": "partition"}, {"normalize": "task_slices"}, lr[0]["why"])]
    assert not [d for d in r.diagnostics if getattr(d, "code", "") == "XP4002"
                and "normalize=" in str(d)]       # a refused alternative is no diagnostic
    rep = replay(r.log_path)
    assert rep.ok and rep.verified


def test_a_log_written_before_the_alternatives_still_replays(tmp_path, monkeypatch):
    """relu.mlu -> cuda, logged before the change: loop recovery with no parameters (the
    normalizations tried inside the pass, normalize=True) re-derives the same program."""
    from xpiler.replay import replay
    root = tmp_path / "root"
    shutil.copytree(FIXTURES, root)
    monkeypatch.chdir(root)
    log = root / "relu_mlu_cuda" / "provenance.jsonl"
    lr = [e for e in map(json.loads, log.read_text().splitlines())
          if e.get("type") == "pass" and e.get("name") == "loop_recovery"]
    assert lr and all(e["params"] == {} for e in lr)
    rep = replay(log)
    assert rep.ok and rep.verified and rep.steps >= 1
