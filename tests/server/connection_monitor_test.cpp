#include "server/connection_monitor.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace lmrun::server {
namespace {

// A connected pair: the monitor gets `server`, the test plays the client on `client`.
struct SocketPair {
    int server = -1;
    int client = -1;
    SocketPair() {
        int fds[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
            server = fds[0];
            client = fds[1];
        }
    }
    ~SocketPair() {
        if (server >= 0) close(server);
        if (client >= 0) close(client);
    }
    // True when the server side was shut down: the client reads end of file.
    bool server_shut_down(int timeout_ms) const {
        pollfd waiting{client, POLLIN, 0};
        if (poll(&waiting, 1, timeout_ms) <= 0) return false;
        char byte;
        return recv(client, &byte, 1, MSG_DONTWAIT) == 0;
    }
};

template <typename Predicate>
bool eventually(Predicate predicate) {
    for (int i = 0; i < 5000; ++i) {
        if (predicate()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return predicate();
}

TEST(ConnectionMonitor, ReadingConnectionsPastTheBudgetAreShutDownBusyOnesAreNot) {
    std::atomic<int> dropped{0};
    ConnectionMonitor monitor(1.0, [&] { ++dropped; });
    ASSERT_TRUE(monitor.start().ok());
    SocketPair slow, busy, refreshed;
    ConnectionMonitor::Connection* slow_record = monitor.add(slow.server);
    ConnectionMonitor::Connection* busy_record = monitor.add(busy.server);
    ConnectionMonitor::Connection* refreshed_record = monitor.add(refreshed.server);
    monitor.busy(busy_record);
    EXPECT_FALSE(slow.server_shut_down(100));  // within its budget
    monitor.reading(refreshed_record);         // a new request: a new budget
    EXPECT_TRUE(slow.server_shut_down(5000));
    EXPECT_TRUE(eventually([&] { return dropped == 2; }));  // slow, then refreshed
    EXPECT_TRUE(refreshed.server_shut_down(5000));
    EXPECT_FALSE(busy.server_shut_down(500));
    EXPECT_EQ(monitor.num_dropped(), 2);
    for (auto* record : {slow_record, busy_record, refreshed_record}) monitor.remove(record);
}

TEST(ConnectionMonitor, AHangUpCallsTheWatchOnceAndUnwatchStopsIt) {
    ConnectionMonitor monitor(60, {});
    ASSERT_TRUE(monitor.start().ok());
    SocketPair leaving, unwatched;
    std::atomic<int> calls{0};
    std::atomic<int> unwatched_calls{0};
    ASSERT_NE(monitor.watch(leaving.server, [&] { ++calls; }), 0u);
    const uint64_t id = monitor.watch(unwatched.server, [&] { ++unwatched_calls; });
    ASSERT_NE(id, 0u);
    ASSERT_EQ(send(leaving.client, "more", 4, 0), 4);  // data is not a hang-up
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(calls, 0);
    monitor.unwatch(id);
    close(leaving.client);
    leaving.client = -1;
    close(unwatched.client);
    unwatched.client = -1;
    EXPECT_TRUE(eventually([&] { return calls == 1; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(unwatched_calls, 0);
}

}  // namespace
}  // namespace lmrun::server
