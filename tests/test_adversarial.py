"""The reliability table's cases (benchmarks/adversarial.py), each a test: the real `xpiler` command
on malformed input, tampered logs and hostile output folders must give its documented exit code
and a diagnostic ID, never exit 1 or a traceback, and never change a file the user had."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("adversarial", ROOT / "benchmarks" / "adversarial.py")
adv = importlib.util.module_from_spec(_spec)
sys.modules["adversarial"] = adv
_spec.loader.exec_module(adv)


def test_at_least_forty_cases_cover_every_item():
    assert len(adv.CASES) >= 40
    assert {"1", "2", "3", "4", "5", "6"} <= {c.item for c in adv.CASES}
    assert len({c.name for c in adv.CASES}) == len(adv.CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else [])
                                  for c in adv.CASES])
def test_case(case):
    r = adv.run_case(case)
    assert r.ok, f"{case.name}: {r.problems}\n{getattr(r, 'output_tail', '')}"
    assert r.rc != 1 and not r.traceback and not r.user_files_changed


def test_reliability_doc_is_current():
    """docs/reliability.md is the script's output: same cases, in the same order."""
    doc = (ROOT / "docs" / "reliability.md").read_text()
    for c in adv.CASES:
        assert c.what.replace("|", "\\|") in doc, f"docs/reliability.md lacks case {c.name}: regenerate it"
