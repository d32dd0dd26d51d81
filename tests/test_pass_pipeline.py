"""pipeline pass: double-buffered NRAM staging with __memcpy_async + __sync on BANG."""
import pytest

from xpiler.ir import nodes as N
from xpiler.ir.visit import walk
from xpiler.passes import cache, pipeline, tensorize
from xpiler.passes.base import PassError

from test_pass_cache import bound, verify


def staged(op, **kw):
    src, entry, p = bound(op)
    q = cache.apply(p, entry=entry, target="bang", **kw)
    return src, entry, tensorize.apply(q, entry=entry, target="bang")


def test_double_buffer_prefetches_and_verifies():
    src, entry, r = staged("add")
    s = pipeline.apply(r, entry=entry, target="bang", depth=2)
    f = s.func(entry)
    asyncs = [n for n in walk(f) if isinstance(n, N.Intrinsic) and n.name == "__memcpy_async"]
    assert len(asyncs) == 4                      # a and b: prologue + prefetch
    assert any(isinstance(n, N.Barrier) and n.kind == "copy" for n in walk(f))
    sizes = {n.name: n.type.dims[0] for n in walk(f) if isinstance(n, N.Decl) and n.scope == "nram"}
    assert isinstance(sizes["a_nram"], N.BinOp) and not isinstance(sizes["c_nram"], N.BinOp)
    v = verify(s, src)
    assert v.verified, v.failures[:1]


def test_depth_one_is_nothing_to_do():
    src, entry, r = staged("relu")
    with pytest.raises(PassError) as e:
        pipeline.check(r, entry=entry, target="bang", depth=1)
    assert e.value.code == "XP4002"


def test_needs_a_staged_loop():
    src, entry, p = bound("relu")
    with pytest.raises(PassError) as e:
        pipeline.check(p, entry=entry, target="bang", depth=2)
    assert e.value.code == "XP4002"


def test_refuses_when_doubling_overflows_nram():
    src, entry, r = staged("add", chunk=32768)        # 3 x 128 KiB staged; doubling a and b: 640 KiB
    with pytest.raises(PassError) as e:
        pipeline.check(r, entry=entry, target="bang", depth=2)
    assert e.value.code == "XP4001" and "_nram" in e.value.why and "NRAM" in e.value.why


def test_candidates():
    src, entry, r = staged("relu")
    assert {c["depth"] for c in pipeline.candidates(r, "bang")} == {1, 2}
