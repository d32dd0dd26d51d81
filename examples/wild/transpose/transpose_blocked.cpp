// transpose_blocked.cpp: out[c][r] = in[r][c], cache-blocked with a #define'd block size and
// std::min for the edge blocks; blocks of rows in parallel.
#include <algorithm>

#define BLOCK 32

extern "C" void transpose_blocked(const float* in, float* out, int rows, int cols)
{
#pragma omp parallel for
    for (int rb = 0; rb < rows; rb += BLOCK) {
        for (int cb = 0; cb < cols; cb += BLOCK) {
            const int re = std::min(rb + BLOCK, rows);
            const int ce = std::min(cb + BLOCK, cols);
            for (int r = rb; r < re; ++r)
                for (int c = cb; c < ce; ++c) out[static_cast<long>(c) * rows + r] = in[static_cast<long>(r) * cols + c];
        }
    }
}
