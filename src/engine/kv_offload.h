// KvOffload: the engine's side of the KV tier below RAM (--kv-offload-dir). It connects
// the BlockManager and the KV arena to a KvBlockStore:
//
// Writing (write-through): after every step, the blocks the step newly cached (full,
// computed, hashed) are pinned in RAM and queued for a background writer thread, which
// copies each straight from the arena into the store under (model id, chained block hash)
// and hands it back to be unpinned after a later step. Pinned blocks are bounded
// (max_pending); when that many are in flight, newer blocks are not written (counted as
// dropped). The engine thread never waits for the disk and a decode step allocates nothing.
// Writing when a block becomes full, rather than when RAM evicts it, is what makes the tier
// survive a crash or restart.
//
// Reading (PrefixLoader): at admission the scheduler asks how many blocks after the RAM
// prefix-cache hit the store holds (continuing the same hash chain), and if KvLoadPolicy says
// loading beats recomputing, has them read into the sequence's fresh blocks before the step
// runs. A block that fails to load (torn, corrupt, evicted meanwhile, tokens not matching) ends
// the loaded run there; the rest is computed.
//
// Payload of a block: its block_size token ids (checked on load against the sequence, so a
// hash collision is a miss) then, for K and then V, each layer's [block_size, kv_heads,
// head_dim] slice of the arena.
//
// Thread use: everything but the writer thread runs on the engine thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/block_manager.h"
#include "engine/kv_block_store.h"
#include "engine/kv_cache.h"
#include "engine/kv_load_policy.h"
#include "engine/scheduler.h"

namespace lmrun {

struct KvOffloadStats {
    KvBlockStoreStats store;
    int64_t blocks_loaded = 0;             // blocks read into RAM instead of computed
    int64_t blocks_queued = 0;             // blocks handed to the writer
    int64_t blocks_dropped = 0;            // newly cached blocks not written: too many in flight
    double prefill_tokens_per_second = 0;  // KvLoadPolicy's measurements (0 = none yet)
    double read_bytes_per_second = 0;
    int64_t block_payload_bytes = 0;  // one block's payload (token ids, K and V of every layer)
};

class KvOffload final : public PrefixLoader {
  public:
    // Starts the writer thread and has block_manager record newly cached blocks. `cache` and
    // `block_manager` must outlive this object.
    KvOffload(std::unique_ptr<KvBlockStore> store, uint64_t model_id, const KvCache& cache,
              BlockManager& block_manager, KvLoadMode load_mode, int64_t max_pending);
    // Writes every queued block (so that the next engine on the same store finds them), then
    // stops the writer.
    ~KvOffload() override;
    KvOffload(const KvOffload&) = delete;
    KvOffload& operator=(const KvOffload&) = delete;

    int64_t num_loadable_blocks(const Sequence& seq, int64_t first_block, int64_t max_blocks) override;
    int64_t load_blocks(const Sequence& seq, int64_t first_block, int64_t num_blocks) override;

    // After each step: unpins written blocks and queues the newly cached ones.
    void after_step();
    // A step that computed num_tokens prompt tokens took `seconds` (the crossover's prefill rate).
    void record_prefill(int64_t num_tokens, double seconds) { policy_.record_prefill(num_tokens, seconds); }
    // Waits until every queued block is written and unpinned.
    void flush();

    KvOffloadStats stats() const;
    uint64_t model_id() const { return model_id_; }
    int64_t block_payload_bytes() const { return payload_bytes_; }

  private:
    struct WriteJob {
        KvBlockKey key;
        int32_t block_id;
        std::span<const int32_t> token_ids;  // the BlockManager's copy, stable while pinned
    };

    void writer_loop();
    void unpin_written();
    // Arena bytes of one block's K (kv = 0) or V (kv = 1) in one layer.
    std::span<std::byte> block_slice(int kv, int64_t layer, int32_t block_id) const;
    // The block's payload segments: token ids, then K and V of every layer.
    template <typename Byte>
    void fill_segments(int32_t block_id, std::span<Byte> token_bytes,
                       std::vector<std::span<Byte>>& segments) const;
    void fill_chain_hashes(const Sequence& seq, int64_t num_blocks);

    std::unique_ptr<KvBlockStore> store_;
    uint64_t model_id_;
    const KvCache& cache_;
    BlockManager& block_manager_;
    KvLoadPolicy policy_;
    int64_t layer_block_bytes_;  // one layer's K (or V) slice of one block
    int64_t payload_bytes_;
    const int64_t max_pending_;
    int64_t num_pinned_ = 0;  // engine thread: queued + being written + written, not yet unpinned

    // Engine thread scratch (reserved up front).
    std::vector<uint64_t> chain_hashes_;
    std::vector<int32_t> loaded_token_ids_;
    std::vector<std::span<std::byte>> load_segments_;

    // Shared with the writer thread, under mutex_. Both rings hold at most max_pending entries.
    mutable std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable work_done_;
    std::vector<WriteJob> jobs_;
    size_t job_head_ = 0, num_jobs_ = 0;
    bool writing_ = false;
    std::vector<int32_t> written_;                            // block ids to unpin
    std::vector<std::span<const std::byte>> write_segments_;  // the writer thread's (reserved here)
    bool stop_ = false;
    int64_t blocks_loaded_ = 0, blocks_queued_ = 0, blocks_dropped_ = 0;
    std::thread writer_;
};

}  // namespace lmrun
