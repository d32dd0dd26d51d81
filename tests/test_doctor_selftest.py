"""`xpiler doctor` runs a tiny self-test per substrate, and a broken substrate is reported as broken.

The emulators are also built with the newest clang Debian packages (clang++-16), so that a
compiler other than this machine's g++ 12 keeps them honest (issue: the wave64 emulator crashed
under gcc 13 on another Linux)."""
from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from xpiler.cli import main
from xpiler.platforms.selftest import run_selftest


@pytest.mark.parametrize("dialect", ["cuda", "hip", "bang", "c"])
def test_selftest_passes_here(dialect):
    st = run_selftest(dialect)
    assert st.ok, st.detail
    assert st.substrate.startswith(("emu:", "hw:"))


def _fake_compiler(tmp_path, real: str) -> str:
    """A compiler that builds normally, then replaces the program with one that crashes."""
    p = tmp_path / "crashing-cxx"
    # only a build that made ./run is replaced: other calls (version probes) run in the caller's
    # folder, and a `run` written there was left in the repository root
    p.write_text(f'#!/bin/sh\n{real} "$@" || exit $?\n[ -f run ] || exit 0\n'
                 'printf \'#!/bin/sh\\nkill -SEGV $$\\n\' > run\nchmod +x run\n')
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


def test_broken_substrate_is_reported(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XPILER_CXX", _fake_compiler(tmp_path, "g++"))
    st = run_selftest("hip")
    assert not st.ok
    assert "XP2104" in st.detail or "crash" in st.detail
    rc = main(["doctor", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 3
    bad = [r for r in rows if r["substrate"].startswith("self-test") and not r["usable"]]
    assert {r["dialect"] for r in bad} == {"cuda", "hip", "bang"}
    assert all(r["detail"].startswith("BROKEN") for r in bad)


CLANG = "clang++-16"


@pytest.mark.skipif(not shutil.which(CLANG) and not os.environ.get("CI"), reason=f"{CLANG} not installed")
@pytest.mark.parametrize("dialect", ["cuda", "hip", "bang"])
def test_emulators_build_and_run_with_newest_clang(dialect, monkeypatch):
    assert shutil.which(CLANG), f"CI installs {CLANG} (.ci/setup); it is missing"
    from xpiler.platforms.selftest import asan_links
    if not asan_links(CLANG):
        # the GPU machine has clang++-16 without libclang-rt-16-dev; CI installs both
        assert not os.environ.get("CI"), f"CI installs libclang-rt-16-dev (.ci/setup); {CLANG} cannot link ASan"
        st = run_selftest(dialect)
        assert st.ok       # g++ builds it; the clang run below would only show the missing runtime
        monkeypatch.setenv("XPILER_CXX", CLANG)
        st = run_selftest(dialect)
        assert not st.ok and "cannot link an AddressSanitizer program" in st.detail
        return
    monkeypatch.setenv("XPILER_CXX", CLANG)
    st = run_selftest(dialect)
    assert st.ok, st.detail


def test_a_compiler_without_its_asan_runtime_is_named(tmp_path, monkeypatch):
    """clang++-N without libclang-rt-N-dev (as on the GPU machine): doctor says what is missing."""
    p = tmp_path / "clang++-99"
    p.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in -fsanitize=address) '
                 'echo "ld: cannot find libclang_rt.asan.a" >&2; exit 1;; esac; done\nexec g++ "$@"\n')
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("XPILER_CXX", str(p))
    st = run_selftest("bang")
    assert not st.ok
    assert "cannot link an AddressSanitizer program" in st.detail and "libclang-rt-99-dev" in st.detail
