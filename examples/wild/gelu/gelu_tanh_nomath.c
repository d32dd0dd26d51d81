/* gelu_tanh_nomath.c: tanh-approximation GELU, written against M_PI and tanhf without
 * including <math.h> (the surrounding project's prelude provided them). */
#define GELU_COEF 0.044715f

void gelu_tanh_c(const float *inp, float *out, int N)
{
    const float s = sqrtf(2.0f / (float)M_PI);
    for (int i = 0; i < N; i++) {
        float x = inp[i];
        float cube = GELU_COEF * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(s * (x + cube)));
    }
}
