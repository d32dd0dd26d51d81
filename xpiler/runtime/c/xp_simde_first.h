/* xpiler: forced first include of an emulated c build whose kernel starts with <immintrin.h>
 * (xpiler/platforms/c.py): the SIMDe wrapper is then read before the harness's own headers, in one
 * precompiled piece (xpiler/platforms/pch.py), and the kernel's own include finds it done. */
#include <immintrin.h>
