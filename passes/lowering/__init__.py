"""Lowering tables of the detensorize pass, one module per intrinsic family:
bang (``__bang_*``, ``__memcpy``), x86 (AVX-512 / VNNI), wmma (nvcuda::wmma), mfma (AMD MFMA
builtins), warp (shuffles, ballot/any/all).  ``common`` holds the IR builders they share."""
