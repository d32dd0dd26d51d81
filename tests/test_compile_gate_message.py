"""A kernel the real target compiler rejects is reported with the compiler's first error, not with
clang's closing "1 error generated" line (a stack frame over gfx90a's limit has no source line)."""
from __future__ import annotations

from xpiler.migration import driver
from xpiler.verify.tester import Verdict

LOG = ("error: stack frame size (393232) exceeds limit (131056) in function 'mul_scalar_union'\n"
       "1 error generated when compiling for gfx90a.\n")


class _Plat:
    def compile_check(self, path, arch):
        return {"ok": False, "error": {"file": str(path), "line": None,
                                       "message": "1 error generated when compiling for gfx90a."}, "log": LOG}


def test_first_error_is_named(tmp_path, monkeypatch):
    import xpiler.platforms as P
    monkeypatch.setattr(P, "get_platform", lambda d: _Plat())
    import xpiler.platforms.base as B
    monkeypatch.setattr(B, "which", lambda name: "/usr/bin/" + name)
    k = tmp_path / "k.hip"
    k.write_text("__global__ void k() {}\n")
    v = Verdict(True, "emu:simt-cpu", str(k), [0], ["base"])
    driver._real_compile_gate("hip", k, v)
    assert not v.verified
    assert "stack frame size (393232) exceeds limit" in v.failures[0].message
