/* rmsnorm_vec.c: RMS normalisation of one hidden vector (a single token), sum of squares
   accumulated in one scalar, then a scaling pass. */
#include <math.h>

void rmsnorm_vec(float *o, const float *x, const float *weight, int size)
{
    float ss = 0.0f;
    for (int j = 0; j < size; j++) {
        ss += x[j] * x[j];
    }
    ss /= size;
    ss += 1e-5f;
    ss = 1.0f / sqrtf(ss);
    for (int j = 0; j < size; j++) {
        o[j] = weight[j] * (ss * x[j]);
    }
}
