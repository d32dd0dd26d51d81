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
