"""A crash inside one pass (an exception that is not a PassError) is a refused step, said as
warning XP9002 with the traceback in the log, never the end of the migration (it was XP9001:
depthwise_conv2d.mlu -> c died in tensorize on two nested sites, found by the dataset run)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpiler.migration.driver import migrate

ROOT = Path(__file__).resolve().parent.parent


def test_a_crashing_pass_is_a_refused_step(tmp_path, monkeypatch):
    import xpiler.passes.tensorize as T

    def boom(program, **params):
        raise RuntimeError("boom in tensorize")
    monkeypatch.setattr(T, "apply", boom)
    r = migrate(ROOT / "examples/relu/relu.cu", to="c", outdir=tmp_path / "out", perf=False)
    assert r.verified
    crash = [d for d in r.diagnostics if d.code == "XP9002"]
    assert crash and "boom in tensorize" in crash[0].format() and "tensorize" in crash[0].format()
    events = [json.loads(line) for line in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()]
    notes = [e for e in events if e.get("type") == "note" and e.get("what") == "internal error in a pass"]
    assert notes and "boom in tensorize" in notes[0]["traceback"]
    assert "_mm512" not in r.code          # the step that crashed was not taken


@pytest.mark.slow
def test_nested_vector_sites_no_longer_crash_tensorize(tmp_path):
    r = migrate(ROOT / "examples/depthwise_conv2d/depthwise_conv2d.mlu", to="c", outdir=tmp_path / "out", perf=False)
    assert r.verified
    assert not [d for d in r.diagnostics if d.code in ("XP9001", "XP9002")]
    assert "_mm512" in r.code
