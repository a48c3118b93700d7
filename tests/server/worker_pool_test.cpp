#include "server/worker_pool.h"

#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

namespace lmrun::server {
namespace {

TEST(WorkerPool, RunsEveryTaskOnItsThreadsAndStopDrainsTheQueue) {
    WorkerPool pool(3);
    std::mutex mutex;
    std::set<std::thread::id> threads;
    std::atomic<int> done{0};
    for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(pool.post([&] {
            {
                std::lock_guard lock(mutex);
                threads.insert(std::this_thread::get_id());
            }
            ++done;
        }));
    }
    pool.stop();
    EXPECT_EQ(done, 200);
    EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
    EXPECT_LE(threads.size(), 3u);
    EXPECT_FALSE(pool.post([&] { ++done; }));
    EXPECT_EQ(done, 200);
}

TEST(WorkerPool, ATaskThatThrowsDoesNotStopThePool) {
    WorkerPool pool(1);
    std::atomic<int> done{0};
    pool.post([] { throw std::runtime_error("bug"); });
    pool.post([&] { ++done; });
    pool.stop();
    EXPECT_EQ(done, 1);
}

}  // namespace
}  // namespace lmrun::server
