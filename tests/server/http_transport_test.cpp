// The HTTP transport alone, with small handlers: body limits (chunked or not), content
// encodings, slow clients, the connection limit, answers that come later from another
// thread while the connection holds none, streamed bodies woken by a producer, hang-ups.
#include "server/http_transport.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace lmrun::server {
namespace {

using testing::body_of;
using testing::chunked;
using testing::RawConnection;
using testing::status_of;

HttpResponse text_response(int status, std::string body) {
    HttpResponse response;
    response.status = status;
    response.content_type = "text/plain";
    response.body = std::move(body);
    return response;
}

// Routes: /echo answers "<size>:<body>" at once; /later is answered by the test; /stream streams
// what the test produces; anything else 404.
class TransportTest : public ::testing::Test {
  protected:
    void start(TransportOptions options) {
        TransportHooks hooks;
        hooks.on_request = [this](const std::shared_ptr<HttpExchange>& exchange) { route(exchange); };
        hooks.on_completed = [this](const HttpRequest&, int status) {
            if (status != 0) ++num_completed_;
        };
        hooks.on_connection_dropped = [this] { ++num_dropped_; };
        transport_ = std::make_unique<HttpTransport>(options, hooks);
        auto port = transport_->listen("127.0.0.1", 0);
        ASSERT_TRUE(port.ok()) << port.error().message;
        port_ = port.value();
        ASSERT_TRUE(transport_->start().ok());
    }

    void TearDown() override {
        if (transport_) transport_->stop();
    }

    void route(const std::shared_ptr<HttpExchange>& exchange) {
        ++num_requests_;
        const HttpRequest& request = exchange->request();
        if (request.path == "/echo")
            return exchange->respond(
                text_response(200, fmt::format("{}:{}", request.body.size(), request.body)));
        if (request.path == "/later") {
            std::lock_guard lock(mutex_);
            if (request.header("x-watch") == "yes") exchange->on_client_gone([this] { ++num_gone_; });
            waiting_.push_back(exchange);
            changed_.notify_all();
            return;
        }
        exchange->respond(text_response(404, "no route"));
    }

    // Waits until `count` /later exchanges are waiting.
    bool wait_for_waiting(size_t count) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return waiting_.size() >= count; });
    }

    std::string post(const std::string& path, const std::string& body,
                     const std::string& extra_headers = "") {
        RawConnection connection(port_);
        connection.send(fmt::format("POST {} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n{}\r\n", path,
                                    body.size(), extra_headers) +
                        body);
        return connection.read_response(30);
    }

    std::unique_ptr<HttpTransport> transport_;
    int port_ = 0;
    std::atomic<int> num_requests_{0};
    std::atomic<int> num_completed_{0};
    std::atomic<int> num_dropped_{0};
    std::atomic<int> num_gone_{0};
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::shared_ptr<HttpExchange>> waiting_;
};

TransportOptions small_limits() {
    TransportOptions options;
    options.max_body_bytes = size_t(1) << 20;
    return options;
}

TEST_F(TransportTest, BodyAtTheLimitArrivesWholeWithEveryByte) {
    start(small_limits());
    std::string body(size_t(1) << 20, 'x');
    body[10] = '\0';  // bytes after a NUL are kept
    body[body.size() - 1] = 'z';
    RawConnection connection(port_);
    connection.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    chunked(body, 65536));
    const std::string response = connection.read_response(30);
    ASSERT_EQ(status_of(response), 200) << response.substr(0, 200);
    EXPECT_EQ(body_of(response), fmt::format("{}:{}", body.size(), body));
}

TEST_F(TransportTest, ChunkedBodyOverTheLimitIs413NamingTheLimit) {
    start(small_limits());
    const std::string body((size_t(1) << 20) + 1, 'x');
    RawConnection connection(port_);
    connection.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    chunked(body, 65536));
    const std::string response = connection.read_response(30);
    ASSERT_EQ(status_of(response), 413) << response.substr(0, 300);
    EXPECT_NE(body_of(response).find("limit of 1048576 bytes (1 MiB; lmrun serve --max-request-body-mb)"),
              std::string::npos)
        << response;
    EXPECT_EQ(num_requests_, 0);  // the handler never saw it
}

TEST_F(TransportTest, DeclaredLengthOverTheLimitIsRefusedBeforeTheBody) {
    start(small_limits());
    RawConnection connection(port_);
    connection.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\n");  // and no body
    const std::string response = connection.read_response(30);
    ASSERT_EQ(status_of(response), 413) << response;
    EXPECT_NE(body_of(response).find("\"code\":\"request_too_large\""), std::string::npos) << response;
    EXPECT_TRUE(connection.closed_by_server(30));  // the body is not read: the connection ends
    EXPECT_EQ(num_requests_, 0);
}

TEST_F(TransportTest, CompressedBodiesAre415) {
    start(small_limits());
    for (const char* encoding : {"gzip", "deflate", "br", "x-unknown"}) {
        const std::string response = post("/echo", "{}", fmt::format("Content-Encoding: {}\r\n", encoding));
        ASSERT_EQ(status_of(response), 415) << response;
        EXPECT_NE(response.find("Accept-Encoding: identity"), std::string::npos) << response;
        EXPECT_NE(body_of(response).find(fmt::format("Content-Encoding `{}` is not supported", encoding)),
                  std::string::npos)
            << response;
    }
    EXPECT_EQ(status_of(post("/echo", "{}", "Content-Encoding: identity\r\n")), 200);
    EXPECT_EQ(num_requests_, 1);
}

TEST_F(TransportTest, AnswersComeFromAnotherThreadWhileConnectionsHoldNoThread) {
    start(small_limits());
    // More waiting requests than there are threads of any kind: none of them blocks the I/O thread.
    constexpr int kWaiting = 64;
    std::vector<std::unique_ptr<RawConnection>> clients;
    for (int i = 0; i < kWaiting; ++i) {
        clients.push_back(std::make_unique<RawConnection>(port_));
        clients.back()->send(
            fmt::format("POST /later HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n{}", i % 10));
    }
    ASSERT_TRUE(wait_for_waiting(kWaiting));
    EXPECT_EQ(status_of(post("/echo", "still here")), 200);
    std::thread answerer([&] {
        std::lock_guard lock(mutex_);
        for (auto& exchange : waiting_)
            exchange->respond(text_response(200, "later:" + exchange->request().body));
    });
    for (int i = 0; i < kWaiting; ++i) {
        const std::string response = clients[size_t(i)]->read_response(30);
        ASSERT_EQ(status_of(response), 200) << i;
        EXPECT_EQ(body_of(response), fmt::format("later:{}", i % 10));
    }
    answerer.join();
}

TEST_F(TransportTest, AClientThatHangsUpWhileWaitingIsReportedOnce) {
    start(small_limits());
    RawConnection leaving(port_);
    leaving.send("POST /later HTTP/1.1\r\nHost: t\r\nX-Watch: yes\r\nContent-Length: 0\r\n\r\n");
    RawConnection staying(port_);
    staying.send("POST /later HTTP/1.1\r\nHost: t\r\nX-Watch: yes\r\nContent-Length: 0\r\n\r\n");
    ASSERT_TRUE(wait_for_waiting(2));
    leaving.close();
    for (int i = 0; i < 3000 && num_gone_ == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(num_gone_, 1);
    {
        std::lock_guard lock(mutex_);
        for (auto& exchange : waiting_) exchange->respond(text_response(200, "done"));  // one has no reader
    }
    const std::string response = staying.read_response(30);
    EXPECT_EQ(status_of(response), 200);
    EXPECT_EQ(num_gone_, 1);
}

// Produces "<n>\n" chunks when the test pushes them; wakes the transport like the engine thread does.
class ProducedBody final : public BodyStream {
  public:
    Poll poll(std::string& out, const std::function<void()>& wake) override {
        std::lock_guard lock(mutex_);
        out += pending_;
        pending_.clear();
        if (ended_) return Poll::End;
        if (!out.empty()) return Poll::Data;
        wake_ = wake;
        return Poll::Pending;
    }
    void finished(bool complete) override { finished_ = complete ? 1 : 2; }

    void push(const std::string& text, bool end) {
        std::function<void()> wake;
        {
            std::lock_guard lock(mutex_);
            pending_ += text;
            ended_ = end;
            wake.swap(wake_);
        }
        if (wake) wake();
    }

    std::atomic<int> finished_{0};  // 1 complete, 2 cut short

  private:
    std::mutex mutex_;
    std::string pending_;
    bool ended_ = false;
    std::function<void()> wake_;
};

TEST_F(TransportTest, StreamedBodyIsSentAsTheProducerWakesIt) {
    start(small_limits());
    RawConnection client(port_);
    client.send("POST /later HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    ASSERT_TRUE(wait_for_waiting(1));
    auto body = std::make_shared<ProducedBody>();
    HttpResponse response;
    response.content_type = "text/event-stream";
    response.stream = body;
    waiting_[0]->respond(std::move(response));
    std::thread producer([&] {
        for (int i = 0; i < 20; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            body->push(fmt::format("{}\n", i), i == 19);
        }
    });
    const std::string text = client.read_response(30);
    producer.join();
    ASSERT_EQ(status_of(text), 200) << text;
    EXPECT_NE(text.find("Transfer-Encoding: chunked"), std::string::npos) << text;
    std::string unframed;  // the chunks' payloads, in order
    std::string rest = body_of(text);
    while (!rest.empty()) {
        const size_t line_end = rest.find("\r\n");
        const size_t size = std::stoul(rest.substr(0, line_end), nullptr, 16);
        if (size == 0) break;
        unframed += rest.substr(line_end + 2, size);
        rest = rest.substr(line_end + 2 + size + 2);
    }
    std::string expected;
    for (int i = 0; i < 20; ++i) expected += fmt::format("{}\n", i);
    EXPECT_EQ(unframed, expected);
    for (int i = 0; i < 3000 && body->finished_ == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(body->finished_, 1);
}

TEST_F(TransportTest, SlowClientsAreDroppedAtTheReadBudgetWhileOthersAreServed) {
    TransportOptions options = small_limits();
    options.read_budget_seconds = 1;
    start(options);
    constexpr int kSlow = 40;
    const std::string request = "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello";
    std::vector<std::unique_ptr<RawConnection>> slow;
    for (int i = 0; i < kSlow; ++i) slow.push_back(std::make_unique<RawConnection>(port_));
    // One byte each every 100 ms: never idle, never done within the budget.
    for (size_t byte = 0; byte < 8; ++byte) {
        for (auto& connection : slow) connection->send(request.substr(byte, 1));
        EXPECT_EQ(status_of(post("/echo", "fast")), 200);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // Half a request in the body phase is dropped the same way.
    RawConnection slow_body(port_);
    slow_body.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhe");
    for (auto& connection : slow) EXPECT_TRUE(connection->closed_by_server(10));
    EXPECT_TRUE(slow_body.closed_by_server(10));
    for (int i = 0; i < 5000 && num_dropped_ < kSlow + 1; ++i)  // counted just after the shutdown
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(num_dropped_, kSlow + 1);
    EXPECT_EQ(status_of(post("/echo", "fast")), 200);
}

// At the limit the transport stops accepting: a further client waits in the listen backlog
// and is served once a connection closes.
TEST_F(TransportTest, ConnectionsBeyondTheLimitWaitUntilOneCloses) {
    TransportOptions options = small_limits();
    options.max_connections = 4;
    start(options);
    std::vector<std::unique_ptr<RawConnection>> held;
    for (int i = 0; i < 4; ++i) {
        held.push_back(std::make_unique<RawConnection>(port_));
        held.back()->send("POST /ec");  // open, unfinished
    }
    RawConnection fifth(port_);
    fifth.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok");
    EXPECT_EQ(fifth.read_response(0.5), "");  // not served while four are open
    EXPECT_EQ(num_requests_, 0);
    held.pop_back();
    const std::string response = fifth.read_response(10);
    EXPECT_EQ(status_of(response), 200) << response;
    EXPECT_EQ(body_of(response), "2:ok");
}

TEST_F(TransportTest, StopReleasesSuspendedExchangesAndClosesSlowClients) {
    start(small_limits());
    RawConnection waiting(port_);
    waiting.send("POST /later HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    RawConnection slow(port_);
    slow.send("POST /ec");
    ASSERT_TRUE(wait_for_waiting(1));
    transport_->stop();
    const std::string response = waiting.read_response(10);
    if (!response.empty()) {
        EXPECT_EQ(status_of(response), 503) << response;
    }  // or closed before it was sent
    EXPECT_TRUE(waiting.closed_by_server(10));
    EXPECT_TRUE(slow.closed_by_server(10));
    waiting_[0]->respond(text_response(200, "too late"));  // ignored: the exchange ended
    EXPECT_EQ(transport_->num_open_exchanges(), 0);
}

}  // namespace
}  // namespace lmrun::server
