// The lifecycle HttpServer and RouterServer share, with a bare handler: bind and serve,
// draining, finish() at its deadline with an exchange left open, the workers stopped after
// it, serve() released, and destruction without serve().
#include "server/http_server_lifecycle.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server_test_util.h"

namespace lmrun::server {
namespace {

using Clock = ShutdownDeadline::Clock;
using testing::RawConnection;
using testing::status_of;

// Routes: /now answers 200 at once, /later is kept open (never answered by the handler).
struct Front {
    explicit Front(HttpServerOptions options)
        : workers(2),
          lifecycle(options,
                    TransportHooks{[this](const std::shared_ptr<HttpExchange>& exchange) {
                                       if (exchange->request().path == "/now") {
                                           HttpResponse response;
                                           response.status = lifecycle.draining() ? 503 : 200;
                                           return exchange->respond(std::move(response));
                                       }
                                       std::lock_guard lock(mutex);
                                       kept.push_back(exchange);
                                   },
                                   {},
                                   {}},
                    workers) {}

    std::mutex mutex;
    std::vector<std::shared_ptr<HttpExchange>> kept;
    WorkerPool workers;
    HttpServerLifecycle lifecycle;
};

HttpServerOptions any_port() {
    HttpServerOptions options;
    options.port = 0;
    return options;
}

std::string http_get(int port, const std::string& path) {
    RawConnection connection(port);
    connection.send("GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n");
    return connection.read_response(30);
}

TEST(ShutdownDeadlineTest, CutOffKeepsATenthOfTheTimeoutAtMostOneSecond) {
    Front front(any_port());
    const auto before = Clock::now();
    const ShutdownDeadline short_one = front.lifecycle.begin_shutdown(2.0);
    EXPECT_GE(short_one.deadline - before, std::chrono::milliseconds(2000));
    EXPECT_EQ(short_one.deadline - short_one.cut_off, std::chrono::milliseconds(200));
    const ShutdownDeadline long_one = front.lifecycle.begin_shutdown(30.0);
    EXPECT_EQ(long_one.deadline - long_one.cut_off, std::chrono::seconds(1));
    const ShutdownDeadline none = front.lifecycle.begin_shutdown(0.0);
    EXPECT_EQ(none.deadline, none.cut_off);
}

TEST(PollUntilTest, ReturnsWhenDoneOrAtTheDeadline) {
    std::atomic<int> calls{0};
    EXPECT_TRUE(poll_until([&] { return ++calls >= 3; }, Clock::now() + std::chrono::seconds(30)));
    EXPECT_GE(calls, 3);
    const auto start = Clock::now();
    EXPECT_FALSE(poll_until([] { return false; }, start + std::chrono::milliseconds(50)));
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(50));
}

TEST(HttpServerLifecycleTest, ServesUntilFinishAndDrainingIsSeenByTheHandler) {
    Front front(any_port());
    auto port = front.lifecycle.bind();
    ASSERT_TRUE(port.ok()) << port.error().message;
    auto serving = std::async(std::launch::async, [&] { return front.lifecycle.serve(); });
    EXPECT_EQ(status_of(http_get(*port, "/now")), 200);
    EXPECT_FALSE(front.lifecycle.draining());

    const ShutdownDeadline shutdown = front.lifecycle.begin_shutdown(5.0);
    EXPECT_TRUE(front.lifecycle.draining());
    EXPECT_EQ(status_of(http_get(*port, "/now")), 503);
    EXPECT_EQ(serving.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);  // still serving

    EXPECT_TRUE(front.lifecycle.finish(shutdown));  // nothing was left open
    ASSERT_EQ(serving.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    EXPECT_TRUE(serving.get().ok());
    EXPECT_FALSE(front.workers.post([] {}));  // the workers were stopped too
}

TEST(HttpServerLifecycleTest, FinishAtTheDeadlineWithAnOpenExchangeIsNotDrainedAndCloses) {
    Front front(any_port());
    auto port = front.lifecycle.bind();
    ASSERT_TRUE(port.ok()) << port.error().message;
    auto serving = std::async(std::launch::async, [&] { return front.lifecycle.serve(); });
    RawConnection connection(*port);
    connection.send("GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
    for (int i = 0; i < 3000; ++i) {
        {
            std::lock_guard lock(front.mutex);
            if (!front.kept.empty()) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const ShutdownDeadline shutdown = front.lifecycle.begin_shutdown(0.2);
    EXPECT_FALSE(front.lifecycle.finish(shutdown));
    EXPECT_GE(Clock::now(), shutdown.deadline);               // it waited for the exchange until the deadline
    EXPECT_EQ(status_of(connection.read_response(30)), 503);  // then the transport answered it
    ASSERT_EQ(serving.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    EXPECT_TRUE(serving.get().ok());
}

TEST(HttpServerLifecycleTest, DestroyedWithoutServingStopsTheWorkers) {
    auto front = std::make_unique<Front>(any_port());
    ASSERT_TRUE(front->lifecycle.bind().ok());
    std::atomic<bool> ran{false};
    ASSERT_TRUE(front->workers.post([&] { ran = true; }));
    front.reset();  // the lifecycle stops the transport, then the workers: queued tasks run first
    EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace lmrun::server
