// softmax_vec.cpp: softmax of one vector, the way a plain CPU reference writes it: a running
// maximum with fmaxf, a running sum of the exponentials, then a normalising pass.
#include <cmath>

extern "C" void softmax_vec(const float* input, float* output, int n)
{
    float max_val = -INFINITY;
    for (int i = 0; i < n; ++i) {
        max_val = fmaxf(max_val, input[i]);
    }
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) {
        float e = expf(input[i] - max_val);
        output[i] = e;
        sum += e;
    }
    for (int i = 0; i < n; ++i) {
        output[i] = output[i] / sum;
    }
}
