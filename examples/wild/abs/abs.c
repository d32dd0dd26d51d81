/* abs.c: y = |x| for float32, plain C. The function is named abs, which stdlib.h declares as
 * int abs(int): this file only includes math.h, so it is valid C, but a harness that pulls in
 * stdlib.h must not see two abs. */
#include <math.h>

void abs(const float* x, float* y, int n)
{
    int i;
    for (i = 0; i < n; ++i)
        y[i] = fabsf(x[i]);
}
