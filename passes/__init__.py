"""The eleven transformation passes of a migration (installed as ``xpiler.passes``).

loop recovery, loop binding, split, fuse, reorder, expansion, contraction, cache, pipeline,
tensorize, detensorize — one module each (symbolic rewrite, legality check, parameter
enumerator, meta-prompt). Issue 5 builds them on the IR in ``xpiler.ir``.
"""
