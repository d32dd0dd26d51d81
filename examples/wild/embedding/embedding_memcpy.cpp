// embedding_memcpy.cpp: token embedding lookup, one std::memcpy per row; out-of-range ids give
// a zero row (std::memset). Tokens in parallel.
#include <cstring>
#include <cstdint>

extern "C" void embedding_lookup(const std::int32_t* ids, const float* table, float* out, int tokens, int vocab, int dim)
{
    const std::size_t row_bytes = static_cast<std::size_t>(dim) * sizeof(float);
#pragma omp parallel for
    for (int t = 0; t < tokens; ++t) {
        const std::int32_t id = ids[t];
        float* dst = out + static_cast<std::size_t>(t) * dim;
        if (id < 0 || id >= vocab) {
            std::memset(dst, 0, row_bytes);
            continue;
        }
        std::memcpy(dst, table + static_cast<std::size_t>(id) * dim, row_bytes);
    }
}
