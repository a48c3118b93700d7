#include "kernels/attention_inputs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/norm.h"
#include "kernels/rope.h"

namespace lmrun::kernels {
namespace {

struct CacheMemory {
    std::vector<uint8_t> k, v;
    std::vector<float> k_scale, v_scale;
    KvCacheLayer layer;
    CacheMemory(DType dtype, int64_t num_blocks, int64_t block_size, int64_t kv_heads, int64_t head_dim) {
        const size_t slots = size_t(num_blocks * block_size);
        const size_t bytes = slots * size_t(kv_heads * head_dim) * dtype_size_bytes(dtype);
        k.assign(bytes, 0x5a);  // not what a store writes: untouched slots stay recognisable
        v.assign(bytes, 0xa5);
        k_scale.assign(slots * size_t(kv_heads), -1.0f);
        v_scale = k_scale;
        const bool scaled = kv_dtype_is_scaled(dtype);
        layer = {k.data(),
                 v.data(),
                 dtype,
                 num_blocks,
                 block_size,
                 kv_heads,
                 head_dim,
                 scaled ? k_scale.data() : nullptr,
                 scaled ? v_scale.data() : nullptr};
    }
};

// The fused pass against its parts run one after another (the norms, the rotations, the store:
// each held to its scalar twin by its own tests): the same bytes, in the qkv buffer and the cache.
TEST(PrepareAttentionInputs, MatchesNormRopeAndStoreRunSeparately) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
    const int64_t num_heads = 4, num_kv_heads = 2, max_position = 600;
    for (int64_t head_dim : {64, 128}) {
        std::vector<float> cos_sin(size_t(max_position * head_dim));
        build_rope_cache(1e6, head_dim, max_position, cos_sin.data());
        std::vector<float> q_norm(static_cast<size_t>(head_dim)), k_norm(static_cast<size_t>(head_dim));
        for (float& w : q_norm) w = dist(rng);
        for (float& w : k_norm) w = dist(rng);
        // 1 token stays on the calling thread; 300 take the parallel path.
        for (int64_t num_tokens : {1, 7, 300}) {
            for (DType dtype : {DType::F32, DType::BF16, DType::I8, DType::F8E4M3}) {
                for (bool with_norm : {true, false}) {
                    const int64_t stride = (num_heads + 2 * num_kv_heads) * head_dim + 5;
                    std::vector<float> qkv(size_t(num_tokens * stride));
                    for (float& x : qkv) x = dist(rng);
                    std::vector<int32_t> positions(static_cast<size_t>(num_tokens)),
                        slots(static_cast<size_t>(num_tokens));
                    for (int64_t t = 0; t < num_tokens; ++t) {
                        positions[t] = int32_t(rng() % max_position);
                        slots[t] = t % 5 == 3 ? -1 : int32_t(2 * t + 1);  // every fifth token padding
                    }
                    const int64_t num_blocks = (2 * num_tokens + 16) / 16;
                    CacheMemory want_cache(dtype, num_blocks, 16, num_kv_heads, head_dim);
                    CacheMemory got_cache(dtype, num_blocks, 16, num_kv_heads, head_dim);
                    std::vector<float> want = qkv, got = qkv;

                    float* k = want.data() + num_heads * head_dim;
                    if (with_norm) {
                        rms_norm_heads(want.data(), num_tokens, num_heads, head_dim, stride, q_norm.data(),
                                       1e-6f);
                        rms_norm_heads(k, num_tokens, num_kv_heads, head_dim, stride, k_norm.data(), 1e-3f);
                    }
                    apply_rope(want.data(), num_tokens, num_heads, head_dim, stride, positions.data(),
                               cos_sin.data());
                    apply_rope(k, num_tokens, num_kv_heads, head_dim, stride, positions.data(),
                               cos_sin.data());
                    store_kvcache(k, k + num_kv_heads * head_dim, stride, num_tokens, slots.data(),
                                  want_cache.layer);

                    prepare_attention_inputs({got.data(), stride, num_heads, num_kv_heads, head_dim},
                                             num_tokens,
                                             with_norm ? HeadNorm{q_norm.data(), 1e-6f} : HeadNorm{},
                                             with_norm ? HeadNorm{k_norm.data(), 1e-3f} : HeadNorm{},
                                             positions.data(), cos_sin.data(), slots.data(), got_cache.layer);

                    const std::string where = "head_dim " + std::to_string(head_dim) + ", " +
                                              std::to_string(num_tokens) + " tokens, " +
                                              std::string(dtype_name(dtype)) + (with_norm ? ", norm" : "");
                    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << where;
                    ASSERT_EQ(got_cache.k, want_cache.k) << where;
                    ASSERT_EQ(got_cache.v, want_cache.v) << where;
                    ASSERT_EQ(got_cache.k_scale, want_cache.k_scale) << where;
                    ASSERT_EQ(got_cache.v_scale, want_cache.v_scale) << where;
                    // The rows did change: rotated (and normalised) in place, and stored.
                    ASSERT_NE(0, std::memcmp(got.data(), qkv.data(), size_t(head_dim) * sizeof(float)))
                        << where;
                    ASSERT_NE(got_cache.k, std::vector<uint8_t>(got_cache.k.size(), 0x5a)) << where;
                }
            }
        }
    }
}

}  // namespace
}  // namespace lmrun::kernels
