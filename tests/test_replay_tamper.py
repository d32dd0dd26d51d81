"""`xpiler replay` cannot be fooled (issue 11, item 3): a cut log, dropped final events, an edited
header, edited pass parameters and an output file edited after the run are each refused with a
diagnostic and exit 2; an untampered log (also a resumed one, and an unverified one) replays.

One real migration (relu.cu -> c) is made per module; every case tampers a copy of its output
folder. Tampered logs are "resealed" (the end event's log_sha256 recomputed) unless the case is
about the digest, so each case shows the check that catches it, not only the digest."""
import json
import shutil

import pytest

import xpiler
from conftest import EXAMPLES, run_cli
from xpiler.provenance import lines_sha256, sha256_file

SRC = EXAMPLES / "relu" / "relu.cu"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay_tamper") / "o"
    p = run_cli("migrate", SRC, "--to", "c", "-o", out, "--no-perf")
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def _copy(migrated, tmp_path):
    dst = tmp_path / "o"
    shutil.copytree(migrated, dst)
    return dst


def _events(out):
    return [json.loads(ln) for ln in (out / "provenance.jsonl").read_text().splitlines() if ln.strip()]


def _write(out, objs, reseal=True):
    """Write ``objs`` as the log; when the last is an end event and ``reseal``, recompute its digest
    as a careful forger would."""
    lines = [json.dumps(o) for o in objs]
    if reseal and objs and objs[-1].get("type") == "end":
        objs[-1]["log_sha256"] = lines_sha256([ln.encode() for ln in lines[:-1]])
        lines[-1] = json.dumps(objs[-1])
    (out / "provenance.jsonl").write_text("".join(ln + "\n" for ln in lines))
    return out / "provenance.jsonl"


def _refused(p, code, rc=2):
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    assert code in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "XP9001" not in p.stderr
    assert "replay OK" not in p.stdout


def test_untampered_log_replays(migrated, tmp_path):
    out = _copy(migrated, tmp_path)   # another folder: the output is found beside the log
    objs = _events(out)
    end, output = objs[-1], next(o for o in objs if o["type"] == "output")
    assert end["type"] == "end" and end["verified"] is True and end["program_hash"] == output["program_hash"]
    rec = next(r for r in end["files"] if r["role"] == "output")
    assert rec["rel"] == "relu.c" and rec["sha256"] == sha256_file(out / "relu.c")   # with its host code
    assert "relu_host" in (out / "relu.c").read_text()
    p = run_cli("replay", out / "provenance.jsonl")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"output hash {output['program_hash']}" in p.stdout
    assert f"{out / 'relu.c'} matches the re-derived output" in p.stdout


def test_cut_after_header(migrated, tmp_path):
    out = _copy(migrated, tmp_path)
    log = _write(out, _events(out)[:1])
    _refused(run_cli("replay", log), "XP4008")


def test_cut_midway(migrated, tmp_path):
    out = _copy(migrated, tmp_path)
    objs = _events(out)
    log = _write(out, objs[:len(objs) // 2])
    _refused(run_cli("replay", log), "XP4008")


@pytest.mark.parametrize("renumber", [False, True], ids=["gap", "renumbered"])
def test_final_output_event_dropped(migrated, tmp_path, renumber):
    out = _copy(migrated, tmp_path)
    objs = [o for o in _events(out) if o["type"] != "output"]
    if renumber:   # hide the gap in the sequence numbers too
        for i, o in enumerate(objs[1:]):
            o["seq"] = i
    log = _write(out, objs)
    p = run_cli("replay", log)
    _refused(p, "XP4008")
    assert ("output" in p.stderr) if renumber else ("seq" in p.stderr)


def test_closing_event_dropped(migrated, tmp_path):
    out = _copy(migrated, tmp_path)
    log = _write(out, _events(out)[:-1])
    p = run_cli("replay", log)
    _refused(p, "XP4008")
    assert "end" in p.stderr


def test_header_target_edited(migrated, tmp_path):
    out = _copy(migrated, tmp_path)
    objs = _events(out)
    assert objs[0]["target"] == "c"
    objs[0]["target"] = "cuda"
    p = run_cli("replay", _write(out, objs))
    _refused(p, "XP4010")
    assert "target" in p.stderr


@pytest.mark.parametrize("edit", ["value", "unparseable", "entry_without_spec_file"])
def test_header_spec_edited(migrated, tmp_path, edit):
    out = _copy(migrated, tmp_path)
    objs = _events(out)
    h = objs[0]
    assert 'name = "tiny"\nn = 5' in h["spec"]
    if edit == "value":            # a smaller test instance: no longer the spec file the log points to
        h["spec"] = h["spec"].replace('name = "tiny"\nn = 5', 'name = "tiny"\nn = 6')
    elif edit == "unparseable":
        h["spec"] = h["spec"].replace("[launch]", "[launch")
    else:                          # the spec file is not found: the text alone must still hold up
        h["spec_path"], h["spec_rel"] = str(tmp_path / "gone.toml"), None
        h["spec"] = h["spec"].replace('entry = "relu"', 'entry = "relu_nowhere"')
    p = run_cli("replay", _write(out, objs))
    _refused(p, "XP4010")
    assert "spec" in p.stderr


@pytest.mark.parametrize("edit", ["bad_value", "bad_type", "unknown_pass"])
def test_pass_params_edited(migrated, tmp_path, edit):
    """A step that cannot be re-applied as logged (a refused value, a value of the wrong type, a
    pass that does not exist) is XP4009 naming the event, exit 2, never an internal error."""
    out = _copy(migrated, tmp_path)
    objs = _events(out)
    name = "binding" if edit == "bad_value" else "loop_recovery"
    ev = next(o for o in objs if o["type"] == "pass" and o.get("applied") and o["name"] == name)
    if edit == "bad_value":
        ev["params"]["mode"] = "no_such_mode"
    elif edit == "bad_type":
        ev["params"]["launch"] = "not a launch table"
    else:
        ev["name"] = "no_such_pass"
    p = run_cli("replay", _write(out, objs))
    _refused(p, "XP4009")
    assert f"event {ev['seq']}" in p.stderr


def test_output_file_edited_on_disk(migrated, tmp_path):
    out = _copy(migrated, tmp_path)
    (out / "relu.c").write_text((out / "relu.c").read_text() + "\n// edited after the migration\n")
    p = run_cli("replay", out / "provenance.jsonl")
    _refused(p, "XP4011")
    assert "relu.c" in p.stderr


def test_output_file_and_end_event_forged(migrated, tmp_path):
    """The file edited and its recorded hash changed to match: the re-derived output disagrees."""
    out = _copy(migrated, tmp_path)
    kernel = out / "relu.c"
    kernel.write_text(kernel.read_text().replace("0.0f", "-1.0f"))
    objs = _events(out)
    next(r for r in objs[-1]["files"] if r["role"] == "output")["sha256"] = sha256_file(kernel)
    _refused(run_cli("replay", _write(out, objs)), "XP4006")


def test_output_file_gone_and_output_override(migrated, tmp_path):
    out = _copy(migrated, tmp_path)
    keep = tmp_path / "kept.c"
    shutil.move(out / "relu.c", keep)
    # the log's recorded absolute path is gone too (it points into the module's folder)
    log = out / "provenance.jsonl"
    objs = _events(out)
    for r in objs[-1]["files"]:
        r["path"] = str(tmp_path / "elsewhere" / r["rel"])
    _write(out, objs)
    p = run_cli("replay", log)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "XP4012" in p.stderr and "no output file compared" in p.stdout
    p = run_cli("replay", log, "--output", keep)
    assert p.returncode == 0 and f"{keep} matches" in p.stdout, p.stdout + p.stderr
    keep.write_text(keep.read_text() + "// edited\n")
    _refused(run_cli("replay", log, "--output", keep), "XP4011")


def test_unsealed_edit_of_a_test_event(migrated, tmp_path):
    """An edit no re-derivation sees (a test event's error figure) is caught by the end event's digest."""
    out = _copy(migrated, tmp_path)
    objs = _events(out)
    ev = next(o for o in objs if o["type"] == "test")
    ev["max_abs_error"] = 0.5
    _refused(run_cli("replay", _write(out, objs, reseal=False)), "XP4013")


def test_resumed_log_replays(migrated, tmp_path):
    r = xpiler.migrate(SRC, to="c", outdir=tmp_path / "b", resume=migrated / "provenance.jsonl", perf=False)
    assert r.verified
    p = run_cli("replay", tmp_path / "b" / "provenance.jsonl")
    assert p.returncode == 0, p.stdout + p.stderr


def test_unverified_log_replays_as_unverified(tmp_path):
    from xpiler.migration.driver import migrate
    src = EXAMPLES / "relu" / "relu.c"
    r = migrate(src, "cuda", outdir=tmp_path / "o", pipeline=[("split", {"loop": "i", "factor": 4})], perf=False)
    assert not r.verified
    p = run_cli("replay", tmp_path / "o" / "provenance.jsonl")
    assert p.returncode == 3, p.stdout + p.stderr
    assert "UNVERIFIED" in p.stdout and f"{r.output_path} matches" in p.stdout
    r.output_path.write_text(r.output_path.read_text() + "// edited\n")
    _refused(run_cli("replay", tmp_path / "o" / "provenance.jsonl"), "XP4011")


def test_end_event_records_files_and_digest(tmp_path):
    """The writer's end event: each file's sha256 and path relative to the log, and the digest of
    every line before it (also when the log was reopened for appending)."""
    from xpiler.provenance import ProvenanceLog, log_lines, read_log
    kernel = tmp_path / "k.c"
    kernel.write_text("void k(void) {}\n")
    log = tmp_path / "log.jsonl"
    with ProvenanceLog(log, {"target": "c"}) as w:
        w.event("parse", program_hash="a")
    with ProvenanceLog(log, append=True) as w:
        w.event("output", path=str(kernel), program_hash="b", verified=True)
        w.end({"output": kernel, "spec": None, "failing_test": tmp_path / "absent.py"})
    header, events = read_log(log)
    end = events[-1]
    assert [e["type"] for e in events] == ["parse", "output", "end"] and end["seq"] == 2
    assert end["program_hash"] == "b" and end["verified"] is True
    assert end["files"] == [{"role": "output", "path": str(kernel.resolve()), "rel": "k.c",
                             "sha256": sha256_file(kernel)}]
    assert end["log_sha256"] == lines_sha256(log_lines(log)[:-1])
