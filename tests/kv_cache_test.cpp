// The KV arena is reserved address space: nothing is resident at start-up,
// memory is committed as blocks are first written, and the resident size never
// exceeds the reserved size (the --kv-cache-memory bound).
#include "engine/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/model_runner.h"

namespace lmrun::testing {
namespace {

// 2 layers x 64 blocks x 256 tokens x 4 heads x 128 dims, BF16: 1 MiB a block, 64 MiB in all.
KvCacheShape large_shape() {
    KvCacheShape shape;
    shape.num_layers = 2;
    shape.num_blocks = 64;
    shape.block_size = 256;
    shape.num_kv_heads = 4;
    shape.head_dim = 128;
    shape.dtype = DType::BF16;
    return shape;
}

// Writes block `block` of every layer's K and V, as store_kvcache would.
void write_block(const KvCache& cache, int64_t block) {
    const KvCacheShape& shape = cache.shape();
    const size_t bytes = size_t(shape.block_size * shape.num_kv_heads * shape.head_dim) * 2;
    for (const kernels::KvCacheLayer& layer : cache.layers()) {
        std::memset(static_cast<char*>(layer.k) + block * bytes, 1, bytes);
        std::memset(static_cast<char*>(layer.v) + block * bytes, 1, bytes);
    }
}

TEST(KvCache, ResidentMemoryGrowsWithUseAndNeverPastTheReservation) {
    auto created = KvCache::create(large_shape());
    ASSERT_TRUE(created.ok()) << created.error().message;
    const KvCache& cache = *created.value();
    EXPECT_EQ(cache.reserved_bytes(), 64ll << 20);
    EXPECT_EQ(cache.reserved_bytes(), large_shape().total_bytes());
    EXPECT_EQ(cache.resident_bytes(), 0) << "nothing is touched at start-up";

    write_block(cache, 0);
    const int64_t after_one = cache.resident_bytes();
    EXPECT_GE(after_one, large_shape().bytes_per_block());
    // Even with 2 MiB huge pages, one block commits at most 4 regions (K and V of 2 layers).
    EXPECT_LE(after_one, 4 * (2ll << 20));

    int64_t previous = after_one;
    for (int64_t block = 1; block < 64; ++block) {
        write_block(cache, block);
        const int64_t resident = cache.resident_bytes();
        EXPECT_GE(resident, previous) << "block " << block;
        EXPECT_LE(resident, cache.reserved_bytes()) << "block " << block;
        previous = resident;
    }
    EXPECT_EQ(previous, cache.reserved_bytes()) << "every block written: the whole arena is resident";
}

TEST(KvCache, LayerViewsTileTheArenaWithoutOverlap) {
    auto created = KvCache::create(large_shape());
    ASSERT_TRUE(created.ok());
    const auto& layers = created.value()->layers();
    ASSERT_EQ(layers.size(), 2u);
    const int64_t layer_bytes = 64 * 256 * 4 * 128 * 2;
    EXPECT_EQ(static_cast<char*>(layers[1].k) - static_cast<char*>(layers[0].k), layer_bytes);
    EXPECT_EQ(static_cast<char*>(layers[0].v) - static_cast<char*>(layers[0].k), 2 * layer_bytes);
    EXPECT_EQ(layers[0].num_blocks, 64);
}

TEST(KvCache, DefaultBudgetIsFourGibCappedAtHalfTheAvailableMemory) {
    EXPECT_EQ(default_kv_cache_budget_bytes(100ll << 30), 4ll << 30);
    EXPECT_EQ(default_kv_cache_budget_bytes(8ll << 30), 4ll << 30);
    EXPECT_EQ(default_kv_cache_budget_bytes(2ll << 30), 1ll << 30);
}

}  // namespace
}  // namespace lmrun::testing
