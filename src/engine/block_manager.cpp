#include "engine/block_manager.h"

#include <algorithm>

#include <xxhash.h>

#include "core/check.h"

namespace lmrun {

uint64_t default_block_hash(std::span<const int32_t> token_ids, uint64_t prefix_hash) {
    return XXH64(token_ids.data(), token_ids.size_bytes(), prefix_hash);
}

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size, bool enable_prefix_caching,
                           BlockHashFn hash_fn)
    : block_size_(block_size), enable_prefix_caching_(enable_prefix_caching), hash_fn_(hash_fn) {
    LMRUN_CHECK(num_blocks >= 1 && block_size >= 1, "bad KV cache shape");
    LMRUN_CHECK(hash_fn != nullptr, "no block hash function");
    blocks_.resize(static_cast<size_t>(num_blocks));
    if (enable_prefix_caching_) {
        block_token_ids_.resize(static_cast<size_t>(num_blocks * block_size));
        hash_to_block_id_.reserve(static_cast<size_t>(num_blocks));
    }
    for (int64_t i = 0; i < num_blocks; ++i) push_free_back(static_cast<int32_t>(i));
}

double BlockManager::usage() const {
    return static_cast<double>(num_blocks() - num_free_blocks_) / static_cast<double>(num_blocks());
}

bool BlockManager::is_cached(int32_t block_id) const {
    const Block& block = blocks_[static_cast<size_t>(block_id)];
    if (!block.has_hash) return false;
    auto it = hash_to_block_id_.find(block.hash);
    return it != hash_to_block_id_.end() && it->second == block_id;
}

std::span<const int32_t> BlockManager::stored_tokens(int32_t block_id) const {
    return std::span<const int32_t>(block_token_ids_)
        .subspan(static_cast<size_t>(block_id * block_size_), static_cast<size_t>(block_size_));
}

int64_t BlockManager::match_prefix(const Sequence& seq, std::vector<int32_t>& cached_block_ids) const {
    LMRUN_CHECK(seq.block_table.empty(), "match_prefix on a sequence that holds blocks");
    cached_block_ids.clear();
    if (!enable_prefix_caching_) return 0;
    const int64_t max_cached_blocks = this->max_cached_blocks(seq);
    const std::span<const int32_t> token_ids(seq.token_ids);
    uint64_t prefix_hash = kFirstPrefixHash;
    for (int64_t i = 0; i < max_cached_blocks; ++i) {
        auto block_tokens =
            token_ids.subspan(static_cast<size_t>(i * block_size_), static_cast<size_t>(block_size_));
        const uint64_t hash = hash_fn_(block_tokens, prefix_hash);
        auto it = hash_to_block_id_.find(hash);
        if (it == hash_to_block_id_.end()) break;
        // A hash match alone could be a collision: the content must match too.
        const int32_t block_id = it->second;
        if (blocks_[static_cast<size_t>(block_id)].prefix_hash != prefix_hash) break;
        auto stored = stored_tokens(block_id);
        if (!std::equal(stored.begin(), stored.end(), block_tokens.begin())) break;
        cached_block_ids.push_back(block_id);
        prefix_hash = hash;
    }
    return static_cast<int64_t>(cached_block_ids.size()) * block_size_;
}

int64_t BlockManager::num_reusable(std::span<const int32_t> cached_block_ids) const {
    int64_t count = 0;
    for (int32_t block_id : cached_block_ids) count += blocks_[static_cast<size_t>(block_id)].ref_count == 0;
    return count;
}

bool BlockManager::can_allocate(const Sequence& seq, std::span<const int32_t> cached_block_ids,
                                int64_t num_new_tokens) const {
    const auto num_cached_blocks = static_cast<int64_t>(cached_block_ids.size());
    LMRUN_CHECK(num_cached_blocks == 0 || seq.block_table.empty(),
                "cached blocks for a sequence with blocks");
    const int64_t num_computed =
        num_cached_blocks > 0 ? num_cached_blocks * block_size_ : seq.num_computed_tokens;
    const int64_t num_held = static_cast<int64_t>(seq.block_table.size()) + num_cached_blocks;
    const int64_t num_needed = std::max<int64_t>(num_blocks_for(num_computed + num_new_tokens) - num_held, 0);
    // Cached blocks with no owner sit in the free list: taking them shrinks it.
    return num_needed <= num_free_blocks_ - num_reusable(cached_block_ids);
}

void BlockManager::allocate(Sequence& seq, std::span<const int32_t> cached_block_ids,
                            int64_t num_new_tokens) {
    LMRUN_CHECK(can_allocate(seq, cached_block_ids, num_new_tokens), "allocate without room");
    const bool is_fresh = seq.block_table.empty() && seq.num_computed_tokens == 0;
    for (int32_t block_id : cached_block_ids) {
        take_cached(block_id);
        seq.block_table.push_back(block_id);
    }
    if (is_fresh) {
        const auto num_cached_blocks = static_cast<int64_t>(cached_block_ids.size());
        seq.num_computed_tokens = num_cached_blocks * block_size_;
        seq.num_cached_tokens = seq.num_computed_tokens;
        seq.num_hashed_blocks = num_cached_blocks;
        if (enable_prefix_caching_) {
            prefix_cache_queries_ += std::max<int64_t>(seq.num_tokens() - 1, 0) / block_size_;
            prefix_cache_hits_ += num_cached_blocks;
        }
    }
    may_append(seq, num_new_tokens);
}

bool BlockManager::can_append(const Sequence& seq, int64_t num_new_tokens) const {
    const int64_t num_needed = num_blocks_for(seq.num_computed_tokens + num_new_tokens) -
                               static_cast<int64_t>(seq.block_table.size());
    return num_needed <= num_free_blocks_;
}

void BlockManager::may_append(Sequence& seq, int64_t num_new_tokens) {
    const int64_t num_needed = num_blocks_for(seq.num_computed_tokens + num_new_tokens);
    LMRUN_CHECK(num_needed - static_cast<int64_t>(seq.block_table.size()) <= num_free_blocks_,
                "append without room");
    while (static_cast<int64_t>(seq.block_table.size()) < num_needed)
        seq.block_table.push_back(allocate_block());
}

void BlockManager::record_newly_cached(bool enable) {
    record_newly_cached_ = enable && enable_prefix_caching_;
    newly_cached_.clear();
    if (record_newly_cached_) newly_cached_.reserve(blocks_.size());
}

bool BlockManager::pin(int32_t block_id, uint64_t hash) {
    const Block& block = blocks_[static_cast<size_t>(block_id)];
    if (!block.has_hash || block.hash != hash) return false;
    take_cached(block_id);
    return true;
}

void BlockManager::cache_computed_blocks(Sequence& seq, bool record) {
    if (!enable_prefix_caching_) return;
    const int64_t num_full_blocks = seq.num_computed_tokens / block_size_;
    LMRUN_CHECK(num_full_blocks <= static_cast<int64_t>(seq.block_table.size()),
                "computed past the block table");
    const std::span<const int32_t> token_ids(seq.token_ids);
    for (int64_t i = seq.num_hashed_blocks; i < num_full_blocks; ++i) {
        const int32_t block_id = seq.block_table[static_cast<size_t>(i)];
        Block& block = blocks_[static_cast<size_t>(block_id)];
        const uint64_t prefix_hash =
            i == 0 ? kFirstPrefixHash
                   : blocks_[static_cast<size_t>(seq.block_table[static_cast<size_t>(i - 1)])].hash;
        auto block_tokens =
            token_ids.subspan(static_cast<size_t>(i * block_size_), static_cast<size_t>(block_size_));
        block.hash = hash_fn_(block_tokens, prefix_hash);
        block.prefix_hash = prefix_hash;
        block.has_hash = true;
        std::copy(block_tokens.begin(), block_tokens.end(),
                  block_token_ids_.begin() + static_cast<std::ptrdiff_t>(block_id * block_size_));
        // An equal (or colliding) block registered earlier keeps its entry; this one
        // is then simply not findable.
        hash_to_block_id_.try_emplace(block.hash, block_id);
        if (record && record_newly_cached_ && newly_cached_.size() < newly_cached_.capacity())
            newly_cached_.push_back({block_id, block.hash});
    }
    seq.num_hashed_blocks = std::max(seq.num_hashed_blocks, num_full_blocks);
}

void BlockManager::deallocate(Sequence& seq) {
    // Tail first: the LRU evicts a sequence's last blocks before its shared prefix.
    for (auto it = seq.block_table.rbegin(); it != seq.block_table.rend(); ++it) release_block(*it);
    seq.block_table.clear();
    seq.num_computed_tokens = 0;
    seq.num_hashed_blocks = 0;
}

void BlockManager::take_cached(int32_t block_id) {
    Block& block = blocks_[static_cast<size_t>(block_id)];
    if (block.ref_count == 0) unlink_free(block_id);
    ++block.ref_count;
}

int32_t BlockManager::allocate_block() {
    const int32_t block_id = free_head_;
    LMRUN_CHECK(block_id >= 0, "no free KV block");
    unlink_free(block_id);
    Block& block = blocks_[static_cast<size_t>(block_id)];
    if (block.has_hash) {
        // Reused for other tokens: it must no longer be found under its old content.
        auto it = hash_to_block_id_.find(block.hash);
        if (it != hash_to_block_id_.end() && it->second == block_id) hash_to_block_id_.erase(it);
        block.has_hash = false;
    }
    block.ref_count = 1;
    return block_id;
}

void BlockManager::release_block(int32_t block_id) {
    Block& block = blocks_[static_cast<size_t>(block_id)];
    LMRUN_CHECK(block.ref_count > 0, "double free of KV block %d", block_id);
    if (--block.ref_count == 0) push_free_back(block_id);
}

void BlockManager::push_free_back(int32_t block_id) {
    Block& block = blocks_[static_cast<size_t>(block_id)];
    block.prev_free = free_tail_;
    block.next_free = -1;
    block.is_free = true;
    if (free_tail_ >= 0)
        blocks_[static_cast<size_t>(free_tail_)].next_free = block_id;
    else
        free_head_ = block_id;
    free_tail_ = block_id;
    ++num_free_blocks_;
}

void BlockManager::unlink_free(int32_t block_id) {
    Block& block = blocks_[static_cast<size_t>(block_id)];
    LMRUN_CHECK(block.is_free, "KV block %d is not free", block_id);
    if (block.prev_free >= 0)
        blocks_[static_cast<size_t>(block.prev_free)].next_free = block.next_free;
    else
        free_head_ = block.next_free;
    if (block.next_free >= 0)
        blocks_[static_cast<size_t>(block.next_free)].prev_free = block.prev_free;
    else
        free_tail_ = block.prev_free;
    block.prev_free = block.next_free = -1;
    block.is_free = false;
    --num_free_blocks_;
}

}  // namespace lmrun
