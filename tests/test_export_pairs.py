"""`xpiler export-pairs` (issue 16, item 3): records from closed logs of verified migrations whose
files are unchanged, deduplicated by (source hash, target hash); a tampered output or assembly
file, a cut log and a file that is no log are each reported (XP4131 with the check that failed)
and counted, the good logs still exported, exit 2; no log at all, an unknown output format and
Parquet without pyarrow are bad input (exit 2)."""
import hashlib
import json
import shutil

import pytest

from conftest import EXAMPLES, run_cli
from xpiler.pairs import export_pairs

SRC = EXAMPLES / "add" / "add.c"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    out = tmp_path_factory.mktemp("pairs") / "add_to_cuda"
    p = run_cli("migrate", SRC, "--to", "cuda", "-o", out, "--no-perf", "--emit-asm")
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def _copy(migrated, dst):
    shutil.copytree(migrated, dst)
    return dst


def _records(path):
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def test_two_copies_of_one_migration_give_one_pair(migrated, tmp_path):
    runs = tmp_path / "runs"
    _copy(migrated, runs / "a")
    _copy(migrated, runs / "b" / "nested")            # folders are searched recursively
    p = run_cli("export-pairs", runs, "-o", tmp_path / "pairs.jsonl", "--no-source-asm")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 pair(s)" in p.stdout and "1 duplicate(s)" in p.stdout and "0 refused" in p.stdout
    (r,) = _records(tmp_path / "pairs.jsonl")
    assert (r["source_dialect"], r["target_dialect"], r["entry"]) == ("c", "cuda", "add")
    assert hashlib.sha256(r["source_text"].encode()).hexdigest() == r["source_sha256"] == \
        hashlib.sha256(SRC.read_bytes()).hexdigest()
    assert hashlib.sha256(r["target_text"].encode()).hexdigest() == r["target_sha256"]
    log = runs / "a" / "provenance.jsonl"
    assert r["provenance_sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()
    assert r["verified"] is True and r["substrate"] and r["instances"] and r["seeds"]
    assert r["spec_text"] == (EXAMPLES / "add" / "add.c.toml").read_text()
    assert r["source_asm"] is None                     # --no-source-asm
    ptx = next(a for a in r["target_asm"] if a["kind"] == "ptx")
    if ptx["available"]:
        assert ".entry add" in ptx["text"]


def test_source_assembly_is_built_when_asked(migrated, tmp_path):
    s = export_pairs([migrated], tmp_path / "p.jsonl")
    assert s.exported == 1 and not s.refused
    (r,) = _records(tmp_path / "p.jsonl")
    (a,) = r["source_asm"]                             # the c source: x86-64
    assert a["kind"] == "x86" and a["available"] and a["text"]


def test_tampered_cut_and_foreign_logs_are_reported_and_the_rest_exported(migrated, tmp_path):
    runs = tmp_path / "runs"
    _copy(migrated, runs / "good")
    bad = _copy(migrated, runs / "edited_output")
    (bad / "add.cu").write_text((bad / "add.cu").read_text() + "\n// edited\n")
    asm_bad = _copy(migrated, runs / "edited_asm")
    ptx = next(asm_bad.glob("*.ptx"), None)
    cut = _copy(migrated, runs / "cut")
    lines = (cut / "provenance.jsonl").read_text().splitlines(keepends=True)
    (cut / "provenance.jsonl").write_text("".join(lines[:-1]))     # the end event dropped
    (runs / "junk").mkdir()
    (runs / "junk" / "provenance.jsonl").write_text("this is not a log\n")
    if ptx is not None:
        ptx.write_text("// edited\n")
    else:   # no nvcc here: another output edit stands in
        (asm_bad / "add.cu").write_text("// edited\n")
    out = tmp_path / "pairs.jsonl"
    p = run_cli("export-pairs", runs, "-o", out, "--no-source-asm")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "1 pair(s)" in p.stdout and "4 refused" in p.stdout
    err = p.stderr
    assert err.count("XP4131") == 4
    assert "XP4011" in err and "XP4008" in err and "XP4007" in err
    for name in ("edited_output", "edited_asm", "cut", "junk"):
        assert name in err
    assert "Traceback" not in err
    (r,) = _records(out)                                # the good log is still exported
    assert "good" in r["log_path"]


def test_bad_invocations_are_bad_input(migrated, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run_cli("export-pairs", empty, "-o", tmp_path / "p.jsonl")
    assert p.returncode == 2 and "XP1250" in p.stderr
    p = run_cli("export-pairs", tmp_path / "missing", "-o", tmp_path / "p.jsonl")
    assert p.returncode == 2 and "XP1201" in p.stderr
    p = run_cli("export-pairs", migrated, "-o", tmp_path / "p.csv")
    assert p.returncode == 2 and "XP1251" in p.stderr
    p = run_cli("export-pairs", migrated, "-o", tmp_path / "p.parquet", "--no-source-asm")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        assert p.returncode == 2 and "XP1252" in p.stderr and "pyarrow" in p.stderr
        assert not (tmp_path / "p.parquet").exists()
    else:
        assert p.returncode == 0, p.stderr
        assert pq.read_table(tmp_path / "p.parquet").num_rows == 1
