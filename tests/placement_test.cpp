// Rank placement over this machine's CPUs: every CPU goes to exactly one rank when there are
// at least as many CPUs as ranks (contiguous, threads = CPUs), ranks share CPUs round-robin
// when oversubscribed, and an explicit thread count is kept.
#include "parallel/placement.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace lmrun::parallel {
namespace {

TEST(Placement, RanksSplitTheCpusWithoutOverlap) {
    const std::vector<int> cpus = current_cpus();
    for (int ranks = 1; ranks <= int(cpus.size()); ++ranks) {
        std::vector<RankPlacement> placements = plan_placement(ranks, 0);
        ASSERT_EQ(int(placements.size()), ranks);
        std::vector<int> all;
        for (int r = 0; r < ranks; ++r) {
            EXPECT_EQ(placements[size_t(r)].rank, r);
            EXPECT_FALSE(placements[size_t(r)].cpus.empty());
            EXPECT_EQ(placements[size_t(r)].num_threads, int(placements[size_t(r)].cpus.size()));
            all.insert(all.end(), placements[size_t(r)].cpus.begin(), placements[size_t(r)].cpus.end());
        }
        std::sort(all.begin(), all.end());
        EXPECT_EQ(all, cpus) << ranks << " ranks";
        EXPECT_FALSE(oversubscribed(placements));
    }
}

TEST(Placement, MoreRanksThanCpusShareThemOneThreadEach) {
    const std::vector<int> cpus = current_cpus();
    const int ranks = int(cpus.size()) * 2;
    std::vector<RankPlacement> placements = plan_placement(ranks, 0);
    for (const RankPlacement& placement : placements) {
        ASSERT_EQ(placement.cpus.size(), 1u);
        EXPECT_EQ(placement.num_threads, 1);
        EXPECT_NE(std::find(cpus.begin(), cpus.end(), placement.cpus[0]), cpus.end());
    }
    EXPECT_TRUE(oversubscribed(placements));
}

TEST(Placement, AnExplicitThreadCountIsKept) {
    for (const RankPlacement& placement : plan_placement(2, 3)) EXPECT_EQ(placement.num_threads, 3);
}

// Two NUMA nodes of 4 CPUs each: one rank per node takes the whole node; two per node split
// it; one rank only uses the first node; ranks always stay on one node.
TEST(Placement, RanksSpreadOverNumaNodesAndStayOnOne) {
    const std::vector<NumaNodeCpus> two_sockets = {{0, {0, 1, 2, 3}}, {1, {4, 5, 6, 7}}};
    auto one_per_node = plan_placement_on(two_sockets, 2, 0);
    EXPECT_EQ(one_per_node[0].cpus, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(one_per_node[0].numa_node, 0);
    EXPECT_EQ(one_per_node[1].cpus, (std::vector<int>{4, 5, 6, 7}));
    EXPECT_EQ(one_per_node[1].numa_node, 1);
    EXPECT_EQ(one_per_node[1].num_threads, 4);
    auto two_per_node = plan_placement_on(two_sockets, 4, 0);
    const std::vector<std::vector<int>> want = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
    for (int r = 0; r < 4; ++r) {
        EXPECT_EQ(two_per_node[size_t(r)].cpus, want[size_t(r)]) << "rank " << r;
        EXPECT_EQ(two_per_node[size_t(r)].numa_node, r / 2);
    }
    auto single = plan_placement_on(two_sockets, 1, 0);
    EXPECT_EQ(single[0].numa_node, 0);
    EXPECT_EQ(single[0].cpus.size(), 4u);
}

TEST(Placement, CpuListsAreWrittenAsRanges) {
    EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
    EXPECT_EQ(format_cpu_list({5}), "5");
    RankPlacement placement{1, {2, 3}, 2, -1};
    EXPECT_EQ(describe(placement), "rank 1: cpus 2-3 (2 threads)");
    placement.numa_node = 1;
    EXPECT_EQ(describe(placement), "rank 1: cpus 2-3 (2 threads), NUMA node 1");
}

}  // namespace
}  // namespace lmrun::parallel
