// The KV cache arena: sizes count the element actually stored (int8 / fp8: one byte plus a
// scale per token and KV head), every layer's K, V and scales are disjoint, and the dtype
// names follow vLLM's --kv-cache-dtype.
#include "engine/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

namespace lmrun {
namespace {

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
        KvCache cache(shape);
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
            if (previous_end) EXPECT_GE(begin, previous_end);
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
}  // namespace lmrun
