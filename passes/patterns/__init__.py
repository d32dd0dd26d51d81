"""Instruction descriptions and loop-nest matchers shared by cache, pipeline and tensorize.

STYLE.md §4: an instruction is described by what it computes, beside its text.  The numpy
semantics of every ``__bang_*`` / ``_mm512_*`` op already live in
``xpiler.ir.intrinsics.REGISTRY``; the modules here add what tensorize needs on top:

* :mod:`.common`      small IR helpers (function replacement, let inlining, bounds);
* :mod:`.scalar_eval` a numpy evaluator of IR scalar expressions, used to decide whether a
                      loop body computes the same function as an instruction's semantics;
* :mod:`.bang`        the BANG descriptions: elementwise/activation ops (matched against the
                      registry semantics), matmul and mlp loop-nest descriptions;
* :mod:`.x86`         the AVX-512 lane-wise translation table (IR operator -> ``_mm512_*``).
"""
