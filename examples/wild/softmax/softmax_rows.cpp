// softmax_rows.cpp: row-wise softmax, C++ style: helpers in a named namespace, a running
// maximum passed by reference, std::exp / std::max, one pass for the max and the sum.
#include <cmath>
#include <algorithm>

namespace cpu_ops {

inline void update_max(float& running, float v)
{
    running = std::max(running, v);
}

inline float exp_and_sum(const float* row, float* dst, int cols, float row_max)
{
    float total = 0.0f;
    for (int j = 0; j < cols; ++j) {
        const float e = std::exp(row[j] - row_max);
        dst[j] = e;
        total += e;
    }
    return total;
}

}  // namespace cpu_ops

extern "C" void softmax_rows(const float* x, float* y, int rows, int cols)
{
    for (int r = 0; r < rows; ++r) {
        const float* row = x + static_cast<long>(r) * cols;
        float* dst = y + static_cast<long>(r) * cols;
        float m = row[0];
        for (int j = 1; j < cols; ++j) {
            cpu_ops::update_max(m, row[j]);
        }
        const float total = cpu_ops::exp_and_sum(row, dst, cols, m);
        const float inv = 1.0f / total;
        for (int j = 0; j < cols; ++j) {
            dst[j] *= inv;
        }
    }
}
