#!/usr/bin/env python3
"""Measure the LLM proposer for real, with a small local GGUF code model (issue 7).

For a fixed list of (pass, example kernel) pairs, the LLM proposer (``xpiler.proposers``) is
asked once per pair for a candidate, twice: with the BM25-retrieved manual excerpts in the
prompt and without them (ablation). Each answer goes through the proposer's own screens
(garbage / entry / parse / structure); a screened candidate is then built for this machine's
substrate and run against the source kernel and the spec's Python reference
(``xpiler.verify.tester.compare_kernels``). Per pass and per arm it reports the share of
answers that pass the structural screen, that compile, that pass the numeric test, and the
latency and tokens of the calls.

Decoding is deterministic: temperature 0, top_k 1, seed 0 (the llamacpp backend's settings).

This is a manual benchmark: it needs llama-cpp-python and a GGUF file
(``bash benchmarks/setup_local_llm.sh`` installs both) and takes ~15-25 CPU minutes on two
cores. It is not part of CI.

    python benchmarks/bench_llm_proposer.py --model ~/.cache/xpiler/llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    python benchmarks/bench_llm_proposer.py --selfcheck      # the test harness alone, no model
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from xpiler.proposers.llm_proposer import LLMProposer  # noqa: E402
from xpiler.proposers.protocol import Candidate, PassContext  # noqa: E402
from xpiler.proposers.screen import strip_comments_and_strings  # noqa: E402
from xpiler.spec import DIALECT_EXT, load_spec, spec_to_toml  # noqa: E402
from xpiler.verify.tester import compare_kernels  # noqa: E402

EXAMPLES = ROOT / "examples"
DEFAULT_CACHE = Path(os.environ.get("XPILER_LLM_CACHE", Path.home() / ".cache" / "xpiler" / "llm"))


@dataclass
class Pair:
    """One benchmark question: apply `pass_name` to `example`, answer in `out_dialect`."""
    pass_name: str
    example: str                     # path under examples/
    out_dialect: str
    params: dict = field(default_factory=dict)
    launch: dict = field(default_factory=dict)   # [launch] of the candidate's spec (cuda/hip/bang answers)

    @property
    def key(self) -> str:
        return f"{self.pass_name}:{Path(self.example).name}->{self.out_dialect}"


# The pairs: every pass the issue names, on small kernels of the suite. Launch shapes of
# SIMT/BANG answers are fixed here and told to the model as pass parameters, so the candidate's
# spec and the model agree on them.
PAIRS = [
    Pair("loop_recovery", "relu/relu.cu", "c"),
    Pair("loop_recovery", "relu/relu.mlu", "c"),
    Pair("binding", "add/add.c", "cuda", params={"loop": "i", "grid": "cdiv(n,256)", "block": 256},
         launch={"grid": ["cdiv(n,256)", 1, 1], "block": [256, 1, 1]}),
    Pair("binding", "relu/relu.c", "bang", params={"loop": "i", "taskDim": 4, "func_type": "block"},
         launch={"dim": [4, 1, 1], "func_type": "block"}),
    Pair("detensorize", "relu/relu.mlu", "bang", launch="source"),
    Pair("detensorize", "relu/relu_avx512.c", "c"),
    Pair("cache", "gemv/gemv.c", "c", params={"buffer": "x", "tile_k": 256}),
    Pair("cache", "gemv/gemv.cu", "cuda", params={"buffer": "x", "tile_k": 128}, launch="source"),
    Pair("tensorize", "add/add.c", "c", params={"loop": "i", "vector": "__m512 (16 x float32)"}),
    Pair("tensorize", "relu/relu.c", "c", params={"loop": "i", "vector": "__m512 (16 x float32)"}),
    Pair("split", "add/add.c", "c", params={"loop": "i", "factor": 16}),
    Pair("split", "softmax/softmax.c", "c", params={"loop": "c (the normalise loop)", "factor": 8}),
]
QUICK = [0, 2, 4, 6, 8, 10]   # one pair per pass


# --------------------------------------------------------------------------------------------
def strip_host(text: str, entry: str) -> str:
    """The kernel without its host launcher (``<entry>_host``): the model rewrites the device
    code only; the test harness launches the entry itself from the spec's [launch]."""
    clean, _ = strip_comments_and_strings(text)
    m = re.search(r"(?:extern\s+\"C\"\s+)?void\s+" + re.escape(entry) + r"_host\s*\(", text)
    if not m:
        return text
    # find the body's braces in the original text (comments/strings do not contain braces here)
    i = text.index("{", m.end())
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                start = m.start()
                # drop the comment line(s) right before the host function too
                head = text[:start].rstrip()
                lines = head.split("\n")
                while lines and lines[-1].lstrip().startswith("//"):
                    lines.pop()
                return "\n".join(lines).rstrip() + "\n" + text[j + 1:].lstrip("\n")
    return text


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for buf in iter(lambda: f.read(1 << 22), b""):
            h.update(buf)
    return h.hexdigest()


class Checker:
    """Builds and runs one candidate against the source kernel and the reference; remembers
    what happened (compiled? verified?) for the benchmark's tally."""

    def __init__(self, pair: Pair, work: Path, seeds=(0,), sanitize: bool = False, source_text: str | None = None):
        self.pair = pair
        self.work = work
        self.seeds = seeds
        self.sanitize = sanitize
        self.src = EXAMPLES / pair.example
        self.sspec = load_spec(self.src.with_name(self.src.name + ".toml"))
        self.source_text = source_text
        self.last: dict | None = None
        self.last_text: str | None = None      # the last candidate tested, with its spec and verdict
        self.last_spec = None
        self.last_verdict = None
        self.against = None
        self.n = 0

    def cand_spec(self):
        launch = dict(self.sspec.launch) if self.pair.launch == "source" else dict(self.pair.launch or {})
        spec = self.sspec.with_dialect(self.pair.out_dialect, self.sspec.entry, launch)
        ref_file, fn = self.sspec.reference.split(":")
        spec.reference = f"{(self.src.parent / ref_file).resolve()}:{fn}"
        return spec

    def __call__(self, cand: Candidate) -> str | None:
        self.n += 1
        path = self.work / f"cand{self.n}{DIALECT_EXT[self.pair.out_dialect]}"
        path.write_text(cand.program_text)
        spec = self.cand_spec()
        spec.path = path.with_name(path.name + ".toml")
        spec.path.write_text(spec_to_toml(spec))
        # the source kernel is the program the model saw (host launcher stripped): write it beside
        src = self.src
        if self.source_text is not None:
            src = self.work / f"source{self.src.suffix}"
            src.write_text(self.source_text)
        t0 = time.monotonic()
        v = compare_kernels(path, spec, against=(src, self.sspec), use_reference=True, seeds=self.seeds,
                            sanitize=self.sanitize, timeout=60.0, jobs=2)
        self.last_text, self.last_spec, self.last_verdict, self.against = cand.program_text, spec, v, (src, self.sspec)
        compiled = v.build_error is None
        first = v.failures[0] if v.failures else None
        self.last = {"compiled": compiled, "verified": bool(v.verified), "substrate": v.substrate,
                     "test_s": round(time.monotonic() - t0, 2), "runs": v.runs,
                     "failure": (f"{first.code} {first.message}"[:300] if first else None),
                     "max_abs_error": v.max_abs_error}
        if v.verified:
            return None
        if not compiled:
            return f"compile error: {first.message if first else '?'}\n{(first.log if first else '')[-1500:]}"
        return f"test failed: {first.code} {first.message}" if first else "test failed"


def section_retriever():
    """``xpiler.retrieval.retrieve`` with each hit handed over as an (id, signature + body) pair.

    (The proposer's own normaliser reads ``Section.text`` as an attribute, but it is a method
    there, so with ``retrieve=True`` the prompt would carry the method's repr; see the report.)
    """
    from xpiler.retrieval import retrieve

    def fn(query: str, target: str, k: int):
        return [(s.id, f"{s.signature}\n{s.body}".strip()) for s in retrieve(query, target, k)]
    return fn


# --------------------------------------------------------------------------------------------
def repair_answer(check: "Checker", pair: Pair, work: Path, budget_s: float) -> dict:
    """The issue-14 arm: a screened answer that builds and fails its numeric test goes to Z3
    sketch repair (``xpiler.repair.repair_kernel``, the same call the migration driver makes).
    The repaired text is then tested again by the benchmark's own test (``check``): "verified
    after" needs both the repair's gate (seeds 0 1 2, every instance the unrepaired test ran) and
    this test."""
    from xpiler.repair import repair_kernel
    t0 = time.monotonic()
    r = repair_kernel(check.last_text, pair.out_dialect, check.sspec.entry, check.last_spec, check.against,
                      seeds=(0, 1, 2), budget_s=budget_s, jobs=2, workdir=work / "repair", run_limit=60.0)
    out = {"repaired": bool(r.repaired), "solver": r.solver, "sketch": r.sketch, "region": r.region,
           "holes": r.holes, "checks": r.checks, "seconds": round(time.monotonic() - t0, 1),
           "verified_after": False}
    if r.repaired:
        again = check(Candidate(r.text, "repair", pair.pass_name)) is None
        out["verified_after"] = bool(again)
        out["retest"] = check.last
    return out


def run_pair(proposer: LLMProposer, pair: Pair, retrieval: bool, workroot: Path, repair_budget: float = 0.0) -> dict:
    src = EXAMPLES / pair.example
    sspec = load_spec(src.with_name(src.name + ".toml"))
    program = strip_host(src.read_text(), sspec.entry)
    work = Path(tempfile.mkdtemp(prefix=f"{pair.pass_name}-", dir=workroot))
    check = Checker(pair, work, source_text=program)
    events: list[dict] = []
    proposer.log = events.append
    facts = {}
    if pair.launch and pair.launch != "source":
        facts["launch of the answer"] = ", ".join(f"{k}={v}" for k, v in pair.launch.items())
    ctx = PassContext(entry=sspec.entry, source_dialect=sspec.dialect, out_dialect=pair.out_dialect,
                      params=dict(pair.params), spec=sspec, facts=facts, check=check, seed=0,
                      excerpts=None if retrieval else [])
    t0 = time.monotonic()
    cands = proposer.propose(pair.pass_name, program, pair.out_dialect, ctx)
    wall = time.monotonic() - t0
    ev = events[0] if events else {}
    verdict = ev.get("verdict", "error")
    structural = verdict in ("candidate", "passed", "failed_test")
    res = {
        "pair": pair.key, "pass": pair.pass_name, "example": pair.example, "source_dialect": sspec.dialect,
        "out_dialect": pair.out_dialect, "retrieval": retrieval, "section_ids": ev.get("section_ids", []),
        "verdict": verdict, "detail": (ev.get("detail") or "")[:400],
        "structural_ok": structural,
        "compiled": bool(structural and check.last and check.last["compiled"]),
        "verified": bool(structural and check.last and check.last["verified"]),
        "substrate": check.last["substrate"] if check.last else None,
        "test": check.last,
        "tokens_in": ev.get("tokens", {}).get("in", 0), "tokens_out": ev.get("tokens", {}).get("out", 0),
        "latency_s": ev.get("latency_s", 0.0), "wall_s": round(wall, 2),
        "finish_reason": (ev.get("backend_meta") or {}).get("finish_reason"),
        "prompt_sha256": ev.get("prompt_sha256"), "response": ev.get("response"),
        "calls": len(events), "candidates": len(cands),
    }
    res["repair"] = None
    if repair_budget > 0 and res["compiled"] and not res["verified"] and check.last_text is not None:
        res["repair"] = repair_answer(check, pair, work, repair_budget)
    shutil.rmtree(work, ignore_errors=True)
    return res


def summarize(results: list[dict]) -> list[dict]:
    rows = []
    keys = sorted({(r["pass"], r["retrieval"]) for r in results}, key=lambda k: (k[0], not k[1]))
    for p, ret in keys + [("ALL", True), ("ALL", False)]:
        rs = [r for r in results if (p == "ALL" or r["pass"] == p) and r["retrieval"] == ret]
        if not rs:
            continue
        n = len(rs)
        rows.append({
            "pass": p, "retrieval": ret, "n": n,
            "structural": sum(r["structural_ok"] for r in rs), "compiled": sum(r["compiled"] for r in rs),
            "verified": sum(r["verified"] for r in rs),
            "repair_tried": sum(1 for r in rs if r.get("repair")),
            "verified_after_repair": sum(r["verified"] or bool((r.get("repair") or {}).get("verified_after"))
                                         for r in rs),
            "latency_mean_s": round(sum(r["latency_s"] for r in rs) / n, 1),
            "tokens_in_mean": round(sum(r["tokens_in"] for r in rs) / n),
            "tokens_out_mean": round(sum(r["tokens_out"] for r in rs) / n),
            "truncated": sum(1 for r in rs if r["finish_reason"] == "length"),
        })
    return rows


def pct(a: int, n: int) -> str:
    return f"{a}/{n} ({100 * a / n:.0f}%)" if n else "-"


NOTES = [
    "One question per (pass, example) pair and arm: the proposer's meta-prompt for the pass "
    "(`passes/prompts/<pass>.md`), filled with xpiler's facts (spec sizes, buffers, loops, intrinsic signatures), "
    "the pass parameters listed in `PAIRS`, and - in the `excerpts = yes` arm only - the top-k BM25 sections of "
    "the target's manual (`xpiler.retrieval.retrieve`). The `no` arm is the same prompt with no excerpts.",
    "The program handed to the model is the example kernel without its host launcher (`<entry>_host`); "
    "the test harness launches the entry itself from the spec's `[launch]` (for a binding answer: the launch "
    "stated in the pass parameters and facts).",
    "`structural ok`: the answer passed the proposer's screens (a fenced program defining the entry, balanced "
    "brackets, accepted by xpiler's front end, and the pass's signature change present, e.g. a new loop for "
    "split, an AVX-512 intrinsic for tensorize, no `__bang_*` call left for detensorize).",
    "`compiles`: the screened candidate built for this machine's substrate; `numeric pass`: it then matched both "
    "the source kernel and the spec's Python reference on every instance of the spec (seed 0, outputs poisoned "
    "before each run).",
    "`sent to repair` (with `--repair SECONDS`): answers that built and failed their numeric test went to Z3 sketch "
    "repair (`xpiler.repair.repair_kernel`, as in a migration); `numeric pass after repair` counts an answer that "
    "passed as it was, or whose repaired text passed both the repair's gate (seeds 0 1 2) and this benchmark's test.",
    "First answers only (`--retries 0`): the proposer's one feedback retry is off, so each number is a single "
    "deterministic call.",
]


def write_markdown(path: Path, meta: dict, rows: list[dict], results: list[dict]) -> None:
    L = ["# LLM proposer benchmark (real local model)", "",
         "Generated by `benchmarks/bench_llm_proposer.py`; the raw answers are in "
         f"`{meta.get('out_json', 'benchmarks/llm_proposer_results.json')}`.", "",
         "## Setup", ""]
    m = meta["model"]
    L += [f"- model: **{m['name']}** (`{m['file']}`, {m['bytes']:,} bytes)",
          f"- assembled GGUF SHA-256: `{m['sha256']}`",
          f"- from PyPI packages: {m.get('packages', '(not recorded)')}",
          f"- runtime: llama-cpp-python {meta['llama_cpp_version']} (built from source, "
          f"`{meta['cmake_args']}`), n_ctx {meta['n_ctx']}, {meta['n_threads']} thread(s)",
          f"- decoding: temperature 0, top_k 1, seed 0; max_tokens {meta['max_tokens']}; "
          f"retries {meta['retries']} (first answer only); retrieval k = {meta['k']}",
          f"- numeric checks: substrate(s) {', '.join(meta['substrates']) or '-'}, seeds {meta['seeds']}, every "
          "instance of the source spec (base, odd, …), against the source kernel and the spec's reference",
          f"- machine: {meta['machine']}; 1-minute load average at the end: {meta.get('load_avg_at_end')} "
          "(the 2 cores were shared with other jobs, so latencies are upper bounds)",
          f"- command: `{meta['command']}`",
          f"- total wall time: {meta['wall_s']:.0f} s" + (" (PARTIAL: run still going or stopped)"
                                                           if meta.get("partial") else ""), "",
          "## Per pass (with / without retrieved manual excerpts)", "",
          "| pass | excerpts | n | structural ok | compiles | numeric pass | sent to repair | numeric pass after repair | mean latency s | mean tokens in | mean tokens out | hit max_tokens |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rep_on = bool(meta.get("repair_budget_s"))
    for r in rows:
        L.append(f"| {r['pass']} | {'yes' if r['retrieval'] else 'no'} | {r['n']} | {pct(r['structural'], r['n'])} | "
                 f"{pct(r['compiled'], r['n'])} | {pct(r['verified'], r['n'])} | "
                 f"{r.get('repair_tried', 0) if rep_on else 'off'} | "
                 f"{pct(r.get('verified_after_repair', r['verified']), r['n']) if rep_on else 'off'} | "
                 f"{r['latency_mean_s']} | "
                 f"{r['tokens_in_mean']} | {r['tokens_out_mean']} | {r['truncated']} |")
    L += ["", "Shares are of all answers (a rejected answer counts as not compiled and not passing).", ""]
    L += ["## How it was measured", ""] + [f"- {n}" for n in NOTES] + [""]
    L += [
          "## Every call", "",
          "| pair | excerpts | verdict | compiles | numeric | latency s | tokens in/out | why |",
          "|---|---|---|---|---|---|---|---|"]
    for r in results:
        why = r["detail"] or (r["test"] or {}).get("failure") or ""
        why = why.replace("|", "\\|").replace("\n", " ")[:140]
        L.append(f"| {r['pair']} | {'yes' if r['retrieval'] else 'no'} | {r['verdict']} | "
                 f"{'yes' if r['compiled'] else 'no'} | {'yes' if r['verified'] else 'no'} | {r['latency_s']:.1f} | "
                 f"{r['tokens_in']}/{r['tokens_out']} | {why} |")
    path.write_text("\n".join(L) + "\n")


# --------------------------------------------------------------------------------------------
# small semantic mutations of code lines (never comments), tried in order until one applies
MUTATIONS = [
    (r"^(\s+[^/\n*]*?\b(?:y|c|C|yr)\[)", r"\g<1>1+"),          # off-by-one store
    (r"^(\s+[^/\n*]*?__memcpy\(\s*y\s*\+[^,]*,[^,]*,\s*)valid\b", r"\g<1>(valid - 1)"),  # short copy-out
    (r"^(\s+[^/\n*]*?)\b0\.0f\b", r"\g<1>0.5f"),
    (r"^(\s+[^/\n*]*?)_mm512_max_ps\b", r"\g<1>_mm512_min_ps"),
]


def selfcheck(workroot: Path, repair_budget: float = 0.0) -> int:
    """The harness on known answers, no model: each source program stripped of its host must
    verify against itself, and a deliberately broken one must fail."""
    bad = 0
    for pair in PAIRS:
        src = EXAMPLES / pair.example
        sspec = load_spec(src.with_name(src.name + ".toml"))
        program = strip_host(src.read_text(), sspec.entry)
        same = Pair(pair.pass_name, pair.example, sspec.dialect, launch="source")
        w = Path(tempfile.mkdtemp(dir=workroot))
        chk = Checker(same, w, source_text=program)
        ok = chk(Candidate(program, "selfcheck", pair.pass_name)) is None
        # an off-by-one store in the code (not in a comment): must be caught by the test
        broken = program
        for pat, rep in MUTATIONS:
            broken = re.sub(pat, rep, program, count=1, flags=re.M)
            if broken != program:
                break
        assert broken != program, pair.example
        fails = chk(Candidate(broken, "selfcheck", pair.pass_name)) is not None
        print(f"{pair.example:28s} identity {'verified' if ok else 'FAILED'}; mutant {'caught' if fails else 'MISSED'}"
              f"  ({chk.last['substrate']})")
        bad += (not ok) + (not fails)
        if repair_budget > 0 and fails and chk.last["compiled"]:
            rep = repair_answer(chk, same, w, repair_budget)
            print(f"{'':28s} repair: {rep['solver']} sketch={rep['sketch']} verified_after={rep['verified_after']}"
                  f" ({rep['seconds']} s)")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_CACHE / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    ap.add_argument("--model-name", default=None, help="label for the report (default: GGUF general.name)")
    ap.add_argument("--packages", default=None, help="where the GGUF came from (for the report)")
    ap.add_argument("--pairs", default="all", help="'all', 'quick' (one pair per pass) or comma-separated indices")
    ap.add_argument("--arms", default="both", choices=("both", "with", "without"))
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--k", type=int, default=3, help="manual excerpts retrieved per prompt")
    ap.add_argument("--retries", type=int, default=0)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=1,
                    help="llama.cpp threads (1 is faster than 2 on a busy 2-core machine: no spinning barriers)")
    ap.add_argument("--out-json", type=Path, default=ROOT / "benchmarks" / "llm_proposer_results.json")
    ap.add_argument("--out-md", type=Path, default=ROOT / "benchmarks" / "LLM_RESULTS.md")
    ap.add_argument("--selfcheck", action="store_true", help="check the test harness only (no model)")
    ap.add_argument("--replay-json", type=Path, default=None,
                    help="answer each prompt with the response recorded for the same prompt hash in an earlier "
                         "run's results JSON (the model's own answers, no model loaded; a prompt that changed since "
                         "gets no answer and counts as an error)")
    ap.add_argument("--repair", type=float, default=0.0, metavar="SECONDS",
                    help="issue 14: send each answer that builds and fails its test to Z3 sketch repair with this "
                         "budget, and report verified before and after (0: off)")
    a = ap.parse_args(argv)

    workroot = Path(tempfile.mkdtemp(prefix="xp-llmbench-"))
    try:
        if a.selfcheck:
            return selfcheck(workroot, a.repair)
        if a.pairs == "all":
            pairs = PAIRS
        elif a.pairs == "quick":
            pairs = [PAIRS[i] for i in QUICK]
        else:
            pairs = [PAIRS[int(i)] for i in a.pairs.split(",")]
        arms = {"both": [True, False], "with": [True], "without": [False]}[a.arms]

        t_load = time.monotonic()
        if a.replay_json:
            from xpiler.llm.replay_backend import ReplayBackend
            rec = json.loads(a.replay_json.read_text())
            rmeta = rec["meta"]
            events = [{"type": "llm_call", "prompt_sha256": r["prompt_sha256"], "response": r["response"],
                       "verdict": r["verdict"], "model": rmeta["model"]["name"],
                       "tokens": {"in": r["tokens_in"], "out": r["tokens_out"]}, "latency_s": r["latency_s"]}
                      for r in rec["results"] if r.get("prompt_sha256") and r.get("response") is not None]
            backend = ReplayBackend(events, model=rmeta["model"]["name"])
            gmeta = rmeta["model"].get("gguf_metadata") or {}
            llama_version = f"{rmeta['llama_cpp_version']} (answers replayed from {a.replay_json.name})"
            a.threads, a.n_ctx = rmeta["n_threads"], rmeta["n_ctx"]
            a.packages = a.packages or rmeta["model"].get("packages")
        else:
            from xpiler.llm.llamacpp_backend import LlamaCppBackend
            import llama_cpp
            backend = LlamaCppBackend(str(a.model), n_ctx=a.n_ctx, n_threads=a.threads)
            gmeta = getattr(backend._llama, "metadata", {}) or {}
            llama_version = llama_cpp.__version__
        t_load = time.monotonic() - t_load
        name = a.model_name or gmeta.get("general.name") or a.model.name
        proposer = LLMProposer(backend, retrieve=section_retriever(), k=a.k, max_tokens=a.max_tokens,
                               retries=a.retries)

        results = []
        t0 = time.monotonic()
        for pair in pairs:
            for ret in arms:
                r = run_pair(proposer, pair, ret, workroot, repair_budget=a.repair)
                results.append(r)
                rep = r.get("repair")
                print(f"{r['pair']:45s} excerpts={'y' if ret else 'n'} {r['verdict']:18s} "
                      f"compiled={int(r['compiled'])} verified={int(r['verified'])} "
                      f"{r['latency_s']:.1f}s {r['tokens_in']}/{r['tokens_out']} tok"
                      + (f" repair={rep['solver']} verified_after={int(rep['verified_after'])}" if rep else ""),
                      flush=True)
                # partial results after every call: a long run that is stopped still leaves its numbers
                write_outputs(a, backend, name, gmeta, llama_version, t_load, time.monotonic() - t0,
                              results, argv, partial=True)
        wall = time.monotonic() - t0
        rows = write_outputs(a, backend, name, gmeta, llama_version, t_load, wall, results, argv)
        print(f"\nwrote {a.out_json} and {a.out_md} ({wall:.0f} s)")
        for r in rows:
            print(f"{r['pass']:14s} excerpts={'y' if r['retrieval'] else 'n'} n={r['n']} structural={r['structural']} "
                  f"compiled={r['compiled']} verified={r['verified']} latency={r['latency_mean_s']}s")
        return 0
    finally:
        shutil.rmtree(workroot, ignore_errors=True)


_SHA_CACHE: dict = {}


def write_outputs(a, backend, name, gmeta, llama_version, t_load, wall, results, argv, partial=False):
    rows = summarize(results)
    if str(a.model) not in _SHA_CACHE:
        _SHA_CACHE[str(a.model)] = sha256_file(a.model)
    if True:
        meta = {
            "model": {"name": name, "file": a.model.name, "bytes": a.model.stat().st_size,
                      "sha256": _SHA_CACHE[str(a.model)], "packages": a.packages,
                      "gguf_metadata": {k: v for k, v in gmeta.items()
                                        if k.startswith("general.") or k.endswith("context_length")}},
            "llama_cpp_version": llama_version,
            "cmake_args": os.environ.get("XP_LLAMA_CMAKE_ARGS", "-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF "
                                         "-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_AVX512=ON -DGGML_AVX2=ON "
                                         "-DGGML_FMA=ON -DGGML_F16C=ON"),
            "n_ctx": a.n_ctx, "n_threads": a.threads, "max_tokens": a.max_tokens, "retries": a.retries,
            "k": a.k, "seeds": [0], "repair_budget_s": a.repair, "load_s": round(t_load, 1), "wall_s": wall,
            "substrates": sorted({r["substrate"] for r in results if r["substrate"]}),
            "load_avg_at_end": round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
            "command": "python " + shlex.join([str(Path(sys.argv[0]).relative_to(ROOT)) if Path(sys.argv[0]).is_absolute()
                                               and ROOT in Path(sys.argv[0]).parents else sys.argv[0]]
                                              + [x.replace(str(Path.home()), "~") for x in (argv or sys.argv[1:])]),
        }
        meta["partial"] = partial
        meta["out_json"] = str(a.out_json.resolve().relative_to(ROOT)) if ROOT in a.out_json.resolve().parents \
            else str(a.out_json)
        a.out_json.write_text(json.dumps({"meta": meta, "summary": rows, "results": results}, indent=1))
        write_markdown(a.out_md, meta, rows, results)
    return rows


if __name__ == "__main__":
    sys.exit(main())
