#include "kernels/kv_prefetch_level.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/cpu_features.h"

namespace lmrun::kernels {
namespace {

constexpr int64_t kKiB = 1024;

// Zen 3 / Zen 4 (32 KiB L1D) prefetch into L2; Zen 5 and Sapphire Rapids (48 KiB) into L1; an
// unknown size keeps L1, the form measured on most machines.
TEST(KvPrefetchLevel, SmallL1dPrefetchesIntoL2) {
    EXPECT_EQ(kv_prefetch_level_for_l1d(32 * kKiB), KvPrefetchLevel::L2);
    EXPECT_EQ(kv_prefetch_level_for_l1d(48 * kKiB - 1), KvPrefetchLevel::L2);
    EXPECT_EQ(kv_prefetch_level_for_l1d(48 * kKiB), KvPrefetchLevel::L1);
    EXPECT_EQ(kv_prefetch_level_for_l1d(64 * kKiB), KvPrefetchLevel::L1);
    EXPECT_EQ(kv_prefetch_level_for_l1d(0), KvPrefetchLevel::L1);
    EXPECT_EQ(kv_prefetch_level_for_l1d(-1), KvPrefetchLevel::L1);
}

TEST(KvPrefetchLevel, ParsesOnlyItsTwoNames) {
    EXPECT_EQ(parse_kv_prefetch_level("l1"), KvPrefetchLevel::L1);
    EXPECT_EQ(parse_kv_prefetch_level("l2"), KvPrefetchLevel::L2);
    EXPECT_FALSE(parse_kv_prefetch_level("L2").has_value());
    EXPECT_FALSE(parse_kv_prefetch_level("").has_value());
    EXPECT_FALSE(parse_kv_prefetch_level("l3").has_value());
}

// CTest's level runs set LMRUN_KV_PREFETCH (CMakeLists.txt): the process must use what they set,
// or else this CPU's rule.
TEST(KvPrefetchLevel, ProcessLevelFollowsTheOverrideOrTheRule) {
    const char* forced = std::getenv("LMRUN_KV_PREFETCH");
    const auto parsed = forced ? parse_kv_prefetch_level(forced) : std::nullopt;
    const KvPrefetchLevel expected = parsed ? *parsed : kv_prefetch_level_for_l1d(cpu_features().l1d_bytes);
    EXPECT_EQ(kv_prefetch_level(), expected) << "LMRUN_KV_PREFETCH=" << (forced ? forced : "");
}

// Every x86 CPU lmrun runs on reports its L1 data cache; a 0 here would silently pick L1 for all.
TEST(KvPrefetchLevel, ThisCpuReportsItsL1d) {
    EXPECT_GE(cpu_features().l1d_bytes, 16 * kKiB);
    EXPECT_LE(cpu_features().l1d_bytes, 1024 * kKiB);
}

}  // namespace
}  // namespace lmrun::kernels
