"""Defensive parsing of LLM answers and the per-pass meta-prompts (no model, no network)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "llm_fixtures"))
from helpers import RELU_SRC, SYMBOLIC_SPLIT, fixture, relu_context  # noqa: E402

from xpiler.proposers.prompts import (build_messages, load_template, loop_facts, prompts_dir, render,  # noqa: E402
                                      template_example, template_fields)
from xpiler.proposers.protocol import PASSES, PassContext  # noqa: E402
from xpiler.proposers.screen import (bracket_error, defined_functions, extract_code, pass_happened)  # noqa: E402


# ---- extraction ---------------------------------------------------------------------------------
def test_prefers_fenced_block_in_the_right_language():
    ans = ("First a sketch:\n```python\ndef relu(x): return max(x, 0)\n```\n"
           "```cuda\n__global__ void relu(const float* x, float* y, int n) { }\n```\n"
           "```c\nvoid relu(const float* x, float* y, int n) { y[0] = 0; }\n```\n")
    code, where = extract_code(ans, "c", "relu")
    assert where == "fenced" and code.startswith("void relu") and "__global__" not in code
    code, _ = extract_code(ans, "cuda", "relu")
    assert code.startswith("__global__")


def test_block_defining_the_entry_wins_over_a_helper_block():
    ans = "```c\nstatic float f(float v) { return v; }\n```\n```c\nvoid relu(float* y) { y[0] = 1; }\n```"
    assert extract_code(ans, "c", "relu")[0].startswith("void relu")


def test_whole_text_when_there_is_no_fence_and_unclosed_fence():
    code, where = extract_code("void relu(float* y, int n) { y[0] = 0; }", "c", "relu")
    assert where == "whole" and defined_functions(code) == ["relu"]
    code, where = extract_code("```c\nvoid relu(float* y) { y[0] = 0; }", "c", "relu")  # model stopped early
    assert where == "fenced" and "```" not in code and defined_functions(code) == ["relu"]


def test_defined_functions_ignores_calls_keywords_comments_and_macros():
    src = ("#define MAX(a,b) ((a)>(b)?(a):(b))\n/* void fake(int a) { } */\n"
           "__global__ void k(const float* x, float (*w)[4], int n) {\n if (n) { for (int i=0;i<n;i++) {} }\n"
           " while (n) { n--; }\n g(x);\n}\nstatic inline int h(int a) { return a; }\n")
    assert defined_functions(src) == ["k", "h"]


@pytest.mark.parametrize("src,bad", [
    ("void f() { int a[3]; }", None),
    ("void f() { g(\"}}}\"); /* { */ }", None),
    ("void f() { if (x) { }", "never closed"),
    ("void f() { a[1) ; }", "unbalanced"),
    ("void f() { /* never ends", "unterminated comment"),
    ("void f() { s = \"abc; }", "unterminated string"),
])
def test_bracket_checks(src, bad):
    err = bracket_error(src)
    assert (err is None) if bad is None else (err is not None and bad in err)


# ---- did the pass happen? -------------------------------------------------------------------------
def test_unchanged_program_is_rejected_for_every_pass():
    reformatted = RELU_SRC.replace("\n", "\n  ").replace("// relu.c", "// another comment")
    for p in PASSES:
        assert "unchanged" in pass_happened(p, RELU_SRC, reformatted, "c", "c")


def test_pass_signatures():
    split = extract_code(fixture("relu_split_correct.md"), "c", "relu")[0]
    assert pass_happened("split", RELU_SRC, split, "c", "c") is None
    assert pass_happened("split", RELU_SRC, SYMBOLIC_SPLIT, "c", "c") is None
    assert pass_happened("fuse", RELU_SRC, split, "c", "c") is not None          # more loops is not a fusion
    assert pass_happened("fuse", split, RELU_SRC.replace("v > 0.0f", "v >= 0.0f"), "c", "c") is None
    assert "omp" in pass_happened("binding", RELU_SRC, split, "c", "c")
    omp = split.replace("    for (int io", "    #pragma omp parallel for\n    for (int io", 1)
    assert pass_happened("binding", RELU_SRC, omp, "c", "c") is None
    assert pass_happened("tensorize", RELU_SRC, split, "c", "c") is not None
    vec = RELU_SRC.replace("float v = x[i];", "__m512 w = _mm512_loadu_ps(x + i); float v = x[i];")
    assert pass_happened("tensorize", RELU_SRC, vec, "c", "c") is None
    cuda = "__global__ void relu(const float* x, float* y, int n) { int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = x[i]; }"
    still = "void relu(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }"
    loops = ("void relu(const float* x, float* y, int n) { for (int b = 0; b < (n+255)/256; b++) "
             "for (int t = 0; t < 256; t++) { int i = b*256+t; if (i < n) y[i] = x[i]; } }")
    assert "remain" in pass_happened("loop_recovery", cuda, still, "cuda", "c")
    assert pass_happened("loop_recovery", cuda, loops, "cuda", "c") is None
    mm = "void f(float*c){ for (int i=0;i<4;i++) for (int j=0;j<4;j++) c[i*4+j]=0; }"
    assert pass_happened("reorder", mm, mm.replace("int i=0;i<4;i++) for (int j=0;j<4;j++)",
                                                    "int j=0;j<4;j++) for (int i=0;i<4;i++)"), "c", "c") is None
    assert pass_happened("reorder", mm, mm.replace("c[i*4+j]=0", "c[i*4+j]=1"), "c", "c") == "the loop order is unchanged"
    nram = "__mlu_global__ void relu(float* x, float* y, int n) { __nram__ float b[64]; __memcpy(b, x, 4, GDRAM2NRAM); }"
    assert pass_happened("cache", "__mlu_global__ void relu(float* x, float* y, int n) { y[0] = x[0]; }", nram,
                         "bang", "bang") is None
    assert pass_happened("detensorize", nram.replace("__memcpy", "__bang_add(b, b, b, 64); __memcpy"), nram,
                         "bang", "bang") is None


# ---- meta-prompts ---------------------------------------------------------------------------------
def test_eleven_templates_with_placeholders_and_one_example_each():
    d = prompts_dir()
    assert sorted(p.stem for p in d.glob("*.md")) == sorted(PASSES)
    bodies = set()
    for p in PASSES:
        t = load_template(p)
        assert {"facts", "excerpts", "program", "language", "params"} <= template_fields(t), p
        ex = template_example(t)
        assert ex and ex.count("```") >= 2, f"{p}: needs one worked example with code"
        assert "Purpose" in t and "Constraints" in t
        bodies.add(t.split("## Facts")[0])
    assert len(bodies) == len(PASSES), "every pass needs its own purpose and constraints"
    with pytest.raises(KeyError):
        load_template("vectorize_everything")


def test_render_touches_only_known_placeholders():
    out = render("x {program} { int a; } {unknown} {facts}", {"program": "P", "facts": "F"})
    assert out == "x P { int a; } {unknown} F"


def test_loop_facts_trip_counts():
    src = ("void f(int n, int m) { for (int i = 0; i < n; i++) {} for (int j = 2; j <= m; j += 4) {} "
           "for (k = 0; k < 8; ++k) {} }")
    facts = loop_facts(src)
    assert facts[0].endswith("trip count n")
    assert "trip count cdiv((m) + 1 - (2), 4)" in facts[1]
    assert facts[2].endswith("trip count 8")


def test_prompt_holds_facts_signatures_excerpts_example_and_program():
    ctx = relu_context(facts={"split bound": "factor 16 divides none of n=1237, 5"}, intrinsics=["_mm512_loadu_ps"])
    msgs = build_messages("tensorize", RELU_SRC, "c", ctx, [("c/avx512/fmadd", "FMA on 16 lanes.")])
    assert msgs[0]["role"] == "system" and msgs[1]["role"] == "user"
    u = msgs[1]["content"]
    assert "split bound: factor 16 divides none of n=1237, 5" in u
    assert "_mm512_loadu_ps: __m512 _mm512_loadu_ps(const void* p)" in u
    assert "_mm512_dpbusd_epi32" in u                              # tensorize: the target's units are listed
    assert "[c/avx512/fmadd]\nFMA on 16 lanes." in u
    assert "_mm512_mask_storeu_ps(y + i, m, r);" in u             # the template's worked example
    assert "y[i] = v > 0.0f ? v : 0.0f;" in u and "{program}" not in u and "<!--" not in u
    own = build_messages("tensorize", RELU_SRC, "c", PassContext(entry="relu", example="EXAMPLE-X"), [])
    assert "EXAMPLE-X" in own[1]["content"] and "_mm512_mask_storeu_ps(y + i" not in own[1]["content"]


def test_front_end_parses_candidates_and_ir_programs_are_accepted():
    fe = pytest.importorskip("xpiler.frontend")
    if not callable(getattr(fe, "parse_text", None)):
        pytest.skip("front end without parse_text")
    from xpiler.llm import Completion
    from xpiler.proposers.llm_proposer import LLMProposer

    class Two:
        name, model = "scripted", "s"

        def __init__(self, answers):
            self.answers = answers
            self.prompts = []

        def complete(self, messages, *, max_tokens=2048, seed=0):
            self.prompts.append(messages[-1]["content"])
            return Completion(self.answers.pop(0))

    # balanced brackets but not C: only the front end can tell
    broken = "```c\nvoid relu(const float* x, float* y, int n) { for (int i = 0; i < n; i++) { y[i] = ; } }\n```"
    b = Two([broken, fixture("relu_split_correct.md")])
    events = []
    ir = fe.parse_text(RELU_SRC, "c")
    cands = LLMProposer(b, retrieve=False, log=events.append).propose("split", ir, "c", relu_context())
    assert [e["verdict"] for e in events] == ["rejected_parse", "candidate"]
    assert "y[i] = v > 0.0f ? v : 0.0f;" in b.prompts[0]           # the IR program was printed into the prompt
    assert type(cands[0].meta["ir"]).__name__ == "Program" and "ir" not in cands[0].to_json()["meta"]
