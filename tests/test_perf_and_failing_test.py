"""Performance rows in migration results/reports, and failing-test scripts for compiler rejections."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpiler.api import migrate
from xpiler.migration.driver import write_failing_test
from xpiler.perf import hardware_substrate
from xpiler.platforms.hip import clang15
from xpiler.spec import load_spec
from xpiler.verify.tester import RunFailure, Verdict

ROOT = Path(__file__).resolve().parent.parent


def _events(log: Path, kind: str) -> list[dict]:
    return [e for e in map(json.loads, log.read_text().splitlines()) if e.get("type") == kind]


@pytest.mark.skipif(hardware_substrate("c") is None, reason="no native C substrate")
def test_c_target_is_timed_against_reference(tmp_path):
    r = migrate(ROOT / "examples/gemm/gemm.cu", to="c", outdir=tmp_path / "o")
    assert r.verified
    assert r.perf and r.latency == r.perf[0].kernel_ms > 0
    row = r.perf[0]
    assert row.substrate.startswith("hw:cpu") and row.baseline_ms > 0
    ev = _events(r.log_path, "perf")
    assert len(ev) == 1 and ev[0]["rows"][0]["kernel_ms"] == row.kernel_ms
    md = r.report_path.with_name("report.md").read_text()
    assert "## Performance" in md and "baseline / kernel" in md and "performance.png" in md
    assert (tmp_path / "o" / "performance.png").stat().st_size > 1000
    html = r.report_path.read_text()
    perf_part = html.split("<h2>Performance</h2>")[1].split("<h2>")[0]
    assert "data:image/png;base64," in perf_part


def test_emulator_target_is_not_timed(tmp_path, monkeypatch):
    monkeypatch.setenv("XPILER_SUBSTRATE", "emu")   # even on a GPU machine: the emulator has no timing
    r = migrate(ROOT / "examples/relu/relu.c", to="cuda", outdir=tmp_path / "o")
    assert r.verified and r.perf == [] and r.latency is None
    assert "emulator timings are not performance" in r.perf_note
    ev = _events(r.log_path, "perf")
    assert ev[0]["rows"] == [] and "emulator" in ev[0]["note"]
    # the report shows the diff of every applied step of the plan that produced the output
    md = r.report_path.with_name("report.md").read_text()
    applied = [s.pass_name for s in r.steps]
    assert applied and "## Diff per step" in md
    for k, name in enumerate(applied, start=1):
        assert f"### step {k}: {name} (symbolic)" in md
    assert "+++ after binding" in md and "__global__" in md.split("## Diff per step")[1]
    assert r.report_path.read_text().count("<details><summary>diff of step") == len(applied)


def test_no_perf_skips_timing(tmp_path):
    r = migrate(ROOT / "examples/relu/relu.cu", to="c", outdir=tmp_path / "o", perf=False)
    assert r.verified and r.perf == [] and _events(r.log_path, "perf") == []


HUGE_STACK_HIP = """#include <hip/hip_runtime.h>
extern "C" __global__ void relu(const float *x, float *y, int n) {
    float big[60000];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = 0; j < 60000; ++j) big[j] = x[(i + j) % n];
    if (i < n) y[i] = big[i % 60000] > 0.0f ? big[i % 60000] : 0.0f;
}
"""


@pytest.mark.skipif(clang15() is None, reason="clang-15 (AMDGPU) not installed")
def test_failing_test_reproduces_real_compiler_rejection(tmp_path):
    src = ROOT / "examples/relu/relu.cu"
    cand = tmp_path / "relu.unverified.hip"
    cand.write_text(HUGE_STACK_HIP)
    v = Verdict(False, "emu:simt-cpu", str(src), [0], ["small"])
    v.failures.append(RunFailure("XP2005", "the real gfx90a compiler rejects the kernel: stack frame too big",
                                 "-", -1, log="error: stack frame size exceeds limit"))
    script = write_failing_test(tmp_path, cand, src, load_spec(src.with_name("relu.cu.toml")), v)
    text = script.read_text()
    assert "real gfx90a compiler rejects" in text and "compile_check" in text
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr        # 0: the rejection reproduces
    assert "rejected by the gfx90a compiler" in p.stdout and "stack frame size" in p.stdout
    # once the candidate compiles, the script says so with exit 1
    cand.write_text(HUGE_STACK_HIP.replace("60000", "4"))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 1 and "compiles" in p.stdout


def test_report_writes_the_performance_figure_it_links(tmp_path):
    """Runs on any machine: a log with a perf row gives a report.md that links performance.png,
    and the file is written (a regression once left the link without the file)."""
    from xpiler.report import write_report
    r = migrate(ROOT / "examples/relu/relu.cu", to="c", outdir=tmp_path / "o", perf=False)
    log = tmp_path / "with_perf.jsonl"
    row = {"instance": "default", "shape": "n=1024", "substrate": "hw:cpu-test", "kernel_ms": 0.5,
           "baseline": "numpy", "baseline_ms": 0.25, "speedup_vs_baseline": 0.5}
    lines = r.log_path.read_text().splitlines()
    lines.insert(len(lines) - 1, json.dumps({"type": "perf", "seq": 10_000, "rows": [row]}))
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "report"
    out.mkdir()
    write_report(out, ROOT / "examples/relu/relu.cu", load_spec(ROOT / "examples/relu/relu.cu.toml"), r, log)
    md = (out / "report.md").read_text()
    assert "![performance](performance.png)" in md
    assert (out / "performance.png").stat().st_size > 1000
