#include "kernels/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace lmrun::kernels {
namespace {

TEST(Rope, CacheHoldsCosThenSinOfHfAngles) {
    int64_t head_dim = 128, max_position = 4096;
    double theta = 1000000.0;
    std::vector<float> cache(size_t(head_dim * max_position));
    build_rope_cache(theta, head_dim, max_position, cache.data());
    for (int64_t pos : {0, 1, 17, 4095}) {
        for (int64_t i = 0; i < head_dim / 2; ++i) {
            double inv_freq = 1.0 / std::pow(theta, double(2 * i) / double(head_dim));
            ASSERT_EQ(cache[pos * head_dim + i], float(std::cos(pos * inv_freq))) << pos << " " << i;
            ASSERT_EQ(cache[pos * head_dim + head_dim / 2 + i], float(std::sin(pos * inv_freq)));
        }
    }
}

TEST(Rope, RotatesHalvesInPlaceInsideAStridedBuffer) {
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    for (int64_t head_dim : {8, 64, 128}) {
        int64_t num_tokens = 300, num_heads = 3, max_position = 2000;
        int64_t token_stride = num_heads * head_dim + 11;  // q inside a wider qkv row
        double theta = 10000.0;
        std::vector<float> cache(size_t(head_dim * max_position));
        build_rope_cache(theta, head_dim, max_position, cache.data());
        std::vector<float> x(size_t(num_tokens * token_stride));
        for (float& v : x) v = dist(rng);
        std::vector<int32_t> positions(static_cast<size_t>(num_tokens));
        for (auto& p : positions) p = int32_t(rng() % max_position);
        std::vector<float> original = x;
        apply_rope(x.data(), num_tokens, num_heads, head_dim, token_stride, positions.data(), cache.data());
        int64_t half = head_dim / 2;
        for (int64_t t = 0; t < num_tokens; ++t) {
            for (int64_t e = num_heads * head_dim; e < token_stride; ++e)
                ASSERT_EQ(x[t * token_stride + e], original[t * token_stride + e]) << "outside the heads";
            for (int64_t h = 0; h < num_heads; ++h) {
                const float* in = &original[t * token_stride + h * head_dim];
                const float* out = &x[t * token_stride + h * head_dim];
                for (int64_t i = 0; i < half; ++i) {
                    double angle = positions[t] / std::pow(theta, double(2 * i) / double(head_dim));
                    double c = std::cos(angle), s = std::sin(angle);
                    ASSERT_NEAR(out[i], in[i] * c - in[i + half] * s, 2e-6 * 4);
                    ASSERT_NEAR(out[i + half], in[i + half] * c + in[i] * s, 2e-6 * 4);
                }
            }
        }
    }
}

}  // namespace
}  // namespace lmrun::kernels
