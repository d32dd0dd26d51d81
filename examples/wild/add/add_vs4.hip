// add_vs4.hip: elementwise add through a GCC/clang vector type declared with a using-alias and
// __vector_size__ (the spelling AMD sample code uses for floatx4), plus a scalar tail.
#include <hip/hip_runtime.h>

using floatx4 = __attribute__((__vector_size__(4 * sizeof(float)))) float;

__global__ void add_vs4_kernel(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ c, int n)
{
    const int quads = n / 4;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < quads) {
        const floatx4 va = reinterpret_cast<const floatx4*>(a)[i];
        const floatx4 vb = reinterpret_cast<const floatx4*>(b)[i];
        reinterpret_cast<floatx4*>(c)[i] = va + vb;
    }
    const int t = 4 * quads + i;
    if (i < 4 && t < n)
        c[t] = a[t] + b[t];
}
