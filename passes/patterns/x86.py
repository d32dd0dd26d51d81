"""AVX-512 descriptions for tensorize on the ``c`` dialect: the entry points tensorize calls.

* :mod:`passes.patterns.x86_vec`: the lane-wise translation table (IR float32 operator ->
  ``_mm512_*`` op), the legality facts (subscripts advancing by one element, no lane reading
  another lane's element) and the probe check of every translated value;
* :mod:`passes.patterns.x86_loops`: which loops are tried (innermost first), reductions, and the
  16-lane main loop + one masked tail that replaces a loop;
* :mod:`passes.patterns.x86_stream`: non-temporal stores (alignment peel, ``_mm512_stream_ps``)
  for the main loop of a large elementwise loop (parameter ``stream``);
* :mod:`passes.patterns.x86_math`: vector helpers written into the output (``xp_exp512``,
  ``xp_erf512``, ``xp_tanh512``, ``xp_gelu512`` for exact gelu, recognized by
  :mod:`passes.patterns.x86_gelu`), plus the includes.

Functions without an AVX-512 form here (logf, powf) leave their loop scalar.
"""
from __future__ import annotations

LANES = 16


def sites(program, func, ops=None, stream=0, notes=None, stream_default=False):
    """Loops of ``func`` rewritten with AVX-512 (see :mod:`passes.patterns.x86_loops`); ``stream``:
    non-temporal stores from that many iterations on (:mod:`passes.patterns.x86_stream`)."""
    from . import x86_loops
    return x86_loops.sites(program, func, ops, stream, notes, stream_default)[0]


def finish(program):
    """Includes and vector-math helpers the rewritten loops need (:mod:`passes.patterns.x86_math`)."""
    from . import x86_math
    return x86_math.finish(program)
