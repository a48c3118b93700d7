// The KV arena is reserved address space: nothing is resident at start-up,
// memory is committed as blocks are first written, and the resident size never
// exceeds the reserved size (the --kv-cache-memory bound). Sizes count the element
// actually stored (int8 / fp8: one byte plus a scale per token and KV head), every layer's
// K, V and scales are disjoint, and the dtype names follow vLLM's --kv-cache-dtype.
#include "engine/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

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

KvCacheShape shape_of(DType dtype) {
    KvCacheShape shape;
    shape.num_layers = 3;
    shape.num_blocks = 5;
    shape.block_size = 16;
    shape.num_kv_heads = 2;
    shape.head_dim = 128;
    shape.dtype = dtype;
    return shape;
}

TEST(KvCache, BlockBytesCountTheStoredElement) {
    const int64_t rows = 2 * 3 * 16 * 2;  // K and V rows of one block over all layers
    EXPECT_EQ(shape_of(DType::F32).bytes_per_block(), rows * 128 * 4);
    EXPECT_EQ(shape_of(DType::BF16).bytes_per_block(), rows * 128 * 2);
    EXPECT_EQ(shape_of(DType::I8).bytes_per_block(), rows * (128 + 4));
    EXPECT_EQ(shape_of(DType::F8E4M3).bytes_per_block(), rows * (128 + 4));
    // The same memory holds 1.94x the tokens of a BF16 cache at head_dim 128.
    EXPECT_GT(double(shape_of(DType::BF16).bytes_per_block()) / double(shape_of(DType::I8).bytes_per_block()),
              1.9);
}

TEST(KvCache, LayersAndScalesAreDisjointViews) {
    for (DType dtype : {DType::BF16, DType::I8, DType::F8E4M3}) {
        KvCacheShape shape = shape_of(dtype);
        auto created = KvCache::create(shape);
        ASSERT_TRUE(created.ok()) << created.error().message;
        const KvCache& cache = *created.value();
        const int64_t data_bytes = shape.num_blocks * shape.block_size * shape.num_kv_heads * shape.head_dim *
                                   int64_t(dtype_size_bytes(dtype));
        const int64_t scale_bytes = shape.num_blocks * shape.block_size * shape.num_kv_heads * 4;
        std::set<std::pair<const char*, const char*>> ranges;
        for (const kernels::KvCacheLayer& layer : cache.layers()) {
            EXPECT_EQ(layer.dtype, dtype);
            ranges.insert(
                {static_cast<const char*>(layer.k), static_cast<const char*>(layer.k) + data_bytes});
            ranges.insert(
                {static_cast<const char*>(layer.v), static_cast<const char*>(layer.v) + data_bytes});
            ASSERT_EQ(layer.k_scale != nullptr, kernels::kv_dtype_is_scaled(dtype));
            if (!layer.k_scale) continue;
            ranges.insert({reinterpret_cast<const char*>(layer.k_scale),
                           reinterpret_cast<const char*>(layer.k_scale) + scale_bytes});
            ranges.insert({reinterpret_cast<const char*>(layer.v_scale),
                           reinterpret_cast<const char*>(layer.v_scale) + scale_bytes});
            std::memset(layer.k_scale, 0, size_t(scale_bytes));  // writable, inside the arena
        }
        const char* previous_end = nullptr;
        for (const auto& [begin, end] : ranges) {  // sorted by start: no overlaps
            if (previous_end) {
                EXPECT_GE(begin, previous_end);
            }
            previous_end = end;
        }
        const char* first = ranges.begin()->first;
        EXPECT_LE(previous_end - first, shape.total_bytes());
    }
}

TEST(KvCache, ResolvesVllmDtypeNames) {
    EXPECT_EQ(resolve_kv_cache_dtype("auto", DType::F32).value(), DType::F32);
    EXPECT_EQ(resolve_kv_cache_dtype("auto", DType::BF16).value(), DType::BF16);
    EXPECT_EQ(resolve_kv_cache_dtype("bfloat16", DType::F32).value(), DType::BF16);
    EXPECT_EQ(resolve_kv_cache_dtype("int8", DType::BF16).value(), DType::I8);
    EXPECT_EQ(resolve_kv_cache_dtype("fp8_e4m3", DType::BF16).value(), DType::F8E4M3);
    EXPECT_EQ(resolve_kv_cache_dtype("fp8", DType::BF16).value(), DType::F8E4M3);
    auto bad = resolve_kv_cache_dtype("fp8_e5m2", DType::BF16);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, ErrorKind::Unsupported);
    EXPECT_NE(bad.error().message.find("fp8_e5m2"), std::string::npos);
}

}  // namespace
}  // namespace lmrun::testing
