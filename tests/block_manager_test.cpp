#include "engine/block_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace lmrun {
namespace {

std::vector<int32_t> iota_tokens(int32_t first, int64_t count) {
    std::vector<int32_t> tokens(static_cast<size_t>(count));
    std::iota(tokens.begin(), tokens.end(), first);
    return tokens;
}

std::vector<int32_t> concat_ids(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Admits seq with whatever the prefix cache offers and allocates the rest of its tokens.
int64_t admit(BlockManager& manager, Sequence& seq) {
    std::vector<int32_t> cached;
    const int64_t num_cached_tokens = manager.match_prefix(seq, cached);
    const int64_t num_new_tokens = seq.num_tokens() - num_cached_tokens;
    EXPECT_TRUE(manager.can_allocate(seq, cached, num_new_tokens));
    manager.allocate(seq, cached, num_new_tokens);
    return num_cached_tokens;
}

// What the scheduler does after the model computed all of seq's tokens.
void compute_all(BlockManager& manager, Sequence& seq) {
    seq.num_computed_tokens = seq.num_tokens();
    manager.cache_computed_blocks(seq);
}

TEST(BlockManager, AllocatesAndFreesWithRefCounts) {
    BlockManager manager(8, 4);
    Sequence seq(1, iota_tokens(0, 10), {});
    EXPECT_EQ(admit(manager, seq), 0);
    ASSERT_EQ(seq.block_table, (std::vector<int32_t>{0, 1, 2}));
    EXPECT_EQ(seq.num_computed_tokens, 0);
    EXPECT_EQ(manager.num_free_blocks(), 5);
    EXPECT_DOUBLE_EQ(manager.usage(), 3.0 / 8.0);
    for (int32_t block_id : seq.block_table) EXPECT_EQ(manager.ref_count(block_id), 1);

    // Growing within the last block takes nothing; crossing into a new block takes one.
    seq.num_computed_tokens = 10;
    EXPECT_TRUE(manager.can_append(seq, 2));
    manager.may_append(seq, 2);
    EXPECT_EQ(seq.block_table.size(), 3u);
    manager.may_append(seq, 3);
    EXPECT_EQ(seq.block_table, (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(manager.num_free_blocks(), 4);
    EXPECT_TRUE(manager.can_append(seq, 22));   // 32 tokens: 8 blocks, 4 of them new
    EXPECT_FALSE(manager.can_append(seq, 23));  // 33 tokens: 9 blocks

    manager.deallocate(seq);
    EXPECT_TRUE(seq.block_table.empty());
    EXPECT_EQ(seq.num_computed_tokens, 0);
    EXPECT_EQ(manager.num_free_blocks(), 8);
    EXPECT_DOUBLE_EQ(manager.usage(), 0.0);
    for (int32_t block_id = 0; block_id < 4; ++block_id) EXPECT_EQ(manager.ref_count(block_id), 0);
}

TEST(BlockManager, ChunkAllocatesOnlyTheBlocksItWrites) {
    BlockManager manager(8, 4);
    Sequence seq(1, iota_tokens(0, 20), {});
    std::vector<int32_t> cached;
    EXPECT_EQ(manager.match_prefix(seq, cached), 0);
    manager.allocate(seq, cached, 6);
    EXPECT_EQ(seq.block_table.size(), 2u);
    EXPECT_EQ(manager.num_free_blocks(), 6);
    EXPECT_FALSE(manager.can_allocate(Sequence(2, iota_tokens(100, 40), {}), {}, 40));
}

TEST(BlockManager, SharesPrefixBlocksAcrossSequences) {
    BlockManager manager(8, 4);
    Sequence a(1, iota_tokens(0, 10), {});
    admit(manager, a);
    compute_all(manager, a);  // blocks 0 and 1 are full and computed, block 2 is not full
    EXPECT_TRUE(manager.is_cached(a.block_table[0]));
    EXPECT_TRUE(manager.is_cached(a.block_table[1]));
    EXPECT_FALSE(manager.is_cached(a.block_table[2]));
    EXPECT_EQ(manager.prefix_cache_queries(), 2);  // (10 - 1) / 4 full blocks looked up
    EXPECT_EQ(manager.prefix_cache_hits(), 0);

    Sequence b(2, concat_ids(iota_tokens(0, 8), {100, 101, 102}), {});
    EXPECT_EQ(admit(manager, b), 8);
    ASSERT_EQ(b.block_table.size(), 3u);
    EXPECT_EQ(b.block_table[0], a.block_table[0]);
    EXPECT_EQ(b.block_table[1], a.block_table[1]);
    EXPECT_NE(b.block_table[2], a.block_table[2]);
    EXPECT_EQ(b.num_computed_tokens, 8);
    EXPECT_EQ(b.num_cached_tokens, 8);
    EXPECT_EQ(manager.ref_count(a.block_table[0]), 2);
    EXPECT_EQ(manager.ref_count(a.block_table[1]), 2);
    EXPECT_EQ(manager.ref_count(a.block_table[2]), 1);
    EXPECT_EQ(manager.num_free_blocks(), 4);
    EXPECT_EQ(manager.prefix_cache_queries(), 4);
    EXPECT_EQ(manager.prefix_cache_hits(), 2);

    // A diverging first block shares nothing.
    Sequence c(3, concat_ids({99}, iota_tokens(1, 9)), {});
    EXPECT_EQ(admit(manager, c), 0);
    EXPECT_EQ(manager.prefix_cache_hits(), 2);

    manager.deallocate(a);
    EXPECT_EQ(manager.ref_count(b.block_table[0]), 1);  // still held by b
}

TEST(BlockManager, FullyCachedPromptStillComputesItsLastBlock) {
    BlockManager manager(8, 4);
    Sequence a(1, iota_tokens(0, 8), {});
    admit(manager, a);
    compute_all(manager, a);
    Sequence b(2, iota_tokens(0, 8), {});
    // Both blocks are cached, but the block holding the last token is recomputed
    // (never written into while shared) so that there are logits to sample.
    EXPECT_EQ(admit(manager, b), 4);
    EXPECT_EQ(b.num_computed_tokens, 4);
    EXPECT_EQ(b.block_table[0], a.block_table[0]);
    EXPECT_NE(b.block_table[1], a.block_table[1]);
}

TEST(BlockManager, FreedBlocksHitUntilReusedLeastRecentlyFreedFirst) {
    BlockManager manager(5, 2);
    Sequence a(1, iota_tokens(0, 5), {});
    admit(manager, a);
    ASSERT_EQ(a.block_table, (std::vector<int32_t>{0, 1, 2}));
    compute_all(manager, a);
    manager.deallocate(a);  // tail first: free list is now 3, 4, 2, 1, 0
    EXPECT_EQ(manager.num_free_blocks(), 5);
    EXPECT_TRUE(manager.is_cached(0));
    EXPECT_TRUE(manager.is_cached(1));

    Sequence probe(2, iota_tokens(0, 5), {});
    std::vector<int32_t> cached;
    EXPECT_EQ(manager.match_prefix(probe, cached), 4);
    EXPECT_EQ(cached, (std::vector<int32_t>{0, 1}));

    // An unrelated sequence takes the least recently freed blocks first: 3, 4, 2, then 1.
    Sequence other(3, iota_tokens(100, 8), {});
    admit(manager, other);
    EXPECT_EQ(other.block_table, (std::vector<int32_t>{3, 4, 2, 1}));
    EXPECT_FALSE(manager.is_cached(1));
    EXPECT_TRUE(manager.is_cached(0));
    EXPECT_EQ(manager.match_prefix(probe, cached), 2);
    EXPECT_EQ(cached, (std::vector<int32_t>{0}));

    // Free list: 0, 1, 2, 4, 3. Taking the cached block 0 unlinks it; new blocks follow it.
    manager.deallocate(other);
    EXPECT_EQ(admit(manager, probe), 2);
    EXPECT_EQ(probe.block_table, (std::vector<int32_t>{0, 1, 2}));
    EXPECT_EQ(manager.num_free_blocks(), 2);
    EXPECT_EQ(manager.ref_count(0), 1);
    Sequence last(4, iota_tokens(200, 4), {});
    admit(manager, last);
    EXPECT_EQ(last.block_table, (std::vector<int32_t>{4, 3}));
}

TEST(BlockManager, ReusesBlocksInFreeOrder) {
    BlockManager manager(4, 2);
    Sequence x(1, iota_tokens(0, 2), {}), y(2, iota_tokens(10, 2), {}), z(3, iota_tokens(20, 2), {});
    admit(manager, x);
    admit(manager, y);
    admit(manager, z);
    EXPECT_EQ(manager.num_free_blocks(), 1);
    manager.deallocate(y);
    manager.deallocate(x);
    Sequence w(4, iota_tokens(30, 6), {});
    admit(manager, w);
    EXPECT_EQ(w.block_table, (std::vector<int32_t>{3, 1, 0}));
}

TEST(BlockManager, CachedFreeBlocksCountAgainstTheFreePool) {
    BlockManager manager(3, 2);
    Sequence a(1, iota_tokens(0, 5), {});
    admit(manager, a);
    compute_all(manager, a);
    manager.deallocate(a);
    std::vector<int32_t> cached;
    Sequence fits(2, concat_ids(iota_tokens(0, 4), {7, 8}), {});
    EXPECT_EQ(manager.match_prefix(fits, cached), 4);
    EXPECT_TRUE(manager.can_allocate(fits, cached, 2));  // 1 new block, 1 left after the 2 hits
    Sequence too_long(3, concat_ids(iota_tokens(0, 4), {7, 8, 9}), {});
    EXPECT_EQ(manager.match_prefix(too_long, cached), 4);
    EXPECT_FALSE(manager.can_allocate(too_long, cached, 3));  // 2 new blocks needed
}

// Ignores the tokens: every block at the same depth collides.
uint64_t depth_only_hash(std::span<const int32_t>, uint64_t prefix_hash) {
    return prefix_hash + 1;
}

TEST(BlockManager, HashCollisionIsNotAHit) {
    BlockManager manager(8, 4, true, &depth_only_hash);
    Sequence a(1, concat_ids(iota_tokens(0, 8), {0}), {});
    admit(manager, a);
    compute_all(manager, a);
    Sequence b(2, concat_ids(iota_tokens(0, 4), {9, 9, 9, 9, 0}), {});
    std::vector<int32_t> cached;
    // Block 0 matches for real; block 1 has the same hash but other tokens.
    EXPECT_EQ(manager.match_prefix(b, cached), 4);
    EXPECT_EQ(cached, (std::vector<int32_t>{a.block_table[0]}));
    Sequence c(3, iota_tokens(50, 9), {});
    EXPECT_EQ(manager.match_prefix(c, cached), 0);
    EXPECT_TRUE(cached.empty());
}

TEST(BlockManager, RegistersHashOnlyAfterCompute) {
    BlockManager manager(8, 4);
    Sequence a(1, iota_tokens(0, 8), {});
    std::vector<int32_t> cached;
    manager.match_prefix(a, cached);
    manager.allocate(a, cached, 8);  // allocated, not yet computed (e.g. a chunked prefill)
    Sequence b(2, iota_tokens(0, 9), {});
    EXPECT_EQ(manager.match_prefix(b, cached), 0);
    a.num_computed_tokens = 4;  // first chunk done
    manager.cache_computed_blocks(a);
    EXPECT_TRUE(manager.is_cached(a.block_table[0]));
    EXPECT_FALSE(manager.is_cached(a.block_table[1]));
    EXPECT_EQ(manager.match_prefix(b, cached), 4);
    a.num_computed_tokens = 8;
    manager.cache_computed_blocks(a);
    EXPECT_EQ(manager.match_prefix(b, cached), 8);
    EXPECT_EQ(cached, a.block_table);
}

TEST(BlockManager, DisabledPrefixCachingNeverHits) {
    BlockManager manager(8, 4, /*enable_prefix_caching=*/false);
    Sequence a(1, iota_tokens(0, 9), {});
    admit(manager, a);
    compute_all(manager, a);
    EXPECT_FALSE(manager.is_cached(a.block_table[0]));
    Sequence b(2, iota_tokens(0, 9), {});
    EXPECT_EQ(admit(manager, b), 0);
    EXPECT_EQ(manager.prefix_cache_hits(), 0);
    EXPECT_EQ(manager.prefix_cache_queries(), 0);
}

}  // namespace
}  // namespace lmrun
