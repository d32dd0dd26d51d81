"""Precompiled forced-include headers (xpiler/platforms/pch.py) and the SIMDe-first include of
emulated c builds (xpiler/platforms/c.py): gcc really reads the .gch, the program it builds is the
same, and every way out falls back to the plain command."""
import shutil
import subprocess
from pathlib import Path

import pytest

from xpiler.platforms import pch
from xpiler.platforms.c import immintrin_first

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="g++ not installed")


@pytest.fixture
def header(tmp_path, monkeypatch):
    monkeypatch.setenv("XPILER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("XPILER_PCH", raising=False)
    inc = tmp_path / "inc"
    inc.mkdir()
    h = inc / "forced.h"
    h.write_text("#include <cstdio>\nstatic inline int twice(int x) { return 2 * x + FORCED_BIAS; }\n")
    main = tmp_path / "main.cpp"
    main.write_text('int main() { std::printf("%d\\n", twice(20)); return 0; }\n')
    return h, main


def _argv(h, main, *extra):
    return ["g++", "-std=c++17", "-O1", *extra, "-include", str(h), str(main), "-o", "run"]


def test_the_gch_is_read_and_the_program_is_the_same(header, tmp_path):
    h, main = header
    plain = _argv(h, main, "-DFORCED_BIAS=2")
    argv = pch.precompiled(plain, {str(main)})
    stub = argv[argv.index("-include") + 1]
    assert stub != str(h) and (tmp_path / "cache" / "pch") in Path(stub).parents
    # -H prints '! file.gch' when gcc takes the precompiled header
    p = subprocess.run(argv + ["-H"], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert any(line.startswith("!") and line.endswith(".gch") for line in p.stderr.splitlines()), p.stderr
    with_pch = subprocess.run(["./run"], cwd=tmp_path, capture_output=True, text=True).stdout
    subprocess.run(plain, cwd=tmp_path, check=True)
    assert with_pch == subprocess.run(["./run"], cwd=tmp_path, capture_output=True, text=True).stdout == "42\n"
    # the same flags again: the same stub, no second .gch
    assert pch.precompiled(plain, {str(main)}) == argv
    assert len(list((tmp_path / "cache" / "pch").iterdir())) == 1


def test_other_flags_get_their_own_gch(header, tmp_path):
    h, main = header
    a = pch.precompiled(_argv(h, main, "-DFORCED_BIAS=2"), {str(main)})
    b = pch.precompiled(_argv(h, main, "-DFORCED_BIAS=3"), {str(main)})
    assert a != b
    subprocess.run(b, cwd=tmp_path, check=True)
    assert subprocess.run(["./run"], cwd=tmp_path, capture_output=True, text=True).stdout == "43\n"


def test_every_way_out_is_the_plain_command(header, tmp_path, monkeypatch):
    h, main = header
    plain = _argv(h, main, "-DFORCED_BIAS=2")
    assert pch.precompiled(["clang++", *plain[1:]], {str(main)})[0] == "clang++"
    assert pch.precompiled(["clang++", *plain[1:]], {str(main)})[1:] == plain[1:]   # not gcc
    no_include = [a for a in plain if a not in ("-include", str(h))]
    assert pch.precompiled(no_include, {str(main)}) == no_include
    # a header gcc cannot precompile (an error in it): the build reads it as written
    bad = h.with_name("bad.h")
    bad.write_text("this is not C++\n")
    assert pch.precompiled(_argv(bad, main), {str(main)}) == _argv(bad, main)
    monkeypatch.setenv("XPILER_PCH", "0")
    assert pch.precompiled(plain, {str(main)}) == plain


@pytest.mark.parametrize("text,first", [
    ('#line 1 "k.c"\n#include <immintrin.h>\nvoid f(void) {}\n', True),
    ('#include <stdint.h>\n#include <math.h>\n#line 1 "k.c"\n#include <immintrin.h>\n', True),
    ('/* #define X */\n#include <immintrin.h>\n', True),
    ('#define N 16\n#include <immintrin.h>\n', False),            # a macro the header could see
    ('#include "mine.h"\n#include <immintrin.h>\n', False),       # a header of the user's
    ('#include <stdint.h>\nvoid f(void) {}\n', False),            # no intrinsics at all
    ('#ifdef __AVX512F__\n#include <immintrin.h>\n#endif\n', False),
])
def test_simde_goes_first_only_where_the_order_is_unchanged(text, first):
    assert immintrin_first(text) is first
