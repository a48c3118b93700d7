// The paged KV cache: ONE arena laid out [2, layers, num_blocks, block_size,
// kv_heads, head_dim] (K then V), allocated once and never grown; int8 / fp8 caches
// follow it with their scales, [2, layers, num_blocks, block_size, kv_heads] F32 (one
// per token and KV head, kernels/attention.h). The arena is advised onto huge pages
// and every page is touched at creation, so the whole budget is resident from start-up
// and no step pays a page fault for a fresh block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "kernels/attention.h"

namespace lmrun {

struct KvCacheShape {
    int64_t num_layers = 0;
    int64_t num_blocks = 0;
    int64_t block_size = 0;
    int64_t num_kv_heads = 0;  // local to this rank
    int64_t head_dim = 0;
    DType dtype = DType::BF16;  // F32, BF16, I8 or F8E4M3

    int64_t bytes_per_block() const;  // K and V (and their scales) of one block across all layers
    int64_t total_bytes() const { return bytes_per_block() * num_blocks; }
};

// --kv-cache-dtype: "auto" (the weight dtype: F32 models keep an F32 cache, others BF16),
// "bfloat16", "float32", "int8", "fp8_e4m3" (or "fp8"), vLLM's names where they exist.
Result<DType> resolve_kv_cache_dtype(const std::string& name, DType weight_dtype);

class KvCache {
  public:
    explicit KvCache(const KvCacheShape& shape);
    ~KvCache();
    KvCache(const KvCache&) = delete;
    KvCache& operator=(const KvCache&) = delete;

    const KvCacheShape& shape() const { return shape_; }
    const std::vector<kernels::KvCacheLayer>& layers() const { return layers_; }

  private:
    KvCacheShape shape_;
    void* arena_ = nullptr;
    size_t arena_bytes_ = 0;
    std::vector<kernels::KvCacheLayer> layers_;
};

}  // namespace lmrun
