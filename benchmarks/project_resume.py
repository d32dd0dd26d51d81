#!/usr/bin/env python3
"""Issue 16, Must show: a directory of >= 100 kernels migrated with ``--jobs 2``, killed half-way,
resumed: nothing lost, nothing done twice (counted); the same job on a Dask LocalCluster with
2 workers gives the same verdicts; the summary page renders in headless Chromium.

    python benchmarks/project_resume.py [--n 104] [--to bang] [--kill-after N] [--signal KILL|TERM]
                                        [--mid-log] [--no-dask] [--keep DIR] [--json OUT] [--png PNG]

The tree: every kernel of examples/ not already in the target dialect, then every k-th such kernel
of examples/wild/ until there are --n, each copied with its spec and its operator's ref.py into a
temporary folder.

1. ``xpiler migrate TREE --to T -o OUT --jobs 2`` in its own process group; once --kill-after
   kernels are recorded as finished in OUT/project-state.jsonl, the whole group gets SIGKILL
   (or SIGTERM): the run and the migrations it had running (with --mid-log, once also a running
   kernel has logged pass events, so that one is caught in the middle of its migration).
2. The same command again. Counted from the state file: kernels finished before the kill,
   kernels running at the kill (and whether each was resumed from its log or restarted),
   kernels redone (finished before the kill and started again: must be 0), kernels lost (no
   finished record after the second run: must be 0), kernels with two finished records (0).
3. The same command a third time: every kernel unchanged (0 started).
4. The job again into another folder with ``--cluster`` pointing at a Dask LocalCluster of 2
   worker processes: the verdicts must be the same, kernel by kernel.
5. OUT/summary.html in headless Chromium (as benchmarks/report_screenshot.py): a large
   screenshot, many colours, the green badges of the verified kernels; every report link
   of the page points at a file that exists.

Exit 0 when every check holds.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
KERNEL_EXTS = (".cu", ".hip", ".mlu", ".c", ".cpp", ".cc", ".cxx")


def _kernels(folder: Path) -> list[Path]:
    out = []
    for f in sorted(folder.rglob("*")):
        if f.suffix in KERNEL_EXTS and f.is_file() and "wild" not in f.relative_to(folder).parts[:-1] \
                and (f.with_name(f.name + ".toml").is_file() or f.with_suffix(".toml").is_file()):
            out.append(f)
    return out


def build_tree(dst: Path, n: int, to: str) -> list[str]:
    """n kernels not already in dialect ``to`` (those would be listed, not migrated)."""
    own = {"cuda": (".cu",), "hip": (".hip",), "bang": (".mlu",), "c": (".c", ".cc", ".cpp", ".cxx")}[to]
    ex = [f for f in _kernels(EX) if f.suffix not in own]
    wild = [f for f in sorted((EX / "wild").rglob("*")) if f.suffix in KERNEL_EXTS and f.suffix not in own and
            f.with_name(f.name + ".toml").is_file()]
    need = max(0, n - len(ex))
    step = max(1, len(wild) // need) if need else 1
    pick = ex[:n] + (wild[::step][:need] if need else [])
    rels = []
    for f in pick:
        rel = f.relative_to(EX)
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst / rel)
        spec = f.with_name(f.name + ".toml") if f.with_name(f.name + ".toml").is_file() else f.with_suffix(".toml")
        shutil.copy(spec, dst / rel.parent / spec.name)
        if (f.parent / "ref.py").is_file():
            shutil.copy(f.parent / "ref.py", dst / rel.parent / "ref.py")
        rels.append(rel.as_posix())
    return rels


def state(out: Path) -> list[dict]:
    p = out / "project-state.jsonl"
    if not p.is_file():
        return []
    recs = []
    for line in p.read_text().splitlines():
        try:
            recs.append(json.loads(line))
        except ValueError:
            pass
    return recs


def _open_log(kdir: Path) -> bool:
    log = kdir / "provenance.jsonl"
    try:
        text = log.read_text()
    except OSError:
        return False
    return '"type": "pass"' in text and '"type": "end"' not in text


def cmd(tree: Path, out: Path, to: str, jobs: int, extra=()) -> list[str]:
    return [sys.executable, "-m", "xpiler", "migrate", str(tree), "--to", to, "-o", str(out), "--jobs", str(jobs),
            *extra]


def screenshot(html: Path, png: Path, work: Path) -> dict:
    from chrome_shot import find_chrome, screenshot
    chrome = find_chrome()
    if not chrome:
        return {"ok": None, "why": "no chromium here (apt-get install chromium)"}
    text = html.read_text()
    links = re.findall(r'href="([^"]+)"', text)
    missing = [h for h in links if not (html.parent / h).is_file()]
    offline = "http://" not in text and "https://" not in text
    if not screenshot(chrome, html, png, work / "chrome", 2400, 180):
        return {"ok": False, "why": "no screenshot was written"}
    from PIL import Image
    im = Image.open(png).convert("RGB")
    px = list(im.get_flattened_data() if hasattr(im, "get_flattened_data") else im.getdata())
    colours = len(set(px[::7]))
    greens = sum(1 for p in px if 30 <= p[0] <= 70 and 100 <= p[1] <= 145 and 30 <= p[2] <= 70)   # #2e7d32 badges
    ok = im.size[0] >= 1000 and colours > 50 and greens > 2000 and not missing and offline
    return {"ok": ok, "png": str(png), "size": list(im.size), "colours": colours, "green_pixels": greens,
            "links": len(links), "missing_links": missing[:5], "offline": offline}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=104, help="kernels in the tree (default 104)")
    ap.add_argument("--to", default="bang")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--kill-after", type=int, default=None, help="default: half of --n")
    ap.add_argument("--signal", choices=["KILL", "TERM"], default="KILL")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--mid-log", action="store_true",
                    help="after --kill-after kernels finished, wait until a running kernel's log has pass events")
    ap.add_argument("--keep", help="work in this folder (kept) instead of a temporary one")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "project_resume.json"))
    ap.add_argument("--png", default=str(ROOT / "benchmarks" / "results" / "project_summary.png"))
    a = ap.parse_args()
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="xpiler-project-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    tree, out = work / "tree", work / "out"
    rels = build_tree(tree, a.n, a.to)
    kill_after = a.kill_after or len(rels) // 2
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "kernels": len(rels), "to": a.to, "jobs": a.jobs,
                 "kill_after": kill_after, "signal": a.signal, "mid_log": a.mid_log, "work": str(work)}
    print(f"{len(rels)} kernels copied into {tree}; run 1 is killed (SIG{a.signal}) after {kill_after} finished")

    # 1. run, killed half-way
    t0 = time.time()
    p = subprocess.Popen(cmd(tree, out, a.to, a.jobs), cwd=ROOT, start_new_session=True,
                         stdout=open(work / "run1.txt", "w"), stderr=subprocess.STDOUT)
    reached = None
    while p.poll() is None:
        s = state(out)
        done = {r["rel"] for r in s if r.get("type") == "done"}
        if len(done) >= kill_after:
            reached = reached or time.time()
            running = {r["rel"] for r in s if r.get("type") == "start"} - done
            # --mid-log: wait (up to 60 s) until a running kernel has written part of its log, so
            # the kill lands in the middle of a migration (a kernel still in its source check has
            # no log yet and is simply started again)
            if not a.mid_log or time.time() - reached > 60 or any(_open_log(out / f) for f in running):
                os.killpg(p.pid, getattr(signal, f"SIG{a.signal}"))
                break
        time.sleep(0.2)
    p.wait()
    time.sleep(0.5)
    res["run1_s"] = round(time.time() - t0, 1)
    res["run1_exit"] = p.returncode
    s1 = state(out)
    done1 = [r["rel"] for r in s1 if r.get("type") == "done"]
    running = sorted({r["rel"] for r in s1 if r.get("type") == "start"} - set(done1))
    print(f"run 1: {len(done1)} finished, {len(running)} running at the kill ({res['run1_s']} s, exit {p.returncode})")

    # 2. resumed
    t0 = time.time()
    p2 = subprocess.run(cmd(tree, out, a.to, a.jobs), cwd=ROOT, capture_output=True, text=True)
    (work / "run2.txt").write_text(p2.stdout + p2.stderr)
    res["run2_s"] = round(time.time() - t0, 1)
    res["run2_exit"] = p2.returncode
    s2 = [r for r in state(out) if r.get("run") == 2]
    started2 = [r["rel"] for r in s2 if r.get("type") == "start"]
    done_all = [r["rel"] for r in state(out) if r.get("type") == "done"]
    summary = json.loads((out / "summary.json").read_text())
    modes = {k["file"]: k["mode"] for k in summary["kernels"]}
    with_spec = [k["file"] for k in summary["kernels"] if k["verdict"] != "needs spec"]
    res.update({
        "finished_before_kill": len(done1), "running_at_kill": len(running),
        "running_at_kill_modes": dict(Counter(modes.get(f) for f in running)),
        "migrated_in_run2": len(started2),
        "redone": sorted(set(done1) & set(started2)),
        "lost": sorted(set(with_spec) - set(done_all)),
        "finished_twice": sorted(f for f, c in Counter(done_all).items() if c > 1),
        "total_finished": len(set(done_all)), "verdicts": dict(Counter(k["verdict"] for k in summary["kernels"])),
        "substrates": dict(Counter(k["substrate"] for k in summary["kernels"])),
        "summary_exit_code": summary["exit_code"]})
    print(f"run 2: {len(started2)} migrated ({res['running_at_kill_modes']} of the {len(running)} running at the kill), "
          f"redone {len(res['redone'])}, lost {len(res['lost'])}, finished twice {len(res['finished_twice'])}, "
          f"total finished {res['total_finished']} / {len(rels)}; verdicts {res['verdicts']} ({res['run2_s']} s)")

    # 3. nothing changed: nothing is run
    p3 = subprocess.run(cmd(tree, out, a.to, a.jobs), cwd=ROOT, capture_output=True, text=True)
    s3 = [r for r in state(out) if r.get("run") == 3]
    res["run3_started"] = sum(1 for r in s3 if r.get("type") == "start")
    res["run3_unchanged"] = json.loads((out / "summary.json").read_text())["counts"]["unchanged"]
    print(f"run 3: {res['run3_started']} migrated, {res['run3_unchanged']} unchanged (exit {p3.returncode})")

    # 4. Dask LocalCluster, 2 worker processes
    if not a.no_dask:
        try:
            from distributed import LocalCluster
        except ImportError:
            res["dask"] = {"ok": None, "why": "distributed is not installed"}
        else:
            t0 = time.time()
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
                pd = subprocess.run(cmd(tree, work / "out_dask", a.to, a.jobs, ["--cluster", c.scheduler_address]),
                                    cwd=ROOT, capture_output=True, text=True)
            (work / "run_dask.txt").write_text(pd.stdout + pd.stderr)
            sd = json.loads((work / "out_dask" / "summary.json").read_text())
            vd = {k["file"]: (k["verdict"], k["substrate"]) for k in sd["kernels"]}
            vl = {k["file"]: (k["verdict"], k["substrate"]) for k in summary["kernels"]}
            diff = sorted(f for f in set(vd) | set(vl) if vd.get(f) != vl.get(f))
            res["dask"] = {"ok": not diff, "kernels": len(vd), "differ": diff, "seconds": round(time.time() - t0, 1),
                           "exit": pd.returncode, "verdicts": dict(Counter(v for v, _ in vd.values()))}
            print(f"dask: {len(vd)} kernels on a LocalCluster of 2 workers, {len(diff)} verdicts differ "
                  f"({res['dask']['seconds']} s)")

    # 5. the summary page in headless Chromium
    res["screenshot"] = screenshot(out / "summary.html", Path(a.png), work)
    print(f"screenshot: {res['screenshot']}")

    ok = (len(done1) >= 1 and len(done1) < len(rels) and not res["redone"] and not res["lost"]
          and not res["finished_twice"] and res["run3_started"] == 0
          and (a.no_dask or res["dask"].get("ok") is not False) and res["screenshot"].get("ok") is not False)
    res["ok"] = ok
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    print(("ALL CHECKS HOLD" if ok else "A CHECK FAILED") + f"; {a.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
