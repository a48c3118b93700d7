#include "core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

namespace lmrun {
namespace {

// Every item of the second phase sees every item of the first (a GEMM's tiles read all of x,
// each thread converted a share of it), and each phase covers its range exactly once.
void check_phases(int64_t prepare_count, int64_t count) {
    std::vector<int64_t> prepared(static_cast<size_t>(prepare_count), -1);
    std::vector<std::atomic<int>> prepare_visits(static_cast<size_t>(prepare_count));
    std::vector<int64_t> seen(static_cast<size_t>(count), -1);
    std::vector<std::atomic<int>> visits(static_cast<size_t>(count));
    parallel_for_after(
        prepare_count,
        [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) prepared[size_t(i)] = i, ++prepare_visits[size_t(i)];
        },
        count,
        [&](int64_t begin, int64_t end) {
            for (int64_t j = begin; j < end; ++j) {
                seen[size_t(j)] = std::accumulate(prepared.begin(), prepared.end(), int64_t(0));
                ++visits[size_t(j)];
            }
        });
    const int64_t want = prepare_count * (prepare_count - 1) / 2;
    for (int64_t i = 0; i < prepare_count; ++i) ASSERT_EQ(prepare_visits[size_t(i)], 1) << i;
    for (int64_t j = 0; j < count; ++j) {
        ASSERT_EQ(visits[size_t(j)], 1) << j;
        ASSERT_EQ(seen[size_t(j)], want) << "item " << j << " ran before every row was prepared";
    }
}

TEST(ParallelForAfter, SecondPhaseSeesAllOfTheFirst) {
    for (auto [prepare_count, count] :
         {std::pair<int64_t, int64_t>{64, 16}, {1, 96}, {0, 5}, {7, 0}, {3, 1}}) {
        check_phases(prepare_count, count);
    }
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);  // one thread per rank: no region at all
    check_phases(64, 16);
    omp_set_num_threads(threads);
}

}  // namespace
}  // namespace lmrun
