/* dot_i8.c: int8 dot product accumulated in int32, written to out[0] (a 1 x n gemv). */
#include <stdint.h>

void dot_i8(const int8_t *a, const int8_t *b, int32_t *out, int n)
{
    int32_t acc = 0;
    for (int i = 0; i < n; ++i) {
        acc += (int32_t)a[i] * (int32_t)b[i];
    }
    out[0] = acc;
}
