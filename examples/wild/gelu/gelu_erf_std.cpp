// gelu_erf_std.cpp: exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))), with std::erf and the
// M_SQRT1_2 constant, float math throughout via static_cast.
#include <cmath>

namespace ops {
template <typename T>
inline T gelu(T v)
{
    return static_cast<T>(0.5) * v * (static_cast<T>(1) + std::erf(v * static_cast<T>(M_SQRT1_2)));
}
}  // namespace ops

extern "C" void gelu_erf_fwd(const float* in, float* out, long n)
{
    for (long i = 0; i < n; ++i) out[i] = ops::gelu<float>(in[i]);
}
