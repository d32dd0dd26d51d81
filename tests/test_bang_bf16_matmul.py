"""bfloat16 contraction -> bang (passes/patterns/rows.py): cache stages the bfloat16 operands widened
to float (a bfloat16 copy in NRAM converted element by element; the right-hand operand chunk by
chunk through NRAM into float WRAM), and tensorize writes the documented (float, float, float)
``__bang_matmul``: the widening is exact, so the float form computes the loop's products.
The whole migration (gemm_bf16.cu -> bang, verified on emu:bang-cpu) is in benchmarks/RESULTS.md;
this test reads the printed form only (an emulated build of it takes about 15 s here)."""
import pytest

from xpiler.frontend import parse_text
from xpiler.passes import binding, cache, tensorize
from xpiler.printers import print_program

from test_mfma_bf16 import PLAIN


@pytest.fixture(scope="module")
def bf16_bang():
    p, _ = binding.apply(parse_text(PLAIN, "c", "gemm_bf16.c"), entry="gemm_bf16", target="bang")
    staged = cache.apply(p, entry="gemm_bf16", target="bang")
    q = tensorize.apply(staged, entry="gemm_bf16", target="bang")
    return print_program(q[0] if isinstance(q, tuple) else q, "bang")


def test_bf16_operands_are_widened_on_chip_and_take_the_float_matmul(bf16_bang):
    text = bf16_bang
    kernel = text[text.index("__mlu_global__"):]
    # float staging buffers, the bfloat16 copies they are converted from
    for decl in ("__nram__ float A_nram[", "__wram__ float B_wram[", "__nram__ bfloat16_t A_bf16[",
                 "__nram__ bfloat16_t B_bf16[", "__nram__ float B_f32["):
        assert decl in kernel, decl
    assert "__memcpy(A_bf16, A + i_r * K, i_n * K * sizeof(bfloat16_t), GDRAM2NRAM);" in kernel
    assert "A_nram[xw] = (float)A_bf16[xw];" in kernel
    # the right-hand operand: GDRAM -> NRAM (bfloat16) -> NRAM (float) -> WRAM, chunk by chunk
    assert "__memcpy(B_bf16, B + B_c, B_cn * sizeof(bfloat16_t), GDRAM2NRAM);" in kernel
    assert "B_f32[xw] = (float)B_bf16[xw];" in kernel
    assert "__memcpy(B_wram + B_c, B_f32, B_cn * sizeof(float), NRAM2WRAM);" in kernel
    assert "__bang_matmul(C_nram, A_nram, B_wram, i_n, K, N);" in kernel
    # the staged path is guarded; the loop nest stays the fallback
    assert "} else {" in kernel and "acc += (float)A[i * K + k] * (float)B[k * N + j];" in kernel
