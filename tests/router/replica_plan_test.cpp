// How --data-parallel-size divides CPUs and KV budget, and rewrites the replicas' command line.
#include "router/replica_plan.h"

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

using Cpus = std::vector<std::vector<int>>;

TEST(ReplicaPlan, CpusAreSplitContiguousDisjointAndEven) {
    EXPECT_EQ(split_cpus({0, 1}, 2), (Cpus{{0}, {1}}));
    EXPECT_EQ(split_cpus({0, 1, 2, 3, 4, 5, 6}, 3), (Cpus{{0, 1, 2}, {3, 4}, {5, 6}}));
    EXPECT_EQ(split_cpus({4, 5, 8, 9}, 1), (Cpus{{4, 5, 8, 9}}));
    // More replicas than CPUs: one CPU each, shared in turn.
    EXPECT_EQ(split_cpus({2, 3}, 3), (Cpus{{2}, {3}, {2}}));
    EXPECT_EQ(split_cpus({}, 2), (Cpus{{}, {}}));
}

TEST(ReplicaPlan, ArgumentsDropTheReplicaOwnOptionsInBothFormsAndAddTheShare) {
    const std::vector<std::string> parent = {"serve",
                                             "--model",
                                             "/m",
                                             "--port",
                                             "8000",
                                             "--host=0.0.0.0",
                                             "--threads",
                                             "8",
                                             "--data-parallel-size",
                                             "2",
                                             "--data-parallel-policy=round_robin",
                                             "--kv-cache-memory",
                                             "4",
                                             "--api-key",
                                             "k"};
    ReplicaShare share;
    share.port = 0;
    share.num_threads = 4;
    share.kv_cache_memory_gib = 2;
    auto arguments = replica_arguments(parent, share);
    ASSERT_TRUE(arguments.ok()) << arguments.error().message;
    EXPECT_EQ(*arguments,
              (std::vector<std::string>{"serve", "--model", "/m", "--api-key", "k", "--host", "127.0.0.1",
                                        "--port", "0", "--threads", "4", "--kv-cache-memory", "2"}));
    share.kv_cache_memory_gib = 0;
    share.kv_cache_fraction = 0.2;
    arguments = replica_arguments({"serve", "--model", "/m"}, share);
    ASSERT_TRUE(arguments.ok());
    EXPECT_EQ(arguments->back(), "0.2");
    EXPECT_EQ(arguments->at(arguments->size() - 2), "--kv-cache-fraction");
}

TEST(ReplicaPlan, AnOwnOptionWithoutItsValueIsAnError) {
    auto arguments = replica_arguments({"serve", "--model", "/m", "--port"}, ReplicaShare{});
    ASSERT_FALSE(arguments.ok());
    EXPECT_NE(arguments.error().message.find("--port"), std::string::npos);
}

}  // namespace
}  // namespace lmrun::router
