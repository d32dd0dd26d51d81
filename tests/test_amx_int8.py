"""The AMX tile path of the int8 contraction form (passes/patterns/x86_gemm_amx.py): the emulated tile
instructions (xpiler/runtime/c/simde/xp_amx_tiles.h) against numpy, both paths in the printed
output, and the XP_USE_AMX=1 build verifying (emulated here) where a wrong AMX step fails."""
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from xpiler.frontend import parse_text
from xpiler.passes import tensorize
from xpiler.passes.base import PassError
from xpiler.platforms.c import SIMDE_WRAPPER, CPlatform, simde_available
from xpiler.printers import print_program
from xpiler.spec import load_spec, spec_to_toml
from xpiler.verify.tester import compare_kernels
from xpiler.verify.variants import guards

from test_x86_gemm_i8 import FLAT, GEMM, U8S8

needs_emulator = pytest.mark.skipif(not (shutil.which("gcc") and simde_available()),
                                    reason="needs gcc and SIMD Everywhere (libsimde-dev)")


def _cpu():
    from xpiler.platforms.c import cpu_flags
    return cpu_flags()


# the XP_USE_AMX=1 build runs natively on a CPU with the tiles, else on the emulated substrate
amx_or_emulator = pytest.mark.skipif(not (shutil.which("gcc") and (simde_available() or
                                                                   {"amx_tile", "amx_int8"} <= _cpu())),
                                     reason="needs gcc and AMX tiles or SIMD Everywhere (libsimde-dev)")

# the tile shapes of the dot-product check: C 5 x 6 int32 (colsb 24), A 5 rows x 3 k-groups
# (colsb 12), B 3 groups x 6 columns x 4 bytes (colsb 24); the operands sit in wider arrays
ROWS, NG, NC = 5, 3, 6
LDA, LDB, LDC = 20, 28, 8            # bytes, bytes, int32 elements

PROGRAM = r"""
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
static const int8_t A[%(rows)d * %(lda)d] = {%(a)s};
static const int8_t B[%(ng)d * %(ldb)d] = {%(b)s};
static const int32_t C0[%(rows)d * %(ldc)d] = {%(c)s};
static void config(int bad_b_rows) {
    unsigned char cfg[64];
    memset(cfg, 0, 64);
    cfg[0] = 1;
    cfg[16 + 0] = %(nc)d * 4; cfg[48 + 0] = %(rows)d;      /* tile 0: C */
    cfg[16 + 2] = %(ng)d * 4; cfg[48 + 1] = %(rows)d;      /* tile 1: A */
    cfg[16 + 4] = %(nc)d * 4; cfg[48 + 2] = %(ng)d + bad_b_rows;  /* tile 2: B */
    cfg[16 + 6] = 64; cfg[48 + 3] = 16;                    /* tile 3: a whole tile */
    _tile_loadconfig(cfg);
    unsigned char back[64];
    _tile_storeconfig(back);
    printf("config %%d\n", memcmp(cfg, back, 64) == 0);
}
static void show(const char *name, const int32_t *out) {
    printf("%%s", name);
    for (int i = 0; i < %(rows)d * %(ldc)d; ++i) printf(" %%d", out[i]);
    printf("\n");
}
#define DOT(OP, NAME) do { \
    int32_t out[%(rows)d * %(ldc)d]; \
    for (int i = 0; i < %(rows)d * %(ldc)d; ++i) out[i] = 0x55555555; \
    _tile_loadd(0, C0, %(ldc)d * 4); _tile_loadd(1, A, %(lda)d); _tile_loadd(2, B, %(ldb)d); \
    OP(0, 1, 2); _tile_stored(0, out, %(ldc)d * 4); show(NAME, out); } while (0)
int main(int argc, char **argv) {
    if (argc > 1 && argv[1][0] == 'u') { _tile_zero(0); return 0; }     /* before any configuration */
    config(argc > 1 && argv[1][0] == 's');                              /* 's': B's rows do not match A */
    if (argc > 1) { _tile_dpbssd(0, 1, 2); return 0; }
    printf("permit %%ld\n", (long)XP_AMX_PERMIT());
    DOT(_tile_dpbssd, "ssd");
    DOT(_tile_dpbsud, "sud");
    DOT(_tile_dpbusd, "usd");
    DOT(_tile_dpbuud, "uud");
    int8_t big[16 * 80], back[16 * 70];
    for (int i = 0; i < 16 * 80; ++i) big[i] = (int8_t)(i * 7 + 3);
    memset(back, 0x11, sizeof back);
    _tile_loadd(3, big, 80); _tile_stored(3, back, 70);               /* strides of both sides */
    int same = 1;
    for (int r = 0; r < 16; ++r) {
        same &= memcmp(back + r * 70, big + r * 80, 64) == 0;
        for (int c = 64; c < 70; ++c) same &= back[r * 70 + c] == 0x11;
    }
    _tile_stream_loadd(3, big + 3, 80); _tile_stored(3, back, 70);     /* the no-reuse load: the same */
    for (int r = 0; r < 16; ++r) same &= memcmp(back + r * 70, big + 3 + r * 80, 64) == 0;
    _tile_zero(3); _tile_stored(3, back, 70);
    int zero = 1;
    for (int r = 0; r < 16; ++r) for (int c = 0; c < 64; ++c) zero &= back[r * 70 + c] == 0;
    printf("load_store %%d zero %%d\n", same, zero);
    _tile_release();
    return 0;
}
"""


def _emulated_program(tmp: Path):
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, (ROWS, LDA)).astype(np.int8)
    b = rng.integers(-128, 128, (NG, LDB)).astype(np.int8)
    c = rng.integers(-2**31, 2**31, (ROWS, LDC), dtype=np.int64).astype(np.int32)
    c[0, :2] = [2**31 - 5, -2**31 + 3]          # sums that wrap past int32 both ways
    a[0, :4], b[:, :4] = 127, 127
    a[1, :4], b[:, 4:8] = -128, -128
    src = PROGRAM % dict(rows=ROWS, lda=LDA, ldb=LDB, ldc=LDC, ng=NG, nc=NC,
                         a=", ".join(map(str, a.ravel())), b=", ".join(map(str, b.ravel())),
                         c=", ".join(map(str, c.ravel())))
    (tmp / "t.c").write_text(src)
    # the emulated substrate's include path, whatever this CPU has (the wrapper replaces the tiles)
    argv = ["gcc", "-O1", f"-I{SIMDE_WRAPPER}", "-mavx2", "-mfma", "t.c", "-o", "t"]
    subprocess.run(argv, cwd=tmp, check=True, capture_output=True)
    return a, b, c


def _expected(a, b, c, sa, sb):
    """numpy: C[m][n] + sum_k sum_r A[m][4k+r] * B[k][4n+r], bytes signed or not, modulo 2^32."""
    x = a[:, :4 * NG].astype(np.int64) if sa else a[:, :4 * NG].view(np.uint8).astype(np.int64)
    y = b[:, :4 * NC].astype(np.int64) if sb else b[:, :4 * NC].view(np.uint8).astype(np.int64)
    x = x.reshape(ROWS, NG, 4)
    y = y.reshape(NG, NC, 4)
    s = np.einsum("mkr,knr->mn", x, y) + c[:, :NC].astype(np.int64)
    out = np.full((ROWS, LDC), 0x55555555, dtype=np.int64)
    out[:, :NC] = s
    return ((out + 2**31) % 2**32 - 2**31).astype(np.int32)


@needs_emulator
def test_emulated_tile_ops_match_numpy_and_trap_on_bad_shapes():
    tmp = Path(tempfile.mkdtemp(prefix="xp-amx-"))
    a, b, c = _emulated_program(tmp)
    out = subprocess.run([str(tmp / "t")], capture_output=True, text=True, check=True).stdout.splitlines()
    got = {ln.split()[0]: ln.split()[1:] for ln in out}
    assert got["permit"] == ["0"]                 # the Linux permission hook succeeds without asking
    for name, sa, sb in (("ssd", 1, 1), ("sud", 1, 0), ("usd", 0, 1), ("uud", 0, 0)):
        have = np.array([int(v) for v in got[name]], dtype=np.int64).astype(np.int32).reshape(ROWS, LDC)
        np.testing.assert_array_equal(have, _expected(a, b, c, sa, sb), err_msg=name)
    assert got["load_store"] == ["1", "zero", "1"] and got["config"] == ["1"]
    # shapes that do not agree (#UD on the hardware) and a tile op before any configuration trap
    for mode in ("s", "u"):
        r = subprocess.run([str(tmp / "t"), mode], capture_output=True)
        assert r.returncode != 0, mode


def _tensorized(text, entry, name):
    p = parse_text(text, "c", name)
    return tensorize.apply(p, entry=entry, target="c", micro="6x32", kc=256)


def test_the_output_has_the_guard_and_both_paths():
    for text, entry, dp, other in ((FLAT, "gemm_s8s32", "_tile_dpbssd", "_tile_dpbusd"),
                                   (U8S8, "gemm_vnni", "_tile_dpbusd", "_tile_dpbssd")):
        out = print_program(_tensorized(text, entry, entry + ".c"), "c")
        assert guards(out) == ["XP_USE_AMX"]
        assert "#if defined(__AMX_INT8__) && defined(__AMX_TILE__)\n#define XP_USE_AMX 1" in out
        assert "syscall(SYS_arch_prctl, 0x1023, 18)" in out
        body = out[out.index(entry + "("):]
        at = [body.index(s) for s in ("#if XP_USE_AMX", "_tile_loadconfig", dp + "(", "_tile_release", "#else",
                                      "#endif", "_mm512_dpbusd_epi32(")]
        assert at == sorted(at), at
        assert other + "(" not in body
        ops = tensorize.applied_ops(parse_text(text, "c", "k.c"), entry, target="c", micro="6x32", kc=256)
        assert dp in ops and other not in ops and "_mm512_dpbusd_epi32" in ops


def _verify_flat(text, tmp: Path):
    """The output ``text`` of gemm_int8_flat.cu -> c on one shape with whole and ragged 32 x 32 blocks
    and two k chunks of the AMX path (K > 1024), one seed, no sanitizer: every XP_USE_AMX build."""
    sp = load_spec(str(GEMM / "gemm_int8_flat.cu.toml"))
    cs = sp.with_dialect("c", sp.entry, {})
    ref, fn = sp.reference.split(":")
    cs.reference = f"{(GEMM / ref).resolve()}:{fn}"
    cs.shapes = [{"name": "chunks", "M": 40, "N": 40, "K": 1100}]
    path = tmp / "cand.c"
    path.write_text(text)
    cs.path = path.with_name("cand.c.toml")
    cs.path.write_text(spec_to_toml(cs))
    return compare_kernels(path, load_spec(cs.path), instances=["chunks"], seeds=(0,), sanitize=False,
                           derive_boundaries=False)


@amx_or_emulator
def test_the_amx_build_verifies_and_a_wrong_tile_step_fails():
    text = print_program(_tensorized(FLAT, "gemm_s8s32", "gemm_int8_flat.c"), "c")
    tmp = Path(tempfile.mkdtemp(prefix="xp-amx-v-"))
    v = _verify_flat(text, tmp)
    assert v.verified, v.failures[:1]
    one = CPlatform().substrate_for({"XP_USE_AMX": "1"})     # hw:cpu-amx on a CPU with the tiles
    assert one in ("emu:simde-cpu", "hw:cpu-amx")
    assert v.substrate.startswith(one + "[XP_USE_AMX=1] + "), v.substrate
    assert v.substrate.endswith("[XP_USE_AMX=0]")
    # one tile of C multiplied as unsigned bytes, in a build fixed to the AMX path: it must fail
    bad = text.replace("_tile_dpbssd(3, 5, 7)", "_tile_dpbuud(3, 5, 7)").replace("#ifndef XP_USE_AMX", "#if 0", 1)
    assert bad != text and "_tile_dpbuud(3, 5, 7)" in bad
    w = _verify_flat("#define XP_USE_AMX 1\n" + bad, Path(tempfile.mkdtemp(prefix="xp-amx-bad-")))
    assert not w.verified and "[" not in w.substrate, w.substrate


def test_amx_false_gives_the_vnni_form_alone_and_is_an_int8_parameter():
    p = parse_text(FLAT, "c", "gemm_int8_flat.c")
    out = print_program(tensorize.apply(p, entry="gemm_s8s32", target="c", micro="6x32", kc=256, amx=False), "c")
    assert guards(out) == [] and "_tile_" not in out and "_mm512_dpbusd_epi32(" in out
    g = parse_text(open(GEMM.parent.parent / "gemm" / "gemm.c").read(), "c", "gemm.c")
    with pytest.raises(PassError) as e:
        tensorize.apply(g, entry=g.kernels[0].name, target="c", micro="6x32", kc=256, amx=False)
    assert e.value.code == "XP4210" and "int8" in str(e.value)


def test_the_amx_build_is_emulated_without_amx_tiles(monkeypatch):
    import xpiler.platforms.c as C
    plat = CPlatform()
    monkeypatch.delenv("XPILER_C_SUBSTRATE", raising=False)
    monkeypatch.setattr(C, "cpu_flags", lambda: {"avx512f", "avx512_vnni"})
    assert plat.substrate_for({"XP_USE_AMX": "1"}) == "emu:simde-cpu"
    assert f"-I{SIMDE_WRAPPER}" in plat._flags(False, 0, {"XP_USE_AMX": "1"})
    assert plat.substrate_for({"XP_USE_AMX": "0"}) == "hw:cpu-avx512vnni"
    assert "-march=native" in plat._flags(False, 0, {"XP_USE_AMX": "0"})
    monkeypatch.setattr(C, "cpu_flags", lambda: {"avx512f", "avx512_vnni", "amx_tile", "amx_int8"})
    assert plat.substrate_for({"XP_USE_AMX": "1"}) == "hw:cpu-amx"
    assert "-march=native" in plat._flags(False, 0, {"XP_USE_AMX": "1"})
