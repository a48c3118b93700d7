// The router's libcurl client against a real HTTP server on loopback (the server's own
// transport): whole answers, streamed bodies as they come, pausing a transfer, cancelling,
// a refused connection and a worker that never answers.
#include "router/upstream_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>

#include "server/http_transport.h"

namespace lmrun::router {
namespace {

using namespace std::chrono_literals;

// Collects what a transfer delivers; refuses bodies while `refusing` is set.
class Recorder final : public UpstreamHandler {
  public:
    void on_response(int status, const HeaderList& headers) override {
        std::lock_guard lock(mutex_);
        status_ = status;
        headers_ = headers;
    }
    bool on_body(std::string_view bytes) override {
        std::lock_guard lock(mutex_);
        if (refusing_) {
            ++num_refused_;
            changed_.notify_all();
            return false;
        }
        body_.append(bytes);
        changed_.notify_all();
        return true;
    }
    void on_done(const UpstreamResult& result) override {
        std::lock_guard lock(mutex_);
        result_ = result;
        ++num_done_;
        changed_.notify_all();
    }

    template <typename Predicate>
    bool wait(Predicate predicate, std::chrono::milliseconds timeout = 10s) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return predicate(*this); });
    }
    bool wait_done() {
        return wait([](const Recorder& r) { return r.num_done_ > 0; });
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    int status_ = 0;
    HeaderList headers_;
    std::string body_;
    UpstreamResult result_;
    int num_done_ = 0;
    int num_refused_ = 0;
    bool refusing_ = false;
};

// A stream whose events the test releases one by one.
class TestStream final : public server::BodyStream {
  public:
    Poll poll(std::string& out, const std::function<void()>& wake) override {
        std::lock_guard lock(mutex_);
        if (!pending_.empty()) {
            out += pending_;
            pending_.clear();
            return ended_ ? Poll::End : Poll::Data;
        }
        if (ended_) return Poll::End;
        wake_ = wake;
        return Poll::Pending;
    }
    void finished(bool) override {}
    void send(const std::string& bytes, bool end = false) {
        std::function<void()> wake;
        {
            std::lock_guard lock(mutex_);
            pending_ += bytes;
            ended_ = end;
            wake.swap(wake_);
        }
        if (wake) wake();
    }

  private:
    std::mutex mutex_;
    std::string pending_;
    bool ended_ = false;
    std::function<void()> wake_;
};

class UpstreamClientTest : public ::testing::Test {
  protected:
    void SetUp() override {
        server::TransportHooks hooks;
        hooks.on_request = [this](const std::shared_ptr<server::HttpExchange>& exchange) { route(exchange); };
        transport_ = std::make_unique<server::HttpTransport>(server::TransportOptions{}, hooks);
        port_ = transport_->listen("127.0.0.1", 0).value();
        ASSERT_TRUE(transport_->start().ok());
        ASSERT_TRUE(client_.start().ok());
    }
    void TearDown() override {
        client_.stop();
        transport_->stop();
    }

    void route(const std::shared_ptr<server::HttpExchange>& exchange) {
        const server::HttpRequest& request = exchange->request();
        server::HttpResponse response;
        if (request.path == "/echo") {
            response.status = 201;
            response.content_type = "text/plain";
            response.set_header("X-Seen-Auth", std::string(request.header("authorization")));
            response.body = request.method + ":" + request.body;
        } else if (request.path == "/stream") {
            response.content_type = "text/event-stream";
            response.stream = stream_;
        } else if (request.path == "/big") {
            response.content_type = "application/octet-stream";
            response.body = std::string(8 << 20, 'x');
        } else if (request.path == "/never") {
            std::lock_guard lock(mutex_);
            parked_.push_back(exchange);  // answered at TearDown (the transport's stop)
            return;
        } else {
            response.status = 404;
        }
        exchange->respond(std::move(response));
    }

    std::string url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(port_) + path;
    }

    std::unique_ptr<server::HttpTransport> transport_;
    int port_ = 0;
    UpstreamClient client_;
    std::shared_ptr<TestStream> stream_ = std::make_shared<TestStream>();
    std::mutex mutex_;
    std::vector<std::shared_ptr<server::HttpExchange>> parked_;
};

TEST_F(UpstreamClientTest, PostsABodyAndGetsTheWholeAnswer) {
    auto recorder = std::make_shared<Recorder>();
    UpstreamRequest request;
    request.url = url("/echo");
    request.method = "POST";
    request.body = std::string(100000, 'b');  // past curl's Expect: 100-continue threshold
    request.headers.emplace_back("Authorization", "Bearer k");
    client_.submit(request, recorder);
    ASSERT_TRUE(recorder->wait_done());
    EXPECT_EQ(recorder->result_.failure, UpstreamFailure::None);
    EXPECT_EQ(recorder->status_, 201);
    EXPECT_EQ(recorder->body_, "POST:" + request.body);
    bool saw_auth = false;
    for (const auto& [name, value] : recorder->headers_)
        saw_auth |= name == "x-seen-auth" && value == "Bearer k";
    EXPECT_TRUE(saw_auth);
    EXPECT_EQ(client_.num_active(), 0);
}

TEST_F(UpstreamClientTest, StreamedBytesArriveBeforeTheEnd) {
    auto recorder = std::make_shared<Recorder>();
    UpstreamRequest request;
    request.url = url("/stream");
    client_.submit(request, recorder);
    stream_->send("data: 1\n\n");
    ASSERT_TRUE(recorder->wait([](const Recorder& r) { return r.body_ == "data: 1\n\n"; }));
    EXPECT_EQ(recorder->status_, 200);
    EXPECT_EQ(recorder->num_done_, 0);
    stream_->send("data: 2\n\n", true);
    ASSERT_TRUE(recorder->wait_done());
    EXPECT_EQ(recorder->body_, "data: 1\n\ndata: 2\n\n");
    EXPECT_EQ(recorder->result_.failure, UpstreamFailure::None);
}

TEST_F(UpstreamClientTest, ARefusingHandlerPausesTheTransferUntilResumed) {
    auto recorder = std::make_shared<Recorder>();
    recorder->refusing_ = true;
    UpstreamRequest request;
    request.url = url("/big");
    const uint64_t id = client_.submit(request, recorder);
    ASSERT_TRUE(recorder->wait([](const Recorder& r) { return r.num_refused_ > 0; }));
    std::this_thread::sleep_for(100ms);
    {
        std::lock_guard lock(recorder->mutex_);
        EXPECT_EQ(recorder->num_refused_, 1);  // paused: not offered again
        EXPECT_EQ(recorder->num_done_, 0);
        recorder->refusing_ = false;
    }
    client_.resume(id);
    ASSERT_TRUE(recorder->wait_done());
    EXPECT_EQ(recorder->body_.size(), size_t(8) << 20);  // nothing lost
}

TEST_F(UpstreamClientTest, CancelEndsATransferThatWouldNeverEnd) {
    auto recorder = std::make_shared<Recorder>();
    UpstreamRequest request;
    request.url = url("/never");
    const uint64_t id = client_.submit(request, recorder);
    std::this_thread::sleep_for(50ms);
    client_.cancel(id, "no longer wanted");
    ASSERT_TRUE(recorder->wait_done());
    EXPECT_EQ(recorder->result_.failure, UpstreamFailure::Cancelled);
    EXPECT_EQ(recorder->result_.error, "no longer wanted");
    client_.cancel(id, "again");  // a finished transfer: nothing more
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(recorder->num_done_, 1);
}

TEST_F(UpstreamClientTest, ATimeoutWithoutAnswerIsATimeoutNotAConnectFailure) {
    auto recorder = std::make_shared<Recorder>();
    UpstreamRequest request;
    request.url = url("/never");
    request.timeout_seconds = 0.3;
    client_.submit(request, recorder);
    ASSERT_TRUE(recorder->wait_done());
    EXPECT_EQ(recorder->result_.failure, UpstreamFailure::Timeout) << recorder->result_.error;
}

TEST_F(UpstreamClientTest, AClosedPortIsAConnectFailure) {
    // A port that was just free: bind one, close it.
    int port = 0;
    {
        server::HttpTransport closed(server::TransportOptions{}, server::TransportHooks{});
        port = closed.listen("127.0.0.1", 0).value();
    }
    auto recorder = std::make_shared<Recorder>();
    UpstreamRequest request;
    request.url = "http://127.0.0.1:" + std::to_string(port) + "/x";
    client_.submit(request, recorder);
    ASSERT_TRUE(recorder->wait_done());
    EXPECT_EQ(recorder->result_.failure, UpstreamFailure::Connect) << recorder->result_.error;
    EXPECT_FALSE(recorder->result_.error.empty());
}

TEST_F(UpstreamClientTest, BufferedHandlerBoundsTheBody) {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<BufferedResponse> small, large;
    UpstreamRequest request;
    request.url = url("/echo");
    client_.submit(request, buffered_handler([&](BufferedResponse r) {
                       std::lock_guard lock(mutex);
                       small = std::move(r);
                       done.notify_all();
                   }));
    request.url = url("/big");
    client_.submit(request, buffered_handler(
                                [&](BufferedResponse r) {
                                    std::lock_guard lock(mutex);
                                    large = std::move(r);
                                    done.notify_all();
                                },
                                1024));
    std::unique_lock lock(mutex);
    ASSERT_TRUE(done.wait_for(lock, 10s, [&] { return small && large; }));
    EXPECT_EQ(small->body, "GET:");
    EXPECT_EQ(small->result.status, 201);
    EXPECT_EQ(large->result.failure, UpstreamFailure::Transfer);
    EXPECT_TRUE(large->body.empty());
}

TEST_F(UpstreamClientTest, StopCancelsWhatIsInFlightAndLaterSubmits) {
    auto parked = std::make_shared<Recorder>();
    UpstreamRequest request;
    request.url = url("/never");
    client_.submit(request, parked);
    std::this_thread::sleep_for(50ms);
    client_.stop();
    ASSERT_TRUE(parked->wait_done());
    EXPECT_EQ(parked->result_.failure, UpstreamFailure::Cancelled);
    auto late = std::make_shared<Recorder>();
    client_.submit(request, late);
    ASSERT_TRUE(late->wait_done());
    EXPECT_EQ(late->result_.failure, UpstreamFailure::Cancelled);
}

}  // namespace
}  // namespace lmrun::router
