// reverse_rows_ptr.cu: out[r][c] = in[r][cols-1-c], one thread per row, written with two
// walking pointers compared with <= and subtracted (pointer arithmetic, no index variable).
#include <cuda_runtime.h>

__global__ void reverse_rows(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* lo = in + (size_t)r * cols;
    const float* hi = lo + cols - 1;
    float* out_row = out + (size_t)r * cols;
    while (lo <= hi) {
        ptrdiff_t k = lo - (in + (size_t)r * cols);
        out_row[cols - 1 - k] = *lo;
        out_row[k] = *hi;
        ++lo;
        --hi;
    }
}
