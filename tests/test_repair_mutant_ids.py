"""The planted-bug corpus of benchmarks/repair_mutants.py (issue 14): every mutant has a unique
ID, and the ID is stable (the same corpus gives the same IDs; it does not depend on where the
migrated output lies). Two sources of one operator migrated to one target (add.c and add.mlu to
hip) print to outputs of the same name: their mutants once shared IDs."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    sp = importlib.util.spec_from_file_location("repair_mutants_bench", ROOT / "benchmarks/repair_mutants.py")
    m = importlib.util.module_from_spec(sp)
    sp.loader.exec_module(m)
    return m


def _outs(tmp_path):
    """Two 'verified outputs' named add.cu (the example kernel, once as if migrated from add.c,
    once from add.mlu, in another directory)."""
    other = tmp_path / "from_mlu"
    other.mkdir()
    # the same kernel two lines lower (as another migration may print it)
    (other / "add.cu").write_text("// from add.mlu\n\n" + (ROOT / "examples/add/add.cu").read_text())
    shutil.copy(ROOT / "examples/add/add.cu.toml", other / "add.cu.toml")
    ref = ROOT / "examples/add/ref.py"
    if ref.is_file():
        shutil.copy(ref, other / "ref.py")
    return [{"source": ROOT / "examples/add/add.c", "to": "cuda", "output": str(ROOT / "examples/add/add.cu"),
             "spec": str(ROOT / "examples/add/add.cu.toml")},
            {"source": ROOT / "examples/add/add.mlu", "to": "cuda", "output": str(other / "add.cu"),
             "spec": str(other / "add.cu.toml")}]


def test_mutant_ids_are_unique_when_two_sources_print_to_one_output_name(tmp_path):
    rm = _bench()
    ms = rm.mutants(_outs(tmp_path), per_kind=2)
    per = {}
    for m in ms:
        per.setdefault(m["source"], []).append(m)
    assert len(per) == 2 and all(len(v) >= 2 for v in per.values())
    ids = [m["id"] for m in ms]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    # the old form of the ID (output stem, target, kind, number) did collide here
    legacy = [m["legacy_id"] for m in ms]
    assert len(legacy) > len(set(legacy))
    assert [m["index"] for m in ms] == list(range(len(ms)))


def test_mutant_ids_are_stable(tmp_path):
    rm = _bench()
    a = rm.mutants(_outs(tmp_path / "a"), per_kind=2) if (tmp_path / "a").mkdir() is None else None
    b = rm.mutants(_outs(tmp_path / "b"), per_kind=2) if (tmp_path / "b").mkdir() is None else None
    assert [(m["id"], m["text"]) for m in a] == [(m["id"], m["text"]) for m in b]
    assert all(m["id"].startswith(("add.c-cuda-", "add.mlu-cuda-")) for m in a)
    assert rm.mutant_id("examples/add/add.mlu", "hip", "swapped div/mod", 1) == "add.mlu-hip-swapped_divmod-1"


def test_old_result_rows_are_matched_to_the_new_ids(tmp_path):
    """Rows written under the old IDs are counted once, as the mutant they ran (aggregation)."""
    rm = _bench()
    ms = rm.mutants(_outs(tmp_path), per_kind=2)
    old = [{"id": m["legacy_id"], "what": m["what"], "kind": m["kind"], "failing": False} for m in ms]
    got = rm.identify(old, ms)
    assert sorted(got) == sorted(m["id"] for m in ms)
    assert all(got[m["id"]]["what"] == m["what"] for m in ms)
    # an old ID and line two mutants share cannot be told apart: it is matched to neither
    twin = dict(ms[0], id="x-" + ms[0]["id"])
    got = rm.identify(old[:1], ms + [twin])
    assert list(got) == [f"?{old[0]['id']}|{old[0]['what']}"]
