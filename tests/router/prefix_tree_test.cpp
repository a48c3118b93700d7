#include "router/prefix_tree.h"

#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

namespace lmrun::router {
namespace {

std::vector<int64_t> match(const PrefixTree& tree, std::string_view text) {
    std::vector<int64_t> matched;
    tree.match(text, matched);
    return matched;
}

TEST(PrefixTree, LongestPrefixPerTenant) {
    PrefixTree tree(1 << 20);
    tree.insert("system: be brief|user: hello", 0);
    tree.insert("system: be brief|user: goodbye", 1);
    tree.insert("system: be verbose|user: hi", 2);
    // "system: be brief|user: hel" is shared with tenant 0 only; tenant 1 shares up to "user: ".
    const std::vector<int64_t> matched = match(tree, "system: be brief|user: help me");
    ASSERT_EQ(matched.size(), 3u);
    EXPECT_EQ(matched[0], int64_t(std::string("system: be brief|user: hel").size()));
    EXPECT_EQ(matched[1], int64_t(std::string("system: be brief|user: ").size()));
    EXPECT_EQ(matched[2], int64_t(std::string("system: be ").size()));
    // A text that is itself a prefix of what was sent matches whole.
    EXPECT_EQ(match(tree, "system: be")[0], 10);
    EXPECT_EQ(match(tree, "unrelated")[0], 0);
}

TEST(PrefixTree, AccountsBytesPerTenantAcrossSplits) {
    PrefixTree tree(1 << 20);
    tree.insert("abcdef", 0);
    EXPECT_EQ(tree.tenant_bytes(0), 6u);
    tree.insert("abcxyz", 1);  // splits "abcdef" into "abc" + "def"
    EXPECT_EQ(tree.tenant_bytes(0), 6u);
    EXPECT_EQ(tree.tenant_bytes(1), 6u);
    tree.insert("abcdefgh", 0);  // extends tenant 0 by 2 bytes
    EXPECT_EQ(tree.tenant_bytes(0), 8u);
    tree.insert("abc", 1);  // nothing new
    EXPECT_EQ(tree.tenant_bytes(1), 6u);
    EXPECT_EQ(tree.num_nodes(), 4u);  // abc, def, gh, xyz
}

TEST(PrefixTree, EvictsLeastRecentlyUsedLeavesWithinTheLimit) {
    PrefixTree tree(40);
    tree.insert("common prefix/aaaaaaaaaa", 0);  // 24 bytes
    tree.insert("common prefix/bbbbbbbbbb", 0);  // +10: 34 bytes
    tree.insert("common prefix/aaaaaaaaaa", 0);  // "a" is now more recent than "b"
    tree.insert("common prefix/cccccccccc", 0);  // +10: 44 > 40 -> evict down to 35: the "b" leaf goes
    EXPECT_LE(tree.tenant_bytes(0), 35u);
    EXPECT_EQ(match(tree, "common prefix/bbbbbbbbbb")[0], 14);
    EXPECT_EQ(match(tree, "common prefix/aaaaaaaaaa")[0], 24);
    EXPECT_EQ(match(tree, "common prefix/cccccccccc")[0], 24);
    EXPECT_EQ(tree.num_evicted_bytes(), 10);
}

TEST(PrefixTree, EvictionOfOneTenantKeepsTheOthersPaths) {
    PrefixTree tree(1 << 20);
    tree.set_limit(0, 20);
    tree.insert("shared-part-0123456789", 1);
    tree.insert("shared-part-0123456789", 0);  // 22 > 20: tenant 0 loses its only leaf
    EXPECT_EQ(tree.tenant_bytes(0), 0u);
    EXPECT_EQ(tree.tenant_bytes(1), 22u);
    const std::vector<int64_t> matched = match(tree, "shared-part-0123456789");
    EXPECT_EQ(matched[0], 0);
    EXPECT_EQ(matched[1], 22);
}

TEST(PrefixTree, RemoveTenantForgetsItAndFreesNodes) {
    PrefixTree tree(1 << 20);
    tree.insert("hello world", 0);
    tree.insert("hello there", 1);
    tree.remove_tenant(0);
    EXPECT_EQ(tree.tenant_bytes(0), 0u);
    EXPECT_EQ(match(tree, "hello world")[0], 0);
    EXPECT_EQ(match(tree, "hello world")[1], 6);
    EXPECT_EQ(tree.num_nodes(), 2u);  // "hello " and "there"
    tree.remove_tenant(1);
    EXPECT_EQ(tree.num_nodes(), 0u);
}

// Many random insertions under a small bound: the bound holds and the invariant (a tenant held
// at a node is held at its parent) shows as matches that never exceed what a naive scan finds.
TEST(PrefixTree, RandomWorkloadKeepsTheBoundAndMatchesANaiveModel) {
    PrefixTree tree(2000);
    std::mt19937 generator(7);
    std::vector<std::vector<std::string>> sent(3);
    for (int i = 0; i < 2000; ++i) {
        std::string text = fmt::format("sys{}:", generator() % 4);
        const int turns = int(generator() % 4);
        for (int t = 0; t <= turns; ++t) text += fmt::format("u{}a", generator() % 3);
        const int tenant = int(generator() % 3);
        tree.insert(text, tenant);
        sent[size_t(tenant)].push_back(text);
        for (int t = 0; t < 3; ++t) EXPECT_LE(tree.tenant_bytes(t), 2000u);
    }
    for (int probe = 0; probe < 200; ++probe) {
        const std::string& text =
            sent[size_t(probe % 3)][size_t(generator()) % sent[size_t(probe % 3)].size()];
        const std::vector<int64_t> matched = match(tree, text);
        for (int t = 0; t < 3; ++t) {
            int64_t naive = 0;
            for (const std::string& other : sent[size_t(t)]) {
                int64_t common = 0;
                while (size_t(common) < std::min(text.size(), other.size()) &&
                       text[size_t(common)] == other[size_t(common)])
                    ++common;
                naive = std::max(naive, common);
            }
            EXPECT_LE(matched[size_t(t)], naive);  // eviction only forgets
        }
    }
}

}  // namespace
}  // namespace lmrun::router
