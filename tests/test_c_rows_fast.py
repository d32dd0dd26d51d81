"""Row kernels from BANG sources to c: the cycle operations' flat ``seg[i % m]`` loops become rows
of ``m`` (passes/modulo_split.py), so that tensorize vectorizes them (layernorm.mlu, rmsnorm.mlu
until 2026-12-06; they are now un-staged first and bring no cycle op to the step);
the split is exact for every n and m (compiled and run against the original loop here), refused
with its reason where it is not legal, and offered in the default plan bang -> c."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.migration.pipeline import plans
from xpiler.passes import modulo_split
from xpiler.passes.base import PassError
from xpiler.printers import print_program

from conftest import EXAMPLES, skip_without_simde

CYCLE = """
void cyc(float *dst, const float *src, const float *seg, int n, int m) {
    for (int i = 0; i < n; ++i) {
        dst[i] = src[i] * seg[i % m] + (float)i;
    }
}
"""


def _mods(prog):
    return [n for n in walk(prog) if isinstance(n, N.BinOp) and n.op == "%"]


def test_split_writes_rows_and_keeps_the_loop_for_m_not_positive():
    p = parse_text(CYCLE, "c")
    r = modulo_split.apply(p)
    text = print_program(r, "c")
    assert "if (m > 0)" in text and "n / m" in text
    # the only '%' left is in the original loop of the else branch
    top = r.func("cyc").body.stmts[0]
    assert isinstance(top, N.If) and not _mods(top.then) and len(_mods(top.else_)) == 1


# compound bound and modulus (printed with their parentheses), i / m kept as written
CYCLE2 = """
void cyc(float *dst, const float *src, const float *seg, int n, int m) {
    for (int i = 0; i < n - 1; ++i) {
        dst[i] = src[i] * seg[i % (m + 1)] + (float)(i / (m + 1));
    }
}
"""


@pytest.mark.parametrize("source", [CYCLE, CYCLE2])
def test_split_runs_like_the_original_loop(tmp_path, source):
    """Both functions compiled into one program and run over n in [-3, 70], m in [1, 17] (every
    quotient / remainder shape: n < m, n a multiple of m, a partial last row, n <= 0)."""
    new = print_program(modulo_split.apply(parse_text(source, "c")), "c").replace("void cyc(", "void cyc_new(")
    main = source + new + r"""
#include <stdio.h>
int main(void) {
    float src[80], seg[20], a[80], b[80];
    for (int k = 0; k < 80; ++k) src[k] = 0.25f * (float)k - 3.0f;
    for (int k = 0; k < 20; ++k) seg[k] = 1.5f + (float)k;
    for (int n = -3; n <= 70; ++n)
        for (int m = 1; m <= 17; ++m) {
            for (int k = 0; k < 80; ++k) a[k] = b[k] = -7.0f;
            cyc(a, src, seg, n, m);
            cyc_new(b, src, seg, n, m);
            for (int k = 0; k < 80; ++k)
                if (a[k] != b[k]) { printf("n=%d m=%d k=%d %g %g\n", n, m, k, a[k], b[k]); return 1; }
        }
    printf("ok\n");
    return 0;
}
"""
    c = tmp_path / "t.c"
    c.write_text(main)
    exe = tmp_path / "t"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(c)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout


@pytest.mark.parametrize("body,why", [
    ("m = m + 1; dst[i] = seg[i % m];", "assigns"),                  # modulus changes in the loop
    ("n = n - 1; dst[i] = seg[i % m];", "assigns"),                  # bound changes in the loop
    ("if (src[i] > 0.0f) break; dst[i] = seg[i % m];", "breaks"),    # exit would bind to the inner loop
    ("dst[i] = seg[i % (int)src[0]];", "reads memory"),              # modulus read from memory
    ("dst[i] = seg[i % (m + i)];", "names the loop variable"),      # no fixed row length
])
def test_refusals_name_their_reason(body, why):
    text = f"void f(float *dst, const float *src, const float *seg, int n, int m) {{\n" \
           f"    for (int i = 0; i < n; ++i) {{ {body} }}\n}}\n"
    with pytest.raises(PassError) as e:
        modulo_split.apply(parse_text(text, "c"))
    assert e.value.code == "XP4001" and why in e.value.why and "'i'" in e.value.why


def test_no_modulo_loop_does_not_apply():
    text = "void f(float *d, int n) { for (int i = 0; i < n; ++i) d[i] = 0.0f; }\n"
    with pytest.raises(PassError) as e:
        modulo_split.apply(parse_text(text, "c"))
    assert e.value.code == "XP4002"


def test_loop_not_from_zero_is_refused():
    text = "void f(float *d, const float *s, int n, int m) { for (int i = 1; i < n; ++i) d[i] = s[i % m]; }\n"
    with pytest.raises(PassError) as e:
        modulo_split.apply(parse_text(text, "c"))
    assert e.value.code == "XP4001" and "does not run 0" in e.value.why


def test_default_plan_bang_to_c_offers_the_step():
    assert any(("modulo_split", {}) in plan for plan in plans("bang", "c"))


def _events(r):
    return [json.loads(x) for x in r.log_path.read_text().splitlines()]


@pytest.mark.parametrize("src,seg,sums", [("layernorm/layernorm.mlu", ("gamma", "beta"), 2),
                                          pytest.param("rmsnorm/rmsnorm.mlu", ("gamma",), 1, marks=pytest.mark.long)])
def test_default_migration_unstages_the_rows(tmp_path, src, seg, sums):
    # since 2026-12-06 the rows are un-staged before the staged plan that modulo_split serves
    # (tests/test_c_rows_unstaged.py): no NRAM block, no cycle op left to split
    from xpiler.api import migrate
    r = migrate(EXAMPLES / src, to="c", outdir=tmp_path / "o", perf=False)
    assert r.verified
    ran = {e["name"]: e["applied"] for e in _events(r) if e["type"] == "pass"}
    assert ran.get("unstage_rows") and "modulo_split" not in ran
    assert "x_buf" not in r.code and "% padded" not in r.code
    for buf in seg:
        # the row of gamma / beta is read from memory with contiguous vector loads
        assert f"_mm512_loadu_ps(&{buf}[" in r.code
    # every row sum vectorized (layernorm: the mean and the centred variance)
    assert r.code.count("_mm512_reduce_add_ps(") == sums
    if os.environ.get("XPILER_C_SUBSTRATE") != "simde":
        # the same output also verifies under SIMDe (emu:simde-cpu)
        skip_without_simde()
        out = subprocess.run([sys.executable, "-m", "xpiler", "test", str(r.output_path), "--spec", str(r.spec_path),
                              "--json", "--no-asan"], capture_output=True, text=True,
                             env={**os.environ, "XPILER_C_SUBSTRATE": "simde"})
        got = json.loads(out.stdout)
        assert got["verified"] and got["substrate"] == "emu:simde-cpu", out.stdout[-2000:]


# ----------------------------------------------------------------- argmax_value (softmax.mlu)
ARGMAX = """
void am(const float *src, float *out, int n) {
    float red_buf[32];
    {
        int best = 0;
        float bv = (float)src[0];
        for (int i = 1; i < n; ++i) {
            const float x = (float)src[i];
            if (x OP bv) {
                bv = x;
                best = i;
            }
        }
        red_buf[0] = bv;
        red_buf[1] = (float)best;
    }
    out[0] = red_buf[0];
}
"""

ROWS = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
static float rows[][40] = {
    {NAN, 1.0f, 2.0f, 3.0f},                      /* NaN first: stays */
    {1.0f, NAN, 5.0f, NAN, -2.0f},                /* NaN inside: dropped */
    {0.0f, -0.0f, -1.0f},                         /* +0 first */
    {-0.0f, 0.0f, -3.0f, 0.0f},                   /* -0 first: the search keeps -0 */
    {-5.0f, -0.0f, 0.0f, -7.0f, -0.0f, -1.0f, -2.0f, -3.0f, -4.0f, -5.0f, -6.0f, -7.0f, -8.0f, -9.0f,
     -10.0f, -11.0f, -12.0f, -13.0f, 0.0f},       /* zeros across a 16-lane block */
    {-INFINITY, -INFINITY},
    {3.0f, 1.0f, 7.5f, -2.0f, 7.5f, 1e30f, -1e30f, 2.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f,
     11.0f, 12.0f, 13.0f, 14.0f, 15.0f, 16.0f, 17.0f, 1e30f, 0.5f},
    {2.0f},
};
static int lens[] = {4, 5, 3, 4, 19, 2, 24, 1};
int main(void) {
    for (int r = 0; r < (int)(sizeof(lens) / sizeof(lens[0])); ++r)
        for (int n = 1; n <= lens[r]; ++n) {
            float a = 1.0f, b = 2.0f;
            am(rows[r], &a, n);
            am_new(rows[r], &b, n);
            if (memcmp(&a, &b, sizeof a) != 0) { printf("row %d n %d: %g %g\n", r, n, a, b); return 1; }
        }
    printf("ok\n");
    return 0;
}
"""


@pytest.mark.parametrize("op", [">", "<"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_argmax_value_gives_the_searched_value_bit_for_bit(tmp_path, op, vectorize):
    """NaN first / inside, +0 and -0 in either order (also across a 16-lane block), -inf, ties:
    the fold (and its AVX-512 form after tensorize) returns the same bits as the search."""
    from xpiler.passes import argmax_value, tensorize
    src = ARGMAX.replace("OP", op)
    new = argmax_value.apply(parse_text(src, "c"))
    assert ("fmaxf" if op == ">" else "fminf") in print_program(new, "c")
    if vectorize:
        new = tensorize.apply(new, entry="am", target="c")
        assert "_mm512_reduce_m" in print_program(new, "c")
    text = print_program(new, "c").replace("void am(", "void am_new(")
    c = tmp_path / "t.c"
    c.write_text("#include <immintrin.h>\n" + src + text + ROWS)
    exe = tmp_path / "t"
    # native AVX-512 where the CPU has it, else the platform's SIMD Everywhere wrapper (emu:simde-cpu)
    from xpiler.platforms.c import SIMDE_WRAPPER, CPlatform
    if CPlatform()._mode() == "native":
        arch = ["-march=native"]
    else:
        from conftest import skip_without_simde
        skip_without_simde()
        arch = [f"-I{SIMDE_WRAPPER}", "-mavx2", "-mfma"]
    subprocess.run(["gcc", "-O2", *arch, "-o", str(exe), str(c), "-lm"], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout


@pytest.mark.parametrize("change,why", [
    ("out[0] = red_buf[0];", "out[0] = red_buf[1];"),                  # the index is read
    ("float red_buf[32];", "float red_buf[32]; float *alias = red_buf;"),  # an alias may read it
])
def test_argmax_value_refuses_when_the_index_may_be_read(change, why):
    from xpiler.passes import argmax_value
    with pytest.raises(PassError) as e:
        argmax_value.apply(parse_text(ARGMAX.replace("OP", ">").replace(change, why), "c"))
    assert e.value.code == "XP4001" and "red_buf" in e.value.why


def test_argmax_value_refuses_a_parameter_destination():
    from xpiler.passes import argmax_value
    src = ARGMAX.replace("OP", ">").replace("float *out, int n) {\n    float red_buf[32];",
                                            "float *out, int n, float *red_buf) {")
    with pytest.raises(PassError) as e:
        argmax_value.apply(parse_text(src, "c"))
    assert e.value.code == "XP4001" and "not one local array" in e.value.why


def test_default_migration_folds_the_softmax_mlu_maximum(tmp_path):
    from xpiler.api import migrate
    r = migrate(EXAMPLES / "softmax" / "softmax.mlu", to="c", outdir=tmp_path / "o", perf=False)
    assert r.verified
    ran = [e for e in _events(r) if e["type"] == "pass" and e["name"] == "argmax_value"]
    assert ran and ran[0]["applied"]
    assert "_mm512_reduce_max_ps" in r.code
    skip_without_simde()
    out = subprocess.run([sys.executable, "-m", "xpiler", "test", str(r.output_path), "--spec", str(r.spec_path),
                          "--json", "--no-asan"], capture_output=True, text=True,
                         env={**os.environ, "XPILER_C_SUBSTRATE": "simde"})
    got = json.loads(out.stdout)
    assert got["verified"] and got["substrate"] == "emu:simde-cpu", out.stdout[-2000:]


def test_a_bound_loop_is_not_a_candidate():
    from dataclasses import replace
    p = parse_text("void f(float *d, const float *s, int n, int m) { for (int i = 0; i < n; ++i) d[i] = s[i % m]; }\n", "c")
    fn = p.func("f")
    lp = fn.body.stmts[0]
    bound = p.with_(items=tuple(fn.with_(body=fn.body.with_(stmts=(replace(lp, binding="omp"),))) if it is fn else it
                                for it in p.items))
    with pytest.raises(PassError) as e:
        modulo_split.apply(bound)
    assert e.value.code == "XP4002"
    with pytest.raises(PassError) as e:
        modulo_split.apply(bound, loop="i")
    assert e.value.code == "XP4001" and "bound to omp" in e.value.why


def test_an_unsigned_or_outside_declared_index_is_refused():
    for head in ("for (unsigned i = 0; i < n; ++i)", "int i; for (i = 0; i < n; ++i)"):
        text = f"void f(float *d, const float *s, int n, int m) {{ {head} d[i] = s[i % m]; }}\n"
        with pytest.raises(PassError) as e:
            modulo_split.apply(parse_text(text, "c"))
        assert e.value.code == "XP4001" and "signed int or long" in e.value.why
