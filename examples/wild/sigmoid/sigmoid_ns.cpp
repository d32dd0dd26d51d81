// sigmoid_ns.cpp: logistic sigmoid with the scalar function in a named namespace and called
// qualified (act::sigmoid), std::exp, an auto loop bound.
#include <cmath>

namespace act {

inline float sigmoid(float v)
{
    return 1.0f / (1.0f + std::exp(-v));
}

}  // namespace act

extern "C" void sigmoid_forward(const float* x, float* y, int n)
{
    for (int i = 0; i < n; ++i) {
        const auto v = x[i];
        y[i] = act::sigmoid(v);
    }
}
