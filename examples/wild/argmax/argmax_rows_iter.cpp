// argmax_rows_iter.cpp: index of the first maximum of every row, with std::max_element and
// std::distance (iterator style), int32 output.
#include <algorithm>
#include <cstdint>
#include <iterator>

extern "C" void argmax_rows_iter(const float* x, std::int32_t* idx, int rows, int cols)
{
    for (int r = 0; r < rows; ++r) {
        const float* first = x + static_cast<std::ptrdiff_t>(r) * cols;
        const float* last = first + cols;
        idx[r] = static_cast<std::int32_t>(std::distance(first, std::max_element(first, last)));
    }
}
