"""``xpiler migrate DIR --to T -o OUT``: whole directories (issue 16, docs/projects.md).

Small trees of example kernels copied into tmp: discovery, a kernel without a spec listed,
summary.json / summary.html content, unchanged kernels not run again, resume after a simulated
kill (counted from the state file), a crashing child that does not take the run down, and the
same verdicts on a Dask LocalCluster with 2 workers.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from xpiler.cli import main
from xpiler.project.discovery import discover

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
XPILER = [sys.executable, "-m", "xpiler"]

_SCALE_CU = """#include <cuda_runtime.h>

__global__ void scale_kernel(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

void scale(const float* hx, float* hy)
{
    const int n = 1000;
    float *dx, *dy;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(128);
    dim3 grid((n + 127) / 128);
    scale_kernel<<<grid, block>>>(dx, dy, n);
    cudaMemcpy(hy, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
}
"""


def _tree(base: Path, with_extras: bool = True) -> Path:
    """relu.c, relu.cu, add.hip with their specs and references; optionally a kernel with no
    spec (inference leaves TODOs), one whose spec inference is complete, a header, a hidden
    folder and an earlier xpiler output folder (none of the last three are kernels)."""
    src = base / "src"
    (src / "relu").mkdir(parents=True)
    (src / "add").mkdir()
    for f in ("relu.c", "relu.c.toml", "relu.cu", "relu.cu.toml", "ref.py"):
        shutil.copy(EX / "relu" / f, src / "relu" / f)
    for f in ("add.hip", "add.hip.toml", "ref.py"):
        shutil.copy(EX / "add" / f, src / "add" / f)
    if with_extras:
        shutil.copy(EX / "add" / "add.cu", src / "add" / "add_nospec.cu")
        for f in ("relu.mlu", "relu.mlu.toml"):          # already in the target dialect of the tests (bang)
            shutil.copy(EX / "relu" / f, src / "relu" / f)
        (src / "misc").mkdir()
        (src / "misc" / "scale.cu").write_text(_SCALE_CU)
        (src / "misc" / "helpers.cuh").write_text("#pragma once\n")
        (src / ".hidden").mkdir()
        shutil.copy(EX / "relu" / "relu.cu", src / ".hidden" / "relu.cu")
        (src / "old_out").mkdir()
        (src / "old_out" / ".xpiler-output").write_text('{"tool": "xpiler", "format": 2, "files": {}}\n')
        shutil.copy(EX / "relu" / "relu.cu", src / "old_out" / "relu.cu")
    return src


def _run(args, env=None, new_session=False) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(XPILER + args, capture_output=True, text=True, env=e, cwd=ROOT, timeout=600,
                          start_new_session=new_session)


def _files(d: Path) -> dict:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _state(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "project-state.jsonl").read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("proj")
    src = _tree(base)
    out = base / "out"
    before = _files(src)
    p = _run(["migrate", str(src), "--to", "bang", "-o", str(out), "--jobs", "2"])
    assert _files(src) == before          # nothing in the source tree was written, added or removed
    return src, out, p


def test_discovery_finds_kernels_and_lists_missing_specs(tmp_path):
    src = _tree(tmp_path)
    ks = {k.rel: k for k in discover(src)}
    assert sorted(ks) == ["add/add.hip", "add/add_nospec.cu", "misc/scale.cu", "relu/relu.c", "relu/relu.cu",
                          "relu/relu.mlu"]
    assert ks["relu/relu.cu"].spec == (src / "relu" / "relu.cu.toml").resolve()
    assert ks["relu/relu.cu"].spec_origin == "beside" and ks["relu/relu.cu"].problem is None
    assert ks["misc/scale.cu"].spec_origin == "inferred" and 'entry = "scale_kernel"' in ks["misc/scale.cu"].inferred_text
    miss = ks["add/add_nospec.cu"]
    assert miss.spec_origin == "missing" and miss.problem.code == "XP1242"
    assert "TODO" in miss.problem.message and "spec --infer" in miss.problem.hint


def test_bad_input_empty_dir_and_options(tmp_path, capsys):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("no kernels here\n")
    assert main(["migrate", str(tmp_path / "empty"), "--to", "c", "-o", str(tmp_path / "o")]) == 2
    assert "XP1240" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    src = _tree(tmp_path / "t", with_extras=False)
    assert main(["migrate", str(src), "--to", "c", "--spec", "x.toml", "-o", str(tmp_path / "o")]) == 2
    assert "XP1241" in capsys.readouterr().err
    assert main(["migrate", str(src), "--to", "c", "--resume", "x.jsonl", "-o", str(tmp_path / "o")]) == 2
    assert "XP1241" in capsys.readouterr().err
    # a file of the user's where the summary goes: refused before anything is written
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "summary.json").write_text("mine\n")
    assert main(["migrate", str(src), "--to", "c", "-o", str(tmp_path / "o")]) == 2
    assert "XP1204" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["summary.json"]


def test_summary_json_and_html(local_run):
    src, out, p = local_run
    assert p.returncode == 3, p.stdout + p.stderr       # one kernel has no spec: not every kernel verified
    s = json.loads((out / "summary.json").read_text())
    by = {k["file"]: k for k in s["kernels"]}
    assert sorted(by) == ["add/add.hip", "add/add_nospec.cu", "misc/scale.cu", "relu/relu.c", "relu/relu.cu",
                          "relu/relu.mlu"]
    assert by["relu/relu.mlu"]["verdict"] == "already target" and by["relu/relu.mlu"]["report"] is None
    assert not (out / "relu/relu.mlu").exists()       # listed, not migrated
    for f in ("add/add.hip", "relu/relu.c", "relu/relu.cu", "misc/scale.cu"):
        k = by[f]
        assert k["verdict"] == "verified" and k["exit_code"] == 0, k
        assert k["substrate"] == "emu:bang-cpu"
        assert k["time_s"] > 0 and k["speedup"] is None     # no hardware substrate for bang: not measured
        assert k["report"] == f"{f}/report.html" and (out / k["report"]).is_file()
        assert (out / k["output"]).is_file() and k["output"].endswith(".mlu")
        assert len(k["input_sha256"]) == 64 and len(k["options_sha256"]) == 64
    assert by["misc/scale.cu"]["spec_origin"] == "inferred"
    assert (out / "misc/scale.cu/scale.cu.inferred.toml").is_file()
    miss = by["add/add_nospec.cu"]
    assert miss["verdict"] == "needs spec" and miss["diagnostics"] == ["XP1242"] and miss["report"] is None
    assert "add_nospec.cu" in p.stderr and "XP1242" in p.stderr
    assert s["counts"]["verified"] == 4 and s["counts"]["needs_spec"] == 1 and s["exit_code"] == 3
    assert s["counts"]["already_target"] == 1 and s["counts"]["total"] == 6
    assert s["counts"]["new"] == 4 and s["to"] == "bang"
    # one progress line per finished kernel
    assert sum(1 for line in p.stdout.splitlines() if line.startswith("[") and "VERIFIED" in line) == 4
    html = (out / "summary.html").read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html
    for f in ("add/add.hip", "relu/relu.c", "relu/relu.cu", "misc/scale.cu"):
        assert f'href="{f}/report.html"' in html
    assert "add/add_nospec.cu" in html and "needs spec" in html


def test_second_run_skips_unchanged_and_reruns_edited(local_run, tmp_path):
    src0, out0, _ = local_run
    work = tmp_path / "w"
    shutil.copytree(src0.parent, work, symlinks=True)
    src, out = work / "src", work / "out"
    n_start = sum(1 for r in _state(out) if r["type"] == "start")
    p = _run(["migrate", str(src), "--to", "bang", "-o", str(out)])
    assert p.returncode == 3, p.stderr
    st = _state(out)
    assert sum(1 for r in st if r["type"] == "start") == n_start      # nothing was migrated again
    s = json.loads((out / "summary.json").read_text())
    assert s["counts"]["unchanged"] == 4 and s["counts"]["new"] == 0
    assert {k["mode"] for k in s["kernels"] if k["verdict"] == "verified"} == {"unchanged"}
    # an edited source, and different options, are migrated again
    with open(src / "relu" / "relu.c", "a") as f:
        f.write("\n/* edited */\n")
    p = _run(["migrate", str(src), "--to", "bang", "-o", str(out)])
    s = json.loads((out / "summary.json").read_text())
    assert s["counts"]["unchanged"] == 3 and s["counts"]["new"] == 1
    assert [k["file"] for k in s["kernels"] if k["mode"] == "new"] == ["relu/relu.c"]
    p = _run(["migrate", str(src), "--to", "bang", "-o", str(out), "--seed", "7", "--no-perf"])
    s = json.loads((out / "summary.json").read_text())
    assert s["counts"]["unchanged"] == 0 and s["counts"]["new"] == 4, p.stdout


def test_resume_after_kill_loses_nothing_and_redoes_nothing(tmp_path):
    src = _tree(tmp_path, with_extras=False)       # 3 kernels
    out = tmp_path / "out"
    # run 1: killed (SIGKILL to its process group) right after the first kernel finished; with
    # --jobs 2 another was running then
    p1 = _run(["migrate", str(src), "--to", "bang", "-o", str(out), "--jobs", "2"],
              env={"XPILER_PROJECT_STOP_AFTER": "1"}, new_session=True)
    assert p1.returncode == -9, p1.stdout + p1.stderr
    assert not (out / "summary.json").exists()
    run1 = _state(out)
    done1 = [r["rel"] for r in run1 if r["type"] == "done"]
    assert len(done1) == 1
    p2 = _run(["migrate", str(src), "--to", "bang", "-o", str(out), "--jobs", "2"])
    assert p2.returncode == 0, p2.stdout + p2.stderr
    st = _state(out)
    run2 = [r for r in st if r.get("run") == 2]
    started2 = [r["rel"] for r in run2 if r["type"] == "start"]
    done2 = [r["rel"] for r in run2 if r["type"] == "done"]
    redone = set(done1) & set(started2)
    assert redone == set(), redone                            # nothing done twice
    assert sorted(done1 + done2) == ["add/add.hip", "relu/relu.c", "relu/relu.cu"]   # nothing lost
    assert Counter(done1 + done2).most_common(1)[0][1] == 1
    s = json.loads((out / "summary.json").read_text())
    assert s["counts"]["verified"] == 3 and s["counts"]["unchanged"] == 1
    modes = {k["file"]: k["mode"] for k in s["kernels"]}
    # the kernel that was running at the kill continued from its log (or restarted, said so)
    in_flight = {r["rel"] for r in run1 if r["type"] == "start"} - set(done1)
    assert in_flight and all(modes[f] in ("resumed", "restarted", "recovered", "new") for f in in_flight)
    resumed = [f for f in in_flight if modes[f] == "resumed"]
    for f in resumed:
        log = [json.loads(x) for x in (out / f / "provenance.jsonl").read_text().splitlines()]
        assert any(e.get("type") == "note" and e.get("what") == "resume" for e in log)


def test_a_crashing_child_does_not_take_the_run_down(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for f in ("relu.c", "relu.c.toml", "relu.cu", "relu.cu.toml", "ref.py"):
        shutil.copy(EX / "relu" / f, src / f)
    out = tmp_path / "out"
    p = _run(["migrate", str(src), "--to", "bang", "-o", str(out)], env={"XPILER_PROJECT_TEST_CRASH": "relu.cu"})
    assert p.returncode == 3, p.stdout + p.stderr
    by = {k["file"]: k for k in json.loads((out / "summary.json").read_text())["kernels"]}
    assert by["relu.c"]["verdict"] == "verified"
    assert by["relu.cu"]["verdict"] == "error" and by["relu.cu"]["diagnostics"] == ["XP4120"]
    assert "signal" in by["relu.cu"]["messages"][0]


def test_dask_local_cluster_gives_the_same_verdicts(local_run, tmp_path):
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster
    from xpiler.project import migrate_project
    src, out_local, _ = local_run
    local = {k["file"]: (k["verdict"], k["substrate"])
             for k in json.loads((out_local / "summary.json").read_text())["kernels"]}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            Client(c) as client:
        assert len(client.nthreads()) == 2
        r = migrate_project(src, "bang", tmp_path / "out", cluster=client)
    dask = {k["rel"]: (k["verdict"], k.get("substrate")) for k in r.records}
    assert dask == local
    assert r.exit_code == 3 and r.counts["new"] == 4


def _drop_last_done(out: Path, rel: str) -> None:
    lines = (out / "project-state.jsonl").read_text().splitlines(keepends=True)
    i = max(i for i, x in enumerate(lines) if json.loads(x)["type"] == "done" and json.loads(x)["rel"] == rel)
    (out / "project-state.jsonl").write_text("".join(lines[:i] + lines[i + 1:]))
    m = json.loads((out / ".xpiler-output").read_text())   # as a killed run leaves it: the state being written
    m["files"]["project-state.jsonl"] = None
    (out / ".xpiler-output").write_text(json.dumps(m))


def _as_killed(kdir: Path, log_lines: list[str] | None) -> None:
    """Leave ``kdir`` as a migration killed mid-way leaves it: its log rewritten (``log_lines``)
    and the ownership marker saying the log was being written (null hash)."""
    if log_lines is not None:
        (kdir / "provenance.jsonl").write_text("".join(log_lines))
    m = json.loads((kdir / ".xpiler-output").read_text())
    m["files"]["provenance.jsonl"] = None
    (kdir / ".xpiler-output").write_text(json.dumps(m))


def test_kernel_running_at_the_kill_is_recovered_resumed_or_restarted(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for f in ("relu.c", "relu.c.toml", "ref.py"):
        shutil.copy(EX / "relu" / f, src / f)
    out = tmp_path / "out"
    args = ["migrate", str(src), "--to", "bang", "-o", str(out)]
    assert main(args) == 0
    kdir = out / "relu.c"

    def last():
        s = json.loads((out / "summary.json").read_text())
        return s["kernels"][0], s["counts"]

    # the migration had finished (its log is closed) but the run was killed before recording it
    _drop_last_done(out, "relu.c")
    n_start = sum(1 for r in _state(out) if r["type"] == "start")
    assert main(args) == 0
    k, c = last()
    assert k["mode"] == "recovered" and c["recovered"] == 1 and k["verdict"] == "verified" and "XP4124" in k["notes"]
    assert sum(1 for r in _state(out) if r["type"] == "start") == n_start       # nothing was run
    # killed mid-way: the log is open (no end event, cut after the last pass): resumed from it
    _drop_last_done(out, "relu.c")
    log = (kdir / "provenance.jsonl").read_text().splitlines(keepends=True)
    cut = max(i for i, x in enumerate(log) if json.loads(x)["type"] == "pass")
    _as_killed(kdir, log[:cut + 1])
    assert main(args) == 0
    k, c = last()
    assert k["mode"] == "resumed" and c["resumed"] == 1 and "XP4122" in k["notes"] and k["verdict"] == "verified"
    ev = [json.loads(x) for x in (kdir / "provenance.jsonl").read_text().splitlines()]
    assert any(e["type"] == "note" and e.get("what") == "resume" and e.get("steps_done", 0) >= 1 for e in ev)
    # killed while the log's first line was being written: it cannot be used, restarted (and said)
    _drop_last_done(out, "relu.c")
    _as_killed(kdir, ['{"type": "head'])
    assert main(args) == 0
    k, c = last()
    assert k["mode"] == "restarted" and c["restarted"] == 1 and "XP4123" in k["notes"] and k["verdict"] == "verified"
