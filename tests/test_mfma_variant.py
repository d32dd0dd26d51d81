"""hip MFMA outputs carry a second path for architectures without MFMA (passes/patterns/mfma_variant.py):
the guard of the variant contract, the MFMA step under ``#if XP_USE_MFMA``, per-lane sums from
the LDS tiles under ``#else``; the second path builds for RDNA3 (gfx1100) and verifies with
32-lane wavefronts, where the MFMA path cannot run."""
import pytest

import xpiler.verify.tester as T
from xpiler.passes import tensorize
from xpiler.platforms.hip import HipPlatform
from xpiler.printers import print_program
from xpiler.verify.variants import variants

from _simt_tile_util import bound, verify

MFMA = "__builtin_amdgcn_mfma_f32_16x16x4f32"


@pytest.fixture(scope="module")
def gemm_hip():
    src, entry, p = bound("gemm", "hip")
    q, launch = tensorize.apply(p, entry=entry, target="hip")
    return src, q, launch, print_program(q, "hip")


def _branches(text):
    """(lines under #if XP_USE_MFMA, lines under #else) of the kernel body."""
    lines = text.splitlines()
    i = lines.index("#if XP_USE_MFMA")
    e = lines.index("#else", i)
    end = lines.index("#endif", e)
    return lines[i + 1:e], lines[e + 1:end]


def test_output_has_the_guard_and_both_paths(gemm_hip):
    _, _, _, text = gemm_hip
    assert "#ifndef XP_USE_MFMA\n#if defined(__gfx908__) || defined(__gfx90a__)" in text
    assert "#define XP_USE_MFMA 1\n#else\n#define XP_USE_MFMA 0" in text
    on, off = _branches(text)
    assert any(MFMA in ln for ln in on)
    assert off and not any("__builtin_amdgcn" in ln or "__shfl" in ln for ln in off)


def _rdna3_compiles():
    return any(name == "compile:amdgcn-gfx1100" and ok for name, ok, _ in HipPlatform().doctor())


@pytest.mark.skipif(not _rdna3_compiles(), reason="clang-15 with the gfx1100 device libraries not installed")
def test_output_compiles_for_gfx90a_with_mfma_and_for_gfx1100_without(gemm_hip, tmp_path):
    from xpiler.asm import assemble
    out = tmp_path / "gemm.hip"
    out.write_text(gemm_hip[3])
    arts = {a.arch: a for a in assemble(out, "hip")}
    assert arts["gfx90a"].available and arts["gfx90a"].figures["mfma"] == 4, arts["gfx90a"].why
    assert arts["gfx1100"].available, arts["gfx1100"].why
    assert arts["gfx1100"].figures["mfma"] == 0


class _Wave32Hip(HipPlatform):
    """The hip emulator with 32-lane wavefronts (RDNA3's default): no __gfx90a__, no MFMA."""
    wave = 32


def _only(value, monkeypatch):
    """The verifier builds only XP_USE_MFMA=value (it builds every value otherwise)."""
    monkeypatch.setattr(T, "variants", lambda text: [d for d in variants(text) if d.get("XP_USE_MFMA") == value])


def test_both_paths_verify_in_wave64_and_the_plain_one_in_wave32(gemm_hip, monkeypatch):
    src, q, launch, text = gemm_hip
    v = verify(q, src, "hip", launch, instances=["base"])      # the wave64 emulator builds both values
    assert v.verified, v.failures[:1]
    assert v.substrate == "emu:simt-cpu[XP_USE_MFMA=1] + emu:simt-cpu[XP_USE_MFMA=0]"
    orig = T.get_platform
    monkeypatch.setattr(T, "get_platform", lambda d: _Wave32Hip() if d == "hip" else orig(d))
    _only("0", monkeypatch)
    v = verify(q, src, "hip", launch, instances=["base"])      # two wave32s per 64-thread block
    assert v.verified, v.failures[:1]
    assert v.substrate == "emu:simt-cpu[XP_USE_MFMA=0]"
    _only("1", monkeypatch)                                    # the MFMA path cannot run there: the
    v = verify(q, src, "hip", launch, instances=["base"])      # run above did take the other path
    assert not v.verified and "needs a 64-lane wavefront" in v.failures[0].message
