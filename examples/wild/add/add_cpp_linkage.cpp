// add_cpp_linkage.cpp: elementwise add with C++ linkage (no extern "C"), __restrict pointers,
// a nullptr guard and a bool flag: the C++ a CPU backend writes when nothing calls it from C.
#include <cstddef>

void add_elementwise(const float* __restrict a, const float* __restrict b, float* __restrict c, int n)
{
    if (a == nullptr || b == nullptr || c == nullptr) {
        return;
    }
    const bool even = (n % 2) == 0;
    const int paired = even ? n : n - 1;
    for (int i = 0; i < paired; i += 2) {
        c[i] = a[i] + b[i];
        c[i + 1] = a[i + 1] + b[i + 1];
    }
    if (!even) {
        c[n - 1] = a[n - 1] + b[n - 1];
    }
}
