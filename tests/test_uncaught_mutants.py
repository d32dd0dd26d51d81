"""Mutants the default test used to let through (issue 14, "uncaught mutants"), the derived
instances that now catch them (xpiler/verify/boundaries.py: scans past 2**14, branch targets),
and the classifier of benchmarks/uncaught_mutants.py."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import uncaught_mutants as U  # noqa: E402
from xpiler.api import test as xtest  # noqa: E402
from xpiler.spec import load_spec  # noqa: E402
from xpiler.verify.boundaries import derive_for_files  # noqa: E402
from xpiler.verify.tester import compare_kernels  # noqa: E402

REF = '''import numpy as np


def add(a, b, n):
    return (np.asarray(a, dtype=np.float32).reshape(-1)[:n] + np.asarray(b, dtype=np.float32).reshape(-1)[:n]).astype(np.float32)


def scale(x, n):
    return (np.asarray(x, dtype=np.float32).reshape(-1)[:n] * np.float32(2.0)).astype(np.float32)
'''

SPEC_HEAD = '''dialect = "bang"

[sizes]
n = 4096

[[shapes]]
name = "odd"
n = 1237

[[shapes]]
name = "large"
n = 65536

[[shapes]]
name = "tiny"
n = 5

[launch]
dim = [4, 1, 1]
func_type = "union1"
'''

# the c -> bang migration of examples/add/add.c (benchmarks/repair_mutants.py plants its mutants
# in it); mutant add.c-bang-off-by-one_bound-0 makes the bound `n - 1`
ADD_MLU = '''#include <bang.h>

extern "C" __mlu_global__ void add(const float *a, const float *b, float *c, int n) {
    __nram__ float a_nram[8192];
    __nram__ float b_nram[8192];
    __nram__ float c_nram[8192];
    for (int i_c = taskId * 8192; i_c < n; i_c += taskDim * 8192) {
        int i_len = min(8192, n - i_c);
        __memcpy(a_nram, a + i_c, i_len * sizeof(float), GDRAM2NRAM);
        __memcpy(b_nram, b + i_c, i_len * sizeof(float), GDRAM2NRAM);
        __bang_add(c_nram, a_nram, b_nram, (i_len + 31) / 32 * 32);
        __memcpy(c + i_c, c_nram, i_len * sizeof(float), NRAM2GDRAM);
    }
}
'''

ADD_SPEC = 'entry = "add"\n' + SPEC_HEAD + '''
[[args]]
name = "a"
dtype = "float32"
shape = ["n"]
role = "in"

[[args]]
name = "b"
dtype = "float32"
shape = ["n"]
role = "in"

[[args]]
name = "c"
dtype = "float32"
shape = ["n"]
role = "out"

[[args]]
name = "n"
dtype = "int32"
role = "scalar"
value = "n"

[reference]
python = "ref.py:add"
'''

# an NRAM fast path for n <= 8192 and a scalar fallback no instance of the spec reaches (the
# shape of the migrated softmax/layernorm/gemv BANG kernels); the mutant strides the fallback by 2
SCALE_MLU = '''#include <bang.h>

extern "C" __mlu_global__ void scale(const float *x, float *y, int n) {
    __nram__ float buf[8192];
    if (n <= 8192) {
        if (taskId == 0) {
            __memcpy(buf, x, n * sizeof(float), GDRAM2NRAM);
            __bang_mul_scalar(buf, buf, 2.0f, (n + 31) / 32 * 32);
            __memcpy(y, buf, n * sizeof(float), NRAM2GDRAM);
        }
    } else {
        for (int i = taskId; i < n; i += taskDim) {
            y[i] = 2.0f * x[i];
        }
    }
}
'''

SCALE_SPEC = 'entry = "scale"\n' + SPEC_HEAD.replace("n = 65536", "n = 8000") + '''
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
python = "ref.py:scale"
'''


def _write(tmp_path: Path, name: str, text: str, spec: str) -> Path:
    (tmp_path / "ref.py").write_text(REF)
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    (tmp_path / (name + ".toml")).write_text(spec)
    return p


def _caught_only_by_derived(p: Path):
    spec = load_spec(str(p) + ".toml")
    # the spec's own instances (all the old derivation added for these kernels: nothing) pass it
    assert compare_kernels(p, spec, seeds=(0, 1, 2), jobs=1, derive_boundaries=False).verified
    v = xtest(p, str(p) + ".toml", seeds=(0, 1, 2), jobs=1, timeout=60)
    assert not v.verified
    assert v.failures[0].instance.startswith("boundary-")
    return v


def test_bang_sweep_bound_caught_past_old_scan_limit(tmp_path):
    """add.c-bang-off-by-one_bound-0: `i_c < n - 1` over sweeps of taskDim * 8192 = 32768 drops
    the last element only when n = 32768 k + 1; the scan stopped at 2**14 and derived nothing."""
    good = _write(tmp_path, "add.mlu", ADD_MLU, ADD_SPEC)
    ds = derive_for_files(good, load_spec(str(good) + ".toml"))
    assert [d.sizes for d in ds] == [{"n": 32769}]
    assert xtest(good, str(good) + ".toml", seeds=(0,), jobs=1, timeout=60).verified
    bad = _write(tmp_path, "add_bad.mlu", ADD_MLU.replace("i_c < n;", "i_c < n - 1;"), ADD_SPEC)
    v = _caught_only_by_derived(bad)
    assert v.failures[0].code == "XP2102"      # the element past the last whole sweep is unwritten


def test_bang_fallback_branch_gets_an_instance(tmp_path):
    """A branch every instance of the spec skips (the fallback past the NRAM buffer) is run on a
    derived instance; a wrong stride in it is caught."""
    good = _write(tmp_path, "scale.mlu", SCALE_MLU, SCALE_SPEC)
    ds = derive_for_files(good, load_spec(str(good) + ".toml"))
    assert [d.sizes for d in ds] == [{"n": 8193}]
    assert "is false here" in ds[0].reasons[0]
    assert xtest(good, str(good) + ".toml", seeds=(0,), jobs=1, timeout=60).verified
    bad = _write(tmp_path, "scale_bad.mlu", SCALE_MLU.replace("i += taskDim", "i += taskDim * 2"), SCALE_SPEC)
    _caught_only_by_derived(bad)


# ------------------------------------------------------------------------------ the classifier
def test_classify_outcomes():
    b = U.classify({}, ("s3", {"n": 33}, "XP2101", "wrong"), 10, None, None)
    assert b["class"] == "b" and b["exposed_by"]["sizes"] == {"n": 33}
    a = U.classify({"s1": "XP2101"}, None, 10, "writes only padding", None)
    assert a["class"] == "a" and a["label"] == "equivalent (argued)"
    assert a["reason"].startswith("not exposed by 9 instances") and "writes only padding" in a["reason"]
    p = U.classify({}, None, 10, "r", "Z3 unsat: ...")
    assert p["label"] == "equivalent (proven)"
    u = U.classify({}, None, 10, None, None)
    assert u["label"] == "unexplained"
    c = U.classify({}, None, 10, None, None, counterexample={"N": 524281})
    assert c["class"] == "b" and "not run" in c["label"]
    # a failure is class (b) even with a reason or a proof on file (the run wins)
    assert U.classify({}, ("base", {"n": 1}, "XP2102", "x"), 5, "r", "p")["class"] == "b"


def test_candidate_values_tiers_and_divisor():
    vals = dict(U.candidate_values(1, 1, [16], 100))
    assert vals[17] == 0 and vals[33] == 0 and vals[100] == 0       # one past 16 and 32; the cap
    assert vals[15] == 1 and vals[48] == 1 and vals[64] == 2     # x3 of a constant; a power of two
    assert all(1 <= v <= 100 for v in vals)
    even = dict(U.candidate_values(4, 4, [16], 100))
    assert all(v % 4 == 0 for v in even) and 20 in even and 17 not in even


def test_strong_sizes_valid_deterministic_and_past_the_sweep():
    spec = load_spec(ROOT / "examples" / "relu" / "relu.mlu.toml")
    text = (ROOT / "examples" / "relu" / "relu.mlu").read_text()
    s1 = U.strong_sizes(spec, (), [text], max_n=40)
    assert s1 == U.strong_sizes(spec, (), [text], max_n=40)
    assert 0 < len(s1) <= 40
    ns = {s["n"] for s in s1}
    assert 8193 in ns and 32769 in ns          # one past CHUNK and past taskDim * CHUNK
    for s in s1:
        spec.instance_with("x", s)             # every one is a valid instance


def test_grid_stride_check_proves_and_refutes():
    orig = "for (int i = (blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (gridDim.x * blockDim.x)) {"
    mut = "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x * 2) {"
    cover = SimpleNamespace(sizes={"n": 100}, args=[], launch={"grid": ["((n) + 255) / 256", 1, 1],
                                                               "block": [256, 1, 1]})
    assert "proven" in U.grid_stride_check(orig, mut, cover)
    clamp = SimpleNamespace(sizes={"n": 100}, args=[], launch={"grid": ["min(((n) + 255) / 256, 4)", 1, 1],
                                                               "block": [256, 1, 1]})
    r = U.grid_stride_check(orig, mut.replace("* 2", "+ 1"), clamp)
    assert r["counterexample"]["n"] > 1024      # past 4 blocks of 256 the grid no longer covers n
    assert U.grid_stride_check(orig, orig, cover) is None      # nothing changed: no claim


@pytest.mark.parametrize("name,idx", [("base", 0), ("s7", 7), ("boundary-1", None)])
def test_instance_names(name, idx):
    assert U.inst_index(name) == idx
    if idx is not None:
        assert U.inst_name(idx) == name


def test_expr_and_range_checks():
    assert U.expr_check("cols > 0", "cols >= 0", {}, ("cols",))            # cols >= 1 on a valid instance
    assert U.expr_check("cols > 0", "cols >= 0", {}, (), ("cols",)) is None  # not for any integer
    assert U.expr_check("K <= 32768", "K <= 32767", {}, ("K",)) is None     # they differ at K = 32768
    assert U.expr_check("r_pad <= 16384", "r_pad < 16385", {"r_pad": "(cols + 31) / 32 * 32"}, ("cols",))
    assert U.expr_check("a < r ? a : r", "a <= r ? a : r", {}, (), ("a", "r"))
    assert U.range_check(0, 16, 15, 4, 4) and U.range_check(0, 16, 17, 4, 4) is None
    for args in U.EXPR_PROOFS.values():      # every proof on file still holds
        assert U.expr_check(*args)
    for args in U.RANGE_PROOFS.values():
        assert U.range_check(*args)


def test_defect_reasons_are_not_counted_equivalent():
    r = U.classify({}, None, 5, "defect: uninitialised read", None)
    assert r["class"] == "b" and "argued" in r["label"]
    import re
    keys = list(U.REASONS) + list(U.EXPR_PROOFS) + list(U.RANGE_PROOFS) + list(U.EXTRA_SIZES)
    assert all(re.fullmatch(r"[a-z0-9_]+\.(c|cu|hip|mlu)-(c|cuda|hip|bang)-[a-z_-]+-\d+", k) for k in keys)


def test_finalize_keeps_run_exposures():
    ms = [{"id": "m1", "output": __file__, "text": "", "spec": str(ROOT / "examples/relu/relu.mlu.toml")}]
    exposed = {"id": "m1", "kind": "k", "class": "b", "label": "missed bug",
               "exposed_by": {"instance": "s3", "sizes": {"n": 3}}}
    assert U.finalize([exposed], ms) == [exposed]
    passed = {"id": "m1", "kind": "k", "class": "a", "label": "unexplained", "strong_instances": 7}
    out = U.finalize([passed], ms)[0]
    assert out["label"] == "unexplained" and "not exposed by 7 instances" in out["reason"]


# ------------------------------------------------------------------------------ claims checked over the text
VSPLIT = '''void add(const float *a, const float *b, float *c, int n) {
    {
        const int i_end = n > 0 ? n / 16 * 16 : 0;
        #pragma omp parallel for
        for (int i = 0; i < i_end; i += 16) {
            _mm512_storeu_ps(&c[i], _mm512_add_ps(_mm512_loadu_ps(&a[i]), _mm512_loadu_ps(&b[i])));
        }
        if (i_end < n) {
            const int i = i_end;
            __mmask16 tail_mask = (__mmask16)((1u << (n - i)) - 1u);
            _mm512_mask_storeu_ps(&c[i], tail_mask, _mm512_add_ps(_mm512_maskz_loadu_ps(tail_mask, &a[i]), _mm512_maskz_loadu_ps(tail_mask, &b[i])));
        }
    }
}
'''
VSPEC = SimpleNamespace(sizes={"n": 100}, args=[SimpleNamespace(role="scalar", name="n", value="n")])


def test_vector_split_check_proves_and_refutes():
    # the tail guard `<=` adds a tail of 0 lanes (mask 0) when 16 | n: the same lanes
    assert U.vector_split_check(VSPLIT, VSPLIT.replace("if (i_end < n)", "if (i_end <= n)"), VSPEC)
    # a split of 0: the tail would need n lanes, more than 16 for n > 16
    assert U.vector_split_check(VSPLIT, VSPLIT.replace("n / 16 * 16 : 0", "n % 16 * 16 : 0"), VSPEC) is None
    # a tail guard that skips the last lane group
    assert U.vector_split_check(VSPLIT, VSPLIT.replace("if (i_end < n)", "if (i_end < n - 1)"), VSPEC) is None
    # a split point one group short: the tail would need 16..31 lanes
    assert U.vector_split_check(VSPLIT, VSPLIT.replace("n / 16 * 16 : 0", "n / 16 * 16 - 16 : 0"), VSPEC) is None
    # a constant split of 16 lanes done by the tail instead of the vector loop: the same lanes
    const = VSPLIT.replace("n > 0 ? n / 16 * 16 : 0", "16 > 0 ? 16 / 16 * 16 : 0").replace("(i_end < n)", "(i_end < 16)") \
        .replace("(1u << (n - i))", "(1u << (16 - i))")
    assert U.vector_split_check(const, const.replace("16 / 16 * 16", "16 % 16 * 16"), VSPEC)
    # a tail that is not the loop body masked (another operation) is not claimed
    other = VSPLIT.replace("_mm512_add_ps(_mm512_maskz", "_mm512_sub_ps(_mm512_maskz")
    assert U.vector_split_check(other, other.replace("if (i_end < n)", "if (i_end <= n)"), VSPEC) is None


def test_claims_on_file_hold_and_false_ones_fail():
    for args in U.DIFF_PROOFS.values():
        assert U.diff_check(*args)
    for args in U.SHUFFLE_PROOFS.values():
        assert U.shuffle_check(*args)
    for args in U.DEAD_COPY_PROOFS.values():
        assert U.dead_copy_check(*args)
    relu = U.DIFF_PROOFS["relu.c-bang-off-by-one_bound-0"]
    # a bound two past n adds the trip i_c = n + 1, where i_len = -1: not empty
    assert U.diff_check(relu[0], "i_c < n + 2", *relu[2:]) is None
    gemm = U.DIFF_PROOFS["gemm.c-cuda-off-by-one_bound-1"]
    # a bound one short drops the trip at K - 1 (K = 16 j + 1), where the loads are not all off
    assert U.diff_check(gemm[0], "xp_k0 < K - 1", *gemm[2:]) is None
    stmts, k, _, *rest = U.SHUFFLE_PROOFS["gemv.hip-c-off-by-one_guard-1"]
    # `< 63`: lane 31 at offset 32 reads itself instead of lane 63, and lane 0 needs it
    assert U.shuffle_check(stmts, k, stmts[k].replace("< 64", "< 63"), *rest) is None


def test_claims_are_tied_to_the_text():
    text = VSPLIT
    relu = U.DIFF_PROOFS["relu.c-bang-off-by-one_bound-0"]
    # the claim holds, but this text is not the kernel it is about
    assert U.diff_check(*relu, orig_text=text, mut_text=text.replace("i_end < n", "i_end <= n")) is None
    mlu = '''extern "C" __mlu_global__ void relu(const float *x, float *y, int n) {
    for (int i_c = taskId * 8192; i_c < n; i_c += taskDim * 8192) {
        int i_len = min(8192, n - i_c);
        __memcpy(x_nram, x + i_c, i_len * sizeof(float), GDRAM2NRAM);
        __bang_active_relu(y_nram, x_nram, (i_len + 31) / 32 * 32);
        __memcpy(y + i_c, y_nram, i_len * sizeof(float), NRAM2GDRAM);
    }
}
'''
    mut = mlu.replace("i_c < n;", "i_c < n + 1;")
    assert U.diff_check(*relu, orig_text=mlu, mut_text=mut)
    # one statement more in the block: not the block the claim is about
    extra = mlu.replace("        __bang_active_relu", "        y_nram[0] = 1.0f;\n        __bang_active_relu")
    assert U.diff_check(*relu, orig_text=extra, mut_text=extra.replace("i_c < n;", "i_c < n + 1;")) is None


# ---- tenth session (2026-12-05): reduction vector splits, guards past the mask's bound, range
# claims tied to the text, lane-0 flag arrays
VRED = """void dot(const float *a, const float *x, float *y, int K) {
    float sum_acc = 0.0f;
    {
        const int k_end = K > 0 ? K / 16 * 16 : 0;
        __m512 sum_acc_acc = _mm512_setzero_ps();
        for (int k = 0; k < k_end; k += 16) {
            sum_acc_acc = _mm512_add_ps(sum_acc_acc, _mm512_mul_ps(_mm512_loadu_ps(&a[k]), _mm512_loadu_ps(&x[k])));
        }
        if (k_end < K) {
            const int k = k_end;
            __mmask16 tail_mask = (__mmask16)((1u << (K - k)) - 1u);
            sum_acc_acc = _mm512_mask_add_ps(sum_acc_acc, tail_mask, sum_acc_acc, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail_mask, &a[k]), _mm512_maskz_loadu_ps(tail_mask, &x[k])));
        }
        if (0 < K) {
            sum_acc += _mm512_reduce_add_ps(sum_acc_acc);
        }
    }
    y[0] = sum_acc;
}
"""


def test_vector_split_check_reduction_form():
    spec = SimpleNamespace(sizes={"K": 100}, args=[SimpleNamespace(name="K", role="scalar", value="K")])
    assert U.vector_split_check(VRED, VRED.replace("if (k_end < K)", "if (k_end <= K)"), spec)
    assert U.vector_split_check(VRED, VRED.replace("K > 0 ? K / 16", "K >= 0 ? K / 16"), spec)
    # a guard past the mask's bound runs the tail with 0 lanes when 16 | K: the same lanes
    assert U.vector_split_check(VRED, VRED.replace("if (k_end < K)", "if (k_end < K + 1)"), spec)
    # ... but one that skips a non-empty tail is a bug
    assert U.vector_split_check(VRED, VRED.replace("if (k_end < K)", "if (k_end < K - 1)"), spec) is None
    assert U.vector_split_check(VRED, VRED.replace("K / 16 * 16 : 0", "K % 16 * 16 : 0"), spec) is None
    # a masked op whose kept lanes are not the accumulator's is not the loop body masked
    other = VRED.replace("_mm512_mask_add_ps(sum_acc_acc, tail_mask, sum_acc_acc,",
                         "_mm512_mask_add_ps(sum_acc_acc, tail_mask, _mm512_setzero_ps(),")
    assert U.vector_split_check(other, other.replace("if (k_end < K)", "if (k_end <= K)"), spec) is None


def test_range_claims_are_tied_to_the_loop():
    loop = "void f(float *y) {\n    for (int xp_kk = 0; xp_kk < 16; xp_kk += 4) {\n        y[xp_kk] = 1.0f;\n    }\n}\n"
    mut = loop.replace("xp_kk < 16", "xp_kk < 15")
    assert U.range_check(0, 16, 15, 4, 4, orig_text=loop, mut_text=mut)
    # the claim on file for an ID whose output now has another loop there (a stale claim: the
    # ninth session discarded `c_1 < c_1_end + 1` of softmax.cu -> c and `xg_ip += 6 * 2` of
    # gemm.cu -> c with such claims) proves nothing
    other = loop.replace("xp_kk < 16; xp_kk += 4", "c_1 < c_1_end; c_1 += 16")
    assert U.range_check(0, 16, 15, 4, 4, orig_text=other, mut_text=other.replace("c_1_end;", "c_1_end + 1;")) is None
    assert U.guarded_range_check((128, 64), 0, 256, 255, 1, 1, orig_text=loop, mut_text=mut) is None


GEMV_BLOCK = """void gemv(const float *A, const float *x, float *y, int M, int K) {
    for (int bx = 0; bx < (M + 4 - 1) / 4; ++bx) {
        float sum_row[4];
        unsigned char done[256];
        for (int t = 0; t < 256; ++t) {
            done[t] = 0;
        }
        for (int ty = 0; ty < 4; ++ty) {
            for (int lane = 0; lane < 64; ++lane) {
                const int row = bx * 4 + ty;
                if (row >= M) {
                    done[ty * 64 + lane] = 1;
                    continue;
                }
            }
            const int row = bx * 4 + ty;
            if (row >= M) {
                continue;
            }
            sum_row[ty] = A[row * K] * x[0];
        }
        for (int ty = 0; ty < 4; ++ty) {
            for (int lane = 0; lane < 64; ++lane) {
                if (!done[ty * 64 + lane]) {
                    const int row = bx * 4 + ty;
                    if (lane == 0) {
                        y[row] = sum_row[ty];
                    }
                }
            }
        }
    }
}
"""


def test_flag_check_proves_lane0_mutants_and_refutes_bugs():
    claim = U.FLAG_PROOFS["gemv.hip-c-off-by-one_bound-0"]
    ok = [GEMV_BLOCK.replace("lane < 64; ++lane) {\n                const", "lane < 63; ++lane) {\n                const"),
          GEMV_BLOCK.replace("done[ty * 64 + lane] = 1;", "done[63 * ty + lane] = 1;"),
          GEMV_BLOCK.replace("lane < 64; ++lane) {\n                if (!", "lane < 64; lane += 1 * 2) {\n                if (!")]
    for mut in ok:
        assert mut != GEMV_BLOCK
        assert U.flag_check(*claim, orig_text=GEMV_BLOCK, mut_text=mut), mut
    bad = [GEMV_BLOCK.replace("if (lane == 0) {", "if (lane <= 1) {"),            # two stores per row
           GEMV_BLOCK.replace("done[ty * 64 + lane] = 1;", "done[ty * 64 + lane + 1] = 1;"),   # lane 0 unflagged
           GEMV_BLOCK.replace("lane < 64; ++lane) {\n                if (!", "lane < 64; lane += 3) {\n                if (!")
           .replace("if (lane == 0)", "if (lane == 1)"),                         # two lines: not one change
           GEMV_BLOCK.replace("done[ty * 64 + lane] = 1;", "done[65 * ty + lane] = 1;")]  # flags row ty+1's lane 0
    for mut in bad:
        assert U.flag_check(*claim, orig_text=GEMV_BLOCK, mut_text=mut) is None, mut
