"""The source is tested alone before anything is migrated (issue 11, items 4 and 5).

A source that hangs, fails its own test, or whose reference raises is bad input (exit 2, its
own diagnostic, nothing written), found within one time limit; the per-run limit of the
candidates comes from the source's measured run time; ``--budget`` is a wall-clock cap that
tests and LLM calls honour; bad flag values are usage errors; a silent LLM endpoint is said to
be one, with the time it really cost.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

import xpiler
from conftest import EXAMPLES
from xpiler.cli import main
from xpiler.diagnostics import XPError
from xpiler.migration.driver import RUN_LIMIT_FLOOR_S, run_limit_from, source_check_limit
from xpiler.provenance import read_log

sys.path.insert(0, str(Path(__file__).resolve().parent / "llm_fixtures"))
from fake_openai_server import FakeOpenAI, slow  # noqa: E402
from helpers import RELU_SRC, relu_context  # noqa: E402

RELU_SPEC = (EXAMPLES / "relu" / "relu.c.toml").read_text()
REF = EXAMPLES / "relu" / "ref.py"


def kernel(tmp_path: Path, body: str, *, ref: str | None = None, name: str = "k") -> Path:
    """A C relu kernel with ``body`` as its loop body and the relu spec (reference ``ref``)."""
    src = tmp_path / f"{name}.c"
    src.write_text("#include <unistd.h>\n\nvoid relu(const float* x, float* y, int n)\n{\n" + body + "}\n")
    ref_value = ref or f"{REF}:relu"
    (tmp_path / f"{name}.c.toml").write_text(RELU_SPEC.replace('python = "ref.py:relu"', f'python = "{ref_value}"'))
    return src


GOOD = "    for (int i = 0; i < n; i++) {\n        float v = x[i];\n        y[i] = v > 0.0f ? v : 0.0f;\n    }\n"


def test_hanging_source_is_refused_within_one_time_limit(tmp_path):
    src = kernel(tmp_path, "    volatile int spin = 1;\n    while (spin) { }\n" + GOOD)
    out = tmp_path / "out"
    limit = 3.0
    t0 = time.monotonic()
    with pytest.raises(XPError) as ei:
        xpiler.migrate(src, to="cuda", outdir=out, timeout=limit)
    took = time.monotonic() - t0
    e = ei.value
    assert e.code == "XP1221", e.format()
    assert "did not finish within 3 s" in e.message and "instance" in e.message and "seed" in e.message
    assert e.file == str(src)
    # one time limit (plus the build), not one per instance and seed (12 runs of 3 s)
    assert took < limit + 8, f"a hanging source took {took:.1f} s with a {limit} s limit"
    assert not out.exists(), "nothing is written for a source that fails its own test"


def test_hanging_source_cli_exit_2(tmp_path, capsys):
    src = kernel(tmp_path, "    volatile int spin = 1;\n    while (spin) { }\n" + GOOD)
    t0 = time.monotonic()
    rc = main(["migrate", str(src), "--to", "bang", "-o", str(tmp_path / "o"), "--timeout", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and "XP1221" in err and "Traceback" not in err
    assert time.monotonic() - t0 < 2 + 8
    assert not (tmp_path / "o").exists()


def test_failing_source_names_the_failing_test(tmp_path):
    # element 7 is wrong: a mismatch only the reference sees
    src = kernel(tmp_path, GOOD + "    if (n > 7) y[7] = -1.0f;\n")
    out = tmp_path / "out"
    with pytest.raises(XPError) as ei:
        xpiler.migrate(src, to="bang", outdir=out)
    e = ei.value
    assert e.code == "XP1220", e.format()
    assert "instance base(n=4096), seed 0" in e.message
    assert "XP2101" in e.message and "first mismatch at [7]: got -1.0" in e.message
    assert not out.exists()


def test_reference_that_raises_is_bad_input(tmp_path, capsys):
    ref = tmp_path / "badref.py"
    ref.write_text("import numpy as np\n\n\ndef relu(x, n):\n    y = np.maximum(x, 0)\n"
                   "    raise ValueError('planted reference bug')\n")
    src = kernel(tmp_path, GOOD, ref="badref.py:relu")
    with pytest.raises(XPError) as ei:
        xpiler.migrate(src, to="bang", outdir=tmp_path / "out")
    e = ei.value
    assert e.code == "XP1222" and "ValueError: planted reference bug" in e.message
    assert Path(e.file).resolve() == ref.resolve() and e.line == 6     # the line that raised
    assert not (tmp_path / "out").exists()
    # the CLI: exit 2 under migrate and under test (bad input, not "not verified")
    assert main(["migrate", str(src), "--to", "bang", "-o", str(tmp_path / "o2")]) == 2
    assert "XP1222" in capsys.readouterr().err
    assert main(["test", str(src), "--seeds", "1", "--no-asan"]) == 2
    o = capsys.readouterr().out
    assert "XP1222" in o and "planted reference bug" in o and "badref.py:6" in o


def test_source_check_is_logged_and_sets_the_run_limit(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["migrate", str(EXAMPLES / "relu" / "relu.c"), "--to", "bang", "-o", str(out), "--no-tune",
               "--no-perf", "--timeout", "50"])
    assert rc == 0, capsys.readouterr().err
    header, events = read_log(out / "provenance.jsonl")
    cfg = header["config"]
    assert cfg["tune"] is False                       # tuning is not built; the log never claims it
    tests = [e for e in events if e["type"] == "test"]
    src_ev = tests[0]
    assert src_ev["stage"] == "source" and src_ev["verified"] and src_ev["max_run_s"] > 0
    assert src_ev["time_limit_s"] == source_check_limit(50.0) and src_ev["program_hash"] == events[0]["program_hash"]
    assert cfg["timeout_s"] == 50.0 and cfg["run_limit_s"] == run_limit_from(src_ev["max_run_s"], 50.0)
    cands = [e for e in tests[1:] if e["stage"].startswith("step")]
    assert cands and all(e["time_limit_s"] == cfg["run_limit_s"] for e in cands)


def test_run_limit_derivation():
    assert run_limit_from(0.01, 120.0) == RUN_LIMIT_FLOOR_S          # a fast source: the floor
    assert run_limit_from(5.0, 120.0) == 50.0                        # ten times the source's run
    assert run_limit_from(30.0, 120.0) == 120.0                      # never above --timeout
    assert run_limit_from(0.01, 3.0) == 3.0
    assert source_check_limit(120.0) == 60.0 and source_check_limit(3.0) == 3.0 and source_check_limit(300) == 150


def test_budget_is_enforced_inside_tests(tmp_path):
    # each run of this (correct) source sleeps 0.7 s: 12 runs on 2 workers need ~4.2 s, the budget is 2 s
    src = kernel(tmp_path, "    usleep(700000);\n" + GOOD)
    out = tmp_path / "out"
    t0 = time.monotonic()
    r = xpiler.migrate(src, to="bang", outdir=out, budget=2.0, perf=False)
    took = time.monotonic() - t0
    assert took < 2.0 + 6, f"a 2 s budget took {took:.1f} s"
    assert not r.verified and r.exit_code == 3
    cut = [d for d in r.diagnostics if d.code == "XP4020"]
    assert cut and "source check was cut" in cut[0].message and "not tried: plan 1" in cut[0].message
    assert "XP4020" in (out / "report.md").read_text()          # the report says what was cut
    header, events = read_log(out / "provenance.jsonl")
    src_ev = next(e for e in events if e["type"] == "test" and e["stage"] == "source")
    assert not src_ev["verified"] and {f["code"] for f in src_ev["failures"]} == {"XP4020"}
    assert not [e for e in events if e["type"] == "pass"], "no pass runs once the budget is spent"


@pytest.mark.parametrize("argv,flag", [
    (["migrate", "SRC", "--to", "bang", "--jobs", "0"], "--jobs"),
    (["migrate", "SRC", "--to", "bang", "--budget", "-5"], "--budget"),
    (["migrate", "SRC", "--to", "bang", "--budget", "0"], "--budget"),
    (["migrate", "SRC", "--to", "bang", "--timeout", "0"], "--timeout"),
    (["test", "SRC", "--seeds", "-1"], "--seeds"),
    (["test", "SRC", "--seeds", "0"], "--seeds"),
    (["test", "SRC", "--timeout", "-2"], "--timeout"),
])
def test_bad_flag_values_are_usage_errors(tmp_path, capsys, monkeypatch, argv, flag):
    monkeypatch.chdir(tmp_path)
    argv = [str(EXAMPLES / "relu" / "relu.c") if a == "SRC" else a for a in argv]
    t0 = time.monotonic()
    assert main(argv + (["-o", "out"] if argv[0] == "migrate" else [])) == 2
    err = capsys.readouterr().err
    assert "XP1223" in err and flag in err and "Traceback" not in err
    assert time.monotonic() - t0 < 5, "refused before any test runs"
    assert not (tmp_path / "out").exists()


def test_unknown_instance_lists_the_spec_instances(capsys):
    assert main(["test", str(EXAMPLES / "relu" / "relu.c"), "--instance", "nope"]) == 2
    err = capsys.readouterr().err
    assert "XP1224" in err and "'nope'" in err
    for name in ("base", "odd", "large", "tiny"):
        assert name in err


def test_silent_llm_endpoint_is_cut_by_the_budget(tmp_path, monkeypatch):
    # the endpoint never answers within the migration: each call would wait 60 s x 4 attempts
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-silent-0000")
    with FakeOpenAI([slow("never", 120.0)] * 4) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        out = tmp_path / "out"
        t0 = time.monotonic()
        r = xpiler.migrate(EXAMPLES / "relu" / "relu.c", to="bang", outdir=out, proposer="llm",
                           llm="openai:fake-coder-1", budget=10.0, perf=False)
        took = time.monotonic() - t0
    # (setting up the openai client takes seconds here: the budget leaves time for one call)
    assert took < 10.0 + 6, f"a 10 s budget with a silent endpoint took {took:.1f} s"
    assert len(srv.requests) == 1, "no retry once the budget is spent"
    dropped = [d for d in r.diagnostics if d.code == "XP4021"]
    assert dropped and "the time budget is spent" in dropped[0].message
    assert "failed" not in dropped[0].message
    header, events = read_log(out / "provenance.jsonl")
    (call,) = [e for e in events if e["type"] == "llm_call"]
    assert call["verdict"] == "error_budget" and call["response"] is None
    assert call["latency_s"] > 0.5, "the time the call really waited is logged"
    # the wait was cut at the deadline, not at the endpoint's own 60 s timeout
    assert call["latency_s"] < 10.0
    assert any(d.code == "XP4020" for d in r.diagnostics) or r.verified


def test_llm_timeout_is_said_with_its_latency():
    from xpiler.llm.openai_backend import OpenAIBackend
    from xpiler.proposers.llm_proposer import LLMProposer
    events = []
    with FakeOpenAI([slow("never", 5.0)] * 2) as srv:
        b = OpenAIBackend("fake-coder-1", base_url=srv.base_url, api_key="sk-x", timeout_s=0.4, max_retries=1,
                          backoff_s=0.01)
        prop = LLMProposer(b, log=events.append, retrieve=False)
        assert prop.propose("split", RELU_SRC, "c", relu_context()) == []
    (ev,) = [e for e in events if e.get("type") == "llm_call"]
    assert ev["verdict"] == "error_timeout" and ev["latency_s"] >= 0.8      # two attempts of 0.4 s
    assert prop.last_error["kind"] == "timeout" and "2 attempts" in prop.last_error["detail"]
    assert json.dumps(ev).find("sk-x") < 0
