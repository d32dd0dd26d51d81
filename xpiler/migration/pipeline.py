"""Default pass pipelines per direction (DESIGN §1: detensorize + recover → normalize → bind,
cache, pipeline, tensorize for the target).

A pipeline is a list of ``(pass name, params)``. Passes that do not apply to a program (nothing
to detensorize, no SIMT indices to recover) raise ``PassError("XP4002")`` and are skipped.
``plans(src, dst)`` lists alternative pipelines in order of preference: the driver runs the next
one from the source when the previous did not reach a verified kernel in the target dialect.
A plan with steps marked ``require`` is first probed (its passes applied without tests) and
skipped when any of those steps does not apply; such a plan may mark steps ``defer_test``
(:data:`DEFER_TEST`), tested only with the program a later step makes. A step with
``alternatives`` stands for one step per parameter set, proposed in order until the pass takes
one (loop recovery's normalizations: :data:`RECOVER`).
"""
from __future__ import annotations

SIMT = ("cuda", "hip")
#: a step parameter: the plan is only worth running when this step applies (probed without tests)
REQUIRE = "require"
#: a step parameter, in a probed plan (one with a ``require``d step): the step's program is not
#: tested on its own; the plan's next tested step tests the program the steps made so far, with the
#: full differential and reference test, and a plan whose chain fails that test reaches nothing (the
#: next plan follows). A plan's last step is always tested (xpiler/schedule/plans.py; docs/passes.md)
DEFER_TEST = "defer_test"
#: the step parameters that are the plan's, never the pass's
PLAN_KEYS = (REQUIRE, DEFER_TEST)
#: a step parameter: parameter sets tried in order, each proposed as a step of its own (merged over
#: the step's other parameters); the next is proposed only while the pass refuses the one before as
#: an alternative that does not apply (``passes.base.AlternativeRefused``, XP4002), so the first
#: that applies is taken, and every refused one is in the provenance log with its reason
ALTERNATIVES = "alternatives"
#: the register-tiled AVX-512 gemm's tile in the default c plans (docs/decisions.md, 2026-12-04)
GEMM_C = {"micro": "6x32", "kc": 256}
#: a row kernel's binding in the default cuda / hip plans: one block of 128 threads per row, its
#: reductions folded by warp shuffles (passes/block_rows.py, warp_reduce.py); ``row_kernel``: only
#: where the row-kernel rule holds (block_rows.check_row_kernel), else refused (XP4002) and the plan
#: skipped (docs/decisions.md, 2026-12-05 "Row kernels bind one block per row by default"; the
#: block size: 2026-12-05, fourteenth session, "Rows at block 128")
ROWS = {"rows": "block", "reduce": "shuffle", "block": 128, "row_kernel": True}
#: after that binding, a row of at most ``slots * block`` columns is held in registers, each element
#: read once and written once (passes/row_registers.py), the bound loop kept for longer rows; skipped
#: where it does not apply (docs/decisions.md, 2026-12-05 fifteenth session, "Rows in registers")
ROW_REGS = {"slots": 8, "as_alternative": True}


def _cache(dst: str, **extra) -> tuple[str, dict]:
    """The cache step. For cuda, a float32 matmul is first tried in the wide register-blocked form
    (passes/cache.py: WIDE_DEFAULT), and the pass's own default (16 x 16 shared tiles, a staged
    row or chunk) follows where that does not apply (docs/decisions.md, 2026-12-05)."""
    if dst != "cuda":
        return ("cache", {"target": dst, **extra})
    from xpiler.passes.cache import WIDE_DEFAULT
    return ("cache", {"target": dst, **extra, ALTERNATIVES: [{**WIDE_DEFAULT, "as_alternative": True}, {}]})


def _tensorize(dst: str, **extra) -> tuple[str, dict]:
    """The tensorize step. For cuda, a half matmul is first tried in the block-tiled WMMA form
    (passes/tensorize.py: WMMA_BLOCK_DEFAULT); the one-warp WMMA form (and every other rule of the
    pass) follows where that does not apply (docs/decisions.md, 2026-12-05)."""
    if dst != "cuda":
        return ("tensorize", {"target": dst, **extra})
    from xpiler.passes.tensorize import WMMA_BLOCK_DEFAULT
    return ("tensorize", {"target": dst, **extra,
                          ALTERNATIVES: [{**WMMA_BLOCK_DEFAULT, "as_alternative": True}, {}]})


#: the default cuda plans' last step: an elementwise grid-stride loop moves float4s
#: (passes/vectorize_simt.py), as an alternative, skipped where it does not apply (docs/decisions.md)
VECTORIZE = {"width": 4, "block": 512, "as_alternative": True}


#: the retarget plan's binding first sizes a grid-stride kernel's launch from the problem
#: (passes/regrid.py), as an alternative: where regrid refuses, the source's launch is kept. On the
#: H200 the capped grids of the cuda sources ran at 0.05-0.22x of PyTorch as hip outputs
#: (docs/decisions.md, 2026-12-06 "The retarget plan regrids")
REGRID = {"regrid": True, "block": 512, "grid_cap": None, "as_alternative": True}


def _finish(dst: str) -> list[tuple[str, dict]]:
    # float4 elementwise loops end every cuda and hip plan (docs/decisions.md, 2026-12-05 and
    # 2026-12-06: on the H200 the hip outputs without it ran at 0.05-0.93x of PyTorch)
    tail = [("vectorize_simt", dict(VECTORIZE))] if dst in SIMT else []
    return [_cache(dst), ("tensorize", {"target": dst})] + tail


def default_pipeline(src: str, dst: str) -> list[tuple[str, dict]]:
    return plans(src, dst)[0]


def pass_params(params: dict) -> dict:
    """A plan step's parameters without the plan's own (:data:`PLAN_KEYS`)."""
    return {k: v for k, v in params.items() if k not in PLAN_KEYS}


def deferred(plan: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """``plan`` with every step but the last marked :data:`DEFER_TEST`: only its final program is
    tested (the plan must be probed, so it needs a ``require``d step)."""
    return [(n, {**p, DEFER_TEST: True}) for n, p in plan[:-1]] + plan[-1:]


def alternatives(params: dict) -> list[dict]:
    """The parameter sets a plan step stands for, in the order they are tried: one per entry of
    its :data:`ALTERNATIVES` (merged over its other parameters), else its own parameters."""
    base = {k: v for k, v in params.items() if k != ALTERNATIVES}
    return [{**base, **a} for a in params.get(ALTERNATIVES) or ()] or [base]


def recover() -> tuple[str, dict]:
    """Loop recovery with its normalizations as alternatives, in the order the pass itself tried
    them before 2026-12-05 (``normalize=True``; docs/passes/loop_recovery.md)."""
    from xpiler.passes.loop_recovery import NORMALIZE
    return ("loop_recovery", {ALTERNATIVES: [{"normalize": a} for a in NORMALIZE]})


def recover_staged_conv() -> tuple[str, dict]:
    """Loop recovery that un-bands only a staged 2-D convolution (``staged_conv``), collapsing the
    task slices it leaves; required: refused (XP4002) where no band loop is lifted that way."""
    return ("loop_recovery", {"normalize": "task_slices", "staged_conv": True, REQUIRE: True})


def plans(src: str, dst: str) -> list[list[tuple[str, dict]]]:
    return row_plans(src, dst) + direction_plans(src, dst)


def row_plans(src: str, dst: str) -> list[list[tuple[str, dict]]]:
    """To cuda / hip, a row kernel (softmax, layer / RMS norm, gemv) is first bound one block per
    row (:data:`ROWS`): after loop recovery, a SIMT source's thread loops are made plain loops
    (passes/unthread.py) and a BANG source's blocked rows un-blocked (passes/unblock.py), each
    skipped (XP4002) where there is nothing to do. Probed: the plan is skipped unless that binding
    applies, and the direction's plans follow unchanged when it is skipped or does not verify."""
    if dst not in SIMT:
        return []
    prefix = [("detensorize", {"target": dst}), recover()]
    prefix += [("unthread", {})] if src in SIMT else [("unblock", {})] if src == "bang" else []
    bind = [("binding", {"target": dst, **ROWS, REQUIRE: True}), ("row_registers", {"target": dst, **ROW_REGS})]
    out = [prefix + bind + _finish(dst)]
    if src == "c":
        # an AVX-512 row kernel (softmax_avx512.c: lane-array reductions, 16-wide loops with masked
        # tails) made plain scalar row loops first (flatten_lanes rows=True: helpers inlined, lane
        # fusions with one check per pair, lane accumulators made scalars, each vector loop joined
        # with its tail; passes/flatten_lanes.py), then bound the same way; probed, after the plan
        # above so that a scalar row kernel never pays for it (docs/decisions.md, 2026-12-05)
        out.append(prefix + [("flatten_lanes", {"rows": True, REQUIRE: True})] + bind + _finish(dst))
    return out


def direction_plans(src: str, dst: str) -> list[list[tuple[str, dict]]]:
    general = [("detensorize", {"target": dst}), recover(), ("binding", {"target": dst})] + _finish(dst)
    if src in SIMT and dst in SIMT:
        # keep the thread structure (rebind to the other SIMT model directly) when that verifies;
        # otherwise go through sequential loops like every other direction
        # (a grid-stride kernel's launch sized from the problem first, :data:`REGRID`)
        retarget = [("detensorize", {"target": dst}),
                    ("binding", {"target": dst, "mode": "retarget", ALTERNATIVES: [dict(REGRID), {}]})] + _finish(dst)
        # a matrix kernel (gemm, bmm, conv) is worth re-deriving through loops when that reaches the
        # target's matrix instruction (MFMA on hip, WMMA for half on cuda): the driver first runs this
        # plan's passes without tests and skips it unless the `require`d step applies
        # (a shared-memory tiled matmul is un-tiled first, passes/untile.py; a no-op elsewhere)
        # (its cache step writes plain tiles: the wide float32 form would leave no WMMA to find)
        matrix = general[:2] + [("untile", {}), general[2], ("cache", {"target": dst}), _tensorize(dst, **{REQUIRE: True})]
        # a kernel without on-chip staging (one thread per output: NHWC / depthwise convolutions,
        # naive matmuls) is re-derived through loops when the cache pass then stages its reused
        # operand in shared memory / LDS; probed, skipped unless cache applies. No untile here: a
        # source that tiles itself keeps its own tiling through the retarget plan
        staged = general[:3] + [_cache(dst, **{REQUIRE: True}), ("tensorize", {"target": dst})]
        if dst != "cuda":
            return [matrix, staged, retarget, general]
        # a float32 matmul, tiled by the source or not (MFMA and shared-tile sources too), re-derived
        # through loops into the wide register-blocked form; probed, skipped unless it applies
        from xpiler.passes.cache import WIDE_DEFAULT
        wide = general[:2] + [("untile", {}), general[2],
                              ("cache", {"target": dst, **WIDE_DEFAULT, "as_alternative": True, REQUIRE: True}),
                              ("tensorize", {"target": dst})]
        return [matrix, wide, staged, retarget, general]
    # a row kernel's recovered thread loops (cyclic strides, a block's halving reduction tree) are
    # turned back into plain loops (passes/unthread.py) so that the bang / c passes see the row
    # loops (NRAM and __bang_* reductions, vectorization); probed, and the plan without it follows
    # unchanged when unthread does not apply or its plan does not verify
    if src in SIMT and dst == "bang":
        # a shared-memory tiled matmul is un-tiled after recovery so that the cache / tensorize passes
        # see the plain contraction (B in WRAM, __bang_matmul); a no-op for every other kernel
        plain = general[:2] + [("untile", {})] + general[2:]
        # (unthread before untile: the probe stops at any real refusal before the required step,
        # and untile refuses (XP4001) some kernels unthread applies to, e.g. self_attention.hip)
        # a kernel on short vectors (float4 through cast pointers) is first tried with its vectors
        # made lane loops and flattened to element loops (passes/flatten_lanes.py, vectors=True:
        # skipped unless the kernel has such vectors), then __bang_* vector ops
        lanes = general[:2] + [("flatten_lanes", {"vectors": True, REQUIRE: True})] + general[2:-1] + [
            ("tensorize", {"target": dst, REQUIRE: True})]
        return [lanes, plain[:2] + [("unthread", {REQUIRE: True})] + plain[2:], plain]
    # a float32 gemm / bmm nest going to c: the register-tiled AVX-512 form (passes/patterns/x86_gemm.py)
    # after un-tiling (SIMT) or un-blocking (BANG); probed (skipped unless that tensorize applies),
    # and the general plan follows unchanged when it does not verify. From SIMT the unthread plan
    # (row kernels) stays first: a gemm is no row kernel, so it is skipped there
    gemm_c = ("tensorize", {"target": "c", **GEMM_C, REQUIRE: True})
    if src in SIMT and dst == "c":
        return [general[:2] + [("unthread", {REQUIRE: True})] + general[2:],
                general[:2] + [("untile", {})] + general[2:-1] + [gemm_c], general]
    if src == "bang" and dst == "c":
        # a cycle op's flat ``seg[i % m]`` loop becomes rows of m (passes/modulo_split.py), and a
        # __bang_max / __bang_min whose index is never read a max / min fold (passes/argmax_value.py),
        # so that tensorize vectorizes them; each skipped (XP4002) where the program has no such loop
        rows_c = general[:-1] + [("modulo_split", {}), ("argmax_value", {})] + general[-1:]
        # a row loop over NRAM-staged padded rows (layernorm / rmsnorm.mlu) is un-staged into a
        # plain row body over global memory first (passes/unstage_rows.py, as to cuda / hip): loop
        # recovery collapses the tasks' row ranges into one loop over the rows, which binding makes
        # the OpenMP loop and tensorize vectorizes like layernorm.cu's rows. Only rows whose padded
        # tails all drop (tails="dropped"): a kept tail is a loop of per-lane selects the c
        # vectorizer leaves scalar (softmax.mlu's NEG_BIG tail), which the staged plan vectorizes.
        # Probed: the plans below follow unchanged where un-staging does not apply
        # (docs/decisions.md, 2026-12-06 "bang -> c row kernels are un-staged")
        unstaged = general[:1] + [("unstage_rows", {"tails": "dropped", REQUIRE: True}), recover(),
                                  ("argmax_value", {})] + general[2:]
        return [general[:2] + [("unblock", {})] + general[2:-1] + [gemm_c], unstaged, rows_c]
    if src == "bang" and dst in SIMT:
        # a BANG blocked matmul (NRAM/WRAM k slices, rows split over tasks) is un-blocked back to
        # the plain contraction (passes/unblock.py), so that cache / tensorize write shared-memory
        # (LDS) tiles and MFMA / WMMA for it; probed, the general plan when unblock does not apply
        matrix = general[:2] + [("unblock", {REQUIRE: True})] + general[2:]
        # a row loop over one NRAM-staged padded row (softmax.mlu) is un-staged into a plain row
        # body over global memory (passes/unstage_rows.py), which loop recovery collapses into one
        # loop over the rows, bound one block per row with shuffle reductions
        # (passes/block_rows.py); probed through the binding, the general plan when it does not apply
        rows = general[:1] + [("unstage_rows", {REQUIRE: True}), recover(), ("argmax_value", {}),
                              ("binding", {"target": dst, "rows": "block", "reduce": "shuffle", "block": 256,
                                           REQUIRE: True}), ("row_registers", {"target": dst, **ROW_REGS})] + _finish(dst)
        # a 2-D convolution staged through channel-padded, transposed NRAM / WRAM copies
        # (conv2d_nchw.mlu) is lifted back to its plain loop nest (passes/unband_conv.py), which the
        # cache pass then tiles like conv2d_nchw.c; probed, skipped unless the lift applies. Only here:
        # on c the staged form is faster than the lifted nest (docs/decisions.md, 2026-12-05)
        conv = general[:1] + [recover_staged_conv()] + general[2:]
        return [matrix, rows, conv, general]
    if src == "c" and dst == "bang":
        # a detensorized vector kernel (AVX-512 lane loops) is flattened to element loops
        # (passes/flatten_lanes.py) so that cache / tensorize stage it in NRAM and write __bang_*
        # vector ops; probed: run only when the flattening and a tensorize both apply, and the
        # general plan follows unchanged when this one does not verify
        lanes = general[:2] + [("flatten_lanes", {REQUIRE: True})] + general[2:-1] + [
            ("tensorize", {"target": dst, REQUIRE: True})]
        # a row kernel with lane-array reductions and masked tails (softmax_avx512.c): helpers
        # inlined, lane accumulators made scalars, each 16-wide loop joined with its masked tail
        # (flatten_lanes rows=True), then NRAM rows and __bang_* ops. Probed through tensorize, and
        # only its final program is tested (DEFER_TEST: with six tested steps the migration took
        # 2-3x as long as today's plan); the general plan follows unchanged when it is skipped or its final program
        # fails (docs/decisions.md, 2026-12-05 "softmax_avx512.c -> bang: one test per row plan")
        rows = deferred(general[:2] + [("flatten_lanes", {"rows": True, REQUIRE: True})] + general[2:-1] + [
            ("tensorize", {"target": dst, REQUIRE: True})])
        return [lanes, rows, general]
    if src == "c" and dst == "c":
        return [[("binding", {"target": "c"}), ("cache", {"target": "c"}), gemm_c],
                [("binding", {"target": "c"})] + _finish("c")]
    if src == "c" and dst in SIMT:
        # a detensorized AVX-512 elementwise kernel (lane loops inside a 16-wide loop, a masked tail)
        # is flattened to one element loop (passes/flatten_lanes.py), which the default tail then
        # moves as float4s; probed, skipped where there are no such lanes
        return [general[:2] + [("flatten_lanes", {REQUIRE: True})] + general[2:], general]
    return [general]
