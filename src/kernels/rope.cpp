#include "kernels/rope.h"

#include <cmath>
#include <vector>

#include "core/parallel.h"

namespace lmrun::kernels {

void build_rope_cache(double theta, int64_t head_dim, int64_t max_position, float* cos_sin) {
    const int64_t half = head_dim / 2;
    // The frequencies once, not per position: the cache (40960 positions on Qwen3) is built at
    // start-up, and a pow per entry was most of its cost. Same values, bit for bit.
    std::vector<double> inv_freq(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i)
        inv_freq[size_t(i)] = std::pow(theta, -2.0 * double(i) / double(head_dim));
    parallel_for(max_position, [&](int64_t begin, int64_t end) {
        for (int64_t pos = begin; pos < end; ++pos) {
            float* row = cos_sin + pos * head_dim;
            for (int64_t i = 0; i < half; ++i) {
                double angle = double(pos) * inv_freq[size_t(i)];
                row[i] = float(std::cos(angle));
                row[half + i] = float(std::sin(angle));
            }
        }
    });
}

// Element-wise over half a head, so the compiler vectorises it (AVX2 here); the op is
// memory-light next to the matmuls around it and needs no hand-written ISA variants.
void apply_rope_token(float* x, int64_t num_heads, int64_t head_dim, int32_t position, const float* cos_sin) {
    const int64_t half = head_dim / 2;
    const float* cos = cos_sin + int64_t(position) * head_dim;
    const float* sin = cos + half;
    for (int64_t h = 0; h < num_heads; ++h) {
        float* first = x + h * head_dim;
        float* second = first + half;
        for (int64_t i = 0; i < half; ++i) {
            float a = first[i], b = second[i];
            first[i] = a * cos[i] - b * sin[i];
            second[i] = b * cos[i] + a * sin[i];
        }
    }
}

void apply_rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, int64_t token_stride,
                const int32_t* positions, const float* cos_sin) {
    auto rotate_tokens = [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t)
            apply_rope_token(x + t * token_stride, num_heads, head_dim, positions[t], cos_sin);
    };
    if (num_tokens * num_heads * head_dim < (1 << 15)) return rotate_tokens(0, num_tokens);
    parallel_for(num_tokens, rotate_tokens);
}

}  // namespace lmrun::kernels
