"""Planted-bug corpus: every mutant fails, every original passes (tests/mutants/corpus.toml)."""
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import mutants  # noqa: E402

CORPUS = mutants.load_corpus()


def test_corpus_size_and_spread():
    assert len(CORPUS) >= 12
    kinds = {m["kind"] for m in CORPUS}
    assert {"off-by-one bound", "out-of-bounds write", "unwritten output element"} <= kinds


@pytest.mark.parametrize("m", CORPUS, ids=[m["id"] for m in CORPUS])
def test_mutant_is_caught(m):
    r = mutants.run_mutant(m)
    assert r["caught"], f"mutant {m['id']} passed the tester"


@pytest.mark.parametrize("src", sorted({m["source"] for m in CORPUS}))
def test_original_passes(src):
    from xpiler.api import test
    from xpiler.spec import default_spec_path
    v = test(ROOT / src, default_spec_path(ROOT / src), timeout=120)
    assert v.verified, [f.message for f in v.failures[:3]]
