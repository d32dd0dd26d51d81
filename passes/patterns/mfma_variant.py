"""The hip matrix forms' second path: the MFMA step under ``XP_USE_MFMA``, plain per-lane sums
otherwise (docs/decisions.md, 2026-12-06 "hip matrix outputs build for RDNA3 too").

MFMA exists on CDNA only (gfx908 / gfx90a / gfx94x / gfx950: ``mai-insts``); RDNA3 (gfx1100) has
none and runs wave32 by default, the host pass of a HIP compile and ``hip_on_cuda.h`` know no
AMD builtin. So every output of :func:`passes.patterns.simt_tile.mfma_body` carries the variant
guard of the variant contract (:data:`GUARD`, auto-detected from the architecture macros) and,
under ``#if XP_USE_MFMA ... #else ... #endif``, a second path in which lane l (i = l % 16,
g = l / 16) computes the same four accumulator elements C[4g+e][i] itself: it reads row 4g+e of
the staged A slice and column i of the staged B slice straight from the shared tiles and adds
the products to ``xp_acc[e]`` in ascending k, the order in which the MFMA step (as the simt
emulator defines it: ``s = c[e]; s += a * b`` for k = 0..K-1) adds them. No lane reads another
lane's registers, so the block's 64 threads may be two wave32s. Both paths read the same tiles
between the same two barriers. A bfloat16 output's guard names :data:`CDNA_BF16` only: its
builtin (``..._16x16x16bf16_1k``) came with gfx90a, so gfx908 takes the plain path there.
"""
from __future__ import annotations

NAME = "XP_USE_MFMA"
#: the architectures whose compiler defines the MFMA builtins (clang's ``__gfxNNN__`` macros)
CDNA = ("gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")
#: those with ``__builtin_amdgcn_mfma_f32_16x16x16bf16_1k`` (the "1k" bf16 forms came with gfx90a:
#: clang-15 for gfx908 stops with "Cannot select: intrinsic llvm.amdgcn.mfma.f32.16x16x16bf16.1k"),
#: so a bf16 output's guard leaves gfx908 on the plain path
CDNA_BF16 = tuple(a for a in CDNA if a != "gfx908")


def guard(archs=CDNA) -> str:
    """The guard's definition, a top-level item of the output (the variant contract's form):
    ``XP_USE_MFMA`` is 1 where the compiler targets one of ``archs``."""
    cond = " || ".join(f"defined(__{a}__)" for a in archs)
    return "\n".join([f"#ifndef {NAME}", f"#if {cond}", f"#define {NAME} 1", "#else", f"#define {NAME} 0",
                      "#endif", "#endif"])


def has_guard(texts) -> bool:
    """Whether one of the program's top-level directive texts already defines the guard."""
    return any(t.strip() == f"#ifndef {NAME}" for t in texts)


def guard_archs(texts) -> set:
    """The architectures named by the program's guard (its ``#if defined(__gfxNNN__) || ...``
    line right after ``#ifndef XP_USE_MFMA``); empty where it has no guard."""
    texts = [t.strip() for t in texts]
    for n, t in enumerate(texts[:-1]):
        if t == f"#ifndef {NAME}":
            return {a for a in CDNA if f"defined(__{a}__)" in texts[n + 1]}
    return set()


def wrap(mfma_lines: list[str], plain_lines: list[str]) -> list[str]:
    """``mfma_lines`` under ``#if XP_USE_MFMA``, ``plain_lines`` under ``#else`` (lines of one
    statement list, same indentation)."""
    ind = mfma_lines[0][:len(mfma_lines[0]) - len(mfma_lines[0].lstrip())] if mfma_lines else ""
    return [f"{ind}#if {NAME}"] + mfma_lines + [f"{ind}#else"] + plain_lines + [f"{ind}#endif"]


def plain_f32(ind: str = "    ", via: str = "") -> list[str]:
    """One 16-wide k slice, float tiles: C[4g+e][i] += A[4g+e][k] * B[k][i], k = 0..15 (``via``
    ``(float)``: half tiles, each element widened first, so every product is exact in float)."""
    return [f"{ind}for (int xp_kq = 0; xp_kq < 16; ++xp_kq) {{",
            f"{ind}    const float xp_bq = {via}xp_Bs[xp_kq * 16 + xp_li];",
            f"{ind}    for (int xp_eq = 0; xp_eq < 4; ++xp_eq) {{",
            f"{ind}        xp_acc[xp_eq] += {via}xp_As[(4 * xp_g + xp_eq) * 16 + xp_kq] * xp_bq;",
            f"{ind}    }}",
            f"{ind}}}"]


def plain_f16(ind: str = "    ") -> list[str]:
    """The half tiles: each product of two halves taken in float (exact), added in float."""
    return plain_f32(ind, via="(float)")


def plain_i8(ind: str = "    ") -> list[str]:
    """The int8 tiles: signed byte products (at most 2^14 in magnitude, exact in int), summed in
    unsigned so that the int32 accumulator wraps modulo 2^32 as the instruction's does."""
    return [f"{ind}for (int xp_kq = 0; xp_kq < 16; ++xp_kq) {{",
            f"{ind}    const int xp_bq = (int)xp_Bs[xp_kq * 16 + xp_li];",
            f"{ind}    for (int xp_eq = 0; xp_eq < 4; ++xp_eq) {{",
            f"{ind}        xp_acc[xp_eq] = (int)((unsigned)xp_acc[xp_eq] + "
            f"(unsigned)((int)xp_As[(4 * xp_g + xp_eq) * 16 + xp_kq] * xp_bq));",
            f"{ind}    }}",
            f"{ind}}}"]


def plain_bf16(ind: str = "    ") -> list[str]:
    """The bfloat16 tiles (bit patterns in ``unsigned short``): each element widened to float
    exactly (its bits are the float's upper half), the product taken and added in float."""
    return [
        f"{ind}for (int xp_kq = 0; xp_kq < 16; ++xp_kq) {{",
        f"{ind}    const float xp_bq = __uint_as_float((unsigned)xp_Bs[xp_kq * 16 + xp_li] << 16);",
        f"{ind}    for (int xp_eq = 0; xp_eq < 4; ++xp_eq) {{",
        f"{ind}        xp_acc[xp_eq] += __uint_as_float((unsigned)xp_As[(4 * xp_g + xp_eq) * 16 + xp_kq] << 16) * xp_bq;",
        f"{ind}    }}",
        f"{ind}}}"]
