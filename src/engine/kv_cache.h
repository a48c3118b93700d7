// The paged KV cache: ONE arena laid out [2, layers, num_blocks, block_size,
// kv_heads, head_dim] (K then V); int8 / fp8 caches follow it with their scales,
// [2, layers, num_blocks, block_size, kv_heads] F32 (one per token and KV head,
// kernels/attention.h). The arena's address space is reserved at
// start-up (MAP_NORESERVE, nothing touched); the OS commits a page when a step
// first writes a block there, so resident memory follows the load and never
// exceeds the reserved size (the --kv-cache-memory bound). A fresh page costs a
// page fault (the kernel zeroing it) in the step that first writes it: that is
// not a heap allocation, and it happens once per page.
#pragma once

#include <cstdint>
#include <memory>
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
    // Fails (ResourceExhausted) if the address space cannot be reserved.
    static Result<std::unique_ptr<KvCache>> create(const KvCacheShape& shape);
    ~KvCache();
    KvCache(const KvCache&) = delete;
    KvCache& operator=(const KvCache&) = delete;

    const KvCacheShape& shape() const { return shape_; }
    const std::vector<kernels::KvCacheLayer>& layers() const { return layers_; }

    // Address space reserved for the arena (= shape().total_bytes(), the upper bound).
    int64_t reserved_bytes() const { return int64_t(arena_bytes_); }
    // Bytes of the arena the OS holds in memory now (mincore); at most reserved_bytes().
    int64_t resident_bytes() const;

  private:
    explicit KvCache(const KvCacheShape& shape) : shape_(shape) {}
    void bind_layers();

    KvCacheShape shape_;
    void* arena_ = nullptr;
    size_t arena_bytes_ = 0;
    std::vector<kernels::KvCacheLayer> layers_;
};

}  // namespace lmrun
