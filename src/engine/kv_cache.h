// The paged KV cache: ONE arena laid out [2, layers, num_blocks, block_size,
// kv_heads, head_dim] (K then V), allocated once and never grown. The arena is
// advised onto huge pages and every page is touched at creation, so the whole
// budget is resident from start-up and no step pays a page fault for a fresh block.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "kernels/attention.h"

namespace lmrun {

struct KvCacheShape {
    int64_t num_layers = 0;
    int64_t num_blocks = 0;
    int64_t block_size = 0;
    int64_t num_kv_heads = 0;  // local to this rank
    int64_t head_dim = 0;
    DType dtype = DType::BF16;

    int64_t bytes_per_block() const;  // K and V of one block across all layers
    int64_t total_bytes() const { return bytes_per_block() * num_blocks; }
};

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
