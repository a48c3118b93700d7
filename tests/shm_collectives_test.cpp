// Shared-memory collectives between ranks (threads here, processes in the executor tests):
// the all-reduce equals a sum in rank order, bit for bit on every rank, for the one-shot
// (small, or 2 ranks) and the two-phase (large, more than 2 ranks) forms, back to back so
// the double-buffered slots are reused; gathers put each rank's part in place; a rank that
// never arrives fails the others' waits once the group is aborted.
#include "parallel/shm_collectives.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "parallel/shared_memory.h"

namespace lmrun::parallel {
namespace {

// Runs fn(rank, collectives) on `num_ranks` threads over one shared region.
void run_ranks(int num_ranks, size_t slot_bytes, const std::function<void(int, ShmCollectives&)>& fn) {
    ShmCollectives::Shape shape{num_ranks, slot_bytes};
    SharedMemory memory =
        std::move(SharedMemory::create("collectives-test", ShmCollectives::required_bytes(shape)).value());
    std::atomic<uint32_t> aborted{0};
    WaitContext wait;
    wait.aborted = &aborted;
    wait.policy.spin_ns = 20'000;
    std::vector<std::thread> threads;
    for (int rank = 0; rank < num_ranks; ++rank) {
        threads.emplace_back([&, rank] {
            ShmCollectives collectives(memory.data(), shape, rank, wait);
            fn(rank, collectives);
        });
    }
    for (std::thread& thread : threads) thread.join();
}

float value(int rank, int64_t i, int round) {
    return float((i * 131 + rank * 17 + round * 5) % 1000) * 0.001f - 0.5f + float(rank) * 1e-3f;
}

void expect_all_reduce_is_the_rank_order_sum(int num_ranks, int64_t count) {
    constexpr int kRounds = 5;
    std::vector<std::vector<float>> results(static_cast<size_t>(num_ranks));
    std::vector<int> failures(static_cast<size_t>(num_ranks), 0);
    run_ranks(num_ranks, size_t(count) * sizeof(float), [&](int rank, ShmCollectives& collectives) {
        for (int round = 0; round < kRounds; ++round) {
            std::vector<float> data(static_cast<size_t>(count));
            for (int64_t i = 0; i < count; ++i) data[size_t(i)] = value(rank, i, round);
            if (!collectives.all_reduce(data.data(), count)) ++failures[size_t(rank)];
            for (int64_t i = 0; i < count; ++i) {
                float want = value(0, i, round);
                for (int r = 1; r < num_ranks; ++r) want += value(r, i, round);
                if (data[size_t(i)] != want) {
                    ++failures[size_t(rank)];
                    break;
                }
            }
            if (round == kRounds - 1) results[size_t(rank)] = data;
        }
    });
    EXPECT_EQ(failures, std::vector<int>(size_t(num_ranks), 0))
        << num_ranks << " ranks, " << count << " floats";
    for (int r = 1; r < num_ranks; ++r) EXPECT_EQ(results[size_t(r)], results[0]);
}

TEST(ShmCollectives, SmallAllReducesSumInRankOrderOnEveryRank) {
    for (int ranks : {2, 3, 4}) {
        for (int64_t count : {1, 17, 1024, 8 * 1024}) expect_all_reduce_is_the_rank_order_sum(ranks, count);
    }
}

TEST(ShmCollectives, LargeAllReducesTakeTheTwoPhasePathWithTheSameSums) {
    const int64_t count =
        int64_t(ShmCollectives::kTwoPhaseMinBytes / sizeof(float)) * 3 + 5;  // uneven slices
    for (int ranks : {2, 3, 4}) expect_all_reduce_is_the_rank_order_sum(ranks, count);
}

TEST(ShmCollectives, GatherAndGatherColumnsPutEachRankInItsPlace) {
    const int num_ranks = 3;
    const int64_t rows = 4, local_cols = 5, out_cols = 13;  // the last rank's 2 padding columns are dropped
    std::vector<int32_t> gathered(num_ranks, -1);
    std::vector<float> columns(size_t(rows * out_cols), -1.0f);
    run_ranks(num_ranks, 4096, [&](int rank, ShmCollectives& collectives) {
        int32_t mine = 100 + rank;
        ASSERT_TRUE(collectives.gather(&mine, sizeof(mine), rank == 0 ? gathered.data() : nullptr));
        std::vector<float> local(size_t(rows * local_cols));
        for (int64_t row = 0; row < rows; ++row)
            for (int64_t c = 0; c < local_cols; ++c)
                local[size_t(row * local_cols + c)] = float(row * 1000 + rank * local_cols + c);
        ASSERT_TRUE(collectives.gather_columns(local.data(), rows, local_cols,
                                               rank == 0 ? columns.data() : nullptr, out_cols));
    });
    EXPECT_EQ(gathered, (std::vector<int32_t>{100, 101, 102}));
    for (int64_t row = 0; row < rows; ++row)
        for (int64_t c = 0; c < out_cols; ++c)
            EXPECT_EQ(columns[size_t(row * out_cols + c)], float(row * 1000 + c));
}

TEST(ShmCollectives, ARankThatNeverArrivesFailsTheOthersOnceAborted) {
    ShmCollectives::Shape shape{2, 4096};
    SharedMemory memory =
        std::move(SharedMemory::create("collectives-test", ShmCollectives::required_bytes(shape)).value());
    std::atomic<uint32_t> aborted{0};
    WaitContext wait;
    wait.aborted = &aborted;
    ShmCollectives rank0(memory.data(), shape, 0, wait);
    std::thread watcher([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        aborted = 1;
        rank0.wake_all();
    });
    float data[4] = {1, 2, 3, 4};
    EXPECT_FALSE(rank0.all_reduce(data, 4));
    watcher.join();
}

}  // namespace
}  // namespace lmrun::parallel
