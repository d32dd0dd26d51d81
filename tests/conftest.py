import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/ files from the current printers")


@pytest.fixture
def update_golden(request):
    return request.config.getoption("--update-golden")


def has_gpu() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except Exception:
        return False


def skip_without_simde() -> None:
    """Skip a test that runs a c output under SIMD Everywhere (emu:simde-cpu) where its headers are
    absent (the GPU machine has none). CI installs libsimde-dev, so there the test always runs."""
    from xpiler.platforms import c as CP
    if not CP.simde_available() and not os.environ.get("CI"):
        pytest.skip("SIMD Everywhere headers not installed (libsimde-dev; CI installs them)")


def pytest_collection_modifyitems(config, items):
    if not has_gpu():
        skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


def run_cli(*args, cwd=None, env=None):
    """Run `python -m xpiler ARGS` as a user would; returns CompletedProcess."""
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([sys.executable, "-m", "xpiler", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=e, timeout=600)


def plans_before_20261205(monkeypatch) -> None:
    """The default plans as they were before the twelfth session made the untuned cuda outputs fast
    (no wide-matmul plan, no AVX-512 lane plan to cuda, no vectorize tail), for tests of the
    tuner's routes to those forms: with the new plans the default already is the form."""
    from xpiler.migration import driver as DR
    from xpiler.migration import pipeline as PL
    monkeypatch.setattr(PL, "_finish", lambda dst: [PL._cache(dst), ("tensorize", {"target": dst})])

    def old(src, dst):
        ps = PL.plans(src, dst)
        ps = [p for p in ps if not any(n == "cache" and q.get("thread_tile") and q.get(PL.REQUIRE) for n, q in p)]
        if src == "c" and dst == "cuda":
            ps = [p for p in ps if "flatten_lanes" not in [n for n, _ in p]]
        return ps
    monkeypatch.setattr(DR, "default_plans", old)


def pytest_runtest_logreport(report):
    """With XP_TEST_TIMES=FILE, append each test's phase and duration to FILE as it ends (one
    line per phase, written at once, so a run that is cut still leaves its times): how CI's
    45-minute budget is watched (README, "Run the tests")."""
    path = os.environ.get("XP_TEST_TIMES")
    if path and getattr(report, "node", None) is None:    # (xdist's controller gets each report again)
        with open(path, "a") as f:
            f.write(f"{report.duration:.2f}\t{report.when}\t{report.outcome}\t{report.nodeid}\n")
