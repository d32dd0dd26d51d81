// gelu_tanh_mpi.cpp: tanh-approximated GELU as found in C++ inference code that relies on the
// project's common header for <cmath>: std::tanh, std::sqrt and M_PI are used, nothing is
// included here.
static inline float gelu_tanh_approx(float v)
{
    const float k = static_cast<float>(std::sqrt(2.0 / M_PI));
    const float inner = k * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + std::tanh(inner));
}

extern "C" void gelu_tanh_forward(const float* inp, float* out, int N)
{
    for (int i = 0; i < N; ++i) {
        out[i] = gelu_tanh_approx(inp[i]);
    }
}
