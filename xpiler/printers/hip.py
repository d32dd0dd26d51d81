"""HIP printer (clang++-15 -x hip, gfx90a / gfx1100)."""
from __future__ import annotations

from ..ir import nodes as N
from .cuda import CudaPrinter


class HipPrinter(CudaPrinter):
    dialect = "hip"
    scalar_spellings = {"half", "__half", "_Float16", "__hip_bfloat16", "hip_bfloat16", "bool", "__bf16"}
    # bfloat16: HIP's own type of hip/hip_bfloat16.h (ROCm 5 and 6; xp_simt.h and hip_on_cuda.h alias it):
    # g++ 12 and clang 15 have no arithmetic __bf16, and nvcc (hip_on_cuda.h) none at all
    canonical_scalar = dict(CudaPrinter.canonical_scalar, float16="_Float16", bfloat16="hip_bfloat16")
    barrier_names = {"block": "__syncthreads", "fence": "__threadfence", "fence_block": "__threadfence_block"}

    def fragment(self, t):
        return super(CudaPrinter, self).fragment(t)

    def typedef(self, t):
        # clang accepts GCC/clang vector typedefs: printed as they are (not as cuda's structs)
        return super(CudaPrinter, self).typedef(t)

    def s_Launch(self, s: N.Launch):
        if s.style != "ggl":
            return super().s_Launch(s)
        args = [s.kernel, self.expr(s.grid, 2), self.expr(s.block, 2),
                self.expr(s.shmem, 2) if s.shmem is not None else "0",
                self.expr(s.stream, 2) if s.stream is not None else "0"]
        args += [self.expr(a, 2) for a in s.args]
        self.emit(f"hipLaunchKernelGGL({', '.join(args)});")
