"""The output folder of `xpiler migrate -o DIR` (xpiler/migration/outdir.py) and bad input
that must be refused before anything is written (issue 11, items 1 and 2).

Rule under test: xpiler replaces only files it can prove it wrote (listed with an unchanged
sha256 in DIR/.xpiler-output); anything else is XP1204 naming the file, exit 2, nothing
written, unless --force; inputs are never replaced (XP1208); scratch never lives in DIR.
Real migrations are few (relu.c -> cuda, a few seconds each); every refusal happens before
the source is even tested, so those cases cost no compile.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import xpiler
from xpiler.cli import main
from xpiler.diagnostics import XPError
from xpiler.migration.outdir import MARKER, OutDir

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "relu"


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` with its bytes (None for folders): the snapshot compared
    before and after a refused run."""
    if not root.exists():
        return {}
    if root.is_file():
        return {".": root.read_bytes()}
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def make_src(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for n in ("relu.c", "relu.c.toml", "ref.py"):
        shutil.copy(EXAMPLE / n, d / n)
    return d / "relu.c"


def cli(capsys, *args) -> tuple[int, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().err


def marker(d: Path) -> dict:
    return json.loads((d / MARKER).read_text())["files"]


@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    """One real migration: the source folder and the output folder it wrote."""
    base = tmp_path_factory.mktemp("earlier")
    src = make_src(base / "src")
    r = xpiler.migrate(src, "cuda", outdir=base / "out", perf=False)
    assert r.verified
    return src, base / "out"


def copy_out(earlier, dst: Path) -> Path:
    shutil.copytree(earlier[1], dst)
    return dst


# -- what a run writes ---------------------------------------------------------------------------
def test_marker_records_the_hash_of_every_file_written_and_no_scratch_in_dir(earlier):
    src, out = earlier
    files = marker(out)
    on_disk = {p.name for p in out.iterdir() if p.name != MARKER}
    assert set(files) == on_disk
    assert {"relu.cu", "relu.cu.toml", "ref.py", "provenance.jsonl", "report.md", "report.html"} <= on_disk
    for name, digest in files.items():
        assert digest == hashlib.sha256((out / name).read_bytes()).hexdigest(), name
    assert not (out / ".work").exists()


def test_rerun_into_own_output_with_resume(earlier, tmp_path, capsys):
    src, _ = earlier
    out = copy_out(earlier, tmp_path / "out")
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", out, "--no-perf",
                  "--resume", out / "provenance.jsonl")
    assert rc == 0, err
    assert set(marker(out)) >= {"relu.cu", "provenance.jsonl"}


def test_interrupted_run_leaves_its_files_claimed_and_a_plain_rerun_works(tmp_path, capsys):
    src = make_src(tmp_path / "src")
    out = tmp_path / "out"

    def stop(msg):
        if msg.startswith("pass "):   # after the log was started
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        xpiler.migrate(src, "cuda", outdir=out, perf=False, progress=stop)
    assert marker(out) == {"provenance.jsonl": None}   # claimed, never finished
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", out, "--no-perf")
    assert rc == 0, err
    assert marker(out)["provenance.jsonl"] is not None


# -- refusals: exit 2, the file named, nothing written ----------------------------------------------
def test_hand_edited_output_is_refused(earlier, tmp_path, capsys):
    src, _ = earlier
    out = copy_out(earlier, tmp_path / "out")
    (out / "relu.cu").write_text((out / "relu.cu").read_text() + "// my fix\n")
    before = tree(out)
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", out, "--no-perf")
    assert rc == 2 and "XP1204" in err and "relu.cu" in err and "changed since" in err, err
    assert tree(out) == before


@pytest.mark.parametrize("name", ["ref.py", "program_graph.png", "performance.png", "relu.unverified.cu",
                                  "relu.unverified.c.failing_test.py", "relu.cu.toml", "report.md", "provenance.jsonl"])
def test_user_file_with_an_output_name_is_refused(tmp_path, capsys, name):
    src = make_src(tmp_path / "src")
    out = tmp_path / "mine"
    out.mkdir()
    (out / name).write_bytes(b"my own file\n")
    before = tree(out)
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", out)
    assert rc == 2 and "XP1204" in err, err
    assert f"already holds {name}," in err and "did not write it" in err
    assert "{" not in err.split("hint:")[0]         # the message's fields are filled
    assert tree(out) == before


def test_legacy_or_foreign_marker_proves_nothing(tmp_path, capsys):
    src = make_src(tmp_path / "src")
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / MARKER).write_text("written by xpiler migrate; files here may be replaced by the next run\n")
    (legacy / "relu.cu").write_text("// whose?\n")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / MARKER).write_text("my notes\n")
    for d, named in ((legacy, "relu.cu"), (foreign, MARKER)):
        before = tree(d)
        rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", d)
        assert rc == 2 and "XP1204" in err and named in err, err
        assert tree(d) == before


def test_force_replaces_user_files_and_never_touches_a_user_work_folder(tmp_path, capsys):
    src = make_src(tmp_path / "src")
    out = tmp_path / "mine"
    (out / ".work").mkdir(parents=True)
    (out / ".work" / "notes.txt").write_text("keep me\n")
    (out / "ref.py").write_text("# my own ref.py\n")
    (out / "other.txt").write_text("unrelated\n")
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", out)
    assert rc == 2 and "XP1204" in err and "ref.py" in err
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", out, "--no-perf", "--force")
    assert rc == 0, err
    assert (out / ".work" / "notes.txt").read_text() == "keep me\n"
    assert (out / "other.txt").read_text() == "unrelated\n"
    assert (out / "ref.py").read_bytes() == (EXAMPLE / "ref.py").read_bytes()
    assert "ref.py" in marker(out) and "other.txt" not in marker(out)


@pytest.mark.parametrize("force", [False, True])
def test_outdir_equal_to_the_source_folder_is_refused_even_with_force(tmp_path, capsys, force):
    src = make_src(tmp_path / "src")
    before = tree(src.parent)
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", src.parent, *(["--force"] if force else []))
    assert rc == 2 and "XP1208" in err and "ref.py" in err and "reference" in err, err
    assert tree(src.parent) == before


def test_outdir_that_would_replace_the_source_or_spec(tmp_path, capsys):
    # a spec in the output folder, named like the output spec: refused as an input
    src = make_src(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    spec = out / "relu.cu.toml"
    spec.write_text((src.parent / "relu.c.toml").read_text().replace('"ref.py:relu"', f'"{src.parent}/ref.py:relu"'))
    before = tree(out)
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "--spec", spec, "-o", out, "--force")
    assert rc == 2 and "XP1208" in err and "the spec" in err, err
    assert tree(out) == before


def test_outdir_that_is_a_file_or_below_one(tmp_path, capsys):
    src = make_src(tmp_path / "src")
    f = tmp_path / "afile"
    f.write_text("not a folder\n")
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", f)
    assert rc == 2 and "XP1207" in err and "afile" in err, err
    rc, err = cli(capsys, "migrate", src, "--to", "cuda", "-o", f / "sub")
    assert rc == 2 and "XP1209" in err, err
    assert f.read_text() == "not a folder\n"
    with pytest.raises(XPError) as ei:
        xpiler.migrate(src, "cuda", outdir=f)
    assert ei.value.code == "XP1207"


# -- bad input: a diagnostic, exit 2, nothing written ------------------------------------------------
@pytest.fixture
def latin1_src(tmp_path):
    src = make_src(tmp_path / "src")
    data = src.read_bytes()
    first_nl = data.index(b"\n")
    src.write_bytes(data[:first_nl] + b" caf\xe9" + data[first_nl:])   # a Latin-1 byte on line 1
    return src


@pytest.mark.parametrize("cmd", [["migrate", "{src}", "--to", "cuda", "-o", "{out}"], ["test", "{src}"],
                                 ["spec", "--infer", "{src}"], ["parse", "{src}"]])
def test_non_utf8_source_is_xp1108_everywhere(latin1_src, tmp_path, capsys, cmd):
    before = tree(tmp_path)
    rc, err = cli(capsys, *[c.format(src=latin1_src, out=tmp_path / "out") for c in cmd])
    assert rc == 2 and "XP1108" in err and "relu.c:1:" in err and "not UTF-8" in err, err
    assert "Traceback" not in err
    assert tree(tmp_path) == before


def test_non_utf8_source_api(latin1_src, tmp_path):
    for call in (lambda: xpiler.load(latin1_src), lambda: xpiler.test(latin1_src),
                 lambda: xpiler.migrate(latin1_src, "cuda", outdir=tmp_path / "out")):
        with pytest.raises(XPError) as ei:
            call()
        assert ei.value.code == "XP1108" and ei.value.line == 1
    assert not (tmp_path / "out").exists()


def test_missing_reference_file(tmp_path, capsys):
    src = make_src(tmp_path / "src")
    (src.parent / "ref.py").unlink()
    spec_text = (src.parent / "relu.c.toml").read_text()
    line = next(i for i, ln in enumerate(spec_text.splitlines(), 1) if ln.strip().startswith("python"))
    before = tree(tmp_path)
    for cmd in (["migrate", src, "--to", "cuda", "-o", tmp_path / "out"], ["test", src]):
        rc, err = cli(capsys, *cmd)
        assert rc == 2 and "XP1019" in err and f"relu.c.toml:{line}:" in err and "ref.py" in err, err
    assert tree(tmp_path) == before
    # a Spec object given to the API is checked too
    from xpiler.spec import parse_spec
    spec = parse_spec(spec_text, src.parent / "relu.c.toml")
    with pytest.raises(XPError) as ei:
        xpiler.migrate(src, "cuda", spec=spec, outdir=tmp_path / "out")
    assert ei.value.code == "XP1019"
    assert tree(tmp_path) == before


def test_resume_log_for_another_target_is_refused_before_the_log_is_replaced(earlier, tmp_path, capsys):
    src, _ = earlier
    out = copy_out(earlier, tmp_path / "out")
    before = tree(out)
    rc, err = cli(capsys, "migrate", src, "--to", "hip", "-o", out, "--resume", out / "provenance.jsonl")
    assert rc == 2 and "XP4006" in err, err
    assert tree(out) == before


# -- the ownership record itself ---------------------------------------------------------------------
def test_outdir_unit(tmp_path):
    d = tmp_path / "d"
    od = OutDir(d)
    od.check(["a.txt", "b.txt"], {})
    assert not d.exists()                       # check writes nothing
    od.write_text("a.txt", "A")
    with pytest.raises(AssertionError):
        od.write_text("unchecked.txt", "x")     # every written name was checked first
    od.finish()
    assert marker(d) == {"a.txt": hashlib.sha256(b"A").hexdigest()}
    od2 = OutDir(d)
    od2.check(["a.txt"], {})                    # unchanged since written: ours
    assert od2.owns("a.txt")
    (d / "a.txt").write_text("edited")
    with pytest.raises(XPError) as ei:
        OutDir(d).check(["a.txt"], {})
    assert ei.value.code == "XP1204" and "a.txt" in ei.value.message
    OutDir(d, force=True).check(["a.txt"], {})  # force lets it through
    # a symlink planted under an output name is replaced, never written through
    target = tmp_path / "elsewhere.txt"
    target.write_text("outside")
    (d / "b.txt").symlink_to(target)
    od3 = OutDir(d, force=True)
    od3.check(["b.txt"], {})
    od3.write_text("b.txt", "B")
    assert target.read_text() == "outside" and not (d / "b.txt").is_symlink()
    # scratch lives outside the folder and goes with its OutDir
    s = od3.scratch()
    assert d not in s.parents and s.is_dir()
    od3.cleanup()
    assert not s.exists()
