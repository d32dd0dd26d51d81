"""``xpiler migrate --tune``: the search runs from the verified kernel, logs every candidate, keeps
the untuned kernel unless a candidate is faster when timed again, and replay re-derives the
chosen kernel from the logged steps without searching."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xpiler.api import migrate
from xpiler.replay import replay

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "examples" / "softmax" / "softmax.cu"


def events(log):
    return [json.loads(x) for x in Path(log).read_text().splitlines()[1:]]


def fake_timer(monkeypatch, latency_of):
    """Hardware timings replaced by ``latency_of(kernel text, call number)`` (the search logic is
    what is tested here, not this machine's timer)."""
    import xpiler.schedule.timing as E
    import xpiler.schedule.tune as T
    calls = []

    def measure(path, spec, *, repeats=7, timeout_s=60.0, sizes=None):
        calls.append(repeats)
        return latency_of(Path(path).read_text(), len(calls)), "fake"
    monkeypatch.setattr(E, "measure_kernel", measure)
    monkeypatch.setattr(T, "source_for", lambda dialect, text: "hw:cpu-test")
    return calls


def test_tuned_kernel_is_chosen_when_the_retiming_confirms_it_and_replay_rederives_it(tmp_path, monkeypatch):
    # a program with more loops (a split) is "faster" in this fake timing, always
    fake_timer(monkeypatch, lambda text, n: 10.0 / (1 + text.count("for (")))
    import xpiler.migration.driver as D
    driven, drive = [], D.drive

    def spy(strategy, step):
        driven.append(strategy.name)
        return drive(strategy, step)
    monkeypatch.setattr(D, "drive", spy)
    r = migrate(SRC, "c", outdir=tmp_path / "o", tune=True, max_evals=3, perf=False)
    assert r.verified
    assert driven == ["plans", "mcts"], "the plans and the search go through the driver's one loop"
    ev = events(r.log_path)
    kinds = [e["kind"] for e in ev if e["type"] == "tune"]
    assert kinds[0] == "start" and kinds[-1] == "result" and kinds.count("evaluate") == 3 and "confirm" in kinds
    res = next(e for e in ev if e["type"] == "tune" and e["kind"] == "result")
    assert res["steps"], "a faster verified candidate replaces the untuned kernel"
    searched = [e for e in ev if e["type"] == "pass" and e.get("proposer") == "search"]
    assert [e["out_hash"] for e in searched][-1] == res["chosen"]
    # every candidate the search adopted was tested (a test event says verified)
    tested_ok = {e["program_hash"] for e in ev if e["type"] == "test" and e.get("verified")}
    assert all(e["out_hash"] in tested_ok for e in searched)
    hdr = json.loads(Path(r.log_path).read_text().splitlines()[0])
    assert hdr["config"]["tune"] is True and hdr["config"]["max_evals"] == 3
    rr = replay(r.log_path)
    assert rr.ok and rr.output_hash == res["chosen"]


def test_untuned_kernel_is_kept_when_the_best_candidate_is_not_faster_when_timed_again(tmp_path, monkeypatch):
    # during the search every candidate looks twice as fast; timed again (21 repeats), it is not
    first = []

    def lat(text, n):
        first.append(text.count("for ("))
        return 5.0 if text.count("for (") > first[0] else 10.0
    fake_timer(monkeypatch, lat)
    import xpiler.schedule.timing as E
    orig = E.measure_kernel

    def measure(path, spec, *, repeats=7, timeout_s=60.0, sizes=None):
        ms, note = orig(path, spec, repeats=repeats, timeout_s=timeout_s, sizes=sizes)
        return (10.0 if repeats == 21 else ms), note
    monkeypatch.setattr(E, "measure_kernel", measure)
    r = migrate(SRC, "c", outdir=tmp_path / "o", tune=True, max_evals=2, perf=False)
    assert r.verified
    ev = events(r.log_path)
    res = next(e for e in ev if e["type"] == "tune" and e["kind"] == "result")
    start = next(e for e in ev if e["type"] == "tune" and e["kind"] == "start")
    assert res["steps"] == [] and res["chosen"] == start["program_hash"]
    assert "not faster" in res["note"]
    assert not [e for e in ev if e["type"] == "pass" and e.get("proposer") == "search"]
    assert replay(r.log_path).ok


def test_max_evals_must_be_positive():
    p = subprocess.run([sys.executable, "-m", "xpiler", "migrate", str(SRC), "--to", "c", "--tune", "--max-evals", "0",
                        "-o", "/tmp/xpiler-never-written"], capture_output=True, text=True)
    assert p.returncode == 2 and "XP1223" in p.stderr and "--max-evals" in p.stderr
    assert not Path("/tmp/xpiler-never-written").exists()


@pytest.mark.parametrize("flags", [[], ["--tune", "--no-tune"]])
def test_without_tune_nothing_is_searched(tmp_path, flags):
    p = subprocess.run([sys.executable, "-m", "xpiler", "migrate", str(SRC), "--to", "c", "--no-perf", *flags,
                        "-o", str(tmp_path / "o")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    ev = events(tmp_path / "o" / "provenance.jsonl")
    assert not [e for e in ev if e["type"] == "tune"]
    assert json.loads((tmp_path / "o" / "provenance.jsonl").read_text().splitlines()[0])["config"]["tune"] is False


def test_to_a_gpu_target_the_search_starts_before_binding_and_replay_follows_it(tmp_path):
    # c -> cuda: the search root is the program binding started from, so block sizes and grid caps
    # are searched; here with the cost model (no GPU) or CUDA events (on a GPU machine)
    r = migrate(ROOT / "examples" / "softmax" / "softmax.c", "cuda", outdir=tmp_path / "o", tune=True, max_evals=6,
                perf=False, seed=1)
    assert r.verified
    ev = events(r.log_path)
    start = next(e for e in ev if e["type"] == "tune" and e["kind"] == "start")
    assert start["search_root"] != start["program_hash"]
    evals = [e for e in ev if e["type"] == "tune" and e["kind"] == "evaluate"]
    assert evals and evals[0]["step"]["pass"] == "binding", "the root's children are binding alternatives"
    assert all(e["latency_source"] == start["latency_source"] for e in evals if e["verified"])
    res = next(e for e in ev if e["type"] == "tune" and e["kind"] == "result")
    md = (tmp_path / "o" / "report.md").read_text()
    assert "## Tuning (MCTS)" in md and start["latency_source"] in md and (tmp_path / "o" / "search.png").is_file()
    if res["steps"]:
        note = next(e for e in ev if e["type"] == "note" and e.get("what") == "search from")
        assert note["program_hash"] == start["search_root"] and res["steps"][0]["pass"] == "binding"
        assert res["tuned_ms"] * 1.03 <= res["untuned_ms"]
    rr = replay(r.log_path)
    assert rr.ok and rr.output_hash == res["chosen"]


@pytest.mark.parametrize("value", ["rows=x", "nosuch=3", "rows=0"])
def test_tune_sizes_must_name_spec_sizes_with_positive_ints(tmp_path, value):
    out = tmp_path / "o"
    p = subprocess.run([sys.executable, "-m", "xpiler", "migrate", str(SRC), "--to", "c", "--tune", "--tune-sizes", value,
                        "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 2 and "XP1223" in p.stderr and "--tune-sizes" in p.stderr
    assert not out.exists()


def test_cost_model_counts_a_grid_stride_loop_per_thread():
    from xpiler.frontend import parse_text
    from xpiler.schedule.cost import estimate, launch_env
    p = parse_text("""
__global__ void k(const float *x, float *y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = x[i];
}""", "cuda", "<t>")
    n = 1 << 20
    few = estimate(p, "k", "cuda", {"n": n}, threads=32 * 256, env=launch_env((32, 1, 1), (256, 1, 1)))
    many = estimate(p, "k", "cuda", {"n": n}, threads=4096 * 256, env=launch_env((4096, 1, 1), (256, 1, 1)))
    assert few.global_bytes == many.global_bytes == 8 * n      # every element read and written once
    assert few.ms > many.ms                                     # fewer threads: less of the GPU busy


def test_a_dask_cluster_gives_the_same_search_as_the_local_pool(tmp_path, monkeypatch):
    # the cost model's latencies are deterministic, so the two searches must match candidate for
    # candidate: same batches (2 at a time), same order, same chosen kernel
    distributed = pytest.importorskip("distributed")
    import xpiler.schedule.tune as T
    from xpiler.schedule.timing import MODEL
    monkeypatch.setattr(T, "source_for", lambda dialect, text: MODEL)
    src = ROOT / "examples" / "softmax" / "softmax.c"

    def searched(log):
        ev = events(log)
        return ([(e["program_hash"], e["latency_ms"]) for e in ev if e["type"] == "tune" and e["kind"] == "evaluate"],
                next(e for e in ev if e["type"] == "tune" and e["kind"] == "result")["chosen"],
                next(e for e in ev if e["type"] == "tune" and e["kind"] == "start")["pool"])
    local = migrate(src, "cuda", outdir=tmp_path / "local", tune=True, max_evals=4, perf=False, jobs=2, seed=3)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        remote = migrate(src, "cuda", outdir=tmp_path / "dask", tune=True, max_evals=4, perf=False, jobs=2, seed=3,
                         cluster=client)
    a, b = searched(local.log_path), searched(remote.log_path)
    assert a[0] == b[0] and len(a[0]) == 4 and a[1] == b[1]
    assert a[2].startswith("local pool of 2") and b[2].startswith("Dask cluster (2 worker threads)")
    assert local.code == remote.code and replay(remote.log_path).ok
