// dense_ref_helpers.cpp: y = x W^T + b (PyTorch Linear layout W [out_f][in_f]) in the style of
// CPU reference code: a struct describing the shape passed by const reference, a helper returning
// through a reference parameter, std::fill, and an early return for empty work.
#include <algorithm>

struct LinearShape {
    int batch;
    int in_f;
    int out_f;
};

static inline void dot_accumulate(const float* a, const float* b, int n, float& acc)
{
    for (int i = 0; i < n; ++i) acc += a[i] * b[i];
}

static void linear_forward(const LinearShape& s, const float* x, const float* W, const float* bias, float* y)
{
    std::fill(y, y + static_cast<long>(s.batch) * s.out_f, 0.0f);
    for (int r = 0; r < s.batch; ++r) {
        for (int o = 0; o < s.out_f; ++o) {
            float acc = bias != nullptr ? bias[o] : 0.0f;
            dot_accumulate(x + static_cast<long>(r) * s.in_f, W + static_cast<long>(o) * s.in_f, s.in_f, acc);
            y[static_cast<long>(r) * s.out_f + o] = acc;
        }
    }
}

extern "C" void dense_forward(const float* x, const float* W, const float* b, float* y, int batch, int in_f, int out_f)
{
    if (batch <= 0 || out_f <= 0) return;
    const LinearShape s{batch, in_f, out_f};
    linear_forward(s, x, W, b, y);
}
