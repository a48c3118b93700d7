#include "engine/kv_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace lmrun {

namespace {
int64_t scale_bytes_per_row(DType dtype) {
    return kernels::kv_dtype_is_scaled(dtype) ? int64_t(sizeof(float)) : 0;
}
}  // namespace

int64_t KvCacheShape::bytes_per_block() const {
    return 2 * num_layers * block_size * num_kv_heads *
           (head_dim * int64_t(dtype_size_bytes(dtype)) + scale_bytes_per_row(dtype));
}

Result<DType> resolve_kv_cache_dtype(const std::string& name, DType weight_dtype) {
    if (name == "auto" || name.empty()) return weight_dtype == DType::F32 ? DType::F32 : DType::BF16;
    if (name == "bfloat16" || name == "bf16") return DType::BF16;
    if (name == "float32" || name == "f32") return DType::F32;
    if (name == "int8") return DType::I8;
    if (name == "fp8_e4m3" || name == "fp8") return DType::F8E4M3;
    return make_error(ErrorKind::Unsupported,
                      "--kv-cache-dtype: '{}' is not supported (auto, bfloat16, float32, int8, fp8_e4m3)",
                      name);
}

Result<std::unique_ptr<KvCache>> KvCache::create(const KvCacheShape& shape) {
    std::unique_ptr<KvCache> cache(new KvCache(shape));
    cache->arena_bytes_ = size_t(shape.total_bytes());
    if (cache->arena_bytes_ > 0) {
        void* arena = mmap(nullptr, cache->arena_bytes_, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (arena == MAP_FAILED) {
            return make_error(ErrorKind::ResourceExhausted,
                              "cannot reserve {} bytes of address space for the KV cache: {}",
                              cache->arena_bytes_, std::strerror(errno));
        }
        cache->arena_ = arena;
        // Huge pages spare the attention kernels TLB misses. Nothing is touched here: touching
        // every page would cost seconds per GiB at start-up and commit the whole budget.
        madvise(arena, cache->arena_bytes_, MADV_HUGEPAGE);  // advice only; failure is harmless
    }
    cache->bind_layers();
    return cache;
}

void KvCache::bind_layers() {
    const KvCacheShape& shape = shape_;
    const int64_t layer_bytes = shape.num_blocks * shape.block_size * shape.num_kv_heads * shape.head_dim *
                                int64_t(dtype_size_bytes(shape.dtype));
    const int64_t layer_scales = shape.num_blocks * shape.block_size * shape.num_kv_heads;
    auto* base = static_cast<char*>(arena_);
    auto* scales = reinterpret_cast<float*>(base + 2 * shape.num_layers * layer_bytes);
    for (int64_t layer = 0; layer < shape.num_layers; ++layer) {
        kernels::KvCacheLayer view{};
        view.k = base + layer * layer_bytes;
        view.v = base + (shape.num_layers + layer) * layer_bytes;
        if (kernels::kv_dtype_is_scaled(shape.dtype)) {
            view.k_scale = scales + layer * layer_scales;
            view.v_scale = scales + (shape.num_layers + layer) * layer_scales;
        }
        view.dtype = shape.dtype;
        view.num_blocks = shape.num_blocks;
        view.block_size = shape.block_size;
        view.num_kv_heads = shape.num_kv_heads;
        view.head_dim = shape.head_dim;
        layers_.push_back(view);
    }
}

int64_t KvCache::resident_bytes() const {
    if (!arena_) return 0;
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> pages((arena_bytes_ + page - 1) / page);
    if (mincore(arena_, arena_bytes_, pages.data()) != 0) return -1;
    int64_t resident = 0;
    for (unsigned char flags : pages) resident += flags & 1;
    return std::min(resident * int64_t(page), int64_t(arena_bytes_));
}

KvCache::~KvCache() {
    if (arena_) munmap(arena_, arena_bytes_);
}

}  // namespace lmrun
