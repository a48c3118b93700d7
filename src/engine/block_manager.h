// BlockManager: hands out the KV arena's num_blocks blocks of block_size token
// slots to sequences (nano-vLLM's BlockManager) and caches full blocks by content.
//
// Prefix caching: a FULL block whose KV has been computed is keyed by
// hash(block's token ids, seed = previous block's hash) (the first block chains
// from a fixed seed), so equal keys mean equal prefixes. A block's key is
// registered only after the step that computed it (cache_computed_blocks), never
// at allocation: a block being filled by a chunked prefill is never shared.
// Freed blocks keep their key and stay findable until reused; reuse takes the
// least recently freed block first (LRU). A sequence frees its blocks tail first,
// so its last blocks (the least shareable) are evicted before its first ones.
// Hits are verified on the stored token ids and prefix hash, not the hash alone.
//
// Admission of a waiting sequence (two phases so that nothing changes when it does
// not fit): match_prefix() finds the cached blocks, can_allocate()/allocate() take
// them plus fresh blocks for the tokens computed in this step. Afterwards
// can_append()/may_append() grow the table before each step.
// Statistics count blocks: queries = full blocks looked up at admission, hits = found.
//
// A KV tier below RAM (kv_offload.h) asks it to record the blocks each step newly caches
// (record_newly_cached), pins a block while a writer thread copies it out (a pinned block
// is held like a sequence holds it: never reused), and hands it blocks loaded from the
// tier for a sequence's table (cache_computed_blocks with record = false).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/sequence.h"

namespace lmrun {

// Key of a full block from its token ids and the previous block's key. Replaceable
// so that tests can force collisions.
using BlockHashFn = uint64_t (*)(std::span<const int32_t> token_ids, uint64_t prefix_hash);

// xxhash64 of the token ids' bytes, seeded with prefix_hash.
uint64_t default_block_hash(std::span<const int32_t> token_ids, uint64_t prefix_hash);

class BlockManager {
  public:
    // Seed of the first block's hash chain.
    static constexpr uint64_t kFirstPrefixHash = 0x6c6d72756e6b7631ull;

    BlockManager(int64_t num_blocks, int64_t block_size, bool enable_prefix_caching = true,
                 BlockHashFn hash_fn = &default_block_hash);

    // Blocks needed to hold num_tokens tokens.
    int64_t num_blocks_for(int64_t num_tokens) const { return (num_tokens + block_size_ - 1) / block_size_; }

    // Admission, phase 1 (no state change): fills cached_block_ids with the longest
    // chain of cached full blocks that prefixes seq.token_ids, leaving at least one
    // token to compute (so there are logits to sample); returns the cached tokens.
    // Empty when prefix caching is disabled. seq must hold no blocks.
    int64_t match_prefix(const Sequence& seq, std::vector<int32_t>& cached_block_ids) const;
    // How many of seq's leading full blocks may come from a cache (RAM or the KV tier): all but
    // the one holding the last token, which is always computed.
    int64_t max_cached_blocks(const Sequence& seq) const {
        return std::max<int64_t>(seq.num_tokens() - 1, 0) / block_size_;
    }
    // Could seq take cached_block_ids (from match_prefix, or empty) and fresh blocks
    // for num_new_tokens more tokens?
    bool can_allocate(const Sequence& seq, std::span<const int32_t> cached_block_ids,
                      int64_t num_new_tokens) const;
    // Takes them: appends cached_block_ids to seq.block_table, sets num_computed_tokens
    // and num_cached_tokens, then covers num_new_tokens more tokens with fresh blocks.
    void allocate(Sequence& seq, std::span<const int32_t> cached_block_ids, int64_t num_new_tokens);

    // Could seq's table grow to cover num_computed_tokens + num_new_tokens tokens?
    bool can_append(const Sequence& seq, int64_t num_new_tokens) const;
    void may_append(Sequence& seq, int64_t num_new_tokens);

    // After a step advanced seq.num_computed_tokens: registers its newly full,
    // computed blocks in the prefix cache (and, when recording and `record`, lists them
    // in newly_cached()).
    void cache_computed_blocks(Sequence& seq, bool record = true);

    // Newly cached blocks: off by default. The list holds at most num_blocks entries
    // (reserved here, so recording never allocates); a full list drops the newest.
    struct CachedBlock {
        int32_t block_id;
        uint64_t hash;
    };
    void record_newly_cached(bool enable);
    std::span<const CachedBlock> newly_cached() const { return newly_cached_; }
    void clear_newly_cached() { newly_cached_.clear(); }
    // Holds a cached block (ref count + 1) so that it is not reused, if it is still cached
    // under `hash`; false otherwise. unpin() releases it.
    bool pin(int32_t block_id, uint64_t hash);
    void unpin(int32_t block_id) { release_block(block_id); }
    // Token ids of a cached block (block_size of them); stable while it is pinned.
    std::span<const int32_t> block_tokens(int32_t block_id) const { return stored_tokens(block_id); }
    BlockHashFn hash_fn() const { return hash_fn_; }
    bool prefix_caching_enabled() const { return enable_prefix_caching_; }

    // Releases seq's blocks (they stay cached until reused); num_computed_tokens = 0.
    void deallocate(Sequence& seq);

    int64_t num_free_blocks() const { return num_free_blocks_; }
    int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
    int64_t block_size() const { return block_size_; }
    double usage() const;  // fraction of blocks referenced by some sequence
    int64_t prefix_cache_hits() const { return prefix_cache_hits_; }        // blocks
    int64_t prefix_cache_queries() const { return prefix_cache_queries_; }  // blocks
    // Introspection for tests and metrics.
    int32_t ref_count(int32_t block_id) const { return blocks_[static_cast<size_t>(block_id)].ref_count; }
    bool is_cached(int32_t block_id) const;  // registered in the prefix cache

  private:
    struct Block {
        int32_t ref_count = 0;
        bool has_hash = false;
        uint64_t hash = 0;
        uint64_t prefix_hash = 0;
        // Intrusive LRU free list (no allocation when blocks move in and out).
        int32_t prev_free = -1;
        int32_t next_free = -1;
        bool is_free = false;
    };

    std::span<const int32_t> stored_tokens(int32_t block_id) const;
    int64_t num_reusable(std::span<const int32_t> cached_block_ids) const;
    void take_cached(int32_t block_id);
    int32_t allocate_block();
    void release_block(int32_t block_id);
    void push_free_back(int32_t block_id);
    void unlink_free(int32_t block_id);

    int64_t block_size_;
    bool enable_prefix_caching_;
    BlockHashFn hash_fn_;
    std::vector<Block> blocks_;
    std::vector<int32_t> block_token_ids_;  // num_blocks x block_size: tokens of hashed blocks
    std::unordered_map<uint64_t, int32_t> hash_to_block_id_;
    int32_t free_head_ = -1;  // least recently freed: reused first
    int32_t free_tail_ = -1;
    int64_t num_free_blocks_ = 0;
    int64_t prefix_cache_hits_ = 0;
    int64_t prefix_cache_queries_ = 0;
    bool record_newly_cached_ = false;
    std::vector<CachedBlock> newly_cached_;
};

}  // namespace lmrun
