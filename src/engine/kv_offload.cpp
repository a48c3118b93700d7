#include "engine/kv_offload.h"

#include <algorithm>

#include "core/check.h"
#include "core/logging.h"
#include "core/timer.h"

namespace lmrun {

KvOffload::KvOffload(std::unique_ptr<KvBlockStore> store, uint64_t model_id, const KvCache& cache,
                     BlockManager& block_manager, KvLoadMode load_mode, int64_t max_pending)
    : store_(std::move(store)),
      model_id_(model_id),
      cache_(cache),
      block_manager_(block_manager),
      policy_(load_mode),
      max_pending_(std::max<int64_t>(max_pending, 1)) {
    LMRUN_CHECK(store_ != nullptr, "KV offload without a store");
    const KvCacheShape& shape = cache.shape();
    layer_block_bytes_ =
        shape.block_size * shape.num_kv_heads * shape.head_dim * int64_t(dtype_size_bytes(shape.dtype));
    payload_bytes_ = shape.block_size * int64_t(sizeof(int32_t)) + 2 * shape.num_layers * layer_block_bytes_;
    loaded_token_ids_.resize(size_t(shape.block_size));
    load_segments_.reserve(size_t(1 + 2 * shape.num_layers));
    write_segments_.reserve(size_t(1 + 2 * shape.num_layers));
    chain_hashes_.reserve(size_t(shape.num_blocks));
    jobs_.resize(size_t(max_pending_));
    written_.reserve(size_t(max_pending_));
    block_manager_.record_newly_cached(true);
    writer_ = std::thread([this] { writer_loop(); });
}

KvOffload::~KvOffload() {
    flush();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    work_ready_.notify_all();
    writer_.join();
    block_manager_.record_newly_cached(false);
}

std::span<std::byte> KvOffload::block_slice(int kv, int64_t layer, int32_t block_id) const {
    const kernels::KvCacheLayer& view = cache_.layers()[size_t(layer)];
    auto* base = static_cast<std::byte*>(kv == 0 ? view.k : view.v);
    return {base + int64_t(block_id) * layer_block_bytes_, size_t(layer_block_bytes_)};
}

template <typename Byte>
void KvOffload::fill_segments(int32_t block_id, std::span<Byte> token_bytes,
                              std::vector<std::span<Byte>>& segments) const {
    segments.clear();
    segments.push_back(token_bytes);
    const int64_t num_layers = cache_.shape().num_layers;
    for (int kv = 0; kv < 2; ++kv) {
        for (int64_t layer = 0; layer < num_layers; ++layer)
            segments.push_back(block_slice(kv, layer, block_id));
    }
}

void KvOffload::fill_chain_hashes(const Sequence& seq, int64_t num_blocks) {
    const int64_t block_size = block_manager_.block_size();
    const std::span<const int32_t> token_ids(seq.token_ids);
    chain_hashes_.clear();
    uint64_t prefix_hash = BlockManager::kFirstPrefixHash;
    for (int64_t i = 0; i < num_blocks; ++i) {
        prefix_hash = block_manager_.hash_fn()(token_ids.subspan(size_t(i * block_size), size_t(block_size)),
                                               prefix_hash);
        chain_hashes_.push_back(prefix_hash);
    }
}

int64_t KvOffload::num_loadable_blocks(const Sequence& seq, int64_t first_block, int64_t max_blocks) {
    if (max_blocks <= 0) return 0;
    fill_chain_hashes(seq, first_block + max_blocks);
    int64_t count = 0;
    while (count < max_blocks && store_->contains({model_id_, chain_hashes_[size_t(first_block + count)]}))
        ++count;
    // One decision per admission: the crossover is per block, the same for all of them.
    if (count == 0 || !policy_.should_load(block_manager_.block_size(), payload_bytes_)) return 0;
    return count;
}

int64_t KvOffload::load_blocks(const Sequence& seq, int64_t first_block, int64_t num_blocks) {
    const int64_t block_size = block_manager_.block_size();
    fill_chain_hashes(seq, first_block + num_blocks);
    const std::span<const int32_t> token_ids(seq.token_ids);
    auto token_bytes = std::as_writable_bytes(std::span<int32_t>(loaded_token_ids_));
    int64_t num_loaded = 0;
    const double load_start = now_seconds();
    for (; num_loaded < num_blocks; ++num_loaded) {
        const int64_t index = first_block + num_loaded;
        const int32_t block_id = seq.block_table[size_t(index)];
        fill_segments<std::byte>(block_id, token_bytes, load_segments_);
        const double start = now_seconds();
        if (!store_->get({model_id_, chain_hashes_[size_t(index)]}, load_segments_)) break;
        policy_.record_load(payload_bytes_, now_seconds() - start);
        // The hash matched; the tokens must too (a collision is a miss, as in RAM).
        auto expected = token_ids.subspan(size_t(index * block_size), size_t(block_size));
        if (!std::equal(expected.begin(), expected.end(), loaded_token_ids_.begin())) break;
    }
    blocks_loaded_ += num_loaded;
    const double seconds = now_seconds() - load_start;
    if (num_loaded > 0) {
        log_info(
            "KV tier: loaded {} of {} blocks ({:.1f} MB) in {:.3f} s ({:.2f} GB/s; prefill measured at "
            "{:.0f} tokens/s)",
            num_loaded, num_blocks, double(num_loaded * payload_bytes_) / 1e6, seconds,
            double(num_loaded * payload_bytes_) / 1e9 / std::max(seconds, 1e-9),
            policy_.prefill_tokens_per_second());
    }
    return num_loaded;
}

void KvOffload::after_step() {
    unpin_written();
    std::span<const BlockManager::CachedBlock> cached = block_manager_.newly_cached();
    if (cached.empty()) return;
    int64_t num_queued = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const BlockManager::CachedBlock& block : cached) {
            if (num_pinned_ >= max_pending_ || !block_manager_.pin(block.block_id, block.hash)) {
                ++blocks_dropped_;
                continue;
            }
            ++num_pinned_;
            jobs_[(job_head_ + num_jobs_) % jobs_.size()] = WriteJob{
                {model_id_, block.hash}, block.block_id, block_manager_.block_tokens(block.block_id)};
            ++num_jobs_;
            ++num_queued;
        }
        blocks_queued_ += num_queued;
    }
    block_manager_.clear_newly_cached();
    if (num_queued > 0) work_ready_.notify_one();
}

void KvOffload::unpin_written() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int32_t block_id : written_) block_manager_.unpin(block_id);
    num_pinned_ -= int64_t(written_.size());
    written_.clear();
}

void KvOffload::flush() {
    {
        std::unique_lock<std::mutex> lock(mutex_);
        work_done_.wait(lock, [this] { return num_jobs_ == 0 && !writing_; });
    }
    unpin_written();
}

void KvOffload::writer_loop() {
    std::vector<std::span<const std::byte>>& segments = write_segments_;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
        work_ready_.wait(lock, [this] { return stop_ || num_jobs_ > 0; });
        if (num_jobs_ == 0) return;  // stop_ and nothing left
        const WriteJob job = jobs_[job_head_];
        job_head_ = (job_head_ + 1) % jobs_.size();
        --num_jobs_;
        writing_ = true;
        lock.unlock();
        fill_segments<const std::byte>(job.block_id, std::as_bytes(job.token_ids), segments);
        Status status = store_->put(job.key, segments);
        if (!status.ok()) log_warn("KV offload: {}", status.error().message);
        lock.lock();
        writing_ = false;
        written_.push_back(job.block_id);
        work_done_.notify_all();
    }
}

KvOffloadStats KvOffload::stats() const {
    KvOffloadStats stats;
    stats.store = store_->stats();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stats.blocks_queued = blocks_queued_;
        stats.blocks_dropped = blocks_dropped_;
    }
    stats.blocks_loaded = blocks_loaded_;
    stats.prefill_tokens_per_second = policy_.prefill_tokens_per_second();
    stats.read_bytes_per_second = policy_.read_bytes_per_second();
    stats.block_payload_bytes = payload_bytes_;
    return stats;
}

}  // namespace lmrun
