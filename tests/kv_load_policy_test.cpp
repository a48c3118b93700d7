// KvLoadPolicy: loads until both rates are measured, then follows the crossover
// (read time of a block vs its prefill time), re-probing now and then when it declines.
#include "engine/kv_load_policy.h"

#include <gtest/gtest.h>

namespace lmrun {
namespace {

constexpr int64_t kBlockTokens = 256;
constexpr int64_t kBlockBytes = 29 << 20;  // Qwen3-0.6B, BF16, 256 tokens

TEST(KvLoadPolicy, LoadsUntilBothRatesAreMeasured) {
    KvLoadPolicy policy;
    EXPECT_TRUE(policy.should_load(kBlockTokens, kBlockBytes));
    policy.record_prefill(2048, 8.0);
    EXPECT_TRUE(policy.should_load(kBlockTokens, kBlockBytes));
    EXPECT_DOUBLE_EQ(policy.prefill_tokens_per_second(), 256.0);
    EXPECT_EQ(policy.read_bytes_per_second(), 0.0);
}

TEST(KvLoadPolicy, FollowsTheCrossover) {
    // 256 prompt tokens/s: a block costs 1 s to compute. Its 29 MiB read at 1 GB/s: 0.03 s.
    KvLoadPolicy fast_disk;
    fast_disk.record_prefill(2048, 8.0);
    fast_disk.record_load(kBlockBytes, double(kBlockBytes) / 1e9);
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(fast_disk.should_load(kBlockTokens, kBlockBytes));
    // The same block at 10 MB/s: 3 s to read, slower than computing it.
    KvLoadPolicy slow_disk;
    slow_disk.record_prefill(2048, 8.0);
    slow_disk.record_load(kBlockBytes, double(kBlockBytes) / 1e7);
    int num_loads = 0;
    for (int i = 0; i < 10 * KvLoadPolicy::kReprobeInterval; ++i)
        num_loads += slow_disk.should_load(kBlockTokens, kBlockBytes);
    EXPECT_EQ(num_loads, 10);  // only the re-probes
}

TEST(KvLoadPolicy, RecentMeasurementsWeighMore) {
    KvLoadPolicy policy;
    policy.record_prefill(1000, 1.0);
    for (int i = 0; i < 40; ++i) policy.record_prefill(100, 1.0);
    EXPECT_NEAR(policy.prefill_tokens_per_second(), 100.0, 1.0);
    policy.record_prefill(0, 1.0);  // ignored
    policy.record_load(100, -1.0);  // ignored
    EXPECT_EQ(policy.read_bytes_per_second(), 0.0);
}

TEST(KvLoadPolicy, AlwaysModeLoadsWhateverTheRates) {
    KvLoadPolicy policy(KvLoadMode::Always);
    policy.record_prefill(1'000'000, 1.0);
    policy.record_load(1, 1.0);
    EXPECT_TRUE(policy.should_load(kBlockTokens, kBlockBytes));
}

}  // namespace
}  // namespace lmrun
