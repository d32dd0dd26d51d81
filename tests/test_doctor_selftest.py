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
    p.write_text(f'#!/bin/sh\n{real} "$@" || exit $?\nprintf \'#!/bin/sh\\nkill -SEGV $$\\n\' > run\nchmod +x run\n')
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
    monkeypatch.setenv("XPILER_CXX", CLANG)
    st = run_selftest(dialect)
    assert st.ok, st.detail
