"""cache + tensorize (BANG batched contraction): ``for t < batch*M { b = t / M; i = t % M; ... }``
stages per batch (rows of A_b in NRAM, B_b in WRAM) and becomes __bang_matmul; loops whose
flat index is used otherwise, or whose batch offset is not a fixed stride, are refused."""
import pytest

from xpiler.frontend import parse_text
from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache, tensorize
from xpiler.passes.base import PassError
from xpiler.passes.patterns import rows as R

from test_pass_cache import bind_first_loop, bound, verify


def test_bmm_c_stages_per_batch_and_uses_matmul():
    src, entry, p = bound("bmm")
    q = cache.apply(p, entry=entry, target="bang")
    f = q.func(entry)
    scopes = {n.name: n.scope for n in walk(f) if isinstance(n, N.Decl) and isinstance(n.type, N.Array)}
    assert scopes == {"A_nram": "nram", "B_wram": "wram", "C_nram": "nram"}
    # the batch loop is sequential and holds the task-bound row blocks
    outer = [n for n in walk(f) if isinstance(n, N.For) and n.binding is None
             and any(isinstance(m, N.For) and m.binding == "taskId" for m in walk(n.body))]
    assert outer and outer[0].var.startswith("t_b")
    r = tensorize.apply(q, entry=entry, target="bang")
    assert any(isinstance(n, N.Intrinsic) and n.name == "__bang_matmul" for n in walk(r.func(entry)))
    v = verify(r, src)
    assert v.verified, v.failures[:1]


def _prog(body):
    text = ("void k(const float* A, const float* B, float* C, int batch, int M, int N, int K) {\n"
            "    for (int t = 0; t < batch * M; ++t) {\n" + body + "    }\n}\n")
    return bind_first_loop(parse_text(text, "c"), "k")


OK = ("        int b = t / M; int i = t % M;\n"
      "        for (int j = 0; j < N; ++j) {\n"
      "            float acc = 0.0f;\n"
      "            for (int k = 0; k < K; ++k) acc += A[b * M * K + i * K + k] * B[b * K * N + k * N + j];\n"
      "            C[b * M * N + i * N + j] = acc;\n"
      "        }\n")


def test_split_batched_accepts_flat_batch_rows():
    p = _prog(OK)
    f = p.func("k")
    loop = next(n for n in walk(f) if isinstance(n, N.For) and n.binding == "taskId")
    plan = R.analyse_batched(p, f, loop)
    assert plan.batch[0].startswith("t_b") and set(plan.boff) == {"A", "B", "C"}
    assert "B" in plan.wram
    assert tensorize.applied_ops(cache.apply(p, entry="k", target="bang"), "k", target="bang") == ["__bang_matmul"]


@pytest.mark.parametrize("body,why", [
    # the flat index itself is used: not a pure batch x rows enumeration
    (OK.replace("C[b * M * N + i * N + j] = acc;", "C[b * M * N + i * N + j] = acc + t;"), "batch x rows"),
    # the batch offset depends on a loop variable
    (OK.replace("B[b * K * N + k * N + j]", "B[b * k + k * N + j]"), "batch offset"),
    # the batch is used outside a buffer offset
    (OK.replace("C[b * M * N + i * N + j] = acc;", "C[b * M * N + i * N + j] = acc * b;"), "batch"),
    # t / N does not match the extent's factor M
    (OK.replace("int b = t / M;", "int b = t / N;"), "batch x rows"),
])
def test_batched_refusals(body, why):
    p = _prog(body)
    f = p.func("k")
    loop = next(n for n in walk(f) if isinstance(n, N.For) and n.binding == "taskId")
    with pytest.raises(PassError) as e:
        R.analyse_batched(p, f, loop)
    assert e.value.code in ("XP4001", "XP4002") and why in str(e.value)
    with pytest.raises(PassError):
        cache.check(p, entry="k", target="bang")
