// KvBlockStore: a tier of KV blocks below the RAM prefix cache (issue 14, part 3). A block is
// stored and found by a KvBlockKey: the identity of what computed it (model weights, dtype,
// KV layout, tensor-parallel rank) and the prefix cache's chained block hash, so equal keys
// mean the same KV for the same prefix. The payload is opaque bytes (the block's token ids,
// then its K and V per layer, kv_offload.h), handed over as segments so that a store can read
// or write them in place without a staging copy.
//
// Implementations: KvDiskStore (kv_disk_store.h, a directory on local disk shared by every
// process of the machine). A remote store (Mooncake, LMCache, Redis) would be another
// implementation of these three calls; the engine side (KvOffload) does not change.
//
// Contract: get() fills the segments only from a complete, verified payload; anything else
// (absent, torn, corrupt, another key or size) is a miss, never an error or a crash. put() may
// evict other blocks to stay within the store's bound and may fail (disk full): a failed put
// is only a later miss. Thread-safe: the engine reads on its thread while a writer thread puts.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/result.h"

namespace lmrun {

struct KvBlockKey {
    uint64_t model_id = 0;    // kv_model_id(): weights, dtypes, KV shape, tp rank / size
    uint64_t block_hash = 0;  // BlockManager's chained hash of the block's tokens
    bool operator==(const KvBlockKey&) const = default;
};

struct KvBlockStoreStats {
    int64_t hits = 0;           // get() that returned a block
    int64_t misses = 0;         // get() that found nothing usable
    int64_t corrupt = 0;        // of the misses: a payload that failed its checks (deleted)
    int64_t bytes_read = 0;     // payload bytes of the hits
    int64_t puts = 0;           // blocks stored
    int64_t bytes_written = 0;  // payload bytes stored
    int64_t evictions = 0;      // blocks removed to stay within the bound
    int64_t failed_puts = 0;    // puts that could not be completed (I/O error)
};

class KvBlockStore {
  public:
    virtual ~KvBlockStore() = default;

    // Whether the block is (probably) there, without reading it: a later get() may still miss.
    virtual bool contains(const KvBlockKey& key) = 0;
    // Fills `segments` (in order; their sizes add up to the payload's) with the stored payload.
    // False on a miss; the segments' contents are then unspecified.
    virtual bool get(const KvBlockKey& key, std::span<const std::span<std::byte>> segments) = 0;
    // Stores the concatenation of `segments` under `key` (replacing an equal key).
    virtual Status put(const KvBlockKey& key, std::span<const std::span<const std::byte>> segments) = 0;

    KvBlockStoreStats stats() const {
        return {stats_.hits.load(),       stats_.misses.load(),     stats_.corrupt.load(),
                stats_.bytes_read.load(), stats_.puts.load(),       stats_.bytes_written.load(),
                stats_.evictions.load(),  stats_.failed_puts.load()};
    }

  protected:
    struct AtomicStats {
        std::atomic<int64_t> hits{0}, misses{0}, corrupt{0}, bytes_read{0};
        std::atomic<int64_t> puts{0}, bytes_written{0}, evictions{0}, failed_puts{0};
    };
    AtomicStats stats_;
};

}  // namespace lmrun
