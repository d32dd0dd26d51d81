"""int8 contractions to BANG's fixed-point ``__bang_matmul``, exact for every input
(passes/patterns/bang_matmul_i8.py, issue 15): A staged as ``a - 128``, K in chunks of 1024, each
chunk's float result converted back and summed modulo 2^32, ``128 * colsum(B)`` restored.

The spec's random inputs never bring a sum near 2^24, so the exactness tests run the migrated
kernel on inputs at the ends of the ranges, where a chunk's sum is 2^24 exactly and the whole sum
is past 2^26 (several chunks, the last one partial)."""
import tempfile
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache, tensorize
from xpiler.passes.base import PassError
from xpiler.printers import print_program

from test_pass_cache import ROOT, bind_first_loop, verify

SRC = ROOT / "examples" / "gemm" / "gemm_vnni.c"

PLAIN = """#include <stdint.h>
void gemm_vnni(const {TA} *A, const {TB} *B, int32_t *C, int M, int N, int K) {{
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {{
            {ACC} acc = 0;
            for (int k = 0; k < K; ++k) acc += {P};
            C[i * N + j] = (int32_t)acc;
        }}
}}
"""
OK = dict(TA="uint8_t", TB="int8_t", ACC="uint32_t", P="(uint32_t)((int32_t)A[i * K + k] * (int32_t)B[k * N + j])")


def staged(**change):
    p = parse_text(PLAIN.format(**{**OK, **change}), "c", "mm.c")
    return cache.apply(bind_first_loop(p, "gemm_vnni"), entry="gemm_vnni", target="bang")


def matmuls(prog):
    return [n for n in walk(prog.func("gemm_vnni")) if isinstance(n, N.Intrinsic) and n.name == "__bang_matmul"]


def test_arithmetic_of_the_form_z3():
    """a*b == (a-128)*b + 128*b modulo 2^32, (a-128) fits int8 and |(a-128)*b| <= 2^14, so 1024
    products sum to at most 2^24, an integer float holds exactly."""
    import z3
    a, b = z3.BitVec("a", 8), z3.BitVec("b", 8)
    a32, b32 = z3.ZeroExt(24, a), z3.SignExt(24, b)
    a8 = a - 128                                   # int8 bits of a - 128
    s = z3.Solver()
    s.add(z3.Not(z3.And(a32 * b32 == z3.SignExt(24, a8) * b32 + 128 * b32,
                        z3.SignExt(24, a8) == a32 - 128,
                        z3.SignExt(24, a8) * b32 <= 2 ** 14, z3.SignExt(24, a8) * b32 >= -(2 ** 14))))
    assert s.check() == z3.unsat
    assert 1024 * 2 ** 14 == 2 ** 24 and float(np.float32(2 ** 24)) == 2 ** 24


def test_staged_int8_rows_take_the_fixed_point_matmul_and_verify():
    q = staged()
    scopes = {n.name: n.scope for n in walk(q.func("gemm_vnni")) if isinstance(n, N.Decl) and n.scope in ("nram", "wram")}
    assert scopes["B_wram"] == "wram"              # the int8 rhs of the accumulated product
    r = tensorize.apply(q, entry="gemm_vnni", target="bang")
    mm = matmuls(r)
    assert len(mm) == 2 and all(len(c.args) == 7 for c in mm)      # rows, and the column sums
    text = print_program(r, "bang")
    assert "(int8_t)((int32_t)A_nram[" in text and "- 128)" in text and "xp_k0 += 1024" in text
    assert "128u * (uint32_t)(int32_t)B_wram_colsum[" in text
    v = verify(r, SRC, dialect="bang", launch={"dim": [4, 1, 1], "func_type": "block"})
    assert v.verified and v.substrate == "emu:bang-cpu" and v.max_abs_error == 0, v.failures[:1]
    # the chunk loop's derived instance (K one past a chunk) ran too
    assert any(i.startswith("boundary") for i in v.instances)


def test_signed_a_goes_in_unshifted():
    r = tensorize.apply(staged(TA="int8_t"), entry="gemm_vnni", target="bang")
    assert len(matmuls(r)) == 1
    text = print_program(r, "bang")
    assert "colsum" not in text and "- 128" not in text
    # verified against the plain loop itself on a spec with a signed A
    from xpiler.spec import load_spec, spec_to_toml
    from xpiler.verify.tester import compare_kernels
    d = Path(tempfile.mkdtemp(prefix="xp-i8mm-"))
    src = d / "mm.c"
    src.write_text(PLAIN.format(**{**OK, "TA": "int8_t"}))
    spec = SRC.with_name(SRC.name + ".toml").read_text().replace('dtype = "uint8"', 'dtype = "int8"') \
        .replace("range = [0, 255]", "range = [-128, 127]")
    spec = "\n".join(line for line in spec.splitlines() if not line.startswith(("[reference]", "python =")))
    (d / "mm.c.toml").write_text(spec)
    sp = load_spec(d / "mm.c.toml")
    cs = sp.with_dialect("bang", sp.entry, {"dim": [4, 1, 1], "func_type": "block"})
    (d / "cand.mlu").write_text(text)
    cs.path = d / "cand.mlu.toml"
    cs.path.write_text(spec_to_toml(cs))
    v = compare_kernels(d / "cand.mlu", cs, against=(src, sp))
    assert v.verified and v.max_abs_error == 0, v.failures[:1]


@pytest.mark.parametrize("change", [
    # an int16 operand: products up to 2^30, no int8 operand form
    dict(TB="int16_t"),
    # a uint8 rhs cannot be shifted inside WRAM
    dict(TA="int8_t", TB="uint8_t"),
    # a 64-bit accumulator: only 32-bit sums are matched (the form adds modulo 2^32)
    dict(ACC="int64_t"),
    # a sum of products of a row with itself is no matmul
    dict(P="(uint32_t)((int32_t)A[i * K + k] * (int32_t)A[i * K + k])"),
])
def test_other_integer_loops_are_refused(change):
    try:
        q = staged(**change)
    except PassError:
        return
    with pytest.raises(PassError) as e:
        tensorize.apply(q, entry="gemm_vnni", ops=["__bang_matmul"], target="bang")
    assert e.value.code == "XP4002"


# ------------------------------------------------------------------------------ the default plan
@pytest.fixture(scope="module")
def migrated():
    from xpiler.api import migrate
    out = Path(tempfile.mkdtemp(prefix="xp-i8mm-")) / "o"
    r = migrate(SRC, to="bang", outdir=out, perf=False)
    return r


def test_gemm_vnni_to_bang_reaches_the_fixed_point_matmul(migrated):
    assert migrated.verified
    code = migrated.code
    assert "__bang_matmul(C_nram_f, A_nram_i8, B_wram + xp_k0 * N, i_n, xp_kc, N, 0)" in code
    assert "__wram__ int8_t B_wram[" in code
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import idiom_check
    d = Path(tempfile.mkdtemp()) / "gemm_vnni.c__to__bang"
    d.mkdir()
    (d / "gemm_vnni.mlu").write_text(code)
    row = idiom_check.check_file(d / "gemm_vnni.mlu")
    assert idiom_check.requirement(row) == ("NRAM/WRAM + __bang_matmul/conv", True)


EXTREMES = [
    # A, B, K: (0 - 128) * -128 = 2^14 per product, so a full chunk of the shifted A sums to 2^24
    # exactly (and the column sums' correction takes it back)
    (0, -128, 2048 + 1000),
    # 255 * -128 per product: the whole sum is -K * 32640, past -2^26
    (255, -128, 2100),
    (255, 127, 1024 * 3),
    # a - 128 = 0: everything comes from the column sums, 128 * -128 * K
    (128, -128, 1500),
]


@pytest.mark.parametrize("av,bv,K", EXTREMES)
def test_exact_at_the_ends_of_the_ranges(migrated, av, bv, K):
    from xpiler.kernel import Kernel
    from xpiler.spec import load_spec
    out = Path(migrated.output_path)
    M, N_ = 6, 37
    text = Path(str(out) + ".toml").read_text() + f'\n[[shapes]]\nname = "ends"\nM = {M}\nN = {N_}\nK = {K}\n'
    sp_path = out.with_name("ends.mlu.toml")
    sp_path.write_text(text)
    sp = load_spec(sp_path)
    k = Kernel(out, sp)
    rng = np.random.default_rng(K)
    A = np.full((M, K), av, dtype=np.uint8)
    B = np.full((K, N_), bv, dtype=np.int8)
    # a few other values, so that rows and columns differ
    A[1, rng.integers(0, K, 50)] = rng.integers(0, 256, 50)
    B[rng.integers(0, K, 50), 2] = rng.integers(-128, 128, 50)
    got = k(A.copy(), B.copy(), np.zeros((M, N_), dtype=np.int32), M=M, N=N_, K=K)
    got = got[0] if isinstance(got, tuple) else got
    want = (A.astype(np.int64) @ B.astype(np.int64))
    assert av == 0 or np.abs(want).max() > 2 ** 24
    assert np.array_equal(np.asarray(got).reshape(M, N_).astype(np.int64), want.astype(np.int32).astype(np.int64))


def test_refused_when_the_scratch_does_not_fit_in_nram():
    q = staged()
    f = q.func("gemm_vnni")
    big = N.Decl("other_nram", N.Array(N.Scalar("int8"), (N.Const(300000, "int32", "300000"),)), scope="nram")
    nf = f.with_(body=f.body.with_(stmts=(big,) + f.body.stmts))
    q = q.with_(items=tuple(nf if it is f else it for it in q.items))
    with pytest.raises(PassError) as e:
        tensorize.apply(q, entry="gemm_vnni", target="bang")
    assert e.value.code == "XP4001" and "does not fit in NRAM" in e.value.why
