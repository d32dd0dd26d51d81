"""Exit codes and diagnostic IDs agree across commands (issue 11, item 6): one test per case.

Each case runs through ``xpiler.cli.main`` (or the API) on a tiny kernel written to tmp_path and
checks the exit code and the ID. Only a few cases compile anything (gcc, C kernels, well under a
second each).
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

import xpiler
from xpiler.cli import main
from xpiler.diagnostics import TABLE, XPError
from xpiler.provenance import sha256_text

ROOT = Path(__file__).resolve().parent.parent

RELU_C = """\
void relu(const float* x, float* y, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
"""

RELU_CU = """\
__global__ void relu(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""

ARGS = """
[[args]]
name = "x"
dtype = "float32"
shape = ["n"]
role = "in"

[[args]]
name = "y"
dtype = "float32"
shape = ["n"]
role = "out"

[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"

[reference]
python = "ref.py:relu"
"""

SPEC_C = 'entry = "relu"\ndialect = "c"\n\n[sizes]\nn = 37\n' + ARGS
SPEC_CU = ('entry = "relu"\ndialect = "cuda"\n\n[sizes]\nn = 37\n\n[launch]\ngrid = ["cdiv(n,32)", 1, 1]\n'
           'block = [32, 1, 1]\n' + ARGS)
REF = "import numpy as np\n\ndef relu(x, n):\n    return np.maximum(x, 0)\n"


def kernel(tmp_path: Path, name: str, text: str | bytes, spec: str | None = None) -> Path:
    """Write a kernel, its spec (by the kernel's dialect unless given) and the reference."""
    src = tmp_path / name
    if isinstance(text, bytes):
        src.write_bytes(text)
    else:
        src.write_text(text)
    if spec is None:
        spec = SPEC_CU if name.endswith(".cu") else SPEC_C
    (tmp_path / (name + ".toml")).write_text(spec)
    (tmp_path / "ref.py").write_text(REF)
    return src


def cli(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    return rc, text


def ids(text: str) -> list[str]:
    return re.findall(r"\b(XP\d{4})\b", text)


# -- 1. a source its compiler rejects is bad input (exit 2) under test and migrate ----------------
def test_syntax_error_is_bad_input_under_test_and_migrate(tmp_path, capsys):
    src = kernel(tmp_path, "relu.c", RELU_C.replace("float v = x[i];", "float v = x[i]"))
    rc, text = cli(capsys, "test", src, "--no-asan", "--seeds", "1")
    assert rc == 2, text
    assert ids(text)[0] == "XP2003" and f"{src}:5" in text        # the compiler's ID, at the user's line
    rc, text = cli(capsys, "migrate", src, "--to", "cuda", "-o", tmp_path / "out")
    assert rc == 2 and ids(text)[0] == "XP1101" and f"{src}:5" in text, text
    assert not (tmp_path / "out").exists()
    # the verdict says the build was refused; a caller that wrote the kernel itself (migration)
    # counts that as "not verified" instead
    v = xpiler.test(src, seeds=[0], sanitize=False)
    assert not v.verified and v.does_not_compile and v.build_error.code == "XP2003"


# -- 2. an unbalanced brace is reported at the brace --------------------------------------------
@pytest.mark.parametrize("text,line,col,token", [
    (RELU_C.rstrip()[:-1], 2, 1, "{"),                 # the last '}' is missing: the function's '{' stays open
    (RELU_C + "}\n", 8, 1, "}"),                         # a stray '}'
    (RELU_C.replace("v > 0.0f ?", "(v > 0.0f ?"), 5, 16, "("),
])
def test_unbalanced_bracket_has_a_location(tmp_path, capsys, text, line, col, token):
    src = kernel(tmp_path, "relu.c", text)
    rc, out = cli(capsys, "parse", src)
    assert rc == 2 and ids(out)[0] == "XP1107", out
    assert f"{src}:{line}:{col}: error XP1107: unbalanced '{token}'" in out
    rc, out = cli(capsys, "migrate", src, "--to", "cuda", "-o", tmp_path / "out")
    assert rc == 2 and ids(out)[0] == "XP1107" and f"{src}:{line}:{col}" in out, out


# -- 3. empty and binary files: XP1114 / XP1108 from every command -------------------------------
@pytest.mark.parametrize("content,code", [
    ("", "XP1114"),
    ("// only a comment\n#include <math.h>\n\n", "XP1114"),
    (bytes(range(256)) * 4, "XP1108"),                  # not UTF-8
    (b"\x7fELF\x02\x01\x01" + b"\x00" * 64, "XP1108"),  # decodes, but a NUL byte: not text
])
def test_empty_and_binary_files_agree_across_commands(tmp_path, capsys, content, code):
    src = kernel(tmp_path, "relu.c", content)
    for argv in (["test", src], ["migrate", src, "--to", "cuda", "-o", tmp_path / "out"], ["spec", "--infer", src],
                 ["parse", src]):
        rc, out = cli(capsys, *argv)
        assert rc == 2 and ids(out)[0] == code, (argv, out)
    with pytest.raises(XPError) as ei:
        xpiler.load(src)
    assert ei.value.code == code
    assert not (tmp_path / "out").exists()


# -- 4. a spec of another dialect: the mismatch, with both dialects ------------------------------
def test_spec_dialect_mismatch_names_both_dialects(tmp_path, capsys):
    src = kernel(tmp_path, "relu.cu", RELU_CU, spec=SPEC_CU.replace('dialect = "cuda"', 'dialect = "bang"'))
    rc, out = cli(capsys, "test", src)
    assert rc == 2 and ids(out)[0] == "XP1023", out
    assert "spec dialect 'bang' does not match the source file's dialect 'cuda'" in out
    assert f"{src}.toml:2" in out
    # a spec that is valid for its own dialect gets the same ID
    src = kernel(tmp_path, "relu.cu", RELU_CU, spec=SPEC_C)
    rc, out = cli(capsys, "migrate", src, "--to", "c", "-o", tmp_path / "out")
    assert rc == 2 and ids(out) == ["XP1023"] and "'c'" in out and "'cuda'" in out, out


# -- 5. launch configurations and sizes no substrate can run: refused by the spec check ----------
@pytest.mark.parametrize("edit,code,words", [
    (('grid = ["cdiv(n,32)", 1, 1]', "grid = [100000000000, 1, 1]"), "XP1031",
     ["grid", "instance 'base'", "2147483647"]),
    (('grid = ["cdiv(n,32)", 1, 1]', 'grid = [1, 70000, 1]'), "XP1031", ["grid", "grid y <= 65535"]),
    (("block = [32, 1, 1]", "block = [64, 32, 1]"), "XP1031", ["block", "2048 threads", "1024 threads per block"]),
    (("n = 37\n", "n = 37\n\n[[shapes]]\nname = \"huge\"\nn = 200000000\n"), "XP1032",
     ["instance 'huge'", "1.49 GiB", "limit is 1 GiB"]),
])
def test_launch_and_memory_limits_are_checked_before_any_build(tmp_path, capsys, edit, code, words):
    spec = SPEC_CU.replace(*edit)
    assert spec != SPEC_CU
    src = kernel(tmp_path, "relu.cu", RELU_CU, spec=spec)
    t0 = time.time()
    rc, out = cli(capsys, "test", src)
    assert rc == 2 and ids(out)[0] == code, out
    assert time.time() - t0 < 20                       # refused up front, not after a build and a run
    for w in words:
        assert w in out, (w, out)


def test_bang_task_dimensions_are_checked(tmp_path):
    from xpiler.spec import load_spec
    p = tmp_path / "k.mlu.toml"
    base = ('entry = "k"\ndialect = "bang"\n[sizes]\nn = 8\n[launch]\ndim = [{d}, 1, 1]\nfunc_type = "{ft}"\n'
            '[[args]]\nname = "y"\ndtype = "float32"\nshape = ["n"]\nrole = "out"\n')
    p.write_text(base.format(d=4, ft="union1"))
    load_spec(p)                                        # 4 tasks: one cluster, fine
    for d, ft, word in ((100000, "block", "taskDim <= 65536"), (6, "union1", "multiple of 4")):
        p.write_text(base.format(d=d, ft=ft))
        with pytest.raises(XPError) as ei:
            load_spec(p)
        assert ei.value.code == "XP1031" and word in str(ei.value) and "instance 'base'" in str(ei.value)


# -- 6. AddressSanitizer reports are told apart ----------------------------------------------------
NULL_REPORT = """\
==1==ERROR: AddressSanitizer: SEGV on unknown address 0x00000000000c (pc 0x1 bp 0x2 sp 0x3 T0)
==1==The signal is caused by a WRITE memory access.
==1==Hint: address points to the zero page.
    #0 0x1 in relu /cache/build/abc/relu.c:8
SUMMARY: AddressSanitizer: SEGV /cache/build/abc/relu.c:8 in relu
"""
WILD_REPORT = NULL_REPORT.replace("0x00000000000c", "0x7f0012345678").replace(
    "==1==Hint: address points to the zero page.\n", "")
OOB_REPORT = """\
==2==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x603000000054 at pc 0x1 bp 0x2 sp 0x3
READ of size 4 at 0x603000000054 thread T0
    #0 0x1 in relu /cache/build/abc/relu.c:4
SUMMARY: AddressSanitizer: heap-buffer-overflow /cache/build/abc/relu.c:4 in relu
"""
UAF_REPORT = OOB_REPORT.replace("heap-buffer-overflow", "heap-use-after-free")
STACK_REPORT = "==3==ERROR: AddressSanitizer: stack-overflow on address 0x7ffd (pc 0x1 bp 0x2 sp 0x3 T0)\n"


@pytest.mark.parametrize("report,kind,code", [(NULL_REPORT, "null", "XP2113"), (WILD_REPORT, "wild", "XP2114"),
                                              (OOB_REPORT, "out-of-bounds", "XP2105"),
                                              (UAF_REPORT, "lifetime", "XP2115"), (STACK_REPORT, "other", "XP2116")])
def test_asan_reports_are_classified(report, kind, code):
    from xpiler.sandbox import RunOutcome, classify_asan
    from xpiler.spec import parse_spec
    from xpiler.verify.tester import _failure_from_outcome
    rep = classify_asan(report)
    assert rep.kind == kind
    inst = parse_spec(SPEC_C).instances()[0]
    f = _failure_from_outcome(RunOutcome(98, "", report, reason="asan"), inst, 0, 10.0, 4096)
    assert f.code == code and code in TABLE
    if kind in ("null", "out-of-bounds"):
        assert "relu.c:" in f.message and ("write" in f.message or "read" in f.message)
    assert ("out-of-bounds" in f.message) == (kind == "out-of-bounds")


def test_null_write_under_asan_is_not_called_out_of_bounds(tmp_path, capsys):
    # a pointer the compiler cannot prove null (a global), written after the loop
    src = kernel(tmp_path, "relu.c", "float* volatile target_ptr;\n" + RELU_C.rstrip()[:-1]
                 + "    target_ptr[3] = y[0];\n}\n")
    rc, out = cli(capsys, "test", src, "--seeds", "1")
    assert rc == 3, out
    assert "XP2113: null pointer dereference found by AddressSanitizer" in out and "out-of-bounds" not in out
    assert "relu.c:8" in out


# -- 7. --resume with a log of another migration says what differs ---------------------------------
def _fake_log(path: Path, source_text: str, target: str) -> Path:
    path.write_text('{"type": "header", "schema": 1, "tool": "xpiler", "source_sha256": "%s", "target": "%s"}\n'
                    % (sha256_text(source_text), target))
    return path


def test_resume_of_another_target_or_source_names_the_difference(tmp_path, capsys):
    src = kernel(tmp_path, "relu.c", RELU_C)
    log = _fake_log(tmp_path / "cuda_run.jsonl", RELU_C, "cuda")
    rc, out = cli(capsys, "migrate", src, "--to", "hip", "-o", tmp_path / "out", "--resume", log)
    assert rc == 2 and ids(out)[0] == "XP4006", out
    assert "the log migrates to 'cuda', this run to 'hip'" in out
    other = _fake_log(tmp_path / "other_src.jsonl", RELU_C + "// another version\n", "hip")
    rc, out = cli(capsys, "migrate", src, "--to", "hip", "-o", tmp_path / "out2", "--resume", other)
    assert rc == 2 and ids(out)[0] == "XP4006", out
    want, got = sha256_text(RELU_C + "// another version\n")[:16], sha256_text(RELU_C)[:16]
    assert want in out and got in out and want != got
    assert "migrates to" not in out                  # the targets agree: only the sources are named


# -- 8. every LLM verdict the code can log is documented (docs/llm.md is generated) ----------------
def test_llm_verdicts_are_one_table_and_documented():
    import inspect

    from xpiler.llm import base
    from xpiler.llm.events import ERROR_VERDICTS, VERDICTS, verdicts_markdown
    doc = (ROOT / "docs/llm.md").read_text()
    m = re.search(r"<!-- verdicts: generated -->\n(.*?)<!-- /verdicts -->", doc, re.S)
    assert m and m.group(1) == verdicts_markdown(), "docs/llm.md is stale: python -m xpiler.llm.events"
    kinds = {c.kind for _, c in inspect.getmembers(base, inspect.isclass) if issubclass(c, base.LLMError)}
    assert kinds <= set(ERROR_VERDICTS) and set(ERROR_VERDICTS.values()) <= set(VERDICTS)
    src = (ROOT / "xpiler/proposers/llm_proposer.py").read_text()
    literal = set(re.findall(r'"((?:passed|failed_test|candidate|rejected_\w+|error_\w+))"', src))
    assert literal and literal <= set(VERDICTS), literal - set(VERDICTS)


@pytest.mark.parametrize("exc,verdict", [("http", "error_http"), ("other", "error")])
def test_failed_llm_calls_log_documented_verdicts(exc, verdict):
    import sys
    sys.path.insert(0, str(ROOT / "tests" / "llm_fixtures"))
    from helpers import RELU_SRC, relu_context

    from xpiler.llm.base import BackendHTTPError
    from xpiler.llm.events import VERDICTS
    from xpiler.proposers.llm_proposer import LLMProposer

    class Failing:
        name, model = "failing", "m"

        def complete(self, messages, *, max_tokens=2048, seed=0):
            raise BackendHTTPError("503 from the endpoint", status=503) if exc == "http" else RuntimeError("boom")

    events = []
    assert LLMProposer(Failing(), retrieve=False, log=events.append).propose("split", RELU_SRC, "c",
                                                                             relu_context()) == []
    assert [e["verdict"] for e in events] == [verdict] and verdict in VERDICTS


# -- 9. a read-only output array is refused; a strided one is filled ------------------------------
def test_load_refuses_read_only_outputs_and_fills_strided_ones(tmp_path):
    k = xpiler.load(kernel(tmp_path, "relu.c", RELU_C))
    x = np.linspace(-3, 3, 37, dtype=np.float32)
    y = np.zeros(37, np.float32)
    y.setflags(write=False)
    with pytest.raises(XPError) as ei:
        k(x, y)
    assert ei.value.code == "XP1206" and "'y'" in ei.value.message and "read-only" in ei.value.message
    backing = np.full(74, -1.0, np.float32)
    strided = backing[::2]                               # not contiguous: reshape(-1) would be a copy
    k(x, strided)
    assert np.array_equal(strided, np.maximum(x, 0)) and np.all(backing[1::2] == -1.0)
