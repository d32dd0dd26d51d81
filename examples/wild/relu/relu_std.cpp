// relu_std.cpp: ReLU written the way CPU operator libraries write it in C++: an extern "C"
// entry point, a small helper in an anonymous namespace, std::max, auto and static_cast.
#include <algorithm>
#include <cstddef>

namespace {

inline float relu_scalar(const float& v)
{
    return std::max(v, 0.0f);
}

}  // namespace

extern "C" void relu_forward(const float* input, float* output, int count)
{
    const auto n = static_cast<std::size_t>(count);
    for (std::size_t i = 0; i < n; ++i) {
        output[i] = relu_scalar(input[i]);
    }
}
