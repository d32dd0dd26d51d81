"""Expansion (scalar → per-iteration array) and its inverse, contraction: the rewrite, the
refusals (code + location), a round trip, and a run of the rewritten C against the original."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import contraction, expansion
from xpiler.passes.base import PassError
from xpiler.printers import print_program

KERNEL = """void f(const float *x, float *y, int n)
{
    for (int i = 2; i < n; i += 3) {
        float t = x[i] * 2.0f;
        int k = i / 3;
        y[k] = t + 1.0f;
    }
}
"""

MAIN = """
#include <stdio.h>
int main(void) {
    float x[40], y[40];
    for (int i = 0; i < 40; i++) { x[i] = (float)(i * 7 % 11) - 3.0f; y[i] = -1.0f; }
    f(x, y, 40);
    for (int i = 0; i < 40; i++) printf("%g\\n", y[i]);
    return 0;
}
"""


def prog(text=KERNEL):
    return parse_text(text, "c", "f.c")


def run_c(text: str, tmp_path: Path, tag: str) -> str:
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    src = tmp_path / f"{tag}.c"
    src.write_text(text + MAIN)
    exe = tmp_path / tag
    r = subprocess.run(["gcc", "-std=gnu11", "-O1", str(src), "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + text
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def test_expansion_rewrites_and_keeps_results(tmp_path):
    p = prog()
    new = expansion.apply(p, entry="f", loop="i", vars=["t"])
    text = print_program(new)
    assert "float t[(n - 2 + 2) / 3];" in text          # trip count of i = 2, 5, 8, ... < n
    assert "t[(i - 2) / 3] = x[i] * 2.0f;" in text
    assert "y[k] = t[(i - 2) / 3] + 1.0f;" in text
    assert "int k = i / 3;" in text                      # not chosen: stays a scalar
    assert run_c(text, tmp_path, "expanded") == run_c(print_program(p), tmp_path, "orig")


def test_expansion_defaults_to_every_body_local():
    new = expansion.apply(prog(), entry="f", loop="i")
    decls = {d.name: d for d in walk(new.func("f")) if isinstance(d, N.Decl)}
    assert isinstance(decls["t"].type, N.Array) and isinstance(decls["k"].type, N.Array)


def test_expansion_refusals():
    with pytest.raises(PassError) as ei:
        expansion.apply(prog(), entry="f", loop="j")
    assert ei.value.code == "XP4001" and "no canonical loop" in ei.value.why
    with pytest.raises(PassError) as ei:
        expansion.apply(prog(), entry="f", loop="i", vars=["y"])
    assert ei.value.code == "XP4001" and ei.value.line == 3
    twice = KERNEL.replace("int k = i / 3;", "int k = i / 3;\n        { float t = 1.0f; y[0] = t; }")
    with pytest.raises(PassError) as ei:
        expansion.apply(prog(twice), entry="f", loop="i", vars=["t"])
    assert "more than once" in ei.value.why and ei.value.line == 4
    with pytest.raises(PassError) as ei:
        expansion.apply(prog(), entry="f")
    assert ei.value.code == "XP4002"


def test_expansion_candidates():
    c = expansion.candidates(prog(), "c")
    assert c == [{"entry": "f", "loop": "i", "vars": ["t", "k"]}]


def test_contraction_inverts_expansion(tmp_path):
    p = prog()
    expanded = expansion.apply(p, entry="f", loop="i", vars=["t"])
    back = contraction.apply(expanded, entry="f", array="t")
    assert print_program(back) == print_program(p)
    assert contraction.candidates(expanded, "c") == [{"entry": "f", "array": "t"}]
    assert run_c(print_program(back), tmp_path, "back") == run_c(print_program(p), tmp_path, "orig")


CONTRACT = """void f(const float *x, float *y, int n)
{
    float t[64];
    for (int i = 0; i < n; i++) {
        t[i] = x[i] + 1.0f;
        y[i] = t[i] * t[i];
    }
}
"""


def _refuse_contract(text, code="XP4001"):
    with pytest.raises(PassError) as ei:
        contraction.apply(prog(text), entry="f", array="t")
    assert ei.value.code == code, ei.value.why
    return ei.value


def test_contraction_of_a_per_iteration_temporary():
    text = print_program(contraction.apply(prog(CONTRACT), entry="f", array="t"))
    assert "float t = x[i] + 1.0f;" in text and "y[i] = t * t;" in text and "t[" not in text


def test_contraction_refusals():
    # read at another iteration's index: a value flows between iterations
    e = _refuse_contract(CONTRACT.replace("y[i] = t[i] * t[i];", "y[i] = t[i] * (i > 0 ? t[i - 1] : 0.0f);"))
    assert "two different indices" in e.why and e.line == 6
    # first touch is a read
    e = _refuse_contract(CONTRACT.replace("t[i] = x[i] + 1.0f;", "t[i] += x[i];"))
    assert "unconditional store" in e.why and e.line == 5
    # conditional store
    e = _refuse_contract(CONTRACT.replace("t[i] = x[i] + 1.0f;", "if (x[i] > 0.0f) t[i] = x[i];"))
    assert "unconditional store" in e.why
    # used after the loop
    e = _refuse_contract(CONTRACT.replace("    }\n}", "    }\n    y[0] = t[0];\n}"))
    assert "two different indices" in e.why or "not all inside one loop" in e.why
    # the address escapes
    e = _refuse_contract(CONTRACT.replace("y[i] = t[i] * t[i];", "y[i] = *(t + i);"))
    assert "escapes" in e.why
    # not an array / missing
    _refuse_contract(CONTRACT.replace("float t[64];", "float t[64][2];"))
    with pytest.raises(PassError) as ei:
        contraction.apply(prog(CONTRACT), entry="f")
    assert ei.value.code == "XP4002"
