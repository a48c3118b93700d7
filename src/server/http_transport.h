// HttpTransport: HTTP/1.1 on libmicrohttpd (epoll, a small pool of I/O threads that never
// block). It receives each request whole, bounding the body while it arrives (chunked or
// not) and refusing a Content-Encoding other than identity (415: a compressed body would
// have to be inflated to be bounded, and OpenAI clients never compress requests), hands it
// to `on_request` on an I/O thread, and sends the answer whenever it comes, from any
// thread: until then the connection is suspended and holds no thread. A streamed body is
// pulled from its BodyStream; when the stream has nothing to send, the connection is
// suspended until the stream wakes it.
//
// Limits: open connections (at the limit no more are accepted: further clients wait in the
// listen backlog until one closes), an idle timeout (no byte either way), and
// ConnectionMonitor's read budget per request (slow clients are dropped).
// While an exchange is worked on, a client that hangs up is noticed at once
// (HttpExchange::on_client_gone), suspended or not.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "core/result.h"
#include "server/connection_monitor.h"
#include "server/http_exchange.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace lmrun::server {

struct TransportOptions {
    size_t max_body_bytes = size_t(64) << 20;
    unsigned max_connections = 1024;
    unsigned idle_timeout_seconds = 10;  // no byte received or sent for this long: closed
    double read_budget_seconds = 30;     // headers + body of one request (ConnectionMonitor)
    // One epoll thread does all the I/O (it never blocks). With more, MHD splits the connection
    // limit evenly between them, and an uneven spread refuses connections below the limit.
    unsigned num_io_threads = 1;
    int listen_backlog = 4096;  // the kernel caps it at net.core.somaxconn
};

struct TransportHooks {
    // On an I/O thread, with the whole request: answer at once (cheap routes) or hand the
    // exchange to a worker. Must not block.
    std::function<void(const std::shared_ptr<HttpExchange>&)> on_request;
    // After each exchange ended, with the status sent (0 when none was), on an I/O thread.
    std::function<void(const HttpRequest&, int status)> on_completed;
    // A connection was dropped for not delivering its request within the read budget.
    std::function<void()> on_connection_dropped;
};

class HttpTransport {
  public:
    HttpTransport(TransportOptions options, TransportHooks hooks);
    ~HttpTransport();
    HttpTransport(const HttpTransport&) = delete;
    HttpTransport& operator=(const HttpTransport&) = delete;

    // Binds and listens; returns the bound port (`port` 0 = any free port).
    Result<int> listen(const std::string& host, int port);
    // Starts the I/O threads and the connection monitor.
    Status start();
    // Requests received whole whose exchange has not ended (answer not yet sent to the end).
    int64_t num_open_exchanges() const { return num_open_exchanges_; }
    // Ends everything, within a bounded time: suspended exchanges are released (a request not
    // yet answered gets 503, a stream ends), then every connection is closed.
    void stop();

    const TransportOptions& options() const { return options_; }

  private:
    class Exchange;
    friend class Exchange;
    struct Callbacks;

    void begin_request(MHD_Connection* connection, const char* url, const char* method, void** con_cls);
    void end_exchange(Exchange& exchange, bool completed);

    const TransportOptions options_;
    const TransportHooks hooks_;
    ConnectionMonitor monitor_;
    int listen_fd_ = -1;
    bool ipv6_ = false;
    MHD_Daemon* daemon_ = nullptr;
    std::atomic<bool> closing_{false};
    std::atomic<int64_t> num_open_exchanges_{0};

    std::mutex exchanges_mutex_;
    std::unordered_set<Exchange*> exchanges_;  // alive: created, not yet ended
};

}  // namespace lmrun::server
